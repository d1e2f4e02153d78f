//! The pieces every tool's definition is built from: schemas in the portable
//! form the `tools/list` budget allows, and the annotations of a read-only tool.

use std::sync::Arc;

use rmcp::model::{JsonObject, ToolAnnotations};
use serde_json::{Value, json};

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

/// (Input schemas leave out `additionalProperties: false`, and integers their
/// `minimum: 0`, for the `tools/list` budget: every tool refuses an unknown
/// parameter or a value out of range itself, naming it, with `-32602`.)
///
/// Annotations of a tool that only reads. The tool's own `title` carries its name;
/// repeating it in the annotations would only spend `tools/list` bytes.
pub(crate) fn read_only() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}
