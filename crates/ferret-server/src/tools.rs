//! The tools of the contract (`docs/tools.md`): their definitions, and one
//! function per tool that reads arguments, calls the file layer and renders.

use std::sync::Arc;

use base64::Engine;
use ferret_fs::{
    KindFilter, ListRequest, PartOf, ReadOutcome, ReadRequest, Roots, Selection, SortKey,
    list::validate_glob,
};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::{
    args::{ArgResult, Args},
    render::{self, frame, human_size},
};

/// A JSON schema written with `json!`, as rmcp wants it.
pub(crate) fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("tool schemas are objects"),
    }
}

/// An output schema that every result of the tool matches: a success has the
/// `required` fields, a failure (`isError`) has `error` (`{code, message,
/// hint}`, see `render::tool_error`), and may carry partial results beside it.
/// Clients that check `structuredContent` against the schema (the TypeScript
/// SDK, the Inspector) then show a failure's code and message instead of a
/// validation error of their own. Fields are not described one by one: the
/// `tools/list` answer is budgeted, and the README documents the results.
/// Fields at their default (false, empty, none) are left out of results, so
/// none is nullable.
pub(crate) fn output_schema(required: &[&str]) -> Arc<JsonObject> {
    schema(json!({
        "type": "object",
        "anyOf": [{"required": required}, {"required": ["error"]}],
    }))
}

/// A closed set of strings, in the portable form (one `type` with the `enum`).
pub(crate) fn one_of(values: &[&str]) -> Value {
    json!({"type": "string", "enum": values})
}

/// A string, or a list of strings (`exclude`, `glob`, `paths`): `anyOf`, each
/// branch with one `type`, the list with its `items`.
pub(crate) fn string_or_list() -> Value {
    json!({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]})
}

/// Annotations of a tool that only reads. The tool's own `title` carries its name;
/// repeating it in the annotations would only spend `tools/list` bytes.
pub(crate) fn read_only() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

/// The read-only tools, in the order `tools/list` shows them.
pub fn definitions() -> Vec<Tool> {
    let int = |min: u64| json!({"type": "integer", "minimum": min});
    let flag = json!({"type": "boolean"});
    vec![
        Tool::new(
            "read",
            "Read text by line window (paging via next_start_line), an image, or a document's text (PDF, Office, EPUB).",
            schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File, relative to a root"},
                    "start_line": {"type": "integer", "description": "-100: the last 100 lines"},
                    "end_line": int(1),
                    "max_lines": {"type": "integer", "minimum": 1, "maximum": 100000},
                    "line_numbers": flag,
                    "checksum": flag,
                    "max_line_chars": int(1),
                    "pages": {"type": "string"},
                    "sheet": {"type": "string"},
                },
                "required": ["path"],
                "additionalProperties": false,
            })),
        )
        .with_title("Read file")
        .with_raw_output_schema(output_schema(&["path"]))
        .with_annotations(read_only()),
        Tool::new(
            "list",
            "List a folder (depth, glob, kind, sort, paging); `details` adds sizes, times. Hides dotfiles and gitignored entries unless `hidden`/`ignored`.",
            schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "depth": {"type": "integer", "minimum": 1, "maximum": 64},
                    "glob": {"type": "string"},
                    "kind": one_of(&["any", "file", "dir", "symlink"]),
                    "sort": one_of(&["path", "name", "size", "modified", "kind"]),
                    "descending": flag,
                    "details": flag,
                    "offset": int(0),
                    "limit": {"type": "integer", "minimum": 0, "maximum": 2000},
                    "hidden": flag,
                    "ignored": flag,
                },
                "additionalProperties": false,
            })),
        )
        .with_title("List folder")
        .with_raw_output_schema(output_schema(&["entries"]))
        .with_annotations(read_only()),
        Tool::new(
            "stat",
            "Metadata of one or more paths: kind, size, times, and for files lines, encoding, checksum or image size.",
            schema(json!({
                "type": "object",
                "properties": {
                    "paths": {
                        "anyOf": [
                            {"type": "string"},
                            {"type": "array", "items": {"type": "string"}, "maxItems": 100},
                        ]
                    },
                },
                "required": ["paths"],
                "additionalProperties": false,
            })),
        )
        .with_title("File metadata")
        .with_raw_output_schema(output_schema(&["results"]))
        .with_annotations(read_only()),
        Tool::new(
            "diagnostics",
            "Server health: version, roots, index state, limits, per-tool counters.",
            schema(json!({"type": "object", "properties": {}, "additionalProperties": false})),
        )
        .with_title("Diagnostics")
        .with_raw_output_schema(output_schema(&["version"]))
        .with_annotations(read_only()),
    ]
}

