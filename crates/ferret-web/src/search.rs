//! The search both faces share (the page and Everything's API): the query and
//! its switches compiled as the `search` tool compiles them, run by
//! [`Index::search`] on the blocking pool so that a slow query never stalls the
//! async threads.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Instant,
};

use axum::http::StatusCode;
use ferret_fs::Roots;
use ferret_index::{SEARCH_CPU_BUDGET, SearchOutcome, SearchRequest, SortKey, Stop, Stopped};
use ferret_query::{Clock, Options, Query};

use crate::{Source, error::ApiError};

/// A search as asked for, before compiling.
#[derive(Debug, Clone, Default)]
pub struct SearchSpec {
    pub text: String,
    pub options: Options,
    pub sort: SortKey,
    pub descending: bool,
    pub offset: usize,
    pub limit: usize,
    /// The query's plain words matched as subsequences of paths, best fit
    /// first (the `search` tool's `fuzzy`); the rest of the query filters and
    /// `sort` does not apply.
    pub fuzzy: bool,
    /// When no entry holds every word of a plain query (no regex, case or
    /// whole-word switch), its fuzzy matches answer instead, best fit first
    /// (the page's typing; Everything's API answers exactly what was asked).
    pub fall_back: bool,
}

/// A search's answer: the outcome, the index's time (ms), and whether the
/// fuzzy matches answered because no entry held every word.
pub struct Searched {
    pub outcome: SearchOutcome,
    pub ms: f64,
    pub fell_back: bool,
}

/// A query that does not parse (`BAD_QUERY`), or goes past one of the
/// language's limits (`QUERY_TOO_LARGE`, the message naming it): 400 both.
fn bad_query(text: &str, e: ferret_query::QueryError) -> ApiError {
    ApiError {
        status: StatusCode::BAD_REQUEST,
        code: if e.limit.is_some() {
            "QUERY_TOO_LARGE"
        } else {
            "BAD_QUERY"
        },
        message: e.render(text),
        hint: Some(format!("try `{}`", e.example)),
    }
}

/// Sets the flag when dropped: the work of a request whose client went away
/// (axum drops the handler's future when the connection closes, or a newer
/// request from the page replaced it) stops at its next check.
pub(crate) struct CancelOnDrop(pub(crate) Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Compile `text` with `options`. `content:` is refused here (it is the grep
/// engine's work, which the page does in its Contents mode), as are syntax
/// errors, each with the corrected query the parser proposes.
pub fn compile(text: &str, options: &Options) -> Result<Query, ApiError> {
    let bad = |e: ferret_query::QueryError| bad_query(text, e);
    let (_, content) = ferret_query::split_content(text).map_err(bad)?;
    if !content.is_empty() {
        return Err(ApiError::bad_request(
            "`content:` looks inside files, which a name search does not do",
            "switch the page to Contents (grep), or call the grep tool",
        ));
    }
    Query::compile(text, options, &Clock::system()).map_err(bad)
}

/// The sort keys both faces accept, by their Everything names.
pub fn sort_key(name: &str) -> Option<SortKey> {
    match name {
        "date_modified" => Some(SortKey::Modified),
        "date_created" => Some(SortKey::Created),
        // Not an order these faces offer (their lists of sorts leave it
        // out): the page and Everything's API sort by name unless a column
        // is picked, as Everything does.
        "relevance" => None,
        other => SortKey::from_name(other),
    }
}

/// Run a search; also says how long the index took (ms).
pub async fn run(source: Arc<dyn Source>, spec: SearchSpec) -> Result<Searched, ApiError> {
    // Fuzzy letters match in either case and inside words: a switch asking
    // otherwise would be silently ignored.
    if spec.fuzzy && (spec.options.match_case || spec.options.whole_word) {
        return Err(ApiError::bad_request(
            "fuzzy matches letters in either case and inside words".to_string(),
            "untick Match case and Whole word, or Fuzzy (a term case:WORD or ww:WORD filters the fuzzy matches)",
        ));
    }
    let (text, words) = if spec.fuzzy {
        let (rest, words) =
            ferret_query::split_words(&spec.text).map_err(|e| bad_query(&spec.text, e))?;
        (rest, Some(words))
    } else {
        (spec.text.clone(), None)
    };
    let query = compile(&text, &spec.options)?;
    // The fallback's words, and the rest of the query as its filter.
    // (Only when asked: not on every keystroke's request.)
    let strict = spec.options.regex || spec.options.match_case || spec.options.whole_word;
    let fallback = if spec.fall_back && !spec.fuzzy && !strict {
        match ferret_query::split_words(&spec.text) {
            Ok((rest, words)) if !words.is_empty() => Some((words, compile(&rest, &spec.options)?)),
            _ => None,
        }
    } else {
        None
    };
    // Set when this future is dropped (the client went away): the search
    // stops at its next check instead of running on for nobody.
    let cancel = Arc::new(AtomicBool::new(false));
    let _stop = CancelOnDrop(cancel.clone());
    let outcome = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let index = source.index();
        // As MCP's search does: every change made before the request is in
        // its answer (the page and Everything's API have no field to say the
        // index was behind, so past the wait they answer as it stands).
        index.behind_after_waiting(ferret_index::SEARCH_CATCH_UP_WAIT);
        let stop = Stop::on(&cancel).within_cpu(SEARCH_CPU_BUDGET);
        let fuzzy = |words: &[String], filter: &Query| {
            index.fuzzy_until(
                &ferret_index::fuzzy::FuzzyRequest {
                    words,
                    filter,
                    under: None,
                    offset: spec.offset,
                    limit: spec.limit,
                },
                stop,
            )
        };
        let outcome = match &words {
            Some(words) => fuzzy(words, &query),
            None => index.search_until(
                &SearchRequest {
                    query: &query,
                    under: None,
                    sort: spec.sort,
                    descending: spec.descending,
                    offset: spec.offset,
                    limit: spec.limit,
                    group_by: None,
                },
                stop,
            ),
        };
        // Decided on the whole answer (its total), so every page of a
        // search comes from the same one.
        let (outcome, fell_back) = match (outcome, &fallback) {
            (Ok(plain), Some((words, filter))) if plain.total == 0 => (fuzzy(words, filter), true),
            (outcome, _) => (outcome, false),
        };
        outcome.map(|outcome| Searched {
            outcome,
            ms: started.elapsed().as_secs_f64() * 1000.0,
            fell_back,
        })
    })
    .await
    .map_err(ApiError::internal)?;
    outcome.map_err(|why| match why {
        Stopped::OverBudget => ApiError::new(
            StatusCode::BAD_REQUEST,
            "QUERY_TOO_LARGE",
            format!(
                "query too costly: it needed more than {} ms of CPU (the `search time` limit: one search must not tie up the server)",
                SEARCH_CPU_BUDGET.as_millis()
            ),
        )
        .hint("use fewer or simpler terms (a regex with nested repetitions costs most), or narrow it with ext: or in:"),
        // Only when the client is gone: this answer reaches nobody.
        Stopped::Cancelled | Stopped::Timeout => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "CANCELLED",
            "the search was cancelled",
        ),
    })
}

