//! Property tests: the parser never panics, errors always carry a working example,
//! rendering round-trips, `!q` is the exact complement of `q`, and the name literals
//! handed to the index are necessary conditions.

use proptest::prelude::*;

use super::fake::{CLOCK, FakeEntry};
use crate::{Kind, Options, Query, fold_case, parse};

/// Pieces that make the parser work: prefixes, operators, values, quotes, brackets.
const TOKENS: &[&str] = &[
    "size:",
    "dm:",
    "dc:",
    "ext:",
    "in:",
    "parent:",
    "child:",
    "type:",
    "attrib:",
    "depth:",
    "len:",
    "case:",
    "nocase:",
    "ww:",
    "wfn:",
    "path:",
    "regex:",
    "file:",
    "folder:",
    "pic:",
    "empty:",
    "startwith:",
    "endwith:",
    "content:",
    "dupe:",
    "foo:",
    "nofile:",
    ">",
    "<",
    ">=",
    "<=",
    "=",
    "!=",
    "!",
    "..",
    "1kb",
    "1.5mb",
    "2",
    "tiny",
    "today",
    "2026-03",
    "2026-02-30",
    "T10:30",
    "last2hours",
    "lastweek",
    "rs",
    "a",
    "b",
    "*",
    "?",
    "/",
    "\\",
    "\"",
    "(",
    ")",
    "|",
    " ",
    "  ",
    "src/",
    "**/",
    "./",
    ";",
    "é",
    "É",
    "H",
    "X",
    "zb",
    "[",
    "{9}",
    "\t",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..12).prop_map(|v| v.concat())
}

fn any_query() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-zA-Z0-9 |<>()!\"*?/\\\\:.;=_é-]{0,30}",
        token_soup(),
    ]
}

/// Valid queries over a small alphabet, so that they often match the entries below.
fn valid_query() -> impl Strategy<Value = String> {
    let word = "[abAé._]{0,3}";
    let leaf = prop_oneof![
        "[abAé._]{1,3}".prop_map(|w| w.to_string()),
        Just("\"\"".to_string()),
        "[ab*?]{1,3}".prop_map(|w| w.to_string()),
        "[ab]{1,2}/[ab]{0,2}".prop_map(|w| w.to_string()),
        "/[ab]{1,2}".prop_map(|w| w.to_string()),
        "[ab]{1,2}/\\*".prop_map(|w| w.to_string()),
        "\\*\\*/[ab]{1,2}".prop_map(|w| w.to_string()),
        "ext:[ab]{0,2}(;[ab]{1,2})?".prop_map(|w| w.to_string()),
        (
            prop::sample::select(&["", ">", "<", ">=", "<=", "=", "!="][..]),
            0u64..3000,
            prop::sample::select(&["", "b", "kb"][..])
        )
            .prop_map(|(op, n, u)| format!("size:{op}{n}{u}")),
        prop::sample::select(
            &[
                "size:empty",
                "size:tiny",
                "size:0..2kb",
                "depth:<=2",
                "depth:1",
                "len:>2",
                "len:1..3"
            ][..]
        )
        .prop_map(str::to_string),
        prop::sample::select(
            &[
                "dm:today",
                "dm:lastweek",
                "dm:last2hours",
                "dc:thisyear",
                "dm:2026-03",
                "dm:<2026-03-18",
                "dm:2026-01..2026-02"
            ][..]
        )
        .prop_map(str::to_string),
        prop::sample::select(
            &[
                "file:",
                "folder:",
                "empty:",
                "attrib:H",
                "attrib:X",
                "attrib:R",
                "child:a",
                "child:*b",
                "parent:a",
                "parent:",
                "in:a",
                "type:symlink",
                "pic:"
            ][..]
        )
        .prop_map(str::to_string),
        (
            prop::sample::select(
                &[
                    "regex:",
                    "ww:",
                    "wfn:",
                    "case:",
                    "startwith:",
                    "endwith:",
                    "path:",
                    "nowildcards:",
                    "file:",
                    "folder:"
                ][..]
            ),
            word
        )
            .prop_map(|(m, w)| format!("{m}\"{w}\"")),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| v.join(" ")),
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| format!("<{}>", v.join("|"))),
            inner.clone().prop_map(|q| format!("!<{q}>")),
            inner.prop_map(|q| format!("case:<{q}>")),
        ]
    })
}

