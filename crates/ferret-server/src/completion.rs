//! `completion/complete`: paths for the resource templates and for the prompts'
//! folder arguments, from the index (names only, in memory: fast at any size);
//! time spans for `recent_changes`' `since`.

use ferret_fs::Roots;
use ferret_index::Index;
use rmcp::{
    ErrorData,
    model::{CompleteRequestParams, CompleteResult, CompletionInfo, Reference},
};
use serde_json::json;

use crate::{prompts, resources};

/// Spans offered for `since`; any RFC 3339 time or date works too.
const SPANS: &[&str] = &["15m", "1h", "6h", "24h", "3d", "1w", "30d"];

fn info(values: Vec<String>, total: usize) -> CompleteResult {
    let has_more = total > values.len();
    let values: Vec<String> = values
        .into_iter()
        .take(CompletionInfo::MAX_VALUES)
        .collect();
    let completion =
        CompletionInfo::with_pagination(values, Some(total as u32), has_more).unwrap_or_default();
    CompleteResult::new(completion)
}

pub fn complete(
    roots: &Roots,
    index: &Index,
    request: &CompleteRequestParams,
) -> Result<CompleteResult, ErrorData> {
    let value = request.argument.value.as_str();
    let limit = CompletionInfo::MAX_VALUES;
    match &request.r#ref {
        Reference::Resource(r) => {
            let Some(root) = resources::root_of_template(roots, &r.uri) else {
                return Err(ErrorData::invalid_params(
                    format!(
                        "`{}` is not a resource template of this server; resources/templates/list gives them",
                        r.uri
                    ),
                    Some(json!({"uri": r.uri})),
                ));
            };
            if request.argument.name != "path" {
                return Ok(info(Vec::new(), 0));
            }
            let done = index.complete_in_root(root, value, limit);
            Ok(info(done.values, done.total))
        }
        Reference::Prompt(p) => match prompts::argument_kind(&p.name, &request.argument.name) {
            None => Err(ErrorData::invalid_params(
                format!(
                    "no prompt `{}`; this server has orient, recent_changes, find_symbol",
                    p.name
                ),
                Some(json!({"prompt": p.name})),
            )),
            Some(prompts::ArgumentKind::Folder) => {
                let done = index.complete_path(value, true, limit);
                Ok(info(done.values, done.total))
            }
            Some(prompts::ArgumentKind::Since) => {
                let values: Vec<String> = SPANS
                    .iter()
                    .filter(|s| s.starts_with(value))
                    .map(|s| s.to_string())
                    .collect();
                let total = values.len();
                Ok(info(values, total))
            }
            Some(prompts::ArgumentKind::Other) => Ok(info(Vec::new(), 0)),
        },
        _ => Ok(info(Vec::new(), 0)),
    }
}
