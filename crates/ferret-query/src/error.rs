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
        let shown: String = query
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let col = self.position.min(shown.chars().count());
        format!(
            "{}\n  {}\n  {}^\ntry: {}",
            self.message,
            shown,
            " ".repeat(col),
            self.example
        )
    }
}

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
            },
            canned,
        }
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
