//! `split_content`: top-level `content:` terms go to the grep engine.

use super::fake::CLOCK;
use crate::{Options, Query, split_content};

fn split(q: &str) -> (String, Vec<String>) {
    split_content(q).unwrap_or_else(|e| panic!("{q}: {e}"))
}

#[test]
fn top_level_content_terms_are_split_off() {
    assert_eq!(
        split("ext:md content:TODO"),
        ("ext:md".into(), vec!["TODO".into()])
    );
    assert_eq!(
        split("ext:md content:\"fix me\" dm:today"),
        ("ext:md  dm:today".into(), vec!["fix me".into()])
    );
    assert_eq!(split("content:x"), ("".into(), vec!["x".into()]));
    assert_eq!(
        split("content:a src/ content:b"),
        ("src/".into(), vec!["a".into(), "b".into()])
    );
    assert_eq!(split("ext:rs"), ("ext:rs".into(), vec![]));
    assert_eq!(split(""), ("".into(), vec![]));
    assert_eq!(split("é content:ü"), ("é".into(), vec!["ü".into()]));
    // A group ANDed at the top level is the same AND.
    assert_eq!(split("<content:x b>").1, vec!["x".to_string()]);
}

#[test]
fn the_rest_compiles() {
    for q in ["ext:md content:TODO", "content:\"a b\" <src|docs> !target/"] {
        let (rest, _) = split(q);
        Query::compile(&rest, &Options::default(), &CLOCK).unwrap();
    }
}

#[test]
fn nested_content_stays_an_error() {
    for q in [
        "a|content:x",
        "!content:x",
        "<a|content:x> b",
        "file:content:x",
    ] {
        let (rest, patterns) = split(q);
        assert!(patterns.is_empty(), "{q}");
        assert!(
            Query::compile(&rest, &Options::default(), &CLOCK).is_err(),
            "{q}"
        );
    }
}

#[test]
fn syntax_errors_are_reported() {
    assert!(split_content("content:").is_err());
    assert!(split_content("ext:md \"open").is_err());
}
