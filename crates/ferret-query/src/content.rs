//! `content:` terms, split off for the grep engine.

use crate::{Ast, Func, Function, QueryError, Span, parse};

/// Split the top-level `content:` terms off a query: `ext:md content:"TODO"` gives
/// `("ext:md", ["TODO"])`. Only terms ANDed at the top level are taken; a
/// `content:` anywhere else (under `|`, `!`, a modifier or a group) stays in the
/// rest, where [`crate::Query::compile`] refuses it. Pure: parses, never compiles.
pub fn split_content(query: &str) -> Result<(String, Vec<String>), QueryError> {
    split_top_level(query, |item| match item {
        Ast::Func(Func {
            function: Function::Content(text),
            span,
        }) => Some((text.clone(), *span)),
        _ => None,
    })
}

/// Split off the terms ANDed at the top level of `query` that `pick` takes
/// (with their spans): the rest of the query's text, and what was taken.
/// Shared by [`split_content`] and [`crate::split_words`].
pub(crate) fn split_top_level(
    query: &str,
    pick: impl Fn(&Ast) -> Option<(String, Span)>,
) -> Result<(String, Vec<String>), QueryError> {
    let ast = parse(query)?;
    let items: Vec<&Ast> = match &ast {
        Ast::And(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut picked: Vec<(String, Span)> = items.into_iter().filter_map(pick).collect();
    if picked.is_empty() {
        return Ok((query.trim().to_string(), Vec::new()));
    }
    picked.sort_by_key(|(_, span)| span.start);
    let (taken, spans): (Vec<String>, Vec<Span>) = picked.into_iter().unzip();
    let chars: Vec<char> = query.chars().collect();
    let mut rest = String::with_capacity(query.len());
    let mut at = 0;
    for span in spans {
        rest.extend(&chars[at.min(span.start)..span.start]);
        at = span.end.max(at);
    }
    rest.extend(&chars[at.min(chars.len())..]);
    Ok((rest.trim().to_string(), taken))
}
