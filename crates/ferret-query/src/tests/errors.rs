//! Every error: its message, its position, and a corrected example that compiles.

use super::fake::CLOCK;
use crate::{Options, Query, parse};

/// (query, part of the message, position, example)
const CASES: &[(&str, &str, usize, &str)] = &[
    // The spec's own example.
    ("size:>1zb", "unknown size unit `zb`", 7, "size:>1gb"),
    ("size:1xb", "unknown size unit `xb`", 6, "size:1gb"),
    // Brackets and quotes.
    (
        "<src|tests ext:rs",
        "unbalanced `<`",
        0,
        "<src|tests ext:rs>",
    ),
    ("a (b c", "unbalanced `(`", 2, "a (b c)"),
    ("a b>", "unbalanced `>`", 3, "a b"),
    ("a)", "unbalanced `)`", 1, "a"),
    ("<a)", "does not close the `<`", 2, "<a>"),
    ("\"my file", "unbalanced `\"`", 0, "\"my file\""),
    ("ext:rs \"a b", "unbalanced `\"`", 7, "ext:rs \"a b\""),
    ("<a \"b", "unbalanced `\"`", 3, "<a \"b\">"),
    // `|` and `!`.
    ("a|", "dangling `|`", 1, "a"),
    ("|a", "dangling `|`", 0, "a"),
    ("a||b", "dangling `|`", 1, "a|b"),
    ("<a|>", "dangling `|`", 2, "<a>"),
    ("a | ", "dangling `|`", 2, "a"),
    ("!", "`!` needs a term", 0, "\"!\""),
    ("!!!", "quote it", 2, "\"!!!\""),
    ("a !", "`!` needs a term", 2, "a"),
    ("! a", "`!` needs a term", 0, "!a"),
    ("a !|b", "`!` needs a term", 2, "a |b"),
    // Unknown functions and modifiers.
    ("foo:bar", "unknown function `foo:`", 0, "\"foo:bar\""),
    ("x siz:>1mb", "did you mean `size:`", 2, "x size:>1mb"),
    (
        "datemodifed:today",
        "did you mean `datemodified:`",
        0,
        "datemodified:today",
    ),
    ("nofile:x", "`nofile:` is not a modifier", 0, "!file:x"),
    (
        "http://x.org",
        "unknown function `http:`",
        0,
        "\"http://x.org\"",
    ),
    // Values.
    ("size:", "needs a value", 5, "size:>1mb"),
    ("dm: today", "needs a value", 3, "dm:today"),
    ("size:> 1mb", "needs a value", 6, "size:>1mb"),
    ("size:<", "needs a value", 6, "size:>1mb"),
    ("size:big", "cannot read size `big`", 5, "size:1mb"),
    ("size:hug", "cannot read size", 5, "size:huge"),
    ("size:1.5", "a size in bytes is a whole number", 6, "size:1"),
    (
        "size:1.kb",
        "expected digits after the decimal point",
        7,
        "size:1kb",
    ),
    ("size:99999999999999999999", "too large", 5, "size:1tb"),
    ("size:99999999tb", "too large", 5, "size:1tb"),
    ("size:1..", "a range needs both ends", 6, "size:10kb..2mb"),
    (
        "size:>1kb..2kb",
        "cannot follow a comparison",
        5,
        "size:1kb..2kb",
    ),
    ("size:2mb..1kb", "this range is empty", 0, "size:1kb..2mb"),
    ("dm:2026-13", "the month must be 01 to 12", 8, "dm:2026-12"),
    (
        "dm:2026-02-30",
        "that month has days 01 to 28",
        11,
        "dm:2026-02-28",
    ),
    (
        "dm:2026-01-01T24",
        "the hour must be 00 to 23",
        14,
        "dm:2026-01-01T23",
    ),
    (
        "dm:2026-01-01T10:60",
        "the minutes must be 00 to 59",
        17,
        "dm:2026-01-01T10:59",
    ),
    (
        "dm:2026-01-01T10:30:61",
        "the seconds must be 00 to 59",
        20,
        "dm:2026-01-01T10:30:59",
    ),
    ("dm:26-01-01", "cannot read date", 3, "dm:today"),
    ("dm:2026/01/05", "cannot read date", 7, "dm:2026-01-05"),
    ("dm:2026-01-01x", "cannot read date", 13, "dm:today"),
    ("dm:yesterdy", "cannot read date", 3, "dm:yesterday"),
    (
        "dm:last2fortnights",
        "unknown unit `fortnights`",
        8,
        "dm:last2months",
    ),
    ("dm:last99999999999days", "too many", 7, "dm:last30days"),
    (
        "dc:today..yesterday",
        "this range is empty",
        0,
        "dc:yesterday..today",
    ),
    ("depth:two", "takes a whole number", 6, "depth:2"),
    ("depth:3x", "takes a whole number", 7, "depth:3"),
    ("len:5..2", "this range is empty", 0, "len:2..5"),
    ("type:pictures2", "unknown type", 5, "type:pictures"),
    ("type:", "unknown type", 5, "type:pic"),
    ("attrib:S", "attribute `S`", 7, "attrib:H"),
    ("attrib:HS", "attribute `S`", 8, "attrib:H"),
    ("attrib:", "needs letters", 7, "attrib:H"),
    ("ext:>rs", "unbalanced `>`", 4, "ext:rs"),
    ("ext:=rs", "does not compare", 4, "ext:rs"),
    ("<a|ext:>", "", 0, ""),
    ("ext:!rs", "does not compare", 4, "!ext:rs"),
    ("ext:(rs)", "takes a value, not a group", 4, "ext:rs"),
    ("child:src/main.rs", "matches one name", 9, "child:main.rs"),
    ("content:", "needs the text", 8, "ext:md"),
    // Compile errors.
    ("regex:\"a(b\"", "bad regex", 6, "regex:\"a\\(b\""),
    ("regex:a(b", "unbalanced `(`", 7, "regex:a(b)"),
    ("regex:\"[z-a]\"", "bad regex", 6, "regex:\"\\[z\\-a\\]\""),
    (
        "regex:\"a{99999}{99999}\"",
        "the `regex size` limit",
        6,
        "regex:\"^IMG_[0-9]+\\.jpg$\"",
    ),
    ("ext:md content:TODO", "`grep` tool", 7, "ext:md"),
    ("dupe:", "not supported yet", 0, "ext:rs"),
    ("x|sizedupe:", "not supported yet", 2, "x"),
];

