//! One document's bytes to its text, whatever the format: the dispatch, and
//! the guard that turns a parser's panic into an error for that file.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::{DocError, Extracted, Format, Limits, epub, odf, office, pdf, sheets};

/// Extract `bytes` (the whole file) as `format`, within `limits`' text and
/// unpacking bounds. This runs the parsers in the calling process: time and
/// memory are bounded only when it runs in the extractor process
/// ([`crate::Isolation::Process`]).
pub fn extract(bytes: &[u8], format: Format, limits: &Limits) -> Result<Extracted, DocError> {
    if bytes.len() as u64 > limits.max_input_bytes {
        return Err(DocError::too_large(format!(
            "it is {} MB, over the {} MB bound for documents",
            bytes.len() >> 20,
            limits.max_input_bytes >> 20
        )));
    }
    let run = || match format {
        Format::Pdf => pdf::pdf(bytes, limits),
        Format::Docx => office::docx(bytes, limits),
        Format::Pptx => office::pptx(bytes, limits),
        Format::Xlsx => sheets::xlsx(bytes, limits),
        Format::Xls => sheets::xls(bytes, limits),
        Format::Ods => sheets::ods(bytes, limits),
        Format::Odt => odf::odt(bytes, limits),
        Format::Odp => odf::odp(bytes, limits),
        Format::Epub => epub::epub(bytes, limits),
    };
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(result) => result,
        Err(_) => Err(DocError::malformed(format!(
            "the {format} parser gave up on it (the file is probably damaged)"
        ))),
    }
}
