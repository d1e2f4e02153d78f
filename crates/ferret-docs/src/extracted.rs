//! A document's text, the parts it is divided into (pages, slides, sheets,
//! chapters) and its metadata; how it is built, and how it is written to the
//! cache and between the extractor process and ferret.

use serde::{Deserialize, Serialize};

use crate::{DocError, Format, error::DocErrorKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartKind {
    Page,
    Slide,
    Sheet,
    Chapter,
}

impl PartKind {
    pub fn name(self) -> &'static str {
        match self {
            PartKind::Page => "page",
            PartKind::Slide => "slide",
            PartKind::Sheet => "sheet",
            PartKind::Chapter => "chapter",
        }
    }
}

/// One page, slide, sheet or chapter: its lines run from `first_line` to the
/// line before the next part's (every part has at least one line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    pub kind: PartKind,
    /// 1-based, in document order.
    pub number: u32,
    /// A sheet's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub first_line: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Pages (PDF; DOCX and ODT as their writer last counted them) or slides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<u32>,
    /// False when no part holds any text (a scanned PDF: its pages are images).
    pub text_layer: bool,
    /// Pages the parser could not read (their text is missing).
    #[serde(default)]
    pub unreadable_parts: u32,
}

/// A document as text: lines end with `\n`, cells of a sheet's row are
/// separated by tabs, and a sheet's line N (from its first line) is its row N.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub format: Format,
    pub text: String,
    pub lines: u64,
    pub parts: Vec<Part>,
    pub meta: Meta,
}

impl Extracted {
    /// The part that holds `line`.
    pub fn part_at(&self, line: u64) -> Option<&Part> {
        let i = self.parts.partition_point(|p| p.first_line <= line);
        i.checked_sub(1).map(|i| &self.parts[i])
    }

    /// The first and last line of the part at `index`.
    pub fn part_lines(&self, index: usize) -> (u64, u64) {
        let first = self.parts[index].first_line;
        let last = self
            .parts
            .get(index + 1)
            .map_or(self.lines, |next| next.first_line - 1);
        (first, last.max(first))
    }

    /// The sheet named `name` (case-insensitive), or the one numbered so.
    pub fn sheet(&self, name: &str) -> Option<usize> {
        let sheets = || {
            self.parts
                .iter()
                .enumerate()
                .filter(|(_, p)| p.kind == PartKind::Sheet)
        };
        sheets()
            .find(|(_, p)| p.name.as_deref() == Some(name))
            .or_else(|| {
                sheets().find(|(_, p)| {
                    p.name
                        .as_deref()
                        .is_some_and(|n| n.to_lowercase() == name.to_lowercase())
                })
            })
            .or_else(|| {
                let n: u32 = name.parse().ok()?;
                sheets().find(|(_, p)| p.number == n)
            })
            .map(|(i, _)| i)
    }
}

/// Builds the text part by part, within a byte bound.
pub(crate) struct Builder {
    text: String,
    parts: Vec<Part>,
    /// Lines completed so far (the text ends with `\n` after each).
    lines: u64,
    max_bytes: usize,
    has_text: bool,
}

impl Builder {
    pub fn new(max_bytes: usize) -> Builder {
        Builder {
            text: String::new(),
            parts: Vec::new(),
            lines: 0,
            max_bytes,
            has_text: false,
        }
    }

    /// Start a part; the previous one gets an empty line if it had none.
    pub fn part(
        &mut self,
        kind: PartKind,
        number: u32,
        name: Option<String>,
    ) -> Result<(), DocError> {
        self.end_line()?;
        self.give_last_part_a_line()?;
        self.parts.push(Part {
            kind,
            number,
            name,
            first_line: self.lines + 1,
        });
        Ok(())
    }

    fn give_last_part_a_line(&mut self) -> Result<(), DocError> {
        if self.parts.last().is_some_and(|p| p.first_line > self.lines) {
            self.newline()?;
        }
        Ok(())
    }

    /// Append text; control characters other than tab and line feed become
    /// spaces (`\r` is dropped), so lines are lines.
    pub fn push(&mut self, s: &str) -> Result<(), DocError> {
        if self.text.len() + s.len() > self.max_bytes {
            return Err(self.over());
        }
        for c in s.chars() {
            match c {
                '\n' => {
                    self.text.push('\n');
                    self.lines += 1;
                }
                '\r' => {}
                '\t' => self.text.push('\t'),
                c if c.is_control() => self.text.push(' '),
                c => {
                    if !c.is_whitespace() {
                        self.has_text = true;
                    }
                    self.text.push(c);
                }
            }
        }
        Ok(())
    }

    pub fn newline(&mut self) -> Result<(), DocError> {
        if self.text.len() + 1 > self.max_bytes {
            return Err(self.over());
        }
        self.text.push('\n');
        self.lines += 1;
        Ok(())
    }

    /// End the current line unless it is empty.
    pub fn end_line(&mut self) -> Result<(), DocError> {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.newline()?;
        }
        Ok(())
    }

    /// Whether the current line has anything on it.
    pub fn line_open(&self) -> bool {
        !self.text.is_empty() && !self.text.ends_with('\n')
    }

    pub fn len(&self) -> usize {
        self.text.len()
    }

    fn over(&self) -> DocError {
        DocError::too_large(format!(
            "its text is longer than the {} MB bound",
            self.max_bytes >> 20
        ))
    }

    pub fn finish(mut self, format: Format, mut meta: Meta) -> Result<Extracted, DocError> {
        self.end_line()?;
        self.give_last_part_a_line()?;
        meta.text_layer = self.has_text;
        Ok(Extracted {
            format,
            lines: self.lines,
            text: self.text,
            parts: self.parts,
            meta,
        })
    }
}

