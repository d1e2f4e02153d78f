//! Turning what an agent typed into a path relative to one root, or a refusal.
//!
//! This is pure string work with no I/O. It is the first line of defence only:
//! the second, which cannot be talked around, is that every file-system call goes
//! through the root's directory handle (see `roots.rs`).

use std::path::Path;

/// A path relative to a root, made only of normal components (no `.`, `..`, or
/// separators at either end). The empty path is the root itself. Shown as a
/// string; on disk, where a name is not UTF-8, its bytes (see
/// [`ferret_names`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RelPath {
    shown: String,
    /// The path's bytes on disk, when they differ from `shown`'s: some name
    /// in it is not UTF-8.
    os: Option<Box<[u8]>>,
}

impl RelPath {
    pub fn root() -> Self {
        RelPath::default()
    }

    pub fn is_root(&self) -> bool {
        self.shown.is_empty()
    }

    pub fn as_str(&self) -> &str {
        &self.shown
    }

    /// The path to hand to the file system: `.` for the root itself.
    pub fn as_os_path(&self) -> &Path {
        use std::os::unix::ffi::OsStrExt;
        match &self.os {
            Some(bytes) => Path::new(std::ffi::OsStr::from_bytes(bytes)),
            None if self.shown.is_empty() => Path::new("."),
            None => Path::new(&self.shown),
        }
    }

    /// The path below this one named `name` (as shown, standing for itself).
    pub fn join(&self, name: &str) -> RelPath {
        self.join_bytes(name.as_bytes())
    }

    /// The path below this one whose name on disk is `name`: shown escaped
    /// when it is not UTF-8.
    pub fn join_bytes(&self, name: &[u8]) -> RelPath {
        let mut shown = self.shown.clone();
        if !shown.is_empty() {
            shown.push('/');
        }
        ferret_names::push_shown(&mut shown, name);
        let os = match (&self.os, std::str::from_utf8(name).is_ok()) {
            (None, true) => None,
            _ => {
                let mut os = self.as_os_bytes().to_vec();
                if !self.shown.is_empty() {
                    os.push(b'/');
                }
                os.extend_from_slice(name);
                Some(os.into_boxed_slice())
            }
        };
        RelPath { shown, os }
    }

    /// The path of these names (their bytes on disk), in one pass (a
    /// `join_bytes` a name copies the path so far each time).
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a [u8]>) -> RelPath {
        let (mut shown, mut os) = (String::new(), Vec::new());
        for (i, name) in names.into_iter().enumerate() {
            if i > 0 {
                shown.push('/');
                os.push(b'/');
            }
            ferret_names::push_shown(&mut shown, name);
            os.extend_from_slice(name);
        }
        let os = (os != shown.as_bytes()).then(|| os.into_boxed_slice());
        RelPath { shown, os }
    }

    /// The path `sub` (relative to this one) below this one.
    pub fn join_rel(&self, sub: &RelPath) -> RelPath {
        if sub.is_root() {
            return self.clone();
        }
        if self.is_root() {
            return sub.clone();
        }
        let os = (self.os.is_some() || sub.os.is_some()).then(|| {
            [self.as_os_bytes(), b"/", sub.as_os_bytes()]
                .concat()
                .into_boxed_slice()
        });
        RelPath {
            shown: format!("{}/{}", self.shown, sub.shown),
            os,
        }
    }

    fn as_os_bytes(&self) -> &[u8] {
        self.os.as_deref().unwrap_or(self.shown.as_bytes())
    }

    /// Each name of the path: as shown, and its bytes on disk.
    pub fn names(&self) -> impl Iterator<Item = (&str, &[u8])> {
        let not_empty = |c: &&[u8]| !c.is_empty();
        self.components()
            .zip(self.as_os_bytes().split(|&b| b == b'/').filter(not_empty))
    }

    /// The folder the path is in, and its last name's bytes on disk (the
    /// root and an empty name for the root).
    pub fn split_last(&self) -> (RelPath, std::ffi::OsString) {
        use std::os::unix::ffi::OsStringExt;
        let names: Vec<(&str, &[u8])> = self.names().collect();
        match names.split_last() {
            Some(((_, leaf), parent)) => (
                RelPath::from_names(parent.iter().map(|&(_, name)| name)),
                std::ffi::OsString::from_vec(leaf.to_vec()),
            ),
            None => (RelPath::root(), std::ffi::OsString::new()),
        }
    }

    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.shown.split('/').filter(|c| !c.is_empty())
    }

    pub fn file_name(&self) -> &str {
        self.shown.rsplit('/').next().unwrap_or("")
    }

    /// Build from components that were already checked to be normal (each
    /// standing for itself).
    pub(crate) fn from_components<'a>(parts: impl IntoIterator<Item = &'a str>) -> RelPath {
        RelPath {
            shown: parts.into_iter().collect::<Vec<_>>().join("/"),
            os: None,
        }
    }
}

