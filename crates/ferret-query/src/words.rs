//! Plain words, split off for fuzzy matching.

use crate::{Ast, QueryError, parse};

/// Split the top-level plain words off a query, for a fuzzy search that matches
/// them as subsequences of paths while the rest filters: `authmw ext:rs !test`
/// gives `("ext:rs !test", ["authmw"])`. A word is a plain or quoted term ANDed at
/// the top level, without `*` or `?` (a wildcard term is a filter); words may
/// hold `/` (`cfg/prod`). Pure: parses, never compiles.
pub fn split_words(query: &str) -> Result<(String, Vec<String>), QueryError> {
    let ast = parse(query)?;
    let items: Vec<&Ast> = match &ast {
        Ast::And(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut words = Vec::new();
    let mut spans = Vec::new();
    for item in items {
        if let Ast::Text(t) = item
            && !t.text.contains(['*', '?'])
            && !t.text.trim().is_empty()
        {
            words.push(t.text.clone());
            spans.push(t.span);
        }
    }
    spans.sort_by_key(|s| s.start);
    let chars: Vec<char> = query.chars().collect();
    let mut rest = String::with_capacity(query.len());
    let mut at = 0;
    for span in spans {
        rest.extend(&chars[at.min(span.start)..span.start]);
        at = span.end.max(at);
    }
    rest.extend(&chars[at.min(chars.len())..]);
    Ok((rest.trim().to_string(), words))
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