/// `read`, with its arguments already checked.
pub fn parse_read(args: Option<&JsonObject>) -> ArgResult<(String, ReadRequest)> {
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
        ],
        r#"{"path":"src/main.rs","start_line":1,"max_lines":200}"#,
    )?;
    let path = a.required_string("path")?;
    let (start_line, from_end) = match a.signed("start_line", -(u32::MAX as i64), i64::MAX)? {
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
    Ok((path, request))
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

/// `{"page": 3}`, `{"sheet": "Q3", "row": 2}`: a part as agents branch on it.
pub(crate) fn part_json(p: &PartOf) -> Value {
    let mut v = json!({ p.kind: p.part });
    if let Some(row) = p.row {
        v["row"] = json!(row);
    }
    v
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
        let part = part_json(first);
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
            let mut v = part_json(&s.part);
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

/// `list`'s arguments: the folder, the request, and whether entries carry
/// their details (asked for, or implied by sorting on size or time).
pub fn parse_list(args: Option<&JsonObject>) -> ArgResult<(String, ListRequest, bool)> {
    let a = Args::new(
        "list",
        args,
        &[
            "path",
            "depth",
            "glob",
            "kind",
            "sort",
            "descending",
            "details",
            "offset",
            "limit",
            "hidden",
            "ignored",
        ],
        r#"{"path":"src","depth":2,"glob":"*.rs"}"#,
    )?;
    let glob = a.string("glob")?;
    if let Some(g) = &glob
        && let Err(e) = validate_glob(g)
    {
        return Err(a.conflict("glob", &format!("`{g}` is not a valid glob ({e})")));
    }
    let request = ListRequest {
        depth: a.integer("depth", 1, 64)?.unwrap_or(1) as u32,
        glob,
        kind: match a.choice("kind", &["any", "file", "dir", "symlink"])? {
            Some("file") => KindFilter::File,
            Some("dir") => KindFilter::Dir,
            Some("symlink") => KindFilter::Symlink,
            _ => KindFilter::Any,
        },
        sort: match a.choice("sort", &["path", "name", "size", "modified", "kind"])? {
            Some("name") => SortKey::Name,
            Some("size") => SortKey::Size,
            Some("modified") => SortKey::Modified,
            Some("kind") => SortKey::Kind,
            _ => SortKey::Path,
        },
        descending: a.boolean("descending")?.unwrap_or(false),
        offset: a.integer("offset", 0, u32::MAX as u64)?.unwrap_or(0) as usize,
        limit: a.integer("limit", 0, 2000)?.unwrap_or(500) as usize,
        hidden: a.boolean("hidden")?,
        ignored: a.boolean("ignored")?,
        meter: None,
    };
    let details = a.boolean("details")?.unwrap_or(false)
        || matches!(request.sort, SortKey::Size | SortKey::Modified);
    Ok((
        a.string("path")?.unwrap_or_else(|| ".".into()),
        request,
        details,
    ))
}

/// Counters with only those that counted something.
pub(crate) fn without_zeros(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| v.as_u64() != Some(0))
                .collect(),
        ),
        other => other,
    }
}

