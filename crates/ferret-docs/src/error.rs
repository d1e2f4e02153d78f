//! Why a document gave no text. Each kind is a fact about that one file (or,
//! for `Timeout` and `Cancelled`, about that one attempt): never a failure of
//! the server.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocErrorKind {
    /// Needs a password (ferret does not guess or ask for one).
    Encrypted,
    /// Not the format it claims, damaged, or beyond what the parser understands.
    Malformed,
    /// Over a bound: input size, unpacked size (a zip bomb), text size, memory.
    TooLarge,
    /// Took longer than the per-document time bound.
    Timeout,
    /// The caller stopped waiting.
    Cancelled,
    /// The file could not be read, or the extractor could not be started.
    Io,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocError {
    pub kind: DocErrorKind,
    /// Says what happened to the document, not to whom; never holds its text.
    pub message: String,
}

impl DocError {
    pub fn new(kind: DocErrorKind, message: impl Into<String>) -> DocError {
        DocError {
            kind,
            message: message.into(),
        }
    }

    pub fn malformed(message: impl Into<String>) -> DocError {
        DocError::new(DocErrorKind::Malformed, message)
    }

    pub fn too_large(message: impl Into<String>) -> DocError {
        DocError::new(DocErrorKind::TooLarge, message)
    }

    /// Whether another attempt could give another answer (so it is not cached).
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind,
            DocErrorKind::Timeout | DocErrorKind::Cancelled | DocErrorKind::Io
        )
    }
}

impl std::fmt::Display for DocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DocError {}

/// A parser's own error, cut short: parsers sometimes quote the bytes they
/// choked on, and those belong to the file.
pub(crate) fn brief(err: impl std::fmt::Display) -> String {
    let text = err.to_string();
    let mut out: String = text
        .chars()
        .take(160)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > 160 {
        out.push('…');
    }
    out
}
