//! The extension groups behind `type:` and the shortcuts `pic:` `doc:` `audio:`
//! `video:` `zip:` `exe:` `code:`. Lowercase, without the dot; a name matches when its
//! extension (the text after its last `.`, the `.` not being the first character) is
//! in the list, in any case. Items with a dot (`tar.gz`) match names ending with
//! `.tar.gz`. The groups may overlap (`svg` is a picture; `html` is code, not a
//! document; `ts` is TypeScript, not a video).

use crate::ast::FileType;

/// `pic:` / `type:pic`: raster and vector images, camera raw formats, editor files.
pub const PIC: &[&str] = &[
    "apng", "arw", "avif", "bmp", "cr2", "cr3", "dng", "gif", "heic", "heif", "ico", "jfif",
    "jpeg", "jpg", "jxl", "nef", "orf", "png", "psd", "raf", "raw", "rw2", "svg", "tga", "tif",
    "tiff", "webp", "xcf",
];

/// `doc:` / `type:doc`: documents, spreadsheets, presentations, plain and marked-up text.
pub const DOC: &[&str] = &[
    "adoc", "chm", "csv", "djvu", "doc", "docm", "docx", "dot", "dotx", "epub", "key", "markdown",
    "md", "mobi", "numbers", "odg", "odp", "ods", "odt", "org", "pages", "pdf", "pps", "ppsx",
    "ppt", "pptm", "pptx", "ps", "rst", "rtf", "tex", "tsv", "txt", "wpd", "xls", "xlsb", "xlsm",
    "xlsx",
];

/// `audio:` / `type:audio`.
pub const AUDIO: &[&str] = &[
    "aac", "ac3", "aif", "aifc", "aiff", "alac", "amr", "ape", "au", "dts", "flac", "m4a", "m4b",
    "m4p", "mid", "midi", "mka", "mp2", "mp3", "mpc", "oga", "ogg", "opus", "ra", "tta", "voc",
    "wav", "weba", "wma", "wv",
];

/// `video:` / `type:video`.
pub const VIDEO: &[&str] = &[
    "3g2", "3gp", "asf", "avi", "divx", "f4v", "flv", "m2ts", "m2v", "m4v", "mkv", "mov", "mp4",
    "mpeg", "mpg", "mts", "mxf", "ogm", "ogv", "rm", "rmvb", "vob", "webm", "wmv",
];

/// `zip:` / `type:zip`: archives, compressed files, disk and package images.
pub const ZIP: &[&str] = &[
    "7z", "ace", "apk", "ar", "arj", "br", "bz2", "cab", "cpio", "deb", "dmg", "ear", "gz", "img",
    "iso", "jar", "lz", "lz4", "lzh", "lzma", "lzo", "rar", "rpm", "snap", "tar", "tar.bz2",
    "tar.gz", "tar.xz", "tar.zst", "tbz", "tbz2", "tgz", "txz", "tzst", "war", "whl", "xz", "z",
    "zip", "zipx", "zst",
];

/// `exe:` / `type:exe`: executables and installers by extension. Linux programs
/// usually have none: `attrib:X` finds files with an execute bit.
pub const EXE: &[&str] = &[
    "appimage",
    "bat",
    "bin",
    "cmd",
    "com",
    "elf",
    "exe",
    "flatpakref",
    "msi",
    "out",
    "ps1",
    "run",
    "scr",
];

/// `code:` / `type:code`: source code, build and configuration files.
pub const CODE: &[&str] = &[
    "asm", "bash", "c", "cc", "cfg", "cjs", "clj", "cljs", "cmake", "conf", "cpp", "cs", "css",
    "cts", "cxx", "d", "dart", "el", "erl", "ex", "exs", "f90", "fish", "fs", "fsx", "go",
    "gradle", "groovy", "h", "hh", "hpp", "hrl", "hs", "htm", "html", "hxx", "ini", "java", "jl",
    "js", "json", "json5", "jsonc", "jsx", "kt", "kts", "less", "lisp", "lua", "m", "mjs", "mk",
    "ml", "mli", "mm", "mts", "nim", "nix", "php", "pl", "pm", "proto", "py", "pyi", "r", "rb",
    "rkt", "rs", "s", "sass", "scala", "scm", "scss", "sh", "sol", "sql", "svelte", "swift", "tf",
    "toml", "ts", "tsx", "v", "vb", "vue", "xml", "yaml", "yml", "zig", "zsh",
];

/// The extension list of a group (`None` for `file`, `folder`, `symlink`, which are
/// kinds).
pub fn extensions(t: FileType) -> Option<&'static [&'static str]> {
    Some(match t {
        FileType::Pic => PIC,
        FileType::Doc => DOC,
        FileType::Audio => AUDIO,
        FileType::Video => VIDEO,
        FileType::Zip => ZIP,
        FileType::Exe => EXE,
        FileType::Code => CODE,
        FileType::File | FileType::Folder | FileType::Symlink => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_sorted_lowercase_and_unique() {
        for list in [PIC, DOC, AUDIO, VIDEO, ZIP, EXE, CODE] {
            for w in list.windows(2) {
                assert!(w[0] < w[1], "{} then {}", w[0], w[1]);
            }
            for e in list {
                assert_eq!(e.to_lowercase(), *e);
                assert!(!e.starts_with('.'));
            }
        }
    }
}