#[test]
fn errors_have_message_position_and_a_working_example() {
    for &(query, part, pos, example) in CASES {
        if part.is_empty() {
            // Not an error: listed to show where the line is.
            assert!(
                Query::compile(query, &Options::default(), &CLOCK).is_ok(),
                "{query}"
            );
            continue;
        }
        let e = Query::compile(query, &Options::default(), &CLOCK).expect_err(query);
        assert!(
            e.message.contains(part),
            "{query}: message {:?} lacks {part:?}",
            e.message
        );
        assert_eq!(e.position, pos, "{query}: position\n{}", e.render(query));
        assert_eq!(e.example, example, "{query}: example");
        assert!(
            Query::compile(&e.example, &Options::default(), &CLOCK).is_ok(),
            "{query}: example {:?} does not compile",
            e.example
        );
        // Parse-level errors are the same from `parse`, with an example that parses
        // (it may differ: `content:TODO` parses but does not compile).
        if let Err(p) = parse(query) {
            assert_eq!(
                (&p.message, p.position),
                (&e.message, e.position),
                "{query}"
            );
            assert!(parse(&p.example).is_ok());
        }
    }
}

#[test]
fn regex_option_errors_point_at_the_term() {
    let opts = Options {
        regex: true,
        ..Options::default()
    };
    let e = Query::compile("ext:rs *.rs", &opts, &CLOCK).unwrap_err();
    assert!(e.message.contains("bad regex `*.rs`"), "{}", e.message);
    assert_eq!(e.position, 7);
    assert_eq!(e.example, "ext:rs \"\\*\\.rs\"");
    assert!(Query::compile(&e.example, &opts, &CLOCK).is_ok());
}

#[test]
fn regexes_are_size_capped() {
    // Far larger than the cap once compiled (Unicode classes repeated).
    let e =
        Query::compile("regex:\"\\w{1000}\\w{1000}\"", &Options::default(), &CLOCK).unwrap_err();
    assert!(e.message.contains("too large"), "{}", e.message);
}

