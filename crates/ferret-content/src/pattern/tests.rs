use proptest::prelude::*;

use super::*;
use crate::grams::grams_of;

fn spec(text: &str) -> PatternSpec<'_> {
    PatternSpec {
        text,
        literal: false,
        case_insensitive: false,
        multiline: false,
    }
}

/// Whether the query lets a text through.
fn admits(q: &Grams, text: &str) -> bool {
    let grams: std::collections::HashSet<u32> = grams_of(text.as_bytes()).collect();
    q.holds(&|g| grams.contains(&g))
}

#[test]
fn a_literal_needs_all_its_trigrams() {
    let q = query(&PatternSpec {
        literal: true,
        ..spec("hello.world")
    });
    assert!(admits(&q, "say hello.world!"));
    assert!(
        admits(&q, "HELLO.WORLD"),
        "folded: the matcher decides case"
    );
    assert!(!admits(&q, "hello world"));
    assert!(!admits(&q, "hello.worl"));
    let mut grams = Vec::new();
    q.grams(&mut grams);
    assert_eq!(grams.len(), 9);
}

#[test]
fn short_or_open_patterns_are_not_narrowed() {
    for p in [
        "ab",
        ".*",
        "a.c",
        "\\w+",
        "[a-z]{2,}",
        "(?s).",
        "x|y|zz",
        "a*b*c*",
    ] {
        assert_eq!(query(&spec(p)), Grams::All, "{p}");
    }
    // Not parsed the way grep-regex would accept: scan.
    assert_eq!(query(&spec("(unclosed")), Grams::All);
}

#[test]
fn inner_literals_of_a_regex_are_required() {
    let q = query(&spec(r"fn\s+\w+_handler\("));
    assert!(admits(&q, "pub fn my_handler(x)"));
    assert!(!admits(&q, "pub fn my_handle(x)"));
    assert!(!admits(&q, "fn handler"));
    let q = query(&spec(r"[A-Z][a-z]+Handler\d{2}"));
    assert!(admits(&q, "let h = RequestHandler42;"));
    assert!(!admits(&q, "let h = RequestHandle42;"));
}

#[test]
fn alternations_become_or() {
    let q = query(&spec("needle|haystack"));
    assert!(admits(&q, "a needle here"));
    assert!(admits(&q, "a haystack here"));
    assert!(!admits(&q, "neither"));
    assert!(matches!(q, Grams::Or(_)), "{q:?}");
}

#[test]
fn case_insensitive_patterns_include_unicode_variants() {
    let q = query(&PatternSpec {
        case_insensitive: true,
        ..spec("kiss")
    });
    // K (U+212A KELVIN SIGN) and ſ (U+017F) fold to k and s in Unicode.
    assert!(admits(&q, "\u{212A}I\u{17F}S"));
    assert!(admits(&q, "KISS"));
    assert!(!admits(&q, "kis"));
    let q = query(&PatternSpec {
        case_insensitive: true,
        ..spec("éclair")
    });
    assert!(admits(&q, "ÉCLAIR"));
    assert!(!admits(&q, "eclair"));
}

#[test]
fn repetitions_keep_what_they_must_repeat() {
    assert!(!admits(&query(&spec("(abc){2}")), "abc"));
    assert!(admits(&query(&spec("(abc){2}")), "abcabc"));
    assert!(admits(&query(&spec("(abc)+d")), "abcd"));
    assert!(!admits(&query(&spec("(abc)+d")), "abd"));
    assert_eq!(query(&spec("(abc)?")), Grams::All);
    assert_eq!(query(&spec("(abc)*")), Grams::All);
}

#[test]
fn huge_patterns_are_bounded() {
    let many: Vec<String> = (0..5000).map(|i| format!("word{i}x")).collect();
    let q = query(&spec(&many.join("|")));
    assert!(q.size() <= MAX_QUERY_NODES);
    let long = "abcdefghij".repeat(2000);
    let q = query(&PatternSpec {
        literal: true,
        ..spec(&long)
    });
    assert!(admits(&q, &long));
}

// --- soundness: whatever matches, the query lets through ----------------------

/// A small regex over an alphabet with case pairs, Unicode case variants and
/// line breaks, and the haystacks to try it on.
fn atom() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("K".to_string()),
        Just("k".to_string()),
        Just("\u{212A}".to_string()),
        Just("s".to_string()),
        Just("é".to_string()),
        Just("É".to_string()),
        Just("-".to_string()),
        Just(".".to_string()),
        Just("[ab]".to_string()),
        Just("[^a]".to_string()),
        Just("\\w".to_string()),
        Just("\\s".to_string()),
        Just("\\d".to_string()),
        Just("[a-z]".to_string()),
        Just("^".to_string()),
        Just("$".to_string()),
        Just("\\b".to_string()),
    ]
}

fn regex_strategy() -> impl Strategy<Value = String> {
    atom().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..5).prop_map(|v| v.concat()),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(?:{a}|{b})")),
            inner.clone().prop_map(|a| format!("(?:{a})*")),
            inner.clone().prop_map(|a| format!("(?:{a})+")),
            inner.clone().prop_map(|a| format!("(?:{a})?")),
            (inner, 0u32..4, 0u32..3)
                .prop_map(|(a, n, extra)| format!("(?:{a}){{{n},{}}}", n + extra)),
        ]
    })
}

fn haystack() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a", "b", "A", "B", "k", "K", "\u{212A}", "s", "S", "\u{17F}", "é", "É", "-", " ",
            "\n", "1", "ab", "ka", "ss",
        ]),
        0..24,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn every_match_is_admitted(
        pattern in regex_strategy(),
        hays in prop::collection::vec(haystack(), 1..6),
        ci in any::<bool>(),
        ml in any::<bool>(),
        literal in any::<bool>(),
    ) {
        let spec = PatternSpec { text: &pattern, literal, case_insensitive: ci, multiline: ml };
        let q = query(&spec);
        let text = if literal { regex::escape(&pattern) } else { pattern.clone() };
        let re = regex::bytes::RegexBuilder::new(&text)
            .case_insensitive(ci)
            .multi_line(ml)
            .unicode(true)
            .build();
        let Ok(re) = re else { return Ok(()) };
        for h in &hays {
            if re.is_match(h.as_bytes()) {
                prop_assert!(admits(&q, h), "{pattern:?} (ci {ci}, ml {ml}, literal {literal}) matches {h:?}, query {q:?}");
            }
        }
    }
}
