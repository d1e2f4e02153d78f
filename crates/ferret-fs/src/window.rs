//! What `read` takes and gives: the request, the window of text (with its
//! document parts when the file is a document), an image. Their own module so
//! that plain reading (`read`) and document reading (`document`) share them
//! without importing each other.

use ferret_docs::{Extracted, PartKind};

use std::sync::Arc;

use crate::{
    Meter,
    sniff::ImageFormat,
    text::{ClippedLine, Numbering, Window},
};

/// A part of a document as agents see it: a page, slide or chapter number,
/// or a sheet's name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum PartRef {
    Number(u32),
    Name(String),
}

/// Which part holds a line: `("page", 3)`, `("sheet", "Q3")`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartOf {
    pub kind: &'static str,
    pub part: PartRef,
    /// A sheet's row (its line within the sheet).
    pub row: Option<u64>,
}

/// Where a part begins inside a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartStart {
    pub part: PartOf,
    pub line: u64,
}

/// What a document window adds to a text window.
#[derive(Debug, Clone)]
pub struct DocumentWindow {
    pub format: &'static str,
    /// `page`, `slide`, `sheet` or `chapter`; `None` for flowing text (DOCX, ODT).
    pub part_kind: Option<&'static str>,
    /// Pages, slides, sheets or chapters in the document.
    pub parts: u32,
    pub sheets: Vec<String>,
    /// The part of the window's first line.
    pub first: Option<PartOf>,
    /// Parts that begin after the window's first line, inside the window.
    pub starts: Vec<PartStart>,
    /// What `pages` / `sheet` selected, as asked.
    pub selected: Option<String>,
    pub title: Option<String>,
    pub author: Option<String>,
}

/// What `stat` says of a document.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DocumentInfo {
    pub format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slides: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chapters: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sheets: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    pub text_layer: bool,
    /// Why the text cannot be read (encrypted, malformed, …), when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// Which part of a document `read` should cut the window from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Pages (slides, chapters) `first..=last`, 1-based.
    Pages(u32, u32),
    Sheet(String),
}

impl Selection {
    /// `"3"`, `"3-5"` or `"3-"` (to the end).
    pub fn parse_pages(s: &str) -> Result<Selection, String> {
        let s = s.trim();
        let number = |t: &str| t.trim().parse::<u32>().ok().filter(|&n| n >= 1);
        let (first, last) = match s.split_once('-') {
            None => {
                let n = number(s).ok_or("not a page number")?;
                (n, n)
            }
            Some((a, "")) => (number(a).ok_or("not a page number")?, u32::MAX),
            Some((a, b)) => (
                number(a).ok_or("not a page number")?,
                number(b).ok_or("not a page number")?,
            ),
        };
        if last < first {
            return Err("the range ends before it starts".into());
        }
        Ok(Selection::Pages(first, last))
    }
}

/// The part of `doc` that holds `line`, as agents see it.
pub fn part_of(doc: &Extracted, line: u64) -> Option<PartOf> {
    let part = doc.part_at(line)?;
    Some(PartOf {
        kind: part.kind.name(),
        part: match (&part.kind, &part.name) {
            (PartKind::Sheet, Some(name)) => PartRef::Name(name.clone()),
            _ => PartRef::Number(part.number),
        },
        row: (part.kind == PartKind::Sheet).then(|| line - part.first_line + 1),
    })
}

