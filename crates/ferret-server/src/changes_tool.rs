//! `changes`: what changed under the roots, from the index's journal.

use ferret_index::{Action, ChangesQuery, Index};
use ferret_query::Clock;
use rmcp::{
    ErrorData,
    model::{CallToolResult, JsonObject, Tool},
};
use serde_json::{Value, json};

use crate::{
    args::{ArgResult, Args},
    render::{self, frame},
    schema::{one_of, output_schema, read_only, schema},
};

pub fn changes_definition() -> Tool {
    Tool::new(
        "changes",
        "What changed under the roots, newest first, from the index's journal: created, modified, deleted, renamed, moved.",
        schema(json!({
            "type": "object",
            "properties": {
                "action": one_of(&["any", "created", "modified", "deleted", "renamed", "moved"]),
                "path": {"type": "string", "description": "Prefix"},
                "name": {"type": "string"},
                "since": {"type": "string", "description": "RFC 3339, date, Unix secs, or 10m/2h/3d"},
                "until": {"type": "string"},
                "offset": {"type": "integer"},
                "limit": {"type": "integer", "maximum": 2000},
            },
        })),
    )
    .with_title("Recent changes")
    .with_raw_output_schema(output_schema(&["changes"]))
    .with_annotations(read_only())
}

pub fn parse_changes(args: Option<&JsonObject>) -> ArgResult<ChangesQuery> {
    let a = Args::new(
        "changes",
        args,
        &[
            "action", "path", "name", "since", "until", "offset", "limit",
        ],
        r#"{"since":"1h","action":"modified"}"#,
    )?;
    let clock = Clock::system();
    let when = |key: &str| -> ArgResult<Option<i64>> {
        match a.string(key)? {
            None => Ok(None),
            Some(t) => ferret_query::parse_time(&t, &clock)
                .map(Some)
                .map_err(|e| a.conflict(key, &e)),
        }
    };
    let action = match a.choice(
        "action",
        &["any", "created", "modified", "deleted", "renamed", "moved"],
    )? {
        Some("any") | None => None,
        Some(other) => Action::parse(other),
    };
    Ok(ChangesQuery {
        action,
        path_prefix: a.string("path")?.map(|p| {
            p.trim()
                .replace('\\', "/")
                .trim_start_matches("./")
                .to_string()
        }),
        name: a.string("name")?,
        since_ms: when("since")?,
        until_ms: when("until")?,
        offset: a.integer("offset", 0, u32::MAX as u64)?.unwrap_or(0),
        limit: a.integer("limit", 0, 2000)?.unwrap_or(100),
    })
}

pub fn changes(index: &Index, query: &ChangesQuery) -> Result<CallToolResult, ErrorData> {
    // Every change the watcher was told of before the call is journalled
    // first (as `search` does; see `index_tools::find`).
    let behind = index.behind_after_waiting(ferret_index::SEARCH_CATCH_UP_WAIT);
    let (rows, total) = index
        .changes(query)
        .map_err(|e| ErrorData::internal_error(e, None))?;
    let end = query.offset + rows.len() as u64;
    let truncated = end < total;
    let mut text = String::new();
    let mut items = Vec::with_capacity(rows.len());
    for c in &rows {
        let at = chrono::DateTime::from_timestamp_millis(c.at_ms)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_default();
        match &c.old_path {
            Some(old) => text.push_str(&format!(
                "{at} {:<8} {} <- {} ({})\n",
                c.action.as_str(),
                c.path,
                old,
                c.by
            )),
            None => text.push_str(&format!(
                "{at} {:<8} {} ({})\n",
                c.action.as_str(),
                c.path,
                c.by
            )),
        }
        let mut item = serde_json::to_value(c).unwrap_or(Value::Null);
        item["at"] = json!(at);
        items.push(item);
    }
    let status = index.status();
    let rendered = format!(
        "{} of {} changes{}\n{}",
        rows.len(),
        total,
        render::index_state_words(&status, behind),
        frame(&text)
    ) + &if truncated {
        format!("\nmore: changes with offset {end}")
    } else {
        String::new()
    };
    Ok(render::ok(
        render::compact(json!({
            "changes": items,
            "count": rows.len(),
            "total": total,
            "truncated": truncated,
            "next_offset": truncated.then_some(end),
            "index": render::index_block_of(&status, behind),
            "data_note": render::data_note("paths"),
        })),
        rendered,
    ))
}