#[test]
fn second_mistakes_are_corrected_too() {
    // The first fix (closing the quote) leaves an unbalanced `<`.
    let e = parse("<a \"b").unwrap_err();
    assert_eq!(e.example, "<a \"b\">");
    // Unfixable chains fall back to a canned example that parses.
    let e = Query::compile("size:zz size:qq size:ww", &Options::default(), &CLOCK).unwrap_err();
    assert!(Query::compile(&e.example, &Options::default(), &CLOCK).is_ok());
}

#[test]
fn render_shows_the_caret_under_the_position() {
    let query = "ext:rs size:>1zb";
    let e = Query::compile(query, &Options::default(), &CLOCK).unwrap_err();
    let r = e.render(query);
    let lines: Vec<&str> = r.lines().collect();
    assert_eq!(
        lines[0],
        "unknown size unit `zb` (units: b, kb, mb, gb, tb)"
    );
    assert_eq!(lines[1], "  ext:rs size:>1zb");
    assert_eq!(lines[2], "                ^");
    assert_eq!(lines[3], "try: ext:rs size:>1gb");
    // Positions are characters, not bytes.
    let query = "é size:1zb";
    let e = Query::compile(query, &Options::default(), &CLOCK).unwrap_err();
    assert_eq!(e.position, 8);
    assert!(
        e.render(query)
            .lines()
            .nth(2)
            .unwrap()
            .ends_with("        ^")
    );
    // A long query is shown around the caret, marked where it is cut.
    let query = format!("{} size:1zb {}", "a ".repeat(100), "b ".repeat(100));
    let e = Query::compile(&query, &Options::default(), &CLOCK).unwrap_err();
    let r = e.render(&query);
    let lines: Vec<&str> = r.lines().collect();
    assert!(
        lines[1].starts_with("  …") && lines[1].ends_with('…'),
        "{r}"
    );
    assert!(lines[1].chars().count() <= 2 + 120 + 2, "{r}");
    let caret = lines[2].chars().count() - 1;
    let under: String = lines[1].chars().skip(caret).take(4).collect();
    // The example is the canned one, not the query corrected whole.
    assert!(e.example.chars().count() < 40, "{}", e.example);
    let meant: String = query.chars().skip(e.position).take(4).collect();
    assert_eq!((under.as_str(), meant.as_str()), ("zb b", "zb b"), "{r}");
}

/// The bounds that keep one search from tying up the server: each refusal is
/// typed, names its limit, and points at where the query went past it; just
/// within each bound still compiles.
mod limits {
    use super::CLOCK;
    use crate::{Limit, Options, Query, parse, split_words};

    fn refused(query: &str, options: &Options) -> crate::QueryError {
        let e = Query::compile(query, options, &CLOCK).unwrap_err();
        assert!(
            Query::compile(&e.example, options, &CLOCK).is_ok(),
            "{}",
            e.example
        );
        e
    }

    fn names(e: &crate::QueryError, limit: Limit) {
        assert_eq!(e.limit, Some(limit), "{}", e.message);
        assert!(
            e.message.contains(&format!("the `{}` limit", limit.name())),
            "{}",
            e.message
        );
        assert!(e.message.contains(&limit.max().to_string()) || limit == Limit::RegexSize);
    }

    #[test]
    fn terms() {
        let max = Limit::Terms.max();
        let or = |n: usize| {
            (0..n)
                .map(|i| format!("a{i}"))
                .collect::<Vec<_>>()
                .join("|")
        };
        assert!(Query::compile(&or(max), &Options::default(), &CLOCK).is_ok());
        let q = or(max + 1);
        let e = refused(&q, &Options::default());
        names(&e, Limit::Terms);
        // At the first term past the limit.
        assert_eq!(e.position, q.find(&format!("|a{max}")).unwrap() + 1);
        // Every kind of term counts, ANDed or ORed: functions and modifiers too.
        let mixed: Vec<String> = (0..max + 1)
            .map(|i| match i % 4 {
                0 => format!("in:d{i}"),
                1 => format!("ext:e{i}"),
                2 => format!("case:w{i}"),
                _ => format!("w{i}"),
            })
            .collect();
        names(
            &refused(&mixed.join(" "), &Options::default()),
            Limit::Terms,
        );
        // The parser alone refuses it (split_content and split_words parse).
        assert_eq!(parse(&q).unwrap_err().limit, Some(Limit::Terms));
    }

