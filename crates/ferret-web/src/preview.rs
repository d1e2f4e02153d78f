//! What the preview pane shows for a path, through the same file-layer calls
//! as the `read` and `list` tools: a window of text with its line numbers and
//! the search's matches marked, an image (its bytes come from the image
//! route), a binary described, a folder listed. Refusals (secrets, paths out
//! of the roots) are the file layer's own errors.

use ferret_fs::{ErrorCode, ListRequest, ReadOutcome, ReadRequest, Roots, TextWindow};
use serde_json::{Value, json};

use crate::{error::ApiError, marks::Marker, search};

/// Lines of text in one preview window (the response budget may cut it first).
pub const WINDOW_LINES: u64 = 500;
/// Entries of a folder shown.
pub const FOLDER_ENTRIES: usize = 500;

pub struct PreviewRequest {
    pub path: String,
    pub start_line: u64,
    pub marker: Option<Marker>,
    /// Offer a download link (`--ui-downloads`).
    pub downloads: bool,
}

pub fn preview(roots: &Roots, request: &PreviewRequest) -> Result<Value, ApiError> {
    let path = request.path.as_str();
    if roots.entry_kind(path) == Some(ferret_query::Kind::Dir) {
        return folder(roots, path);
    }
    let read = ReadRequest {
        start_line: request.start_line.max(1),
        max_lines: WINDOW_LINES,
        ..ReadRequest::default()
    };
    match roots.read(path, &read) {
        Ok(ReadOutcome::Text(window)) => Ok(text(roots, window, request)),
        Ok(ReadOutcome::Image(image)) => Ok(json!({
            "kind": "image",
            "path": image.path,
            "abs": search::absolute(roots, &image.path),
            "format": image.format.name(),
            "width": image.width,
            "height": image.height,
            "size": image.bytes.len(),
            "modified": image.modified,
            "src": format!("/ui/api/image?path={}", encode(&image.path)),
            "download": download(request, &image.path),
        })),
        Err(e) if e.code == ErrorCode::BinaryContent => {
            let detail = |key: &str| {
                e.details
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| v.clone())
            };
            let shown = path.trim().to_string();
            Ok(json!({
                "kind": "binary",
                "path": shown,
                "abs": search::absolute(roots, &shown),
                "type": detail("type"),
                "size": detail("size").and_then(|s| s.parse::<u64>().ok()),
                "download": download(request, &shown),
            }))
        }
        // A symlink to a folder reads as a folder.
        Err(e) if e.code == ErrorCode::IsDirectory => folder(roots, path),
        Err(e) => Err(e.into()),
    }
}

fn text(roots: &Roots, w: TextWindow, request: &PreviewRequest) -> Value {
    let mut matches = 0;
    let lines: Vec<Value> = w
        .text
        .split_inclusive('\n')
        .zip(w.start_line..)
        .map(|(line, n)| {
            let line = line.trim_end_matches('\n').trim_end_matches('\r');
            let marks = request
                .marker
                .as_ref()
                .map(|m| m.marks(line))
                .unwrap_or_default();
            matches += marks.len();
            if marks.is_empty() {
                json!({"n": n, "t": line})
            } else {
                json!({"n": n, "t": line, "m": marks})
            }
        })
        .collect();
    let clipped: Vec<u64> = w.clipped_lines.iter().map(|c| c.line).collect();
    // A document (PDF, DOCX …) previews as its text, as `read` returns it.
    let document = w.document.as_ref().map(|d| {
        json!({"format": d.format, "part_kind": d.part_kind, "parts": d.parts, "title": d.title})
    });
    json!({
        "document": document,
        "kind": "text",
        "abs": search::absolute(roots, &w.path),
        "path": w.path,
        "size": w.size,
        "modified": w.modified,
        "encoding": w.encoding,
        "line_endings": w.line_endings,
        "total_lines": w.total_lines,
        "start_line": w.start_line,
        "end_line": w.end_line,
        "next_start_line": w.next_start_line,
        "truncated": w.truncated,
        "clipped_lines": clipped,
        "matches": matches,
        "lines": lines,
        "download": download(request, &w.path),
    })
}

fn folder(roots: &Roots, path: &str) -> Result<Value, ApiError> {
    let listed = roots.list(
        path,
        &ListRequest {
            depth: 1,
            limit: FOLDER_ENTRIES,
            sort: ferret_fs::SortKey::Kind,
            ..ListRequest::default()
        },
    )?;
    let entries: Vec<Value> = listed
        .entries
        .iter()
        .map(|e| {
            json!({
                "path": e.path,
                "name": search::split(&e.path).1,
                "kind": e.kind,
                "size": e.size,
                "modified": e.modified,
            })
        })
        .collect();
    Ok(json!({
        "kind": "folder",
        "path": listed.path,
        "abs": search::absolute(roots, &listed.path),
        "summary": listed.summary,
        "total": listed.total,
        "truncated": listed.truncated,
        "entries": entries,
    }))
}

fn download(request: &PreviewRequest, shown: &str) -> Option<String> {
    request
        .downloads
        .then(|| format!("/ui/api/download?path={}", encode(shown)))
}

/// A query-string value, percent-encoded.
pub fn encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}
