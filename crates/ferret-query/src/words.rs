//! Plain words, split off for fuzzy matching.

use std::cell::Cell;

use crate::error::{Limit, PError};
use crate::{Ast, QueryError, content::split_top_level};

/// Split the top-level plain words off a query, for a fuzzy search that matches
/// them as subsequences of paths while the rest filters: `authmw ext:rs !test`
/// gives `("ext:rs !test", ["authmw"])`. A word is a plain or quoted term ANDed at
/// the top level, without `*` or `?` (a wildcard term is a filter); words may
/// hold `/` (`cfg/prod`). Pure: parses, never compiles. More than
/// [`Limit::Words`] words is an error (each word is matched against every path).
pub fn split_words(query: &str) -> Result<(String, Vec<String>), QueryError> {
    let (count, past) = (Cell::new(0), Cell::new(None));
    let split = split_top_level(query, |item| match item {
        Ast::Text(t) if !t.text.contains(['*', '?']) && !t.text.trim().is_empty() => {
            count.set(count.get() + 1);
            if count.get() == Limit::Words.max() + 1 {
                past.set(Some(t.span.start));
            }
            Some((t.text.clone(), t.span))
        }
        _ => None,
    })?;
    if let Some(at) = past.get() {
        let e = PError::limit(
            Limit::Words,
            &format!("{} words", count.get()),
            at,
            "authmw ext:rs",
        );
        return Err(e.err);
    }
    Ok(split)
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
        // A path in code is its words; quoted, it is text.
        let (rest, words) = split_words("tokio::runtime::Builder ext:rs").unwrap();
        assert_eq!(words, ["tokio", "runtime", "Builder"]);
        assert_eq!(rest, "ext:rs");
        let (_, words) = split_words("\"a::b\"").unwrap();
        assert_eq!(words, ["a::b"]);
        let (_, words) = split_words("::new").unwrap();
        assert_eq!(words, ["new"]);
    }

    #[test]
    fn too_many_words_name_the_limit() {
        let max = Limit::Words.max();
        let words: Vec<String> = (0..=max).map(|i| format!("w{i}")).collect();
        assert_eq!(split_words(&words[..max].join(" ")).unwrap().1.len(), max);
        let q = words.join(" ");
        let e = split_words(&q).unwrap_err();
        assert_eq!(e.limit, Some(Limit::Words));
        assert!(
            e.message.contains(&format!("at most {max} words")),
            "{}",
            e.message
        );
        assert_eq!(e.position, q.find(&format!("w{max}")).unwrap());
        assert!(split_words(&e.example).is_ok());
    }
}
