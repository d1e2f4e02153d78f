//! Answers that fit what the client shows: a tool's answer, measured as a
//! client sees it (its structured content as JSON, and its text blocks, each
//! on its own, in characters), must stay within `max_response_chars`. Claude
//! Code, for one, hands the model an answer whole only below about 50,000
//! characters; past that the model gets a preview and a file path, and
//! ferret's paging is out of the picture.
//!
//! The tools cut their own answers where they say how to go on (a `read`
//! window, a page of `list` or `search`, grep's output budget); their
//! budgets count payload, not the JSON or the framing around it. So a tool
//! whose answer is still over runs again with a smaller share, scaled by how
//! far over it was, and the last answer that does not fit becomes a
//! `TOO_LARGE` error that says how to narrow the call.

use rmcp::model::{CallToolResult, ContentBlock};

use ferret_fs::{ErrorCode, FsError};

use crate::render;

/// How many times a tool runs before its answer is given up as too large.
const TRIES: usize = 4;

/// What a client shows of `result`, in characters: the larger of its
/// structured content (as JSON) and its text blocks.
pub(crate) fn shown_chars(result: &CallToolResult) -> usize {
    let structured = result
        .structured_content
        .as_ref()
        .and_then(|s| serde_json::to_string(s).ok())
        .map_or(0, |s| s.chars().count());
    let text: usize = result
        .content
        .iter()
        .map(|c| match c {
            ContentBlock::Text(t) => t.text.chars().count(),
            _ => 0,
        })
        .sum();
    structured.max(text)
}

/// What a tool's next try is given: the answer of the try before and the
/// share of it that fits (below 1: keep about this fraction).
pub(crate) struct Over<'a> {
    pub answer: &'a CallToolResult,
    pub keep: f64,
}

impl Over<'_> {
    /// A count shown by the answer before (`count` in its structured
    /// content), scaled to the share that fits; at least 1.
    pub(crate) fn scaled_count(&self, field: &str) -> Option<usize> {
        let n = self
            .answer
            .structured_content
            .as_ref()
            .and_then(|s| s.get(field))
            .and_then(|v| v.as_u64())?;
        Some(((n as f64 * self.keep).floor() as usize).max(1))
    }
}

/// Run `answer` (first with `None`), again while what it gives is over
/// `budget` characters, each time told how far over the last one was.
/// Errors pass as they are (they are short).
pub(crate) fn within(
    budget: usize,
    what: &str,
    mut answer: impl FnMut(Option<Over<'_>>) -> CallToolResult,
) -> CallToolResult {
    let mut result = answer(None);
    for _ in 1..TRIES {
        let shown = shown_chars(&result);
        if shown <= budget || result.is_error == Some(true) {
            return result;
        }
        // 5% below the proportional share, for what does not scale.
        let keep = budget as f64 / shown as f64 * 0.95;
        result = answer(Some(Over {
            answer: &result,
            keep,
        }));
    }
    let shown = shown_chars(&result);
    if shown <= budget || result.is_error == Some(true) {
        return result;
    }
    render::tool_error(
        &FsError::new(
            ErrorCode::TooLarge,
            format!(
                "the answer would be {shown} characters, over the {budget} this client is shown at once"
            ),
        )
        .hint(format!(
            "narrow the {what} (a smaller `limit`, a folder in `path`, a `filter`), or raise --max-response-chars"
        )),
    )
}

/// [`within`] for an answer found once and shown with fewer of its results
/// each try: `show(found, n)` puts the first `n` (`limit` at first) in words;
/// an error found is the answer as it is.
pub(crate) fn shown_within<T>(
    budget: usize,
    what: &str,
    found: Result<T, CallToolResult>,
    limit: usize,
    mut show: impl FnMut(&T, usize) -> CallToolResult,
) -> CallToolResult {
    let found = match found {
        Ok(found) => found,
        Err(error) => return error,
    };
    let mut shown = limit;
    within(budget, what, |over| {
        if let Some(n) = over.and_then(|o| o.scaled_count("count")) {
            shown = shown.min(n);
        }
        show(&found, shown)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(n: usize) -> CallToolResult {
        let items: Vec<String> = (0..n).map(|i| format!("item-{i:05}")).collect();
        render::ok(
            serde_json::json!({"count": n, "results": items}),
            items.join("\n"),
        )
    }

    #[test]
    fn an_answer_over_the_budget_runs_again_smaller_until_it_fits() {
        let mut tries = Vec::new();
        let r = within(5_000, "search", |over| {
            let n = over.and_then(|o| o.scaled_count("count")).unwrap_or(2_000);
            tries.push(n);
            answer(n)
        });
        assert!(shown_chars(&r) <= 5_000, "{}", shown_chars(&r));
        assert_eq!(tries[0], 2_000);
        assert!(
            tries.len() >= 2 && tries.windows(2).all(|w| w[1] < w[0]),
            "{tries:?}"
        );
    }

    #[test]
    fn an_answer_found_once_is_shown_smaller_until_it_fits() {
        let found: Vec<String> = (0..2_000).map(|i| format!("item-{i:05}")).collect();
        let mut shown = Vec::new();
        let r = shown_within(5_000, "search", Ok(found), 2_000, |found, n| {
            shown.push(n);
            let items = &found[..n.min(found.len())];
            render::ok(
                serde_json::json!({"count": items.len(), "results": items}),
                items.join("\n"),
            )
        });
        assert!(shown_chars(&r) <= 5_000, "{}", shown_chars(&r));
        assert_eq!(shown[0], 2_000);
        assert!(
            shown.len() >= 2 && shown.windows(2).all(|w| w[1] < w[0]),
            "{shown:?}"
        );
        // The first results, in order.
        let s = r.structured_content.unwrap();
        assert_eq!(s["results"][0], "item-00000");
        // An error found is the answer, shown as it is.
        let e = shown_within(
            5_000,
            "search",
            Err::<Vec<String>, _>(answer(3)),
            50,
            |_, _| panic!("nothing found to show"),
        );
        assert_eq!(e.structured_content.unwrap()["count"], 3);
    }

    #[test]
    fn what_never_fits_is_too_large_and_says_how_to_narrow() {
        let r = within(100, "list", |_| answer(500));
        assert_eq!(r.is_error, Some(true));
        let s = r.structured_content.unwrap();
        assert_eq!(s["error"]["code"], "TOO_LARGE");
        assert!(s["error"]["hint"].as_str().unwrap().contains("limit"));
    }

    #[test]
    fn an_answer_within_the_budget_runs_once() {
        let mut runs = 0;
        within(1_000_000, "read", |_| {
            runs += 1;
            answer(10)
        });
        assert_eq!(runs, 1);
    }
}