impl PartOf {
    /// `page 3`, `sheet Q3 row 12`.
    pub fn describe(&self) -> String {
        let part = match &self.part {
            PartRef::Number(n) => n.to_string(),
            PartRef::Name(s) => s.clone(),
        };
        match self.row {
            Some(row) => format!("{} {part} row {row}", self.kind),
            None => format!("{} {part}", self.kind),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ReadRequest {
    pub start_line: u64,
    /// Last line wanted (inclusive); `None` means `start_line + max_lines - 1`.
    pub end_line: Option<u64>,
    pub max_lines: u64,
    /// Overrides the server's response budget downwards.
    pub max_bytes: Option<usize>,
    /// Overrides the server's long-line limit.
    pub max_line_chars: Option<usize>,
    pub line_numbers: bool,
    /// For documents: the pages (slides, chapters) or the sheet to read.
    pub selection: Option<Selection>,
    /// The window starts this many lines before the end (`start_line: -100`);
    /// `start_line` is then not used.
    pub from_end: Option<u64>,
    /// The checksum of the whole file even when it is larger than
    /// `max_file_bytes` (read to its end for it).
    pub checksum: bool,
    /// Count the lines of a file larger than `max_file_bytes` too: a
    /// streaming pass to its end, given up after [`COUNT_TIME`]. Not done
    /// for tails, which are read from the end.
    pub count_lines: bool,
    /// Ticked with the bytes read while counting a large file's lines, and
    /// read for its cancel flag.
    pub meter: Option<Arc<Meter>>,
}

impl ReadRequest {
    /// The window this request asks for from `start` (its own end, or
    /// `max_lines`, never past `last`), within the server's budgets.
    pub(crate) fn window(&self, start: u64, last: u64, limits: &crate::Limits) -> Window {
        let end = match self.end_line {
            Some(end) => end,
            None => start.saturating_add(self.max_lines.max(1) - 1),
        };
        Window {
            start,
            end: end.min(last),
            max_bytes: self
                .max_bytes
                .unwrap_or(limits.answer_bytes())
                .min(limits.answer_bytes()),
            max_line_chars: self.max_line_chars.unwrap_or(limits.max_line_chars).max(1),
            line_numbers: self.line_numbers,
            keep_last: self.from_end.is_some(),
            numbering: Numbering::FromStart,
        }
    }

    /// Where a window over lines `first..=last` starts.
    pub(crate) fn start(&self, first: u64, last: u64) -> u64 {
        match self.from_end {
            Some(n) => (last + 1).saturating_sub(n).max(first),
            None => self.start_line.max(first),
        }
    }
}

impl Default for ReadRequest {
    fn default() -> Self {
        ReadRequest {
            start_line: 1,
            end_line: None,
            max_lines: 2000,
            max_bytes: None,
            max_line_chars: None,
            line_numbers: false,
            selection: None,
            from_end: None,
            checksum: false,
            count_lines: false,
            meter: None,
        }
    }
}

#[derive(Debug)]
pub struct TextWindow {
    pub path: String,
    pub text: String,
    pub size: u64,
    /// `None` when the file is larger than `max_file_bytes` and was not read to the end.
    pub total_lines: Option<u64>,
    pub start_line: u64,
    pub end_line: u64,
    pub next_start_line: Option<u64>,
    pub truncated: bool,
    pub clipped_lines: Vec<ClippedLine>,
    pub encoding: String,
    pub line_endings: &'static str,
    pub modified: Option<String>,
    /// `sha256:<hex>` of the whole file; `None` when the file was not read whole
    /// (and for documents, whose text is not the file's bytes).
    pub checksum: Option<String>,
    /// What a document's window is (format, pages, sheets); `None` for text files.
    pub document: Option<Box<DocumentWindow>>,
    /// How the window's line numbers (`start_line`, `end_line`,
    /// `next_start_line`, clipped lines) are shown: `FromEnd` for the tail of
    /// a large file whose lines were not counted, where 1 is the first line
    /// of the tail and `numbering.shown(n)` the negative number to show.
    pub numbering: Numbering,
}

#[derive(Debug)]
pub struct Image {
    pub path: String,
    pub format: ImageFormat,
    pub bytes: Vec<u8>,
    pub width: Option<u64>,
    pub height: Option<u64>,
    pub modified: Option<String>,
    pub checksum: String,
}

#[derive(Debug)]
pub enum ReadOutcome {
    Text(TextWindow),
    Image(Image),
}
