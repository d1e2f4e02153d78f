//! Which document format a file is, judged from its first bytes and its name.
//!
//! The container is read from the bytes (`%PDF-`, a zip, an OLE2 compound
//! file); inside a zip, OpenDocument and EPUB name themselves in their first
//! entry (`mimetype`), while Office Open XML is told apart by the file's
//! extension (its parts are only listed in the zip's central directory, at the
//! end of the file).

use serde::{Deserialize, Serialize};

/// The formats ferret reads as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Pdf,
    Docx,
    Pptx,
    Xlsx,
    Xls,
    Ods,
    Odt,
    Odp,
    Epub,
}

/// Every extension that names a document format, lower case, without the dot.
pub const EXTENSIONS: &[&str] = &[
    "pdf", "docx", "docm", "dotx", "pptx", "pptm", "xlsx", "xlsm", "xls", "ods", "odt", "odp",
    "epub",
];

const ALL: [Format; 9] = [
    Format::Pdf,
    Format::Docx,
    Format::Pptx,
    Format::Xlsx,
    Format::Xls,
    Format::Ods,
    Format::Odt,
    Format::Odp,
    Format::Epub,
];

const ZIP: &[u8] = b"PK\x03\x04";
const OLE2: &[u8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1";

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Pdf => "pdf",
            Format::Docx => "docx",
            Format::Pptx => "pptx",
            Format::Xlsx => "xlsx",
            Format::Xls => "xls",
            Format::Ods => "ods",
            Format::Odt => "odt",
            Format::Odp => "odp",
            Format::Epub => "epub",
        }
    }

    /// The format named so by [`Format::name`].
    pub fn parse(name: &str) -> Option<Format> {
        ALL.into_iter().find(|f| f.name() == name)
    }

    /// The format an extension names (any case), if any.
    pub fn from_extension(ext: &str) -> Option<Format> {
        Some(match ext.to_ascii_lowercase().as_str() {
            "pdf" => Format::Pdf,
            "docx" | "docm" | "dotx" => Format::Docx,
            "pptx" | "pptm" => Format::Pptx,
            "xlsx" | "xlsm" => Format::Xlsx,
            "xls" => Format::Xls,
            "ods" => Format::Ods,
            "odt" => Format::Odt,
            "odp" => Format::Odp,
            "epub" => Format::Epub,
            _ => return None,
        })
    }

    /// Whether a file name ends in a document extension.
    pub fn named(file_name: &str) -> Option<Format> {
        let (_, ext) = file_name.rsplit_once('.')?;
        Format::from_extension(ext)
    }

    /// The format of a file with this name whose content starts with `head`
    /// (at least the first 100 bytes, when the file has them); `None` when it
    /// is not a document ferret reads.
    pub fn detect(file_name: &str, head: &[u8]) -> Option<Format> {
        if head.starts_with(b"%PDF-") {
            return Some(Format::Pdf);
        }
        let by_name = Format::named(file_name);
        if head.starts_with(ZIP) {
            if let Some(format) = zip_mimetype(head) {
                return Some(format);
            }
            return by_name.filter(|f| f.is_zip());
        }
        if head.starts_with(OLE2) {
            return by_name.filter(|f| *f == Format::Xls);
        }
        // A PDF may carry a few bytes of junk before its header.
        if by_name == Some(Format::Pdf) && memmem(&head[..head.len().min(1024)], b"%PDF-") {
            return Some(Format::Pdf);
        }
        None
    }

    fn is_zip(self) -> bool {
        !matches!(self, Format::Pdf | Format::Xls)
    }

    /// What a document's numbered or named parts are.
    pub fn part_kind(self) -> Option<crate::PartKind> {
        use crate::PartKind;
        match self {
            Format::Pdf => Some(PartKind::Page),
            Format::Pptx | Format::Odp => Some(PartKind::Slide),
            Format::Xlsx | Format::Xls | Format::Ods => Some(PartKind::Sheet),
            Format::Epub => Some(PartKind::Chapter),
            Format::Docx | Format::Odt => None,
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// OpenDocument and EPUB files start with a stored entry `mimetype` that holds
/// the media type, so it sits at a fixed place in the first bytes.
fn zip_mimetype(head: &[u8]) -> Option<Format> {
    let name_len = u16::from_le_bytes([*head.get(26)?, *head.get(27)?]) as usize;
    let extra_len = u16::from_le_bytes([*head.get(28)?, *head.get(29)?]) as usize;
    if head.get(30..30 + name_len)? != b"mimetype" {
        return None;
    }
    let start = 30 + name_len + extra_len;
    let body = head.get(start..(start + 80).min(head.len()))?;
    const TYPES: &[(&[u8], Format)] = &[
        (b"application/vnd.oasis.opendocument.text", Format::Odt),
        (
            b"application/vnd.oasis.opendocument.spreadsheet",
            Format::Ods,
        ),
        (
            b"application/vnd.oasis.opendocument.presentation",
            Format::Odp,
        ),
        (b"application/epub+zip", Format::Epub),
    ];
    TYPES
        .iter()
        .find(|(mime, _)| body.starts_with(mime))
        .map(|(_, f)| *f)
}

fn memmem(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zip_with_first_entry(name: &str, body: &[u8]) -> Vec<u8> {
        let mut v = ZIP.to_vec();
        v.extend_from_slice(&[0u8; 22]);
        v.extend_from_slice(&(name.len() as u16).to_le_bytes());
        v.extend_from_slice(&0u16.to_le_bytes());
        v.extend_from_slice(name.as_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn containers_are_read_from_the_bytes_and_formats_from_the_name() {
        assert_eq!(Format::detect("x.bin", b"%PDF-1.7\n"), Some(Format::Pdf));
        assert_eq!(
            Format::detect("x.pdf", b"junk\n%PDF-1.4"),
            Some(Format::Pdf)
        );
        assert_eq!(Format::detect("x.pdf", b"not a pdf at all"), None);
        let ooxml = zip_with_first_entry("[Content_Types].xml", b"<?xml");
        assert_eq!(Format::detect("a.DOCX", &ooxml), Some(Format::Docx));
        assert_eq!(Format::detect("a.xlsx", &ooxml), Some(Format::Xlsx));
        assert_eq!(Format::detect("a.pptx", &ooxml), Some(Format::Pptx));
        assert_eq!(Format::detect("a.zip", &ooxml), None);
        assert_eq!(Format::detect("a.docx", b"plain text"), None);
        let odt = zip_with_first_entry("mimetype", b"application/vnd.oasis.opendocument.text");
        assert_eq!(Format::detect("renamed.zip", &odt), Some(Format::Odt));
        let epub = zip_with_first_entry("mimetype", b"application/epub+zip");
        assert_eq!(Format::detect("book", &epub), Some(Format::Epub));
        assert_eq!(Format::detect("old.xls", OLE2), Some(Format::Xls));
        assert_eq!(Format::detect("old.doc", OLE2), None);
    }
}
