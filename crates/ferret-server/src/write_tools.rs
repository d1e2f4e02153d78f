//! The write tools of the contract (`write`, `edit`, `manage`): listed only when
//! at least one root is writable. Every success is journalled with `by: ferret`.

use ferret_fs::{
    EditOp, EditRequest, FileChange, FsError, LineAction, ManageOp, ManageRequest, Roots,
    WriteMode, WriteRequest,
};
use ferret_index::{Action, Change, Index};
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::{
    args::{ArgResult, Args},
    render::{self, frame},
    schema::{one_of, output_schema, schema},
};

/// Truthful for each tool as a whole: some of its operations replace or remove
/// data, and repeating a call does not always give the same result.
fn writes() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(false)
        .destructive(true)
        .idempotent(false)
        .open_world(false)
}

/// `write`, `edit`, `manage`, in the order `tools/list` shows them.
pub fn definitions() -> Vec<Tool> {
    let flag = json!({"type": "boolean"});
    let sum = json!({"type": "string", "description": "sha256:… from read/stat; refused if the file changed"});
    vec![
        Tool::new(
            "write",
            "Create, overwrite or append to a file, atomically. Overwrite returns a diff; pass expected_checksum from read.",
            schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string"},
                    "mode": {"type": "string", "enum": ["create", "overwrite", "append"], "default": "create"},
                    "expected_checksum": sum,
                    "create_dirs": {"type": "boolean", "default": true},
                    "dry_run": flag,
                },
                "required": ["path", "content"],
            })),
        )
        .with_title("Write file")
        .with_raw_output_schema(output_schema(&["checksum"]))
        .with_annotations(writes()),
        Tool::new(
            "edit",
            "Edit a text file: exact old_text→new_text, or line ranges (need expected_checksum). All or nothing; keeps encoding, BOM, line endings. Returns a diff.",
            schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "edits": {
                        "type": "array",
                        "minItems": 1,
                        "items": {"anyOf": [
                            {
                                "type": "object",
                                "properties": {
                                    "old_text": {"type": "string"},
                                    "new_text": {"type": "string"},
                                    "replace_all": flag,
                                },
                                "required": ["old_text", "new_text"],
                                "additionalProperties": false,
                            },
                            {
                                "type": "object",
                                "properties": {
                                    "lines": {"type": "string", "description": "\"10-15\" or \"7\""},
                                    "action": one_of(&["replace", "insert_before", "insert_after", "delete"]),
                                    "content": {"type": "string"},
                                },
                                "required": ["lines", "action"],
                                "additionalProperties": false,
                            },
                        ]},
                    },
                    "expected_checksum": sum,
                    "dry_run": flag,
                },
                "required": ["path", "edits"],
            })),
        )
        .with_title("Edit file")
        .with_raw_output_schema(output_schema(&["diff", "checksum"]))
        .with_annotations(writes()),
        Tool::new(
            "manage",
            "Move, copy, delete a file or folder, or make a folder. `to` may be in another root. Never replaces without overwrite.",
            schema(json!({
                "type": "object",
                "properties": {
                    "op": one_of(&["move", "copy", "delete", "mkdir"]),
                    "path": {"type": "string"},
                    "to": {"type": "string", "description": "Destination (move, copy)"},
                    "overwrite": flag,
                    "recursive": {"type": "boolean", "description": "Copy folders; delete non-empty folders"},
                    "dry_run": flag,
                },
                "required": ["op", "path"],
            })),
        )
        .with_title("Move, copy, delete, mkdir")
        .with_raw_output_schema(output_schema(&["summary"]))
        .with_annotations(writes()),
    ]
}

fn checksum_arg(a: &Args<'_>) -> ArgResult<Option<String>> {
    let sum = a.string("expected_checksum")?;
    if let Some(s) = &sum {
        let hex = s.strip_prefix("sha256:").unwrap_or("");
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(a.conflict(
                "expected_checksum",
                &format!("`expected_checksum` must be `sha256:` and 64 hex digits, as `read` and `stat` return it; got {s:?}"),
            ));
        }
    }
    Ok(sum.map(|s| s.to_ascii_lowercase()))
}

