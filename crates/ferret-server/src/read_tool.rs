//! `read`: its arguments, and its answer (a text window, a document's
//! window with its parts, or an image), rendered from the file layer's.

use base64::Engine;
use ferret_fs::{ReadOutcome, ReadRequest, Roots, Selection};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::{Value, json};

use crate::{
    args::{ArgResult, Args},
    render::{self, frame, human_size},
};

/// What `read` gives: text (or an image, or a document), a file's outline,
/// or one definition's lines.
pub enum ReadMode {
    Window,
    Outline,
    /// The definition of a name; with a line, the one whose lines hold it
    /// (how one of `NOT_UNIQUE`'s candidates is read).
    Symbol(String, Option<u64>),
}

/// `read`'s arguments: the path, the request and the mode.
pub fn parse_read(args: Option<&JsonObject>) -> ArgResult<(String, ReadRequest, ReadMode)> {
    let a = Args::new(
        "read",
        args,
        &[
            "path",
            "start_line",
            "end_line",
            "max_lines",
            "line_numbers",
            "checksum",
            "max_line_chars",
            "pages",
            "sheet",
            "symbol",
            "outline",
        ],
        r#"{"path":"src/main.rs","start_line":1,"max_lines":200}"#,
    )?;
    let path = a.required_string("path")?;
    let start_arg = a.signed("start_line", -(u32::MAX as i64), i64::MAX)?;
    let start_given = start_arg.is_some();
    let (start_line, from_end) = match start_arg {
        None => (1, None),
        Some(0) => {
            return Err(a.conflict(
                "start_line",
                "lines count from 1 (`start_line: 1`), or back from the end (`start_line: -100`: the last 100 lines)",
            ));
        }
        Some(n) if n < 0 => (1, Some(n.unsigned_abs())),
        Some(n) => (n as u64, None),
    };
    let end_line = a.integer("end_line", 1, u64::MAX)?;
    let max_lines = a.integer("max_lines", 1, 100_000)?;
    if end_line.is_some() && max_lines.is_some() {
        return Err(a.conflict("end_line", "give `end_line` or `max_lines`, not both"));
    }
    if end_line.is_some() && from_end.is_some() {
        return Err(a.conflict(
            "end_line",
            "a window from the end takes `max_lines`, not `end_line`: e.g. start_line -200, max_lines 100",
        ));
    }
    if let Some(end) = end_line
        && end < start_line
    {
        return Err(a.conflict(
            "end_line",
            &format!("`end_line` ({end}) is before `start_line` ({start_line})"),
        ));
    }
    let selection = match (a.string("pages")?, a.string("sheet")?) {
        (Some(_), Some(_)) => {
            return Err(a.conflict("sheet", "give `pages` or `sheet`, not both"));
        }
        (Some(pages), None) => Some(Selection::parse_pages(&pages).map_err(|e| {
            a.conflict(
                "pages",
                &format!("`pages` `{pages}`: {e}; give e.g. \"3\" or \"3-5\""),
            )
        })?),
        (None, Some(sheet)) => Some(Selection::Sheet(sheet)),
        (None, None) => None,
    };
    let outline = a.boolean("outline")?.unwrap_or(false);
    let symbol = a.string("symbol")?;
    let mode = match (outline, symbol) {
        (true, Some(_)) => {
            return Err(a.conflict(
                "symbol",
                "give `symbol` (one definition's lines) or `outline` (every definition), not both",
            ));
        }
        (true, None) => ReadMode::Outline,
        (false, Some(name)) => ReadMode::Symbol(name, start_given.then_some(start_line)),
        (false, None) => ReadMode::Window,
    };
    if !matches!(mode, ReadMode::Window) {
        if selection.is_some() {
            return Err(a.conflict(
                "pages",
                "`pages` and `sheet` are for documents, not source symbols",
            ));
        }
        if from_end.is_some() {
            return Err(a.conflict("start_line", "outlines and symbols count lines from 1"));
        }
    }
    if matches!(mode, ReadMode::Symbol(..)) && (end_line.is_some() || max_lines.is_some()) {
        return Err(a.conflict(
            "symbol",
            "`symbol` chooses the lines itself: give `symbol` (and `start_line` to pick one of several), not a window (end_line, max_lines)",
        ));
    }
    let request = ReadRequest {
        selection,
        start_line,
        end_line,
        max_lines: max_lines.unwrap_or(2000),
        max_bytes: None,
        max_line_chars: a.integer("max_line_chars", 1, 1 << 20)?.map(|n| n as usize),
        line_numbers: a.boolean("line_numbers")?.unwrap_or(false),
        from_end,
        checksum: a.boolean("checksum")?.unwrap_or(false),
        count_lines: true,
        meter: None,
    };
    Ok((path, request, mode))
}