/// ANDs of name terms over a tiny alphabet (with `É` and the Kelvin sign, whose
/// lowercase is ASCII), so that they often match [`name_entry`]s.
fn name_query() -> impl Strategy<Value = String> {
    let text = "[aAéÉkK\u{212A}]{1,2}";
    let leaf = prop_oneof![
        text.prop_map(|w| w.to_string()),
        "[aAéÉk*?]{1,3}".prop_map(|w| w.to_string()),
        (
            prop::sample::select(
                &[
                    "case:",
                    "ww:",
                    "wfn:",
                    "startwith:",
                    "endwith:",
                    "file:",
                    "folder:",
                    "!"
                ][..]
            ),
            text
        )
            .prop_map(|(m, w)| format!("{m}{w}")),
        prop::sample::select(&["ext:a", "ext:k", "ext:é", "ext:a;k"][..]).prop_map(str::to_string),
    ];
    prop::collection::vec(leaf, 1..4).prop_map(|v| v.join(" "))
}

fn name_entry() -> impl Strategy<Value = FakeEntry> {
    (
        "[aAéÉkK\u{212A}.]{1,5}",
        prop::sample::select(&[Kind::File, Kind::Dir][..]),
    )
        .prop_map(|(name, kind)| FakeEntry::new(format!("d/{name}"), kind))
}

fn entry() -> impl Strategy<Value = FakeEntry> {
    let comp = "[abAé._]{1,4}";
    (
        prop::collection::vec(comp, 1..4),
        prop::sample::select(&[Kind::File, Kind::Dir, Kind::Symlink][..]),
        prop::sample::select(&[0u64, 1, 1023, 1024, 2047, 2048, 1_000_000][..]),
        prop::option::of(prop::sample::select(
            &[
                CLOCK.now_utc,
                CLOCK.now_utc - 5000,
                CLOCK.now_utc - 86_400 * 3,
                CLOCK.now_utc - 86_400 * 40,
                1_700_000_000,
            ][..],
        )),
        prop::option::of(Just(CLOCK.now_utc - 10)),
        prop::sample::select(&[0o644u32, 0o755, 0o444][..]),
        prop::collection::vec(comp, 0..3),
    )
        .prop_map(|(path, kind, size, modified, created, mode, children)| {
            let mut e = FakeEntry::new(path.join("/"), kind)
                .modified(modified)
                .created(created)
                .mode(mode);
            if kind != Kind::Dir {
                e = e.size(size);
            }
            for c in children {
                e = e.child(&c, Kind::File);
            }
            e
        })
}

fn options() -> impl Strategy<Value = Options> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(match_case, whole_word, match_path)| Options {
            match_case,
            whole_word,
            regex: false,
            match_path,
        },
    )
}

