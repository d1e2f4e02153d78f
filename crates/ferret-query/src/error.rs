//! Query errors: a message, the character offset it is about, and a corrected query.

use std::fmt;

/// A query that cannot be parsed or compiled.
///
/// Every error points at a position and comes with a corrected query (`example`) that
/// itself parses (and, for errors found while compiling, compiles with the same
/// options), so an agent can retry at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    /// What is wrong, e.g. "unknown size unit `zb` (units: b, kb, mb, gb, tb)".
    pub message: String,
    /// Character offset (not byte offset) into the query.
    pub position: usize,
    /// A corrected query, e.g. `size:>1gb`.
    pub example: String,
    /// Set when the query is well formed but goes past one of the language's
    /// bounds (too long, too many terms, …): the same query will never be
    /// accepted, whatever is corrected in it but its size.
    pub limit: Option<Limit>,
}

/// The bounds a query must keep within, so that no single search can tie up
/// the server: each one's cost grows with the number and kind of its terms.
/// `docs/query-syntax.md` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// At most [`Limit::max`] characters of query text.
    Length,
    /// At most [`Limit::max`] terms (words, functions and modifiers), all
    /// parts of a search together (its `exclude`s included).
    Terms,
    /// Groups, `!` and modifiers nested at most [`Limit::max`] deep.
    Depth,
    /// At most [`Limit::max`] regexes (`regex:` terms, and path globs,
    /// which become regexes).
    Regexes,
    /// Each regex at most [`Limit::max`] bytes once compiled.
    RegexSize,
    /// A fuzzy search takes at most [`Limit::max`] words.
    Words,
}

impl Limit {
    /// The bound itself.
    pub const fn max(self) -> usize {
        match self {
            Limit::Length => 4096,
            Limit::Terms => 256,
            Limit::Depth => 100,
            Limit::Regexes => 16,
            Limit::RegexSize => 256 * 1024,
            Limit::Words => 24,
        }
    }

    /// What to do instead.
    const fn advice(self) -> &'static str {
        match self {
            Limit::Length | Limit::Terms | Limit::Regexes => "split it into several searches",
            Limit::Depth => "nest fewer groups",
            Limit::RegexSize => "write a smaller regex (fewer repetitions, narrower classes)",
            Limit::Words => {
                "give fewer words (to filter by the others instead, write them as `*word*`)"
            }
        }
    }

    /// Its name as errors and documents give it (`terms`, `regex size` …).
    pub const fn name(self) -> &'static str {
        match self {
            Limit::Length => "length",
            Limit::Terms => "terms",
            Limit::Depth => "nesting",
            Limit::Regexes => "regexes",
            Limit::RegexSize => "regex size",
            Limit::Words => "fuzzy words",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let max = self.max();
        match self {
            Limit::Length => write!(f, "a query has at most {max} characters"),
            Limit::Terms => write!(f, "a search has at most {max} terms"),
            Limit::Depth => write!(f, "groups, `!` and modifiers nest at most {max} deep"),
            Limit::Regexes => write!(f, "a search has at most {max} regexes (path globs count)"),
            Limit::RegexSize => write!(f, "a regex is at most {} KiB once compiled", max / 1024),
            Limit::Words => write!(f, "a fuzzy search has at most {max} words"),
        }
    }
}

impl QueryError {
    /// The message, the query, a caret under the position and the example:
    ///
    /// ```text
    /// unknown size unit `zb` (units: b, kb, mb, gb, tb)
    ///   size:>1zb
    ///          ^
    /// try: size:>1gb
    /// ```
    pub fn render(&self, query: &str) -> String {
        // Tabs and newlines would break the caret's alignment.
        let chars: Vec<char> = query
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let col = self.position.min(chars.len());
        // A long query is shown around the caret: the caller has the rest,
        // and a 4,096-character query echoed whole (with a caret line as
        // long) is most of the answer.
        let start = if chars.len() > SHOWN_CHARS {
            col.saturating_sub(SHOWN_CHARS / 2)
                .min(chars.len() - SHOWN_CHARS)
        } else {
            0
        };
        let end = (start + SHOWN_CHARS).min(chars.len());
        let mut shown: String = if start > 0 {
            "…".into()
        } else {
            String::new()
        };
        shown.extend(&chars[start..end]);
        if end < chars.len() {
            shown.push('…');
        }
        let caret = col - start + usize::from(start > 0);
        format!(
            "{}\n  {}\n  {}^\ntry: {}",
            self.message,
            shown,
            " ".repeat(caret),
            self.example
        )
    }
}