/// A shown path (`src/main.rs`, or `code/src/main.rs` with several roots) as
/// its folder and its name: `("src", "main.rs")`; a top-level entry's folder is
/// `""`.
pub fn split(shown: &str) -> (&str, &str) {
    shown.rsplit_once('/').unwrap_or(("", shown))
}

/// The absolute path of a shown path (as text, for the page and Everything's
/// API): the inverse of [`Roots::display`], by the roots' names alone (nothing
/// on disk is touched). `None` for a first component that names no root.
pub fn absolute(roots: &Roots, shown: &str) -> Option<String> {
    let all = roots.roots();
    let (root, rest) = if roots.is_multi() {
        let (first, rest) = shown.split_once('/').unwrap_or((shown, ""));
        (all.iter().find(|r| r.name == first)?, rest)
    } else {
        (all.first()?, if shown == "." { "" } else { shown })
    };
    let path = if rest.is_empty() {
        root.path.clone()
    } else {
        root.path.join(rest)
    };
    Some(path.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_paths_split_and_become_absolute() {
        assert_eq!(split("src/main.rs"), ("src", "main.rs"));
        assert_eq!(split("README.md"), ("", "README.md"));
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let one = Roots::open(
            &[a.path().to_str().unwrap().parse().unwrap()],
            Default::default(),
        )
        .unwrap();
        let real = std::fs::canonicalize(a.path()).unwrap();
        let text = |p: std::path::PathBuf| Some(p.to_str().unwrap().to_string());
        assert_eq!(absolute(&one, "x/y.txt"), text(real.join("x/y.txt")));
        assert_eq!(absolute(&one, "."), text(real.clone()));
        let spec = |name: &str, dir: &std::path::Path| {
            format!("{name}={}", dir.display()).parse().unwrap()
        };
        let two = Roots::open(
            &[spec("a", a.path()), spec("b", b.path())],
            Default::default(),
        )
        .unwrap();
        assert_eq!(
            absolute(&two, "b/notes.md"),
            text(std::fs::canonicalize(b.path()).unwrap().join("notes.md"))
        );
        assert_eq!(absolute(&two, "a"), text(real));
        assert_eq!(absolute(&two, "c/x"), None);
    }

    #[test]
    fn errors_point_at_the_mistake_and_content_goes_to_grep() {
        let e = compile("size:>1zb", &Options::default()).unwrap_err();
        assert_eq!(e.code, "BAD_QUERY");
        assert!(e.message.contains('^') && e.hint.as_deref() == Some("try `size:>1gb`"));
        let e = compile("ext:md content:TODO", &Options::default()).unwrap_err();
        assert!(e.message.contains("content:") && e.hint.unwrap().contains("Contents"));
        assert!(compile("ext:rs main", &Options::default()).is_ok());
        assert_eq!(sort_key("date_modified"), Some(SortKey::Modified));
        assert_eq!(sort_key("run_count"), None);
    }
}
