//! Plain words, split off for fuzzy matching.

use crate::{Ast, QueryError, content::split_top_level};

/// Split the top-level plain words off a query, for a fuzzy search that matches
/// them as subsequences of paths while the rest filters: `authmw ext:rs !test`
/// gives `("ext:rs !test", ["authmw"])`. A word is a plain or quoted term ANDed at
/// the top level, without `*` or `?` (a wildcard term is a filter); words may
/// hold `/` (`cfg/prod`). Pure: parses, never compiles.
pub fn split_words(query: &str) -> Result<(String, Vec<String>), QueryError> {
    split_top_level(query, |item| match item {
        Ast::Text(t) if !t.text.contains(['*', '?']) && !t.text.trim().is_empty() => {
            Some((t.text.clone(), t.span))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_the_rest() {
        let (rest, words) =
            split_words("authmw ext:rs !test \"user servce\" *.md cfg/prod").unwrap();
        assert_eq!(words, ["authmw", "user servce", "cfg/prod"]);
        assert_eq!(rest, "ext:rs !test  *.md");
        let (rest, words) = split_words("a|b").unwrap();
        assert!(words.is_empty() && rest == "a|b");
        let (rest, words) = split_words("").unwrap();
        assert!(words.is_empty() && rest.is_empty());
        assert!(split_words("size:>").is_err());
    }
}
