//! `read`: a window of a text file, or an image, never a whole huge file.

use std::io::Read;

use sha2::{Digest, Sha256};

use crate::{
    document::{DocumentWindow, Selection},
    error::{ErrorCode, FsError, FsResult},
    roots::{Roots, Target, rfc3339},
    sniff::{self, Content, ImageFormat},
    text::{self, ClippedLine, Window},
};

/// Bytes read before deciding what a file is and, for large files, its encoding.
const HEAD_BYTES: usize = 64 * 1024;

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
                .unwrap_or(limits.max_response_bytes)
                .min(limits.max_response_bytes),
            max_line_chars: self.max_line_chars.unwrap_or(limits.max_line_chars).max(1),
            line_numbers: self.line_numbers,
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

/// The checksum format shared by `read`, `stat` and (later) the write tools.
pub fn checksum(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest.iter() {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Read up to `limit` bytes (fewer only at the end of the file).
pub(crate) fn read_up_to<R: Read>(reader: &mut R, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(limit.min(1 << 20));
    reader.take(limit as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

pub fn image_dimensions(bytes: &[u8]) -> (Option<u64>, Option<u64>) {
    match imagesize::blob_size(bytes) {
        Ok(size) => (Some(size.width as u64), Some(size.height as u64)),
        Err(_) => (None, None),
    }
}

impl Roots {
    /// Read a window of a text file, or an image as image data.
    pub fn read(&self, input: &str, request: &ReadRequest) -> FsResult<ReadOutcome> {
        let shown = input.trim();
        let (root, rel) = match self.resolve(input)? {
            Target::AllRoots => {
                return Err(
                    FsError::new(ErrorCode::IsDirectory, "`.` is the list of roots")
                        .hint("call `list` to see them")
                        .suggest("list"),
                );
            }
            Target::In(root, rel) => (root, rel),
        };
        let mut opened = self.open_for_content(root, &rel, shown)?;
        let path = self.display(root, &rel);
        let size = opened.metadata.len();
        let modified = rfc3339(opened.metadata.modified());
        let limits = &self.policy.limits;
        let io_err = |e: std::io::Error| FsError::from_io(&e, shown);
        let mut head = read_up_to(&mut opened.file, HEAD_BYTES).map_err(io_err)?;
        if let Some(format) = self.document_format(opened.real.as_str(), &head) {
            return self
                .read_document(opened, format, path, shown, request)
                .map(ReadOutcome::Text);
        }
        if request.selection.is_some() {
            return Err(FsError::new(
                ErrorCode::NotFound,
                format!("`{shown}` is not a document: it has no pages or sheets"),
            )
            .hint("`pages` and `sheet` are for PDF, Office, OpenDocument and EPUB files; read text by `start_line`"));
        }

        match sniff::classify(&head) {
            Content::Image(format) => {
                if size > limits.max_image_bytes {
                    return Err(FsError::new(
                        ErrorCode::TooLarge,
                        format!(
                            "`{shown}` is a {} image of {size} bytes, over the {} byte image limit",
                            format.name(),
                            limits.max_image_bytes
                        ),
                    )
                    .hint("`stat` gives its dimensions; the operator can raise --max-image-bytes")
                    .suggest("stat"));
                }
                let rest = read_up_to(&mut opened.file, limits.max_image_bytes as usize)
                    .map_err(io_err)?;
                head.extend_from_slice(&rest);
                let (width, height) = image_dimensions(&head);
                return Ok(ReadOutcome::Image(Image {
                    path,
                    format,
                    checksum: checksum(&head),
                    bytes: head,
                    width,
                    height,
                    modified,
                }));
            }
            Content::Binary(kind) => {
                return Err(FsError::new(
                    ErrorCode::BinaryContent,
                    format!("`{shown}` is binary ({kind}, {size} bytes), not text"),
                )
                .hint("`stat` gives its size and checksum; binary content is not returned")
                .suggest("stat")
                .detail("size", size.to_string())
                .detail("type", kind));
            }
            Content::Text => {}
        }

        let window = request.window(request.start_line.max(1), u64::MAX, limits);

        let whole = size <= limits.max_file_bytes;
        let (scan, detected, checksum) = if whole {
            let rest =
                read_up_to(&mut opened.file, limits.max_file_bytes as usize + 1).map_err(io_err)?;
            head.extend_from_slice(&rest);
            let detected = sniff::detect_encoding(&head, true);
            let scan = text::scan_lines(&head[..], &detected, &window, true).map_err(io_err)?;
            (scan, detected, Some(checksum(&head)))
        } else {
            // Large file: decode from the start but stop once the window is known.
            let detected = sniff::detect_encoding(&head, false);
            let reader = std::io::Cursor::new(head).chain(opened.file);
            let scan = text::scan_lines(reader, &detected, &window, false).map_err(io_err)?;
            (scan, detected, None)
        };
        let encoding = if scan.replaced && detected.encoding == encoding_rs::UTF_8 {
            "utf-8-lossy".to_string()
        } else {
            detected.label.clone()
        };
        Ok(ReadOutcome::Text(TextWindow {
            path,
            size,
            total_lines: scan.total_lines,
            start_line: window.start,
            end_line: scan.last_line,
            next_start_line: scan.next_start_line,
            truncated: scan.truncated,
            encoding,
            line_endings: scan.line_endings(),
            clipped_lines: scan.clipped,
            text: scan.text,
            modified,
            checksum,
            document: None,
        }))
    }
}