/// A normalised request: either relative components, or an absolute path that
/// still has to be matched against the roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requested {
    Relative(Vec<String>),
    Absolute(Vec<String>),
}

/// Why a requested path was refused before any file-system call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    ParentComponent,
    NulByte,
    WindowsPath,
}

/// Normalise what the agent typed: trim, strip one pair of quotes, turn `\` into
/// `/`, drop doubled and trailing separators and `.` components. Any `..`, NUL
/// byte, drive letter or UNC path is refused.
pub fn normalize(input: &str) -> Result<Requested, Refusal> {
    let mut s = input.trim();
    for q in ['"', '\'', '`'] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            s = s[1..s.len() - 1].trim();
            break;
        }
    }
    if s.contains('\0') {
        return Err(Refusal::NulByte);
    }
    let bytes = s.as_bytes();
    let is_drive = bytes.len() >= 2
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && (bytes.len() == 2 || bytes[2] == b'\\' || bytes[2] == b'/');
    if is_drive || s.starts_with("\\\\") {
        return Err(Refusal::WindowsPath);
    }
    let unified = s.replace('\\', "/");
    let absolute = unified.starts_with('/');
    let mut parts = Vec::new();
    for part in unified.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(Refusal::ParentComponent),
            p => parts.push(p.to_string()),
        }
    }
    Ok(if absolute {
        Requested::Absolute(parts)
    } else {
        Requested::Relative(parts)
    })
}

/// The components of an absolute root path, for lexical containment checks.
pub(crate) fn absolute_components(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

/// `Some(rest)` when `path` lies lexically at or below `base`.
pub(crate) fn strip_base<'a>(path: &'a [String], base: &[String]) -> Option<&'a [String]> {
    path.strip_prefix(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &str) -> Vec<String> {
        match normalize(s).unwrap() {
            Requested::Relative(p) => p,
            other => panic!("{s:?} gave {other:?}"),
        }
    }

    /// Found by the `path_normalize` fuzz target: `z:/x` is refused as a
    /// Windows drive, but `./z:/x` names the folder `z:` below the root (a
    /// legal name on Linux), so a relative path whose first component looks
    /// like a drive is written back with `./` in front to mean the same.
    #[test]
    fn a_drive_lookalike_after_dot_slash_is_a_folder_name() {
        assert_eq!(normalize("z:/x"), Err(Refusal::WindowsPath));
        assert_eq!(rel("./z:/x"), ["z:", "x"]);
        assert_eq!(rel("\u{b}\t./z:/\t'  "), ["z:", "\t'"]);
    }

    #[test]
    fn plain_and_messy_relative_paths_normalise() {
        assert_eq!(rel("src/main.rs"), ["src", "main.rs"]);
        assert_eq!(rel("  ./src//main.rs/ "), ["src", "main.rs"]);
        assert_eq!(rel("src\\lib\\x.rs"), ["src", "lib", "x.rs"]);
        assert_eq!(rel("\"src/a b.txt\""), ["src", "a b.txt"]);
        assert_eq!(rel("'x'"), ["x"]);
        assert!(rel(".").is_empty());
        assert!(rel("").is_empty());
        assert_eq!(rel("..foo/bar.."), ["..foo", "bar.."]);
    }

    #[test]
    fn parent_components_anywhere_are_refused() {
        for p in [
            "..",
            "../x",
            "a/../b",
            "a/..",
            "a\\..\\..\\b",
            "/root/../etc",
            "./..",
        ] {
            assert_eq!(normalize(p), Err(Refusal::ParentComponent), "{p}");
        }
    }

    #[test]
    fn nul_and_windows_forms_are_refused() {
        assert_eq!(normalize("a\0b"), Err(Refusal::NulByte));
        assert_eq!(normalize("C:\\Windows"), Err(Refusal::WindowsPath));
        assert_eq!(normalize("c:/x"), Err(Refusal::WindowsPath));
        assert_eq!(normalize("D:"), Err(Refusal::WindowsPath));
        assert_eq!(normalize("\\\\server\\share\\x"), Err(Refusal::WindowsPath));
    }

    #[test]
    fn absolute_paths_are_kept_for_root_matching() {
        assert_eq!(
            normalize("//etc///passwd").unwrap(),
            Requested::Absolute(vec!["etc".into(), "passwd".into()])
        );
        assert_eq!(normalize("/").unwrap(), Requested::Absolute(vec![]));
    }

    #[test]
    fn relpath_helpers() {
        let r = RelPath::from_components(["a", "b.txt"]);
        assert_eq!(r.file_name(), "b.txt");
        assert_eq!(r.join("c").as_str(), "a/b.txt/c");
        assert_eq!(RelPath::root().as_os_path(), Path::new("."));
    }
}
