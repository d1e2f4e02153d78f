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

/// How long a completion waits for the index's first build (completion is
/// interactive: a person is typing).
const FIRST_BUILD_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Names that start with what was typed come first, those that start with it
/// in the same case before the others; then names that only contain it. The
/// index ranks by prefix without case; this keeps its order within a tier.
fn prefix_first(mut values: Vec<String>, typed: &str) -> Vec<String> {
    let stem = typed.rsplit('/').next().unwrap_or(typed);
    let lower = stem.to_lowercase();
    let tier = |value: &String| {
        let name = value.trim_end_matches('/');
        let name = name.rsplit('/').next().unwrap_or(name);
        if name.starts_with(stem) {
            0
        } else if name.to_lowercase().starts_with(&lower) {
            1
        } else {
            2
        }
    };
    values.sort_by_key(tier);
    values
}

/// A path completion, saying so when the index is still building: its
/// answer may then miss names (`hasMore` is set and `_meta.ferret.note` says why).
fn paths(index: &Index, typed: &str, done: ferret_index::Completion) -> CompleteResult {
    let mut result = info(prefix_first(done.values, typed), done.total);
    let status = index.status();
    if !status.ready {
        result.completion.has_more = Some(true);
        result.meta = Some(resources::ferret_meta(json!({
            "note": format!(
                "the index is still building ({} entries so far): names may be missing; ask again in a moment",
                status.entries
            ),
        })));
    }
    result
}

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
            index.wait_ready(FIRST_BUILD_WAIT);
            Ok(paths(
                index,
                value,
                index.complete_in_root(root, value, limit),
            ))
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
                index.wait_ready(FIRST_BUILD_WAIT);
                Ok(paths(index, value, index.complete_path(value, true, limit)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_case_prefixes_come_first_then_other_prefixes_then_substrings() {
        let values = ["src/main.rs", "src/Makefile", "src/domain/"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            prefix_first(values.clone(), "src/Ma"),
            ["src/Makefile", "src/main.rs", "src/domain/"]
        );
        assert_eq!(
            prefix_first(values, "src/ma"),
            ["src/main.rs", "src/Makefile", "src/domain/"]
        );
    }
}