pub fn list(roots: &Roots, path: &str, request: &ListRequest, details: bool) -> CallToolResult {
    let outcome = match roots.list(path, request) {
        Ok(o) => o,
        Err(e) => return render::tool_error(&e),
    };
    let mut lines = String::new();
    for e in &outcome.entries {
        let marker = match e.kind {
            ferret_query::Kind::Dir => "d",
            ferret_query::Kind::Symlink => "l",
            ferret_query::Kind::File => "f",
            _ => "?",
        };
        let size = e.size.map(human_size).unwrap_or_else(|| "-".into());
        let children = e
            .children
            .map(|c| format!(" ({})", ferret_fs::list::plural(c, "entry", "entries")))
            .unwrap_or_default();
        let slash = if e.kind == ferret_query::Kind::Dir {
            "/"
        } else {
            ""
        };
        lines.push_str(&format!(
            "{marker} {size:>7} {} {}{slash}{children}\n",
            e.modified.as_deref().unwrap_or("-"),
            e.path
        ));
    }
    let mut text = format!("{}: {}\n", outcome.path, outcome.summary);
    text.push_str(&frame(&lines));
    if let Some(next) = outcome.next_offset {
        text.push_str(&format!(
            "\nshowing {}-{} of {}; more: list with offset {next}",
            next - outcome.entries.len() + 1,
            next,
            outcome.total
        ));
    }
    // Entries are named from the listed folder, folders ending in `/`;
    // sizes and times only with `details` (or when sorting by them).
    let base = match outcome.path.as_str() {
        "." | "" => String::new(),
        p => format!("{}/", p.trim_end_matches('/')),
    };
    let entries: Vec<Value> = outcome
        .entries
        .iter()
        .map(|e| {
            let name = render::shown_entry(e.path.strip_prefix(&base).unwrap_or(&e.path), e.kind);
            if details {
                json!({"name": name, "kind": e.kind, "size": e.size, "modified": e.modified, "children": e.children})
            } else {
                json!(name)
            }
        })
        .collect();
    let skipped = serde_json::to_value(&outcome.skipped).unwrap_or(Value::Null);
    let structured = json!({
        "path": outcome.path,
        "entries": entries,
        "count": outcome.entries.len(),
        "total": outcome.total,
        "truncated": outcome.truncated,
        "next_offset": outcome.next_offset,
        "summary": outcome.summary,
        "skipped": without_zeros(skipped),
        "walk_capped": outcome.walk_capped,
        "data_note": render::data_note("entries"),
    });
    let result = render::ok(render::compact(structured), text);
    if request.meter.as_ref().is_some_and(|m| m.cancelled()) {
        // Only a task's result outlives a cancel: say what it is.
        return render::cancelled(result);
    }
    result
}

pub fn parse_stat(args: Option<&JsonObject>) -> ArgResult<Vec<String>> {
    let a = Args::new("stat", args, &["paths"], r#"{"paths":["README.md","src"]}"#)?;
    let Some(paths) = a.strings("paths")? else {
        return Err(a.conflict("paths", "`paths` is required"));
    };
    if paths.is_empty() || paths.len() > 100 {
        return Err(a.conflict("paths", "give between 1 and 100 paths"));
    }
    Ok(paths)
}

pub fn stat(roots: &Roots, paths: &[String]) -> CallToolResult {
    let mut results = Vec::with_capacity(paths.len());
    let mut text = String::new();
    let mut failures = 0;
    for p in paths {
        match roots.stat(p) {
            Ok(info) => {
                let mut line = format!(
                    "{} · {} · {} · modified {}",
                    info.path,
                    info.kind,
                    info.size.map(human_size).unwrap_or_else(|| "-".into()),
                    info.modified.as_deref().unwrap_or("-")
                );
                if let Some(t) = &info.symlink_target {
                    line.push_str(&format!(" · -> {t}"));
                }
                if let (Some(lines), Some(enc)) = (info.lines, &info.encoding) {
                    line.push_str(&format!(" · {lines} lines · {enc}"));
                }
                if let Some(img) = &info.image {
                    line.push_str(&format!(
                        " · {} {}x{}",
                        img.format,
                        img.width.unwrap_or(0),
                        img.height.unwrap_or(0)
                    ));
                }
                if let Some(b) = info.binary {
                    line.push_str(&format!(" · binary ({b})"));
                }
                if let Some(d) = &info.document {
                    line.push_str(&format!(" · {}", d.format));
                    for (n, what) in [
                        (d.pages, "pages"),
                        (d.slides, "slides"),
                        (d.chapters, "chapters"),
                    ] {
                        if let Some(n) = n {
                            line.push_str(&format!(" · {n} {what}"));
                        }
                    }
                    if !d.sheets.is_empty() {
                        line.push_str(&format!(" · sheets: {}", d.sheets.join(", ")));
                    }
                    if let Some(t) = &d.title {
                        line.push_str(&format!(" · title: {t}"));
                    }
                    if let Some(a) = &d.author {
                        line.push_str(&format!(" · author: {a}"));
                    }
                    if let Some(why) = &d.unreadable {
                        line.push_str(&format!(" · unreadable: {why}"));
                    } else if !d.text_layer {
                        line.push_str(" · no text layer (images only)");
                    }
                }
                if let Some(c) = &info.checksum {
                    line.push_str(&format!(" · {c}"));
                }
                text.push_str(&line);
                text.push('\n');
                results.push(serde_json::to_value(&info).unwrap_or(Value::Null));
            }
            Err(e) => {
                failures += 1;
                text.push_str(&format!("{}: {} ({})\n", p.trim(), e.code, e.message));
                results.push(json!({"path": p.trim(), "error": render::error_object(&e)}));
            }
        }
    }
    // Per-path errors never fail the whole call; the count is in the structure.
    let structured = json!({"results": results, "errors": failures});
    render::ok(render::compact(structured), frame(&text))
}