pub fn read(roots: &Roots, path: &str, request: &ReadRequest) -> CallToolResult {
    match roots.read(path, request) {
        Err(e) => render::tool_error(&e),
        Ok(ReadOutcome::Text(w)) => {
            // Lines are numbered from 1, or, in the tail of a large file that
            // was not counted, back from its end (-1 is the last line).
            let shown = |n: u64| w.numbering.shown(n);
            let from_end = matches!(w.numbering, ferret_fs::text::Numbering::FromEnd(_));
            let total = match w.total_lines {
                Some(n) => n.to_string(),
                None if from_end => {
                    "? (counted back from the end: a large file's tail is read from its end)".into()
                }
                None => "? (large file, not counted in time)".into(),
            };
            let mut header = format!(
                "{} · lines {}{}{} of {total} · {} · {} · {}",
                w.path,
                shown(w.start_line),
                if from_end { " to " } else { "-" },
                shown(w.end_line),
                w.encoding,
                w.line_endings,
                human_size(w.size),
            );
            if let Some(sum) = &w.checksum {
                header.push_str(" · ");
                header.push_str(sum);
            }
            if let Some(d) = &w.document {
                header.push_str(&document_header(d));
            }
            if w.end_line < w.start_line {
                header.push_str(&format!(
                    "\nstart_line {} is past the end of the file",
                    shown(w.start_line)
                ));
            }
            if !w.clipped_lines.is_empty() {
                let list: Vec<String> = w
                    .clipped_lines
                    .iter()
                    .take(10)
                    .map(|c| format!("{} ({} chars)", shown(c.line), c.chars))
                    .collect();
                header.push_str(&format!(
                    "\nclipped long lines: {}{}",
                    list.join(", "),
                    if w.clipped_lines.len() > 10 {
                        ", …"
                    } else {
                        ""
                    }
                ));
            }
            let mut text = header;
            text.push('\n');
            text.push_str(&frame(&w.text));
            if let Some(next) = w.next_start_line {
                text.push_str(&format!("\nmore: read with start_line {}", shown(next)));
            }
            // What an agent needs to use the window; the rest only when it is
            // not the usual (utf-8, lf) or when it can be used (the checksum,
            // for `edit`, when something is writable). `stat` has the rest.
            let writable = roots.roots().iter().any(|r| r.writable);
            let clipped: Vec<Value> = w
                .clipped_lines
                .iter()
                .map(|c| json!({"line": shown(c.line), "chars": c.chars}))
                .collect();
            let structured = json!({
                "path": w.path,
                "text": w.text,
                "start_line": shown(w.start_line),
                "end_line": shown(w.end_line),
                "total_lines": w.total_lines,
                "next_start_line": w.next_start_line.map(shown),
                "truncated": w.truncated,
                "clipped_lines": (!clipped.is_empty()).then_some(clipped),
                "encoding": (w.encoding != "utf-8").then_some(&w.encoding),
                "line_endings": (w.line_endings != "lf").then_some(w.line_endings),
                "checksum": w.checksum.as_ref().filter(|_| writable || request.checksum),
                "data_note": render::data_note("text"),
            });
            let mut structured = structured;
            if let Some(d) = &w.document {
                add_document(&mut structured, d);
            }
            render::ok(render::compact(structured), text)
        }
        Ok(ReadOutcome::Image(img)) => {
            let size = img.bytes.len();
            let data = base64::engine::general_purpose::STANDARD.encode(&img.bytes);
            let structured = render::compact(json!({
                "path": img.path,
                "size": size,
                "image": {"format": img.format.name(), "width": img.width, "height": img.height},
            }));
            let text = format!(
                "{} · {} image {}x{} · {}",
                img.path,
                img.format.name(),
                img.width.map_or("?".into(), |w| w.to_string()),
                img.height.map_or("?".into(), |h| h.to_string()),
                human_size(size as u64)
            );
            render::ok_with(
                structured,
                vec![ContentBlock::image(data, img.format.mime())],
                text,
            )
        }
    }
}

/// The document's facts in the text copy: format, where the window starts,
/// which parts begin inside it.
fn document_header(d: &ferret_fs::DocumentWindow) -> String {
    let mut out = format!("\n{} document", d.format);
    if let Some(kind) = d.part_kind {
        let s = if d.parts == 1 { "" } else { "s" };
        out.push_str(&format!(" · {} {kind}{s}", d.parts));
    }
    if !d.sheets.is_empty() {
        out.push_str(&format!(" ({})", d.sheets.join(", ")));
    }
    if let Some(sel) = &d.selected {
        out.push_str(&format!(" · selected {sel}"));
    }
    if let Some(first) = &d.first {
        out.push_str(&format!(" · starts on {}", first.describe()));
    }
    if !d.starts.is_empty() {
        let list: Vec<String> = d
            .starts
            .iter()
            .take(20)
            .map(|s| format!("{} at line {}", s.part.describe(), s.line))
            .collect();
        out.push_str(&format!(
            "\nthen: {}{}",
            list.join(", "),
            if d.starts.len() > 20 { ", …" } else { "" }
        ));
    }
    out
}

fn add_document(structured: &mut Value, d: &ferret_fs::DocumentWindow) {
    structured["format"] = json!(d.format);
    if let Some(first) = &d.first {
        let part = render::part_json(first);
        if let Value::Object(map) = part {
            for (k, v) in map {
                structured[k] = v;
            }
        }
    }
    if let Some(kind) = d.part_kind {
        structured[format!("{kind}s")] = if kind == "sheet" {
            json!(d.sheets)
        } else {
            json!(d.parts)
        };
    }
    let starts: Vec<Value> = d
        .starts
        .iter()
        .map(|s| {
            let mut v = render::part_json(&s.part);
            v["line"] = json!(s.line);
            v
        })
        .collect();
    if !starts.is_empty() {
        structured["part_starts"] = json!(starts);
    }
    if let Some(sel) = &d.selected {
        structured["selected"] = json!(sel);
    }
    if let Some(t) = &d.title {
        structured["title"] = json!(t);
    }
    if let Some(a) = &d.author {
        structured["author"] = json!(a);
    }
}
