//! `stat`: what a path is, and for files under the size limit what their content is.

use crate::{
    document::DocumentInfo,
    error::{FsError, FsResult},
    facts::{Kind, kind_of, rfc3339},
    read::{checksum, image_dimensions, read_up_to},
    roots::{Roots, Target},
    sniff::{self, Content},
    text::{self, Window},
};

#[derive(Debug, Clone, serde::Serialize)]
pub struct ImageInfo {
    pub format: &'static str,
    pub width: Option<u64>,
    pub height: Option<u64>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct StatInfo {
    pub path: String,
    pub kind: Kind,
    pub size: Option<u64>,
    pub modified: Option<String>,
    pub created: Option<String>,
    /// True when ferret may not write it: the file's permissions, or a read-only root.
    pub readonly: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symlink_target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_endings: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary: Option<&'static str>,
    /// Format, pages, sheets, title and author of a document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<DocumentInfo>,
}

impl StatInfo {
    /// What is known of an entry before anything is read: its path and kind,
    /// read-only, every other fact unknown.
    fn bare(path: String, kind: Kind) -> StatInfo {
        StatInfo {
            path,
            kind,
            size: None,
            modified: None,
            created: None,
            readonly: true,
            symlink_target: None,
            lines: None,
            encoding: None,
            line_endings: None,
            checksum: None,
            image: None,
            binary: None,
            document: None,
        }
    }
}

/// What `input` names (`file`, `dir`, `symlink`, `other`), or `None` when
/// nothing is there. Metadata only: nothing is opened or read, and a
/// symlink is reported as one.
pub(crate) fn entry_kind(roots: &Roots, input: &str) -> Option<Kind> {
    match roots.resolve(input).ok()? {
        Target::AllRoots => Some(Kind::Dir),
        Target::In(root, rel) => root
            .dir()
            .symlink_metadata(rel.as_os_path())
            .ok()
            .map(|m| kind_of(m.file_type())),
    }
}

/// The size and modification time of the regular file `input` names,
/// or `None` (nothing there, not a plain file, or a sensitive one).
/// Metadata only, like [`Roots::entry_kind`]: for links to files that
/// an answer names, which a client may open later.
pub(crate) fn file_facts(roots: &Roots, input: &str) -> Option<(u64, Option<String>)> {
    let Target::In(root, rel) = roots.resolve(input).ok()? else {
        return None;
    };
    if roots.policy.deny.is_sensitive(&rel) {
        return None;
    }
    let meta = root.dir().symlink_metadata(rel.as_os_path()).ok()?;
    meta.is_file()
        .then(|| (meta.len(), rfc3339(meta.modified())))
}

pub(crate) fn stat(roots: &Roots, input: &str) -> FsResult<StatInfo> {
    let shown = input.trim();
    let (root, rel) = match roots.resolve(input)? {
        Target::AllRoots => {
            return Ok(StatInfo::bare(".".into(), Kind::Dir));
        }
        Target::In(root, rel) => (root, rel),
    };
    let path = roots.display(root, &rel);
    let lmeta = root
        .dir()
        .symlink_metadata(rel.as_os_path())
        .map_err(|e| FsError::from_io(&e, shown))?;
    let kind = kind_of(lmeta.file_type());
    let (meta, symlink_target, real) = if lmeta.is_symlink() {
        match roots.real_path(root, &rel, shown) {
            Ok(real) => {
                let meta = root
                    .dir()
                    .metadata(real.as_os_path())
                    .map_err(|e| FsError::from_io(&e, shown))?;
                (meta, Some(roots.display(root, &real)), real)
            }
            Err(e) if e.code == crate::ErrorCode::NotFound => {
                // Dangling: it exists as a link, pointing nowhere.
                return Ok(StatInfo {
                    modified: rfc3339(lmeta.modified()),
                    ..StatInfo::bare(path, kind)
                });
            }
            Err(e) => return Err(e),
        }
    } else {
        (lmeta, None, rel.clone())
    };
    roots.check_not_sensitive(&rel, &real, shown)?;
    let mut info = StatInfo {
        size: (!meta.is_dir()).then(|| meta.len()),
        modified: rfc3339(meta.modified()),
        created: rfc3339(meta.created()),
        readonly: !root.writable || meta.permissions().readonly(),
        symlink_target,
        ..StatInfo::bare(path, kind)
    };
    if !meta.is_file() {
        return Ok(info);
    }
    let mut opened = roots.open_for_content(root, &real, shown)?;
    let head = read_up_to(&mut opened.file, 4096).map_err(|e| FsError::from_io(&e, shown))?;
    if let Some(format) = crate::document::document_format(roots, real.as_str(), &head) {
        let (document, lines) = crate::document::stat_document(roots, opened, format, shown);
        info.document = Some(document);
        info.lines = lines;
        return Ok(info);
    }
    use std::io::Seek;
    opened
        .file
        .seek(std::io::SeekFrom::Start(0))
        .map_err(|e| FsError::from_io(&e, shown))?;
    let limit = roots.policy.limits.max_file_bytes;
    let whole = meta.len() <= limit;
    let read_limit = if whole { limit as usize + 1 } else { 64 * 1024 };
    let bytes =
        read_up_to(&mut opened.file, read_limit).map_err(|e| FsError::from_io(&e, shown))?;
    match sniff::classify(&bytes) {
        Content::Image(format) => {
            let (width, height) = image_dimensions(&bytes);
            info.image = Some(ImageInfo {
                format: format.name(),
                width,
                height,
            });
        }
        Content::Binary(kind) => info.binary = Some(kind),
        Content::Text if whole => {
            let detected = sniff::detect_encoding(&bytes, true);
            let scan = text::scan_lines(&bytes[..], &detected, &Window::none(), true)
                .map_err(|e| FsError::from_io(&e, shown))?;
            info.lines = scan.total_lines;
            info.line_endings = Some(scan.line_endings());
            info.encoding = Some(detected.label);
        }
        Content::Text => {
            info.encoding = Some(sniff::detect_encoding(&bytes, false).label);
        }
    }
    if whole {
        info.checksum = Some(checksum(&bytes));
    }
    Ok(info)
}