pub fn parse_write(args: Option<&JsonObject>) -> ArgResult<(String, WriteRequest)> {
    let a = Args::new(
        "write",
        args,
        &[
            "path",
            "content",
            "mode",
            "expected_checksum",
            "create_dirs",
            "dry_run",
        ],
        r#"{"path":"notes/todo.md","content":"- buy milk\n","mode":"create"}"#,
    )?;
    let path = a.required_string("path")?;
    let content = a.required_string("content")?;
    let mode = match a.choice("mode", &["create", "overwrite", "append"])? {
        Some("overwrite") => WriteMode::Overwrite,
        Some("append") => WriteMode::Append,
        _ => WriteMode::Create,
    };
    Ok((
        path,
        WriteRequest {
            content,
            mode,
            expected_checksum: checksum_arg(&a)?,
            create_dirs: a.boolean("create_dirs")?.unwrap_or(true),
            dry_run: a.boolean("dry_run")?.unwrap_or(false),
        },
    ))
}

fn parse_lines(s: &str) -> Option<(u64, u64)> {
    let s = s.trim();
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let start: u64 = a.trim().parse().ok()?;
    let end: u64 = b.trim().parse().ok()?;
    (start >= 1 && end >= start).then_some((start, end))
}

pub fn parse_edit(args: Option<&JsonObject>) -> ArgResult<(String, EditRequest)> {
    let a = Args::new(
        "edit",
        args,
        &["path", "edits", "expected_checksum", "dry_run"],
        r#"{"path":"src/main.rs","edits":[{"old_text":"println!(\"hi\")","new_text":"println!(\"hello\")"}]}"#,
    )?;
    let path = a.required_string("path")?;
    let expected_checksum = checksum_arg(&a)?;
    let Some(Value::Array(items)) = args.and_then(|m| m.get("edits")) else {
        return Err(a.conflict("edits", "`edits` must be a non-empty list of edits"));
    };
    if items.is_empty() {
        return Err(a.conflict("edits", "`edits` must be a non-empty list of edits"));
    }
    let mut edits = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let bad = |what: &str| a.conflict("edits", &format!("edits[{i}] {what}; got {item}"));
        let Value::Object(obj) = item else {
            return Err(bad("must be an object"));
        };
        let text = |key: &str| -> ArgResult<Option<String>> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(bad(&format!("`{key}` must be a string"))),
            }
        };
        if obj.contains_key("lines") {
            if let Some(k) = obj
                .keys()
                .find(|k| !["lines", "action", "content"].contains(&k.as_str()))
            {
                return Err(bad(&format!(
                    "mixes `lines` with `{k}`; a line edit takes lines, action, content"
                )));
            }
            let lines = text("lines")?.unwrap_or_default();
            let Some((start, end)) = parse_lines(&lines) else {
                return Err(bad("`lines` must be \"N\" or \"N-M\" with 1 <= N <= M"));
            };
            let action = match text("action")?.as_deref() {
                Some("replace") => LineAction::Replace,
                Some("insert_before") => LineAction::InsertBefore,
                Some("insert_after") => LineAction::InsertAfter,
                Some("delete") => LineAction::Delete,
                _ => {
                    return Err(bad(
                        "`action` must be one of replace, insert_before, insert_after, delete",
                    ));
                }
            };
            if matches!(action, LineAction::InsertBefore | LineAction::InsertAfter) && start != end
            {
                return Err(bad(
                    "inserting takes one line number, e.g. \"lines\": \"7\"",
                ));
            }
            let content = text("content")?;
            if content.is_none() && action != LineAction::Delete {
                return Err(bad("needs `content` for this action"));
            }
            if expected_checksum.is_none() {
                return Err(a.conflict(
                    "expected_checksum",
                    "line edits need `expected_checksum` (from `read`), so that line numbers refer to the version you read",
                ));
            }
            edits.push(EditOp::Lines {
                start,
                end,
                action,
                content: content.unwrap_or_default(),
            });
        } else {
            if let Some(k) = obj
                .keys()
                .find(|k| !["old_text", "new_text", "replace_all"].contains(&k.as_str()))
            {
                return Err(bad(&format!(
                    "has an unknown key `{k}`; an edit is {{old_text, new_text, replace_all?}} or {{lines, action, content}}"
                )));
            }
            let (Some(old_text), Some(new_text)) = (text("old_text")?, text("new_text")?) else {
                return Err(bad(
                    "needs `old_text` and `new_text` (or `lines` and `action`)",
                ));
            };
            if old_text.is_empty() {
                return Err(bad(
                    "has an empty `old_text`; to insert, use {lines: \"N\", action: \"insert_before\", content}",
                ));
            }
            let replace_all = match obj.get("replace_all") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(bad("`replace_all` must be true or false")),
            };
            edits.push(EditOp::Text {
                old_text,
                new_text,
                replace_all,
            });
        }
    }
    Ok((
        path,
        EditRequest {
            edits,
            expected_checksum,
            dry_run: a.boolean("dry_run")?.unwrap_or(false),
        },
    ))
}

