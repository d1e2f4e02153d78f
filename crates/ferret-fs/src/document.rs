//! Documents (PDF, Office, OpenDocument, EPUB) read as text: the file is
//! opened through its root's handle like any other, its text comes from
//! `ferret-docs` (cached, or extracted in a bounded process), and a window of
//! it is cut with the same pass as a text file's.

use std::sync::Arc;

use ferret_docs::{DocError, DocErrorKind, Extracted, Format, Key, PartKind};

pub use crate::window::{
    DocumentInfo, DocumentWindow, PartOf, PartRef, PartStart, Selection, part_of,
};
use crate::window::{ReadRequest, TextWindow};
use crate::{
    error::{ErrorCode, FsError, FsResult},
    facts::rfc3339,
    roots::{OpenedFile, Roots},
    sniff, text,
};

/// The document format of a file whose name is `name` and whose content
/// starts with `head`, when this server reads documents.
pub(crate) fn document_format(roots: &Roots, name: &str, head: &[u8]) -> Option<Format> {
    roots.documents.as_ref()?;
    Format::detect(name, head)
}

/// The text of an opened document, from the cache or extracted.
pub(crate) fn document_text(
    roots: &Roots,
    opened: OpenedFile,
    format: Format,
    shown: &str,
    stop: &(dyn Fn() -> bool + Sync),
) -> FsResult<Arc<Extracted>> {
    let Some(docs) = &roots.documents else {
        return Err(FsError::new(
            ErrorCode::BinaryContent,
            format!("`{shown}` is a {format} document; this server does not read documents"),
        ));
    };
    let file = opened.file.into_std();
    let key = Key::of(&file).map_err(|e| FsError::from_io(&e, shown))?;
    docs.text(file, key, format, stop)
        .map_err(|e| doc_error(&e, format, shown))
}

pub(crate) fn read_document(
    roots: &Roots,
    opened: OpenedFile,
    format: Format,
    path: String,
    shown: &str,
    request: &ReadRequest,
) -> FsResult<TextWindow> {
    let size = opened.metadata.len();
    let modified = rfc3339(opened.metadata.modified());
    let doc = document_text(roots, opened, format, shown, &|| false)?;
    if !doc.meta.text_layer {
        return Err(no_text(&doc, shown));
    }
    let (first, last) = match &request.selection {
        None => (1, doc.lines.max(1)),
        Some(sel) => select(&doc, sel, shown)?,
    };
    let window = request.window(request.start(first, last), last, &roots.policy.limits);
    let utf8 = sniff::detect_encoding(b"", true);
    let scan = text::scan_lines(doc.text.as_bytes(), &utf8, &window, false)
        .map_err(|e| FsError::from_io(&e, shown))?;
    let next = scan.next_start_line.filter(|&n| n <= last);
    let starts = doc
        .parts
        .iter()
        .filter(|p| p.first_line > window.start && p.first_line <= scan.last_line)
        .filter_map(|p| {
            Some(PartStart {
                part: part_of(&doc, p.first_line)?,
                line: p.first_line,
            })
        })
        .collect();
    let sheets = doc
        .parts
        .iter()
        .filter(|p| p.kind == PartKind::Sheet)
        .filter_map(|p| p.name.clone())
        .collect();
    let document = DocumentWindow {
        format: format.name(),
        part_kind: format.part_kind().map(PartKind::name),
        parts: doc.parts.len() as u32,
        sheets,
        first: part_of(&doc, window.start),
        starts,
        selected: request.selection.as_ref().map(|s| match s {
            Selection::Pages(a, b) if a == b => format!("{} {a}", part_word(format)),
            Selection::Pages(a, u32::MAX) => format!("{}s {a}-", part_word(format)),
            Selection::Pages(a, b) => format!("{}s {a}-{b}", part_word(format)),
            Selection::Sheet(name) => format!("sheet {name}"),
        }),
        title: doc.meta.title.clone(),
        author: doc.meta.author.clone(),
    };
    Ok(TextWindow {
        path,
        size,
        total_lines: Some(doc.lines),
        start_line: scan.first_line,
        end_line: scan.last_line,
        next_start_line: next,
        truncated: scan.truncated,
        encoding: "utf-8".into(),
        line_endings: "lf",
        clipped_lines: scan.clipped,
        text: scan.text,
        modified,
        checksum: None,
        document: Some(Box::new(document)),
        numbering: crate::text::Numbering::FromStart,
    })
}

