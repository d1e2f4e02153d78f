//! The file tools of the contract (`docs/tools.md`): the definitions of
//! `read`, `list`, `stat` and `diagnostics`, and `list` and `stat` themselves
//! (arguments read, the file layer called, the answer rendered); `read` is
//! `read_tool.rs`.

use ferret_fs::{KindFilter, ListRequest, Roots, SortKey, list::validate_glob};
use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde_json::{Value, json};

use crate::{
    args::{ArgResult, Args},
    render::{self, frame, human_size, without_zeros},
    schema::{one_of, output_schema, read_only, schema},
};

/// The read-only tools, in the order `tools/list` shows them.
pub fn definitions() -> Vec<Tool> {
    let int = |min: u64| json!({"type": "integer", "minimum": min});
    let flag = json!({"type": "boolean"});
    vec![
        Tool::new(
            "read",
            "Read text by line window (paging: next_start_line), an image, a document's text (PDF, Office, EPUB); `outline`: its definitions; `symbol`: one's lines.",
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
                    "outline": flag,
                    "symbol": {"type": "string"},
                },
                "required": ["path"],
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
                    "offset": {"type": "integer"},
                    "limit": {"type": "integer", "maximum": 2000},
                    "hidden": flag,
                    "ignored": flag,
                },
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
            })),
        )
        .with_title("File metadata")
        .with_raw_output_schema(output_schema(&["results"]))
        .with_annotations(read_only()),
        Tool::new(
            "diagnostics",
            "Server health: version, roots, index state, limits, per-tool counters.",
            schema(json!({"type": "object", "properties": {}})),
        )
        .with_title("Diagnostics")
        .with_raw_output_schema(output_schema(&["version"]))
        .with_annotations(read_only()),
    ]
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
    // A capped walk read a part of the folder in the order the disk gave it:
    // its page, total and order are of that part. Said so, with the call that
    // covers every entry (the index holds them all, in any order asked).
    let warning = outcome.walk_capped.then(|| {
        format!(
            "the walk stopped after {} entries: this page, its total and its order cover only those, read in the order the disk gave them; `search` with `path` set to this folder (and `sort`) covers every entry the index holds",
            roots.policy.limits.max_walk_entries
        )
    });
    let mut text = format!("{}: {}\n", outcome.path, outcome.summary);
    if let Some(w) = &warning {
        text.push_str(&format!("warning: {w}\n"));
    }
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
        "warning": warning,
        "data_note": render::data_note("entries"),
    });
    // A task's result cut short by tasks/cancel is marked so where every
    // task ends (`work::follow`).
    render::ok(render::compact(structured), text)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_past_the_walk_limit_says_what_it_covers_and_what_covers_all() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::create_dir_all(d.join("big")).unwrap();
        std::fs::create_dir_all(d.join("small")).unwrap();
        for i in 0..30 {
            std::fs::write(d.join(format!("big/f{i:02}.txt")), "x").unwrap();
        }
        std::fs::write(d.join("small/one.txt"), "x").unwrap();
        let mut policy = ferret_fs::Policy::default();
        policy.limits.max_walk_entries = 10;
        let roots = Roots::open(&[d.display().to_string().parse().unwrap()], policy).unwrap();
        let listed = |path: &str| {
            let args = json!({"path": path, "sort": "modified", "descending": true});
            let (path, request, details) = parse_list(args.as_object()).unwrap();
            list(&roots, &path, &request, details)
        };
        let capped = listed("big");
        let s = capped.structured_content.as_ref().unwrap();
        assert_eq!(s["walk_capped"], true, "{s}");
        assert_eq!(s["entries"].as_array().unwrap().len(), 10, "{s}");
        let warning = s["warning"].as_str().unwrap();
        assert!(
            warning.contains("stopped after 10 entries")
                && warning.contains("its order cover only those")
                && warning.contains("`search` with `path`"),
            "{warning}"
        );
        let text = render::first_text(&capped);
        assert!(
            text.contains("\nwarning: the walk stopped after 10"),
            "{text}"
        );
        // A walk that read everything has nothing to say.
        let whole = listed("small");
        let s = whole.structured_content.as_ref().unwrap();
        assert!(
            s.get("walk_capped").is_none() && s.get("warning").is_none(),
            "{s}"
        );
    }
}