proptest! {
    // 512 cases by default; `PROPTEST_CASES=20000 cargo test` for a longer run.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512)
    ))]

    #[test]
    fn parse_never_panics_and_errors_carry_a_working_example(s in any_query()) {
        match parse(&s) {
            Ok(_) => {}
            Err(e) => {
                prop_assert!(e.position <= s.chars().count(), "{e:?}");
                prop_assert!(parse(&e.example).is_ok(), "{s:?}: example {:?}", e.example);
                let _ = e.render(&s);
            }
        }
        let all_on = Options { match_case: true, whole_word: true, regex: true, match_path: true };
        for opts in [Options::default(), all_on] {
            if let Err(e) = Query::compile(&s, &opts, &CLOCK) {
                prop_assert!(e.position <= s.chars().count(), "{e:?}");
                prop_assert!(
                    Query::compile(&e.example, &opts, &CLOCK).is_ok(),
                    "{s:?} with {opts:?}: example {:?}", e.example
                );
            }
        }
    }

    #[test]
    fn rendering_round_trips(s in any_query()) {
        if let Ok(ast) = parse(&s) {
            let rendered = ast.to_string();
            let again = parse(&rendered);
            prop_assert!(again.is_ok(), "{s:?} rendered as {rendered:?}");
            prop_assert_eq!(again.unwrap().without_spans(), ast.without_spans(), "{:?} -> {:?}", s, rendered);
        }
    }

    #[test]
    fn negation_is_the_exact_complement(
        s in prop_oneof![valid_query(), name_query()],
        opts in options(),
        entries in prop::collection::vec(prop_oneof![entry(), name_entry()], 1..8),
    ) {
        let q = Query::compile(&s, &opts, &CLOCK);
        prop_assert!(q.is_ok(), "{s:?}: {:?}", q.err());
        let q = q.unwrap();
        let not = q.clone().negate();
        let not_text = Query::compile(&format!("!<{s}>"), &opts, &CLOCK).unwrap();
        for e in &entries {
            let yes = q.matches(e);
            prop_assert_eq!(not.matches(e), !yes, "{:?} on {:?}", s, e);
            prop_assert_eq!(not_text.matches(e), !yes, "{:?} on {:?}", s, e);
            prop_assert!(q.clone().and(Query::match_all()).matches(e) == yes);
        }
    }

    #[test]
    fn required_name_literals_are_sound(
        s in prop_oneof![valid_query(), name_query()],
        opts in options(),
        entries in prop::collection::vec(prop_oneof![entry(), name_entry()], 1..12),
    ) {
        let q = Query::compile(&s, &opts, &CLOCK).unwrap();
        let lits = q.required_name_literals();
        for e in &entries {
            if q.matches(e) {
                let name = fold_case(crate::Entry::name(e)).into_owned();
                for l in &lits {
                    prop_assert!(
                        memchr::memmem::find(&name, l).is_some(),
                        "{:?}: {:?} matches but lacks {:?}", s, e.path, String::from_utf8_lossy(l)
                    );
                }
            }
        }
    }

    #[test]
    fn required_path_literals_are_sound(
        s in prop_oneof![valid_query(), name_query()],
        opts in options(),
        entries in prop::collection::vec(prop_oneof![entry(), name_entry()], 1..12),
    ) {
        let q = Query::compile(&s, &opts, &CLOCK).unwrap();
        let lits = q.required_path_literals();
        for e in &entries {
            if q.matches(e) {
                let mut path = b"/".to_vec();
                path.extend_from_slice(&crate::Entry::rel_path(e));
                if crate::Entry::kind(e) == crate::Kind::Dir {
                    path.push(b'/');
                }
                let path = fold_case(&path).into_owned();
                for l in &lits {
                    prop_assert!(
                        memchr::memmem::find(&path, l).is_some(),
                        "{:?}: {:?} matches but lacks {:?}", s, e.path, String::from_utf8_lossy(l)
                    );
                }
            }
        }
    }

    #[test]
    fn kind_restriction_and_needs_path_are_sound(
        s in valid_query(),
        entries in prop::collection::vec(entry(), 1..8),
    ) {
        let q = Query::compile(&s, &Options::default(), &CLOCK).unwrap();
        for e in &entries {
            let yes = q.matches(e);
            if let Some(k) = q.kind_restriction() {
                prop_assert!(!yes || crate::Entry::kind(e) == k);
            }
            if !q.needs_path() {
                prop_assert_eq!(e.path_calls.get(), 0);
            }
            prop_assert!(e.path_calls.get() <= 1);
            e.path_calls.set(0);
        }
    }

    #[test]
    fn name_split_ranges_and_extensions_are_sound(
        s in prop_oneof![valid_query(), name_query()],
        opts in options(),
        entries in prop::collection::vec(prop_oneof![entry(), name_entry()], 1..12),
    ) {
        let q = Query::compile(&s, &opts, &CLOCK).unwrap();
        let (name, rest) = q.split_name_terms();
        let ranges = q.ranges();
        let exts = q.required_extensions();
        for e in &entries {
            let yes = q.matches(e);
            // The split is exact: the name part needs nothing but the name.
            prop_assert_eq!(name.matches_name(crate::Entry::name(e)) && rest.matches(e), yes, "{:?} on {:?}", s, e.path);
            prop_assert_eq!(name.matches(e), name.matches_name(crate::Entry::name(e)));
            for (i, r) in &ranges {
                let inside = match *r {
                    crate::Range::Size { lo, hi } => crate::Entry::kind(e) != crate::Kind::Dir
                        && (lo..=hi).contains(&crate::Entry::size(e)),
                    crate::Range::Modified { lo, hi } => crate::Entry::modified(e).is_some_and(|t| (lo..=hi).contains(&t)),
                };
                // A range is necessary, and with the rest of the query sufficient.
                prop_assert!(!yes || inside, "{:?}: {:?} matches outside {:?}", s, e.path, r);
                prop_assert_eq!(inside && q.without_conjunct(*i).matches(e), yes);
            }
            if let (true, Some(exts)) = (yes, &exts) {
                let folded = fold_case(crate::Entry::name(e)).into_owned();
                prop_assert!(exts.iter().any(|x| {
                    let mut dotted = b".".to_vec();
                    dotted.extend_from_slice(x);
                    folded.len() > dotted.len() && folded.ends_with(&dotted)
                }), "{:?}: {:?} lacks every one of {:?}", s, e.path, exts);
            }
        }
    }

    #[test]
    fn assuming_a_path_prefix_is_sound(
        s in prop_oneof![valid_query(), name_query()],
        opts in options(),
        entries in prop::collection::vec(prop_oneof![entry(), name_entry()], 1..12),
        cut in 0usize..40,
    ) {
        let q = Query::compile(&s, &opts, &CLOCK).unwrap();
        for e in &entries {
            let mut path = b"/".to_vec();
            path.extend_from_slice(&crate::Entry::rel_path(e));
            if crate::Entry::kind(e) == crate::Kind::Dir && path.len() > 1 {
                path.push(b'/');
            }
            let prefix = &path[..cut.min(path.len())];
            prop_assert_eq!(q.assuming_path_prefix(prefix).matches(e), q.matches(e), "{:?} on {:?} with {:?}", s, e.path, String::from_utf8_lossy(prefix));
        }
    }

    #[test]
    fn and_is_conjunction(
        a in valid_query(),
        b in valid_query(),
        entries in prop::collection::vec(entry(), 1..6),
    ) {
        let qa = Query::compile(&a, &Options::default(), &CLOCK).unwrap();
        let qb = Query::compile(&b, &Options::default(), &CLOCK).unwrap();
        let both = qa.clone().and(qb.clone());
        let text = Query::compile(&format!("<{a}> <{b}>"), &Options::default(), &CLOCK).unwrap();
        for e in &entries {
            let want = qa.matches(e) && qb.matches(e);
            prop_assert_eq!(both.matches(e), want);
            prop_assert_eq!(text.matches(e), want);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// An OR of name terms matches exactly when one of its terms does: the
    /// evaluator tests an ASCII name's first term in place and folds it for
    /// the others, and both must answer alike.
    #[test]
    fn or_is_disjunction_whatever_the_path_through_the_name(
        terms in prop::collection::vec("[aAbB]{1,3}|[aAb*?]{1,4}", 1..9),
        names in prop::collection::vec("[aAbB.]{1,8}", 1..6),
    ) {
        let or = Query::compile(&terms.join("|"), &Options::default(), &CLOCK).unwrap();
        let each: Vec<Query> = terms
            .iter()
            .map(|t| Query::compile(t, &Options::default(), &CLOCK).unwrap())
            .collect();
        for name in &names {
            let e = FakeEntry::new(format!("d/{name}"), Kind::File);
            let want = each.iter().any(|q| q.matches(&e));
            prop_assert_eq!(or.matches(&e), want, "{:?} on {:?}", terms, name);
        }
    }
}

/// The properties above mean something only if random queries match some random
/// entries and not others, and if matches with literals occur.
#[test]
fn generators_produce_both_outcomes() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut total, mut yes, mut with_literals) = (0u32, 0u32, 0u32);
    for _ in 0..2000 {
        let s = valid_query().new_tree(&mut runner).unwrap().current();
        let e = entry().new_tree(&mut runner).unwrap().current();
        let q = Query::compile(&s, &Options::default(), &CLOCK).unwrap();
        total += 1;
        yes += u32::from(q.matches(&e));
        let s = name_query().new_tree(&mut runner).unwrap().current();
        let e = name_entry().new_tree(&mut runner).unwrap().current();
        let q = Query::compile(&s, &Options::default(), &CLOCK).unwrap();
        if q.matches(&e) && !q.required_name_literals().is_empty() {
            with_literals += 1;
        }
    }
    assert!(
        yes * 20 > total && yes * 20 < total * 19,
        "{yes} of {total} match"
    );
    assert!(
        with_literals * 20 > total,
        "{with_literals} matches with literals"
    );
}