    #[test]
    fn length() {
        let max = Limit::Length.max();
        let q = "a".repeat(max);
        assert!(Query::compile(&q, &Options::default(), &CLOCK).is_ok());
        // Characters, not bytes.
        assert!(Query::compile(&"é".repeat(max), &Options::default(), &CLOCK).is_ok());
        let e = refused(&"a".repeat(max + 1), &Options::default());
        names(&e, Limit::Length);
        assert_eq!(e.position, max);
        assert!(e.message.contains(&format!("{} characters", max + 1)));
    }

    #[test]
    fn nesting() {
        let q = format!("{}a", "!".repeat(Limit::Depth.max() + 1));
        names(&refused(&q, &Options::default()), Limit::Depth);
    }

    #[test]
    fn regexes() {
        let max = Limit::Regexes.max();
        let re = |n: usize| {
            (0..n)
                .map(|i| format!("regex:a{i}"))
                .collect::<Vec<_>>()
                .join("|")
        };
        assert!(Query::compile(&re(max), &Options::default(), &CLOCK).is_ok());
        let q = re(max + 1);
        let e = refused(&q, &Options::default());
        names(&e, Limit::Regexes);
        // At the regex itself, after its modifier.
        assert_eq!(e.position, q.find(&format!("regex:a{max}")).unwrap() + 6);
        // The `regex` option makes every term one; path globs are regexes too.
        let plain: Vec<String> = (0..=max).map(|i| format!("a{i}")).collect();
        let regex = Options {
            regex: true,
            ..Options::default()
        };
        names(&refused(&plain.join("|"), &regex), Limit::Regexes);
        let globs: Vec<String> = (0..=max).map(|i| format!("d{i}/*.rs")).collect();
        names(
            &refused(&globs.join("|"), &Options::default()),
            Limit::Regexes,
        );
    }

    #[test]
    fn regex_size() {
        let e = refused("regex:\"\\w{1000}\\w{1000}\"", &Options::default());
        names(&e, Limit::RegexSize);
        assert!(e.message.contains("256 KiB"), "{}", e.message);
        assert_eq!(e.position, 6);
        // Regexes people write stay far within it.
        for q in [
            "regex:\"^IMG_[0-9]+\\.jpg$\"",
            "regex:\"\\w+\\.(rs|toml|md)$\"",
            "regex:\"^(?i)[a-z0-9_-]{1,64}\\.(jpe?g|png|gif|webp)$\"",
        ] {
            assert!(
                Query::compile(q, &Options::default(), &CLOCK).is_ok(),
                "{q}"
            );
        }
    }

    #[test]
    fn parts_put_together() {
        let half = |tag: &str| {
            (0..Limit::Terms.max() / 2 + 1)
                .map(|i| format!("{tag}{i}"))
                .collect::<Vec<_>>()
                .join("|")
        };
        let a = Query::compile(&half("a"), &Options::default(), &CLOCK).unwrap();
        let b = Query::compile(&half("b"), &Options::default(), &CLOCK).unwrap();
        assert!(a.check_limits().is_ok());
        let e = a.and(b.negate()).check_limits().unwrap_err();
        assert_eq!(e.limit, Some(Limit::Terms));
        assert!(e.message.contains("the `terms` limit"), "{}", e.message);
        let re = |tag: &str| {
            (0..Limit::Regexes.max() / 2 + 1)
                .map(|i| format!("regex:{tag}{i}"))
                .collect::<Vec<_>>()
                .join("|")
        };
        let a = Query::compile(&re("a"), &Options::default(), &CLOCK).unwrap();
        let b = Query::compile(&re("b"), &Options::default(), &CLOCK).unwrap();
        assert_eq!(
            a.and(b).check_limits().unwrap_err().limit,
            Some(Limit::Regexes)
        );
    }

    #[test]
    fn other_errors_name_no_limit() {
        assert_eq!(parse("size:>1zb").unwrap_err().limit, None);
        assert_eq!(split_words("a b").unwrap().1.len(), 2);
    }
}
