//! PDF text with `pdf-extract` (on `lopdf`), page by page. A page the parser
//! fails on (or panics on) is left empty and counted, so one broken page does
//! not lose the document; a document that needs a password says so.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pdf_extract::{Document, Object, PlainTextOutput};

use crate::{
    DocError, DocErrorKind, Extracted, Format, Limits, Meta, PartKind, error::brief,
    extracted::Builder,
};

pub(crate) fn pdf(bytes: &[u8], limits: &Limits) -> Result<Extracted, DocError> {
    let mut doc = Document::load_mem(bytes).map_err(load_error)?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err(encrypted());
    }
    let pages = doc.get_pages();
    let mut out = Builder::new(limits.max_text_bytes);
    let mut unreadable = 0;
    for &number in pages.keys() {
        out.part(PartKind::Page, number, None)?;
        let mut text = String::new();
        let done = catch_unwind(AssertUnwindSafe(|| {
            let mut sink = PlainTextOutput::new(&mut text);
            pdf_extract::output_doc_page(&doc, &mut sink, number)
        }));
        if !matches!(done, Ok(Ok(()))) {
            unreadable += 1;
        }
        let page = text.trim_matches(|c: char| c == '\n' || c == '\r' || c == ' ');
        out.push(page)?;
        if out.len() > limits.max_text_bytes {
            break;
        }
    }
    let meta = Meta {
        title: info(&doc, b"Title"),
        author: info(&doc, b"Author"),
        pages: Some(pages.len() as u32),
        unreadable_parts: unreadable,
        ..Meta::default()
    };
    out.finish(Format::Pdf, meta)
}

fn encrypted() -> DocError {
    DocError::new(
        DocErrorKind::Encrypted,
        "it is an encrypted PDF that needs a password; ferret does not decrypt it",
    )
}

fn load_error(e: pdf_extract::Error) -> DocError {
    let text = e.to_string();
    if text.to_ascii_lowercase().contains("decrypt")
        || text.to_ascii_lowercase().contains("password")
    {
        return encrypted();
    }
    DocError::malformed(format!("it is not a readable PDF ({})", brief(text)))
}

/// An entry of the document information dictionary, as text.
fn info(doc: &Document, key: &[u8]) -> Option<String> {
    let info = match doc.trailer.get(b"Info").ok()? {
        Object::Reference(id) => doc.get_dictionary(*id).ok()?,
        Object::Dictionary(d) => d,
        _ => return None,
    };
    let value = match info.get(key).ok()? {
        Object::Reference(id) => doc.get_object(*id).ok()?,
        other => other,
    };
    let text = pdf_extract::decode_text_string(value).ok()?;
    let text = text.trim().to_string();
    (!text.is_empty()).then_some(text)
}
