//! `content:` terms, split off for the grep engine.

use crate::{Ast, Func, Function, QueryError, parse};

/// Split the top-level `content:` terms off a query: `ext:md content:"TODO"` gives
/// `("ext:md", ["TODO"])`. Only terms ANDed at the top level are taken; a
/// `content:` anywhere else (under `|`, `!`, a modifier or a group) stays in the
/// rest, where [`crate::Query::compile`] refuses it. Pure: parses, never compiles.
pub fn split_content(query: &str) -> Result<(String, Vec<String>), QueryError> {
    let ast = parse(query)?;
    let items: Vec<&Ast> = match &ast {
        Ast::And(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut patterns = Vec::new();
    let mut spans = Vec::new();
    for item in items {
        if let Ast::Func(Func {
            function: Function::Content(text),
            span,
        }) = item
        {
            patterns.push(text.clone());
            spans.push(*span);
        }
    }
    if patterns.is_empty() {
        return Ok((query.to_string(), patterns));
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
    Ok((rest.trim().to_string(), patterns))
}