pub fn parse_manage(args: Option<&JsonObject>) -> ArgResult<(String, ManageRequest)> {
    let a = Args::new(
        "manage",
        args,
        &["op", "path", "to", "overwrite", "recursive", "dry_run"],
        r#"{"op":"move","path":"draft.md","to":"docs/final.md"}"#,
    )?;
    let op = match a.choice("op", &["move", "copy", "delete", "mkdir"])? {
        Some("move") => ManageOp::Move,
        Some("copy") => ManageOp::Copy,
        Some("delete") => ManageOp::Delete,
        Some(_) => ManageOp::Mkdir,
        None => return Err(a.conflict("op", "`op` is required: move, copy, delete or mkdir")),
    };
    let path = a.required_string("path")?;
    let to = a.string("to")?;
    match (op, &to) {
        (ManageOp::Move | ManageOp::Copy, None) => {
            return Err(a.conflict("to", "move and copy need `to`, the destination path"));
        }
        (ManageOp::Delete | ManageOp::Mkdir, Some(_)) => {
            return Err(a.conflict("to", "`to` only applies to move and copy"));
        }
        _ => {}
    }
    Ok((
        path,
        ManageRequest {
            op,
            to,
            overwrite: a.boolean("overwrite")?.unwrap_or(false),
            recursive: a.boolean("recursive")?.unwrap_or(false),
            dry_run: a.boolean("dry_run")?.unwrap_or(false),
            meter: None,
        },
    ))
}

/// A tool error whose numeric and list details are numbers and lists.
fn error(err: &FsError) -> CallToolResult {
    let mut result = render::tool_error(err);
    if let Some(Value::Object(obj)) = result
        .structured_content
        .as_mut()
        .and_then(|s| s.get_mut("error"))
    {
        for key in ["count", "entries", "edit", "nearest", "lines"] {
            if let Some(Value::String(s)) = obj.get(key)
                && let Ok(v) = serde_json::from_str::<Value>(s)
            {
                obj.insert(key.to_string(), v);
            }
        }
    }
    result
}

/// Tell the index which paths a write tool is about to change, before it
/// touches the disk, so the watcher's report of the change (which may come
/// before the tool records it) is told from another program's.
fn announce(roots: &Roots, index: &Index, paths: &[Option<&str>]) -> Vec<String> {
    let shown: Vec<String> = paths
        .iter()
        .flatten()
        .filter_map(|p| match roots.resolve(p) {
            Ok(ferret_fs::Target::In(root, rel)) => Some(roots.display(root, &rel)),
            _ => None,
        })
        .collect();
    if !shown.is_empty() {
        index.expect_own_changes(&shown);
    }
    shown
}

/// A failed write changed nothing: the announcement is withdrawn.
fn failed(index: &Index, announced: &[String], e: &ferret_fs::FsError) -> CallToolResult {
    if !announced.is_empty() {
        index.withdraw_own_changes(announced);
    }
    error(e)
}

/// Journal what a write tool changed, as `by: ferret` (nothing changed: the
/// announcement is withdrawn).
fn record(index: &Index, announced: &[String], changes: &[FileChange]) {
    if changes.is_empty() {
        if !announced.is_empty() {
            index.withdraw_own_changes(announced);
        }
        return;
    }
    let at_ms = chrono::Utc::now().timestamp_millis();
    let batch: Vec<Change> = changes
        .iter()
        .filter_map(|c| {
            Some(Change {
                action: Action::parse(c.action)?,
                path: c.path.clone(),
                old_path: c.old_path.clone(),
                kind: c.kind,
                at_ms,
                by: "ferret",
            })
        })
        .collect();
    index.record(&batch);
}

/// A result that shows file text (a diff) says that it is data.
fn with_diff_note(mut structured: Value) -> Value {
    if structured.get("diff").is_some_and(|d| !d.is_null()) {
        structured["data_note"] = render::data_note("diff");
    }
    structured
}

fn dry(dry_run: bool) -> &'static str {
    if dry_run {
        "dry run, nothing written: "
    } else {
        ""
    }
}