/// At most this many characters of a query are shown around an error's caret.
const SHOWN_CHARS: usize = 120;

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (at character {}); try `{}`",
            self.message, self.position, self.example
        )
    }
}

impl std::error::Error for QueryError {}

/// An error inside the crate, with a canned example to fall back on when the
/// corrected query still does not parse (because of a second mistake).
#[derive(Debug, Clone)]
pub(crate) struct PError {
    pub err: QueryError,
    pub canned: &'static str,
}

impl PError {
    pub fn new(
        message: impl Into<String>,
        position: usize,
        example: impl Into<String>,
        canned: &'static str,
    ) -> PError {
        PError {
            err: QueryError {
                message: message.into(),
                position,
                example: example.into(),
                limit: None,
            },
            canned,
        }
    }

    /// A query past `limit`, at `position`: the message says what was found
    /// (`found`: "300 terms") and names the limit; the example is `canned`,
    /// since no correction of the query itself would keep within it.
    pub fn limit(limit: Limit, found: &str, position: usize, canned: &'static str) -> PError {
        let mut e = PError::new(
            format!(
                "query too large: {found}; {limit} (the `{}` limit: one search must not tie up the server), so {}",
                limit.name(),
                limit.advice()
            ),
            position,
            canned,
            canned,
        );
        e.err.limit = Some(limit);
        e
    }
}

/// `chars` with `start..end` replaced by `with`.
pub(crate) fn splice(chars: &[char], start: usize, end: usize, with: &str) -> String {
    let start = start.min(chars.len());
    let end = end.clamp(start, chars.len());
    let mut s: String = chars[..start].iter().collect();
    s.push_str(with);
    s.extend(&chars[end..]);
    s
}

/// `chars` without `start..end`, with the whitespace around the hole tidied: two words
/// that would touch are kept apart by a space (not after a function's colon), doubled
/// spaces at the hole go.
pub(crate) fn remove(chars: &[char], start: usize, end: usize) -> String {
    let start = start.min(chars.len());
    let end = end.clamp(start, chars.len());
    let (before, mut after) = (&chars[..start], &chars[end..]);
    let is_op = |c: &char| matches!(c, '|' | '<' | '>' | '(' | ')');
    let mut s: String = before.iter().collect();
    if let (Some(b), Some(a)) = (before.last(), after.first())
        && !b.is_whitespace()
        && !a.is_whitespace()
        && !is_op(b)
        && !is_op(a)
        && *b != ':'
    {
        s.push(' ');
    } else if before.last().is_none_or(|c| c.is_whitespace()) {
        while after.first().is_some_and(|c| c.is_whitespace()) {
            after = &after[1..];
        }
    }
    s.extend(after);
    s.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_has_caret_and_example() {
        let e = QueryError {
            message: "unknown size unit `zb`".into(),
            position: 7,
            example: "size:>1gb".into(),
            limit: None,
        };
        assert_eq!(
            e.render("size:>1zb"),
            "unknown size unit `zb`\n  size:>1zb\n         ^\ntry: size:>1gb"
        );
        assert_eq!(
            e.to_string(),
            "unknown size unit `zb` (at character 7); try `size:>1gb`"
        );
    }

    #[test]
    fn splice_and_remove() {
        let c: Vec<char> = "ab cd ef".chars().collect();
        assert_eq!(splice(&c, 3, 5, "XY"), "ab XY ef");
        assert_eq!(remove(&c, 3, 5), "ab ef");
        assert_eq!(remove(&c, 0, 8), "");
        assert_eq!(remove(&c, 2, 3), "ab cd ef");
        let c: Vec<char> = "a)b".chars().collect();
        assert_eq!(remove(&c, 1, 2), "a b");
        let c: Vec<char> = "a||b".chars().collect();
        assert_eq!(remove(&c, 1, 2), "a|b");
        let c: Vec<char> = "a | ".chars().collect();
        assert_eq!(remove(&c, 2, 3), "a");
        let c: Vec<char> = "\"a  b\" x".chars().collect();
        assert_eq!(remove(&c, 7, 8), "\"a  b\"");
    }
}