/// The header line of an encoded result.
#[derive(Serialize, Deserialize)]
struct Header {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(flatten)]
    body: HeaderBody,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "lowercase")]
enum HeaderBody {
    Text {
        format: Format,
        lines: u64,
        parts: Vec<Part>,
        meta: Meta,
        text_bytes: usize,
    },
    Error {
        error: DocError,
    },
}

const MAGIC: &[u8] = b"ferret-document 1\n";

/// Write `result` as: a magic line, a JSON header line (with `key`, when the
/// cache writes it), then the text itself, unescaped.
pub fn encode(result: &Result<Extracted, DocError>, key: Option<&str>) -> Vec<u8> {
    let body = match result {
        Ok(doc) => HeaderBody::Text {
            format: doc.format,
            lines: doc.lines,
            parts: doc.parts.clone(),
            meta: doc.meta.clone(),
            text_bytes: doc.text.len(),
        },
        Err(error) => HeaderBody::Error {
            error: error.clone(),
        },
    };
    let header = Header {
        key: key.map(str::to_string),
        body,
    };
    let mut out = MAGIC.to_vec();
    serde_json::to_writer(&mut out, &header).expect("a header always serialises");
    out.push(b'\n');
    if let Ok(doc) = result {
        out.extend_from_slice(doc.text.as_bytes());
    }
    out
}

/// Read what [`encode`] wrote; `None` when it is not that (damaged, truncated,
/// another version, or written for another key).
pub fn decode(bytes: &[u8], key: Option<&str>) -> Option<Result<Extracted, DocError>> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let end = rest.iter().position(|&b| b == b'\n')?;
    let header: Header = serde_json::from_slice(&rest[..end]).ok()?;
    if header.key.as_deref() != key {
        return None;
    }
    let text = &rest[end + 1..];
    match header.body {
        HeaderBody::Error { error } => Some(Err(error)),
        HeaderBody::Text {
            format,
            lines,
            parts,
            meta,
            text_bytes,
        } => {
            if text.len() != text_bytes {
                return None;
            }
            let text = String::from_utf8(text.to_vec()).ok()?;
            Some(Ok(Extracted {
                format,
                text,
                lines,
                parts,
                meta,
            }))
        }
    }
}

impl DocErrorKind {
    pub fn name(self) -> &'static str {
        match self {
            DocErrorKind::Encrypted => "encrypted",
            DocErrorKind::Malformed => "malformed",
            DocErrorKind::TooLarge => "too_large",
            DocErrorKind::Timeout => "timeout",
            DocErrorKind::Cancelled => "cancelled",
            DocErrorKind::Io => "io",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_pages() -> Extracted {
        let mut b = Builder::new(1 << 20);
        b.part(PartKind::Page, 1, None).unwrap();
        b.push("first page\nsecond line").unwrap();
        b.part(PartKind::Page, 2, None).unwrap();
        b.part(PartKind::Page, 3, None).unwrap();
        b.push("third\x07page\r\n").unwrap();
        b.finish(Format::Pdf, Meta::default()).unwrap()
    }

    #[test]
    fn every_part_has_a_line_and_lines_map_to_parts() {
        let doc = two_pages();
        assert_eq!(doc.text, "first page\nsecond line\n\nthird page\n");
        assert_eq!(doc.lines, 4);
        let firsts: Vec<u64> = doc.parts.iter().map(|p| p.first_line).collect();
        assert_eq!(firsts, vec![1, 3, 4]);
        assert_eq!(doc.part_at(2).unwrap().number, 1);
        assert_eq!(doc.part_at(3).unwrap().number, 2);
        assert_eq!(doc.part_at(4).unwrap().number, 3);
        assert_eq!(doc.part_lines(0), (1, 2));
        assert_eq!(doc.part_lines(2), (4, 4));
        assert!(doc.meta.text_layer);
    }

    #[test]
    fn the_text_bound_is_an_error() {
        let mut b = Builder::new(8);
        assert!(b.push("12345").is_ok());
        assert_eq!(b.push("67890").unwrap_err().kind, DocErrorKind::TooLarge);
    }

    #[test]
    fn pages_without_text_mean_no_text_layer() {
        let mut b = Builder::new(100);
        b.part(PartKind::Page, 1, None).unwrap();
        b.push("  \n").unwrap();
        b.part(PartKind::Page, 2, None).unwrap();
        assert!(
            !b.finish(Format::Pdf, Meta::default())
                .unwrap()
                .meta
                .text_layer
        );
    }

    #[test]
    fn encoding_round_trips_and_checks_the_key() {
        let doc = two_pages();
        let bytes = encode(&Ok(doc.clone()), Some("k1"));
        assert_eq!(decode(&bytes, Some("k1")), Some(Ok(doc)));
        assert_eq!(decode(&bytes, Some("k2")), None);
        assert_eq!(decode(&bytes[..bytes.len() - 1], Some("k1")), None);
        let err = Err(DocError::new(DocErrorKind::Encrypted, "needs a password"));
        assert_eq!(decode(&encode(&err, None), None), Some(err));
        assert_eq!(decode(b"something else", None), None);
    }

    #[test]
    fn sheets_are_found_by_name_then_number() {
        let mut b = Builder::new(100);
        b.part(PartKind::Sheet, 1, Some("Q3".into())).unwrap();
        b.push("a\tb").unwrap();
        b.part(PartKind::Sheet, 2, Some("Totals".into())).unwrap();
        let doc = b.finish(Format::Xlsx, Meta::default()).unwrap();
        assert_eq!(doc.sheet("Q3"), Some(0));
        assert_eq!(doc.sheet("totals"), Some(1));
        assert_eq!(doc.sheet("2"), Some(1));
        assert_eq!(doc.sheet("Q4"), None);
    }
}