pub fn write(roots: &Roots, index: &Index, path: &str, request: &WriteRequest) -> CallToolResult {
    let announced = if request.dry_run {
        Vec::new()
    } else {
        announce(roots, index, &[Some(path)])
    };
    let outcome = match roots.write(path, request) {
        Ok(o) => o,
        Err(e) => return failed(index, &announced, &e),
    };
    record(index, &announced, &outcome.changes);
    // A dry run wrote nothing: it says what it would do, never `bytes_written`
    // or `created`, which would read as done.
    let (verb, bytes) = match (outcome.dry_run, outcome.created) {
        (false, true) => ("created".to_string(), "bytes"),
        (false, false) => (outcome.mode.to_string(), "bytes"),
        (true, true) => ("would create".to_string(), "bytes would be written"),
        (true, false) => (format!("would {}", outcome.mode), "bytes would be written"),
    };
    let mut text = format!(
        "{}{verb} {} · {} {bytes} · {}",
        dry(outcome.dry_run),
        outcome.path,
        outcome.bytes_written,
        outcome.checksum
    );
    if let Some(diff) = &outcome.diff {
        text.push('\n');
        text.push_str(&frame(diff));
    }
    let mut structured = serde_json::to_value(&outcome).unwrap_or(Value::Null);
    if outcome.dry_run
        && let Value::Object(map) = &mut structured
    {
        let bytes = map.remove("bytes_written");
        let created = map.remove("created");
        map.insert("would_write".into(), bytes.unwrap_or(Value::Null));
        map.insert("would_create".into(), created.unwrap_or(Value::Null));
    }
    render::ok(render::compact(with_diff_note(structured)), text)
}

pub fn edit(roots: &Roots, index: &Index, path: &str, request: &EditRequest) -> CallToolResult {
    let announced = if request.dry_run {
        Vec::new()
    } else {
        announce(roots, index, &[Some(path)])
    };
    let outcome = match roots.edit(path, request) {
        Ok(o) => o,
        Err(e) => return failed(index, &announced, &e),
    };
    record(index, &announced, &outcome.changes);
    let mut text = format!(
        "{}{} · {} replacement{} · {} · {} · {}",
        dry(outcome.dry_run),
        outcome.path,
        outcome.replacements,
        if outcome.replacements == 1 { "" } else { "s" },
        outcome.encoding,
        outcome.line_endings,
        outcome.checksum
    );
    if !outcome.changed {
        text.push_str("\nno change: the edits leave the file as it was");
    }
    text.push('\n');
    text.push_str(&frame(&outcome.diff));
    let structured = serde_json::to_value(&outcome).unwrap_or(Value::Null);
    render::ok(render::compact(with_diff_note(structured)), text)
}

pub fn manage(roots: &Roots, index: &Index, path: &str, request: &ManageRequest) -> CallToolResult {
    let announced = if request.dry_run {
        Vec::new()
    } else {
        announce(roots, index, &[Some(path), request.to.as_deref()])
    };
    let outcome = match roots.manage(path, request) {
        Ok(o) => o,
        Err(e) => return failed(index, &announced, &e),
    };
    record(index, &announced, &outcome.changes);
    let text = format!("{}{}", dry(outcome.dry_run), outcome.summary);
    let structured = serde_json::to_value(&outcome).unwrap_or(Value::Null);
    render::ok(render::compact(structured), text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn edits_are_checked_before_anything_runs() {
        let m = obj(json!({"path": "a", "edits": [{"lines": "3-5", "action": "delete"}]}));
        let e = parse_edit(Some(&m)).err().unwrap();
        assert!(e.message.contains("expected_checksum"), "{}", e.message);
        let m = obj(json!({"path": "a", "edits": [{"old_text": "", "new_text": "x"}]}));
        assert!(parse_edit(Some(&m)).is_err());
        let m = obj(
            json!({"path": "a", "edits": [{"old_text": "a", "new_text": "b", "replace_all": true}]}),
        );
        assert_eq!(parse_edit(Some(&m)).unwrap().1.edits.len(), 1);
        assert_eq!(parse_lines("10-15"), Some((10, 15)));
        assert_eq!(parse_lines("7"), Some((7, 7)));
        assert_eq!(parse_lines("5-2"), None);
        let m = obj(json!({"op": "copy", "path": "a"}));
        assert!(parse_manage(Some(&m)).is_err());
        let m = obj(json!({"path": "a", "content": "x", "expected_checksum": "md5:1"}));
        assert!(parse_write(Some(&m)).is_err());
    }

    #[test]
    fn write_tools_are_honest_about_side_effects() {
        for t in definitions() {
            let a = t.annotations.as_ref().unwrap();
            assert_eq!(a.read_only_hint, Some(false));
            assert_eq!(a.destructive_hint, Some(true));
            assert!(t.description.as_ref().unwrap().len() < 200);
        }
    }
}