pub(crate) fn stat_document(
    roots: &Roots,
    opened: OpenedFile,
    format: Format,
    shown: &str,
) -> (DocumentInfo, Option<u64>) {
    let mut info = DocumentInfo {
        format: format.name(),
        pages: None,
        slides: None,
        chapters: None,
        sheets: Vec::new(),
        title: None,
        author: None,
        text_layer: false,
        unreadable: None,
    };
    match document_text(roots, opened, format, shown, &|| false) {
        Err(e) => {
            info.unreadable = Some(e.message);
            (info, None)
        }
        Ok(doc) => {
            let count = |kind| doc.parts.iter().filter(|p| p.kind == kind).count() as u32;
            info.pages = doc
                .meta
                .pages
                .filter(|_| !matches!(format, Format::Pptx | Format::Odp));
            info.slides =
                matches!(format, Format::Pptx | Format::Odp).then(|| count(PartKind::Slide));
            info.chapters = (format == Format::Epub).then(|| count(PartKind::Chapter));
            info.sheets = doc.parts.iter().filter_map(|p| p.name.clone()).collect();
            info.title = doc.meta.title.clone();
            info.author = doc.meta.author.clone();
            info.text_layer = doc.meta.text_layer;
            (info, Some(doc.lines))
        }
    }
}

fn part_word(format: Format) -> &'static str {
    format.part_kind().map_or("page", PartKind::name)
}

/// The first and last line of what `selection` names.
fn select(doc: &Extracted, selection: &Selection, shown: &str) -> FsResult<(u64, u64)> {
    match selection {
        Selection::Sheet(name) => {
            let Some(i) = doc.sheet(name) else {
                let names: Vec<&str> = doc.parts.iter().filter_map(|p| p.name.as_deref()).collect();
                let hint = if names.is_empty() {
                    "it has no sheets; `sheet` is for spreadsheets, `pages` for pages, slides and chapters".to_string()
                } else {
                    format!("its sheets: {}", names.join(", "))
                };
                return Err(FsError::new(
                    ErrorCode::NotFound,
                    format!("`{shown}` has no sheet `{name}`"),
                )
                .hint(hint));
            };
            Ok(doc.part_lines(i))
        }
        Selection::Pages(first, last) => {
            let numbered: Vec<usize> = (0..doc.parts.len())
                .filter(|&i| doc.parts[i].kind != PartKind::Sheet)
                .collect();
            if numbered.is_empty() {
                return Err(FsError::new(ErrorCode::NotFound, format!("`{shown}` has no pages")).hint(
                    "its text flows without pages (DOCX, ODT) or is in sheets (use `sheet`); read it by `start_line`",
                ));
            }
            let count = numbered.len() as u32;
            if *first > count {
                return Err(FsError::new(
                    ErrorCode::NotFound,
                    format!(
                        "`{shown}` has {count} {}s; there is no {} {first}",
                        part_word(doc.format),
                        part_word(doc.format)
                    ),
                )
                .hint(format!("ask for pages between 1 and {count}")));
            }
            let a = numbered[*first as usize - 1];
            let b = numbered[(*last).min(count) as usize - 1];
            Ok((doc.part_lines(a).0, doc.part_lines(b).1))
        }
    }
}

fn no_text(doc: &Extracted, shown: &str) -> FsError {
    let parts = doc.parts.len();
    FsError::new(
        ErrorCode::BinaryContent,
        format!(
            "`{shown}` has no text layer: its {parts} {}(s) hold only images (a scan?); ferret does no OCR",
            part_word(doc.format)
        ),
    )
    .hint("`stat` gives its page count and title; ask the user for a version with text")
    .suggest("stat")
    .detail("reason", "no_text")
    .detail("format", doc.format.name())
}

/// A document's failure in the file layer's words.
pub(crate) fn doc_error(e: &DocError, format: Format, shown: &str) -> FsError {
    let message = format!("`{shown}` cannot be read as {format}: {}", e.message);
    let err = match e.kind {
        DocErrorKind::Encrypted => FsError::new(ErrorCode::BinaryContent, message)
            .hint("ferret does not decrypt documents; ask the user for a copy without a password"),
        DocErrorKind::Malformed => FsError::new(ErrorCode::BinaryContent, message)
            .hint("the file may be damaged or only named like a document; `stat` gives its size"),
        DocErrorKind::TooLarge => FsError::new(ErrorCode::TooLarge, message)
            .hint("split the document, or ask the user for the part you need"),
        DocErrorKind::Timeout => FsError::new(ErrorCode::Timeout, message)
            .hint("try again later (other extractions may have been running) or ask for a smaller document"),
        DocErrorKind::Cancelled => FsError::new(ErrorCode::Cancelled, message),
        DocErrorKind::Io => FsError::new(ErrorCode::IoError, message),
    };
    err.detail("reason", e.kind.name())
        .detail("format", format.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_ranges_parse() {
        assert_eq!(Selection::parse_pages("3"), Ok(Selection::Pages(3, 3)));
        assert_eq!(Selection::parse_pages(" 3-5 "), Ok(Selection::Pages(3, 5)));
        assert_eq!(
            Selection::parse_pages("7-"),
            Ok(Selection::Pages(7, u32::MAX))
        );
        assert!(Selection::parse_pages("5-3").is_err());
        assert!(Selection::parse_pages("0").is_err());
        assert!(Selection::parse_pages("a-b").is_err());
    }
}
