//! One test (or more) per row of every table of `docs/query-syntax.md`, on
//! made-up entries, asserting the real outcome.

use super::fake::{CLOCK, FakeEntry, check, local, m, q, q_with};
use crate::ast::{Ast, Function};
use crate::{Kind, Options, Query, parse};

// ---------------------------------------------------------------------------
// Terms and operators

#[test]
fn space_is_and() {
    check(
        "report draft",
        &["report-draft.txt", "draft report.md"],
        &["report.txt", "draft.txt"],
    );
}

#[test]
fn bar_is_or() {
    check(
        "travel|vacation",
        &["travel.jpg", "vacation.png"],
        &["beach.jpg"],
    );
    check(
        "travel | vacation",
        &["travel.jpg", "vacation.png"],
        &["beach.jpg"],
    );
}

#[test]
fn or_binds_tighter_than_and() {
    // x AND (y OR z); with the other precedence "z" alone would match.
    check("x y|z", &["xy", "xz", "zyx"], &["x", "z", "yz"]);
}

#[test]
fn not_binds_tightest() {
    // (!x) OR y; with !(x|y), "xy" would not match.
    check("!x|y", &["xy", "a"], &["x"]);
    check("*.js !node", &["app.js"], &["node.js", "app.ts"]);
    check("!!x", &["x"], &["y"]);
}

#[test]
fn angle_brackets_and_parentheses_group() {
    check(
        "<src|tests> ext:rs",
        &["src_a.rs", "tests_b.rs"],
        &["src_a.md", "lib.rs"],
    );
    check(
        "(src|tests) ext:rs",
        &["src_a.rs", "tests_b.rs"],
        &["src_a.md", "lib.rs"],
    );
    check("!<a b>", &["a", "b", "c"], &["ab"]);
    check("<>", &["anything"], &[]);
}

#[test]
fn quotes_make_text_literal() {
    check(
        "\"my file\"",
        &["my file.txt"],
        &["my-file.txt", "file my", "my"],
    );
    check("\"a|b\"", &["a|b.txt"], &["a", "b"]);
    check("\"<x>\"", &["<x>.txt"], &["x"]);
    check("\"(x)\"", &["copy (x).txt"], &["x"]);
    // `!` inside quotes is not NOT.
    check("\"!x\"", &["!x"], &["y"]);
    check("\"\"", &["anything"], &[]);
}

#[test]
fn plain_term_is_a_case_insensitive_substring_of_the_name() {
    check(
        "READ",
        &["readme.md", "docs/README", "Already"],
        &["read/x.txt", "rea.d"],
    );
}

#[test]
fn case_folding_is_unicode_aware() {
    check("éclair", &["ÉCLAIR.txt", "un éclair"], &["clair.txt"]);
    check("ÉCLAIR", &["éclair.txt"], &[]);
    check("straße", &["STRAßE.md"], &[]);
    check("σ", &["ΣΑΣ"], &[]);
    // Diacritics are blind too, as in Everything by default: either way
    // round, composed or decomposed; `case:` compares the name as it is.
    check("eclair", &["Éclair.txt", "e\u{301}clair"], &["clair"]);
    check("resume", &["Résumé.pdf", "RESUMÉ"], &["resum.pdf"]);
    check("naïve", &["naive.md", "NAÏVE"], &["nave"]);
    check("lodz", &["Łódź.txt"], &[]);
    check(
        "case:éclair",
        &["éclair.txt"],
        &["eclair.txt", "Éclair.txt"],
    );
    // The Kelvin sign folds to an ASCII k.
    check("k", &["\u{212A}elvin"], &[]);
    // Invalid UTF-8 in a name is compared bytewise.
    assert!(m("CAF", &FakeEntry::file(b"caf\xff.txt")));
    assert!(m("\u{FFFD}", &FakeEntry::file("a\u{FFFD}")));
    assert!(!m("\u{FFFD}", &FakeEntry::file(b"a\xff")));
    // Such a name typed as paths show it (`ferret_names`): its own bytes.
    assert!(m("caf%FF.txt", &FakeEntry::file(b"caf\xff.txt")));
    assert!(m("CAF%FF", &FakeEntry::file(b"caf\xff.txt")));
    assert!(m("caf%FF.txt", &FakeEntry::file("caf%FF.txt")));
    assert!(!m("caf%FF.txt", &FakeEntry::file(b"caf\xfe.txt")));
    assert!(!m("caf%ff.txt", &FakeEntry::file(b"caf\xff.txt")));
    // And a folder or a path with such names, typed as shown.
    let inner = FakeEntry::file(b"d\xff/inner.txt");
    let twin = FakeEntry::file("d%FF/inner.txt");
    for query in [
        "in:d%FF",
        "parent:d%FF",
        "D%FF/inner",
        "d%FF/",
        "/d%FF/inner.txt",
    ] {
        assert!(m(query, &inner), "{query}");
        assert!(m(query, &twin), "{query}");
        assert!(!m(query, &FakeEntry::file(b"d\xfe/inner.txt")), "{query}");
    }
    assert!(m("case:in:d%FF", &inner) && !m("case:in:D%FF", &inner));
    assert!(!m("in:d%ff", &inner));
    assert!(m(
        "in:a/d%FF ext:txt",
        &FakeEntry::file(b"a/d\xff/inner.txt")
    ));
    assert!(!m("parent:d%FF", &FakeEntry::file(b"d\xff/x/inner.txt")));
}

#[test]
fn wildcards_match_the_whole_name() {
    check(
        "*.rs",
        &["main.rs", "src/lib.RS", ".rs"],
        &["main.rs.bak", "rs", "src.rs/x"],
    );
    check(
        "report-??.txt",
        &["report-07.txt", "Report-AB.TXT", "report-é7.txt"],
        &["report-7.txt", "old-report-07.txt", "report-07.txt.bak"],
    );
    check("*", &["x", "dir/"], &[]);
    check("a*b", &["ab", "a-long-b"], &["abc", "ba"]);
}

#[test]
fn terms_with_a_slash_match_the_path() {
    check(
        "src/",
        &["src/main.rs", "crates/a/src/lib.rs", "src/", "mysrc/x"],
        &["source/main.rs", "main.rs", "src"],
    );
    check(
        "util/str",
        &["util/strings.rs", "a/util/str.rs"],
        &["util.rs", "str/util"],
    );
    // A leading slash means "at a component boundary"; the start counts.
    check(
        "/target/",
        &["target/debug/x", "a/target/b", "target/"],
        &["mytarget/x", "target", "src/target.rs"],
    );
    check("/src", &["src/x", "a/src.rs", "a/srcs/"], &["mysrc/x"]);
}

#[test]
fn backslashes_mean_slashes() {
    check(
        "\\target\\",
        &["target/debug/x", "a/target/b", "target/"],
        &["mytarget/x", "target", "src/target.rs"],
    );
    check("util\\str", &["util/strings.rs"], &["util.rs"]);
    check(
        "ext:rs !\\target\\",
        &["src/main.rs"],
        &["target/debug/build.rs"],
    );
}

#[test]
fn path_globs() {
    check(
        "src/*.rs",
        &["src/lib.rs", "crates/a/src/lib.rs", "SRC/X.RS"],
        &["src/bin/x.rs", "mysrc/lib.rs", "src/lib.rs.bak"],
    );
    check("src/**/*.rs", &["src/x.rs", "src/a/b/c.rs"], &["lib/x.rs"]);
    check("src/*/", &["src/bin/"], &["src/bin", "src/bin/x/"]);
    check("/src/?.rs", &["src/a.rs", "x/src/é.rs"], &["src/ab.rs"]);
    check("src/**", &["src/a", "src/a/b/"], &["src", "lib/a"]);
}

#[test]
fn leading_globstar_and_dot_slash_are_dropped() {
    // `**/` keeps glob semantics: the whole name must match.
    check(
        "**/Cargo.toml",
        &["Cargo.toml", "crates/a/Cargo.toml", "cargo.toml"],
        &["Cargo.toml.orig", "xCargo.toml"],
    );
    check(
        "**/src/*.rs",
        &["src/lib.rs", "a/src/lib.rs"],
        &["src/a/lib.rs"],
    );
    check(
        "**/src/main.rs",
        &["src/main.rs", "a/src/main.rs"],
        &["mysrc/main.rs", "src/main.rs.bak"],
    );
    check("./src/", &["src/main.rs", "a/src/x"], &["main.rs"]);
    check("./main.rs", &["main.rs", "a/main.rs"], &["main.r"]);
    check(".\\**\\*.md", &["a.md", "docs/x.md"], &["a.mdx"]);
}

// ---------------------------------------------------------------------------
// Modifiers

#[test]
fn case_modifier() {
    check("case:README", &["README.md"], &["readme.md", "Readme.md"]);
    check("case:*.RS", &["MAIN.RS"], &["main.rs"]);
    check("case:Src/", &["Src/x"], &["src/x"]);
    let opts = Options {
        match_case: true,
        ..Options::default()
    };
    let q = q_with("readme nocase:readme", &opts);
    assert!(!q.matches(&FakeEntry::file("README")));
    assert!(q.matches(&FakeEntry::file("readme README")));
    assert!(q_with("nocase:readme", &opts).matches(&FakeEntry::file("README")));
}

#[test]
fn whole_word_modifier() {
    check(
        "ww:log",
        &["app log.txt", "log.txt", "error-log", "LOG"],
        &["catalog.txt", "logs", "my_log"],
    );
    check("wholeword:log", &["log.txt"], &["logs"]);
    let opts = Options {
        whole_word: true,
        ..Options::default()
    };
    assert!(!q_with("log", &opts).matches(&FakeEntry::file("catalog")));
    assert!(q_with("noww:log", &opts).matches(&FakeEntry::file("catalog")));
    check("ww:src/", &["src/x", "a/src/b"], &["mysrc/x"]);
}

#[test]
fn whole_file_name_modifier() {
    check(
        "wfn:\"Release Notes.md\"",
        &[
            "Release Notes.md",
            "release notes.MD",
            "docs/Release Notes.md",
        ],
        &["Release Notes.md.bak", "Old Release Notes.md"],
    );
    check("wholefilename:a", &["a"], &["ab"]);
    check(
        "wfn:src/main.rs",
        &["src/main.rs"],
        &["a/src/main.rs", "src/main.rs.x"],
    );
    check("wfn:src/", &["src/"], &["src/x", "src"]);
}

#[test]
fn path_modifier() {
    check(
        "path:src",
        &["src/main.rs", "a/src", "mysrc/x"],
        &["lib/main.rs"],
    );
    check("path:*.rs", &["a/b.rs"], &["a.rs/b"]);
    let opts = Options {
        match_path: true,
        ..Options::default()
    };
    assert!(q_with("docs", &opts).matches(&FakeEntry::file("docs/a.md")));
    assert!(!q_with("nopath:docs", &opts).matches(&FakeEntry::file("docs/a.md")));
}

#[test]
fn file_and_folder_modifiers() {
    check("file:", &["a.txt"], &["dir/"]);
    check("files:foo", &["foo.txt"], &["foo/", "bar.txt"]);
    check(
        "folder:backup",
        &["backup/", "old-backup/"],
        &["backup.tar"],
    );
    check("folders:", &["d/"], &["f"]);
    check("file:<a|b>", &["a", "b"], &["c", "a/"]);
    check("file:!a", &["b"], &["a", "b/"]);
    // Symlinks are neither files nor folders.
    assert!(!m("file:", &FakeEntry::symlink("l")));
    assert!(!m("folder:", &FakeEntry::symlink("l")));
    assert!(m("!file: !folder:", &FakeEntry::symlink("l")));
}

#[test]
fn regex_modifier() {
    check(
        "regex:^IMG_\\d{4}\\.jpg$",
        &["IMG_1234.jpg", "img_0001.JPG"],
        &["IMG_12345.jpg", "xIMG_1234.jpg"],
    );
    check("case:regex:^IMG", &["IMG_1"], &["img_1"]);
    // A regex with a slash is matched against the path.
    check("regex:^src/.*\\.rs$", &["src/a/b.rs"], &["x/src/a.rs"]);
    check("regex:\"a|b\"", &["xa", "b"], &["c"]);
    check("regex:<^a b$>", &["ab", "a-b"], &["ba"]);
    check("ww:regex:log", &["a log"], &["catalog"]);
    check("wfn:regex:a.c", &["abc"], &["abcd"]);
    check("startwith:regex:a.", &["abc"], &["cab"]);
    check("endwith:regex:a.", &["cab"], &["abc"]);
    let opts = Options {
        regex: true,
        ..Options::default()
    };
    let q = q_with("^a.c$ noregex:*.rs", &opts);
    assert!(!q.matches(&FakeEntry::file("abc")));
    assert!(q_with("^a.c$", &opts).matches(&FakeEntry::file("aXc")));
    assert!(q_with("noregex:*.rs", &opts).matches(&FakeEntry::file("x.rs")));
    assert!(!m("regex:\\xff", &FakeEntry::file(b"a\xff")));
    assert!(m("regex:\"(?-u:\\xff)\"", &FakeEntry::file(b"a\xff")));
}

#[test]
fn startwith_and_endwith_modifiers() {
    check(
        "startwith:IMG_",
        &["IMG_1.jpg", "img_2.png"],
        &["x_IMG_1.jpg"],
    );
    check("endwith:.tar.gz", &["a.tar.gz"], &["a.tar.gz.part"]);
    check("startwith:endwith:ab", &["ab"], &["abab!"]);
    check("startwith:IMG_*.jpg", &["IMG_1.jpg"], &["x.jpg"]);
    check("endwith:*.jpg", &["a.jpg"], &["a.png"]);
    check("startwith:src/", &["src/a"], &["a/src/b"]);
    check(
        "endwith:/lib.rs",
        &["src/lib.rs", "lib.rs"],
        &["src/mylib.rs"],
    );
    check("endwith:src/", &["a/src/"], &["a/src/b", "a/src"]);
    check("endwith:/src", &["a/src/", "a/src"], &["a/src/b"]);
    check("nostartwith:x", &["axb"], &[]);
}

#[test]
fn modifiers_stack_and_no_turns_them_off() {
    check("case:ww:Log", &["app Log.txt"], &["app log.txt", "Logs"]);
    // Foo case-sensitive, bar not.
    check("case:<Foo nocase:bar>", &["Foo BAR"], &["foo BAR"]);
    check("no-case:ABC", &["abc"], &[]);
    check("nowildcards:a*b", &["a*b"], &["axb"]);
    check("wildcards:a*b", &["axb"], &[]);
    check("case:nowfn:noendwith:nostartwith:A", &["xAx"], &["xax"]);
}

// ---------------------------------------------------------------------------
// Functions

#[test]
fn ext_function() {
    check(
        "ext:rs;toml",
        &["main.rs", "Cargo.TOML", "dir.rs/"],
        &["main.rsx", ".rs", "rs", "x.md"],
    );
    check("ext:.RS", &["a.rs"], &["a.r"]);
    // `ext:` alone: no extension.
    check(
        "ext:",
        &["Makefile", ".bashrc", "x."],
        &["a.txt", "a.tar.gz"],
    );
    check("ext: file:", &["Makefile"], &["bin/"]);
    check("ext:gz", &["a.tar.gz"], &["a.tar"]);
    check("ext:bashrc", &[], &[".bashrc"]);
    check("ext:tar.gz", &["a.TAR.GZ"], &["a.gz", ".tar.gz"]);
    check("ext:éé", &["x.ÉÉ"], &["x.e"]);
    check(
        "ext:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        &["x.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"],
        &["x.a"],
    );
}

fn sized(size: u64) -> FakeEntry {
    FakeEntry::file("f").size(size)
}

#[test]
fn size_function() {
    const K: u64 = 1024;
    const M: u64 = 1024 * 1024;
    let cases: &[(&str, &[u64], &[u64])] = &[
        ("size:>1mb", &[M + 1, 5 * M], &[M, 0]),
        ("size:>=1mb", &[M], &[M - 1]),
        ("size:<1kb", &[0, K - 1], &[K]),
        ("size:<=1kb", &[K], &[K + 1]),
        ("size:=1kb", &[K], &[K + 1]),
        ("size:==1kb", &[K], &[K - 1]),
        ("size:!=1kb", &[K + 1, 0], &[K]),
        // No operator: the granularity written.
        ("size:1kb", &[K, 2 * K - 1], &[K - 1, 2 * K]),
        ("size:1.5kb", &[1536, 1638], &[1535, 1639]),
        ("size:10kb..2mb", &[10 * K, 2 * M], &[10 * K - 1, 2 * M + 1]),
        ("size:100", &[100], &[99, 101]),
        ("size:2b", &[2], &[3]),
        ("size:1gb", &[1 << 30], &[(1 << 30) - 1, 2 << 30]),
        ("size:>1tb", &[(1 << 40) + 1], &[1 << 40]),
        ("size:1K", &[K], &[0]),
        ("size:1MiB", &[M], &[0]),
        ("size:empty", &[0], &[1]),
        ("size:tiny", &[1, 10 * K], &[0, 10 * K + 1]),
        ("size:small", &[10 * K + 1, 100 * K], &[10 * K, 100 * K + 1]),
        ("size:medium", &[100 * K + 1, M], &[100 * K, M + 1]),
        ("size:large", &[M + 1, 16 * M], &[M, 16 * M + 1]),
        ("size:huge", &[16 * M + 1, 128 * M], &[16 * M, 128 * M + 1]),
        ("size:gigantic", &[128 * M + 1, u64::MAX], &[128 * M]),
        ("size:>medium", &[M + 1], &[M]),
        ("size:<small", &[10 * K], &[10 * K + 1]),
        ("size:tiny..small", &[1, 100 * K], &[0, 100 * K + 1]),
        ("SIZE:>1MB", &[M + 1], &[M]),
    ];
    for (query, yes, no) in cases {
        let compiled = q(query);
        for s in *yes {
            assert!(compiled.matches(&sized(*s)), "`{query}` should match {s}");
        }
        for s in *no {
            assert!(
                !compiled.matches(&sized(*s)),
                "`{query}` should not match {s}"
            );
        }
    }
    // Folders have no known size: size terms never match them.
    assert!(!m("size:empty", &FakeEntry::dir("d")));
    assert!(!m("size:<1mb", &FakeEntry::dir("d")));
    assert!(m("size:<1mb", &FakeEntry::symlink("l").size(10)));
}

fn at(t: i64) -> FakeEntry {
    FakeEntry::file("f").modified(Some(t))
}

#[track_caller]
fn dates(query: &str, yes: &[i64], no: &[i64]) {
    let compiled = q(query);
    for t in yes {
        assert!(compiled.matches(&at(*t)), "`{query}` should match {t}");
    }
    for t in no {
        assert!(!compiled.matches(&at(*t)), "`{query}` should not match {t}");
    }
}

#[test]
fn date_modified_function() {
    let now = CLOCK.now_utc;
    dates(
        "dm:today",
        &[now, now - 3600],
        &[local(2026, 3, 17, 23, 59, 59)],
    );
    dates("datemodified:today", &[now], &[now - 86_400]);
    dates(
        "dm:>=2026-01-01",
        &[local(2026, 1, 1, 0, 0, 0), now],
        &[local(2025, 12, 31, 23, 59, 59)],
    );
    dates("dm:last2hours", &[now - 7200, now, now + 60], &[now - 7201]);
    // Entries without a time never match a date term.
    assert!(!m("dm:thisyear", &FakeEntry::file("f").modified(None)));
    assert!(!m("dm:!=today", &FakeEntry::file("f").modified(None)));
    assert!(m("!dm:thisyear", &FakeEntry::file("f").modified(None)));
}

#[test]
fn date_created_function() {
    let e = FakeEntry::file("f").created(Some(local(2026, 2, 1, 12, 0, 0)));
    assert!(m("dc:thisyear", &e));
    assert!(m("datecreated:2026-02", &e));
    assert!(!m("dc:thismonth", &e));
    // Birth time unknown: never matches.
    assert!(!m("dc:thisyear", &FakeEntry::file("f")));
    assert!(!m("dc:<2100", &FakeEntry::file("f")));
}

#[test]
fn iso_dates_denote_their_whole_period() {
    let nov = local(2026, 11, 1, 0, 0, 0);
    let end_oct = local(2026, 10, 31, 23, 59, 59);
    let end_nov = local(2026, 11, 30, 23, 59, 59);
    let dec = local(2026, 12, 1, 0, 0, 0);
    dates("dm:2026-11", &[nov, end_nov], &[end_oct, dec]);
    dates("dm:=2026-11", &[nov, end_nov], &[end_oct, dec]);
    dates("dm:!=2026-11", &[end_oct, dec], &[nov, end_nov]);
    dates("dm:>2026-11", &[dec], &[end_nov]);
    dates("dm:>=2026-11", &[nov], &[end_oct]);
    dates("dm:<2026-11", &[end_oct], &[nov]);
    dates("dm:<=2026-11", &[end_nov], &[dec]);
    dates(
        "dm:2026",
        &[local(2026, 1, 1, 0, 0, 0)],
        &[local(2027, 1, 1, 0, 0, 0)],
    );
    dates(
        "dm:2026-03-05",
        &[local(2026, 3, 5, 0, 0, 0), local(2026, 3, 5, 23, 59, 59)],
        &[local(2026, 3, 6, 0, 0, 0)],
    );
    dates(
        "dm:2026-03-05T10",
        &[local(2026, 3, 5, 10, 59, 59)],
        &[local(2026, 3, 5, 11, 0, 0)],
    );
    dates(
        "dm:2026-03-05t10:30",
        &[local(2026, 3, 5, 10, 30, 59)],
        &[local(2026, 3, 5, 10, 31, 0)],
    );
    dates(
        "dm:2026-03-05T10:30:15",
        &[local(2026, 3, 5, 10, 30, 15)],
        &[local(2026, 3, 5, 10, 30, 16)],
    );
    dates("dm:2026-3-5", &[local(2026, 3, 5, 12, 0, 0)], &[]);
    // Ranges run to the end of the second value's period.
    dates(
        "dm:2026-01..2026-03",
        &[local(2026, 1, 1, 0, 0, 0), local(2026, 3, 31, 23, 59, 59)],
        &[local(2025, 12, 31, 23, 59, 59), local(2026, 4, 1, 0, 0, 0)],
    );
    dates(
        "dm:2026-01-01..2026-01-31",
        &[local(2026, 1, 31, 23, 0, 0)],
        &[local(2026, 2, 1, 0, 0, 0)],
    );
    dates(
        "dm:yesterday..today",
        &[CLOCK.now_utc - 86_400],
        &[CLOCK.now_utc - 2 * 86_400],
    );
}

#[test]
fn date_constants() {
    let now = CLOCK.now_utc; // Wednesday 2026-03-18, 15:30 local.
    dates(
        "dm:today",
        &[local(2026, 3, 18, 0, 0, 0), local(2026, 3, 18, 23, 59, 59)],
        &[local(2026, 3, 17, 23, 59, 59), local(2026, 3, 19, 0, 0, 0)],
    );
    dates(
        "dm:yesterday",
        &[local(2026, 3, 17, 0, 0, 0), local(2026, 3, 17, 23, 59, 59)],
        &[local(2026, 3, 16, 23, 59, 59), now],
    );
    // Weeks start on Monday (the 16th).
    dates(
        "dm:thisweek",
        &[local(2026, 3, 16, 0, 0, 0), local(2026, 3, 22, 23, 59, 59)],
        &[local(2026, 3, 15, 23, 59, 59), local(2026, 3, 23, 0, 0, 0)],
    );
    dates(
        "dm:lastweek",
        &[local(2026, 3, 9, 0, 0, 0), local(2026, 3, 15, 23, 59, 59)],
        &[local(2026, 3, 8, 23, 59, 59), local(2026, 3, 16, 0, 0, 0)],
    );
    dates(
        "dm:thismonth",
        &[local(2026, 3, 1, 0, 0, 0), local(2026, 3, 31, 23, 59, 59)],
        &[local(2026, 2, 28, 23, 59, 59), local(2026, 4, 1, 0, 0, 0)],
    );
    dates(
        "dm:lastmonth",
        &[local(2026, 2, 1, 0, 0, 0), local(2026, 2, 28, 23, 59, 59)],
        &[local(2026, 1, 31, 23, 59, 59), local(2026, 3, 1, 0, 0, 0)],
    );
    dates(
        "dm:thisyear",
        &[local(2026, 1, 1, 0, 0, 0), local(2026, 12, 31, 23, 59, 59)],
        &[local(2025, 12, 31, 23, 59, 59), local(2027, 1, 1, 0, 0, 0)],
    );
    dates(
        "dm:lastyear",
        &[local(2025, 1, 1, 0, 0, 0), local(2025, 12, 31, 23, 59, 59)],
        &[local(2024, 12, 31, 23, 59, 59), local(2026, 1, 1, 0, 0, 0)],
    );
    dates("dm:TODAY", &[now], &[]);
}

#[test]
fn rolling_windows() {
    let now = CLOCK.now_utc;
    dates("dm:last30minutes", &[now - 1800, now], &[now - 1801]);
    dates("dm:last1minute", &[now - 60], &[now - 61]);
    dates("dm:lastminute", &[now - 60], &[now - 61]);
    dates("dm:last10mins", &[now - 600], &[now - 601]);
    dates("dm:last2hours", &[now - 7200], &[now - 7201]);
    dates("dm:lasthour", &[now - 3600], &[now - 3601]);
    dates("dm:last3days", &[now - 3 * 86_400], &[now - 3 * 86_400 - 1]);
    dates("dm:lastday", &[now - 86_400], &[now - 86_401]);
    dates(
        "dm:last2weeks",
        &[now - 14 * 86_400],
        &[now - 14 * 86_400 - 1],
    );
    dates("dm:last1week", &[now - 7 * 86_400], &[now - 7 * 86_400 - 1]);
    dates(
        "dm:last3months",
        &[local(2025, 12, 18, 15, 30, 0)],
        &[local(2025, 12, 18, 15, 29, 59)],
    );
    dates(
        "dm:last1year",
        &[local(2025, 3, 18, 15, 30, 0)],
        &[local(2025, 3, 18, 15, 29, 59)],
    );
    dates(
        "dm:last2years",
        &[local(2024, 3, 18, 15, 30, 0)],
        &[local(2024, 3, 18, 15, 29, 59)],
    );
    dates("dm:>last2hours", &[], &[now, now + 1_000_000]);
    dates("dm:<last2hours", &[now - 7201], &[now - 7200]);
    // `lastweek`, `lastmonth`, `lastyear` are the calendar periods, not windows.
    dates("dm:lastweek", &[], &[now]);
}

#[test]
fn parent_function() {
    check(
        "parent:src",
        &["src/main.rs", "src/bin/", "SRC/x"],
        &["src/bin/x.rs", "src/", "other/src/main.rs", "main.rs"],
    );
    check("parent:\\src\\bin\\", &["src/bin/x.rs"], &["src/x.rs"]);
    check("parent:./src/bin", &["src/bin/x.rs"], &["src/x.rs"]);
    // Empty: the root's own children.
    check("parent:", &["Cargo.toml", "src/"], &["src/x"]);
    check("parent:/", &["Cargo.toml"], &["src/x"]);
    check("case:parent:Src", &["Src/x"], &["src/x"]);
    check(
        "parent:\"My Docs\"",
        &["My Docs/a.txt"],
        &["My Docs/b/c.txt"],
    );
    // The root entry has no parent.
    assert!(!m("parent:", &FakeEntry::dir("")));
}

#[test]
fn infolder_function() {
    check(
        "in:docs ext:md",
        &["docs/a.md", "docs/x/y.md", "DOCS/z.md"],
        &[
            "docs.md",
            "other/docs/a.md",
            "docs/",
            "docs/a.txt",
            "docsx/a.md",
        ],
    );
    check(
        "infolder:src/bin",
        &["src/bin/a", "src/bin/x/y/"],
        &["src/bin", "src/binx/a"],
    );
    check("in:", &["a", "a/b"], &[]);
    assert!(!m("in:", &FakeEntry::dir("")));
}

#[test]
fn depth_function() {
    check("depth:<=2", &["a", "a/b", "a/b/"], &["a/b/c"]);
    check("depth:1", &["a"], &["a/b"]);
    check("depth:=2", &["a/b"], &["a"]);
    check("depth:!=2", &["a", "a/b/c"], &["a/b"]);
    check("depth:>2", &["a/b/c"], &["a/b"]);
    check("depth:>=2", &["a/b"], &["a"]);
    check("depth:<2", &["a"], &["a/b"]);
    check("depth:2..3", &["a/b", "a/b/c"], &["a", "a/b/c/d"]);
    assert!(m("depth:0", &FakeEntry::dir("")));
    check("depth:<0", &[], &["a"]);
}

#[test]
fn len_function() {
    check("len:5", &["a.txt", "éclat"], &["ab.txt"]);
    check("len:>80", &[&"x".repeat(81)], &[&"x".repeat(80)]);
    check("len:<=3", &["abc", "a/b"], &["abcd"]);
    check("len:3..4", &["abc", "abcd"], &["ab", "abcde"]);
    check("len:>18446744073709551615", &[], &["a"]);
}

#[test]
fn type_function_and_groups() {
    check("type:pic", &["a.jpg", "b.PNG"], &["a.txt"]);
    check("type:image", &["a.webp"], &["a.mp4"]);
    check("pic:", &["a.jpg", "b.svg"], &["a.rs"]);
    check("doc:", &["a.pdf", "b.md", "c.DOCX"], &["a.rs"]);
    check("audio:", &["a.mp3", "b.flac"], &["a.mp4"]);
    check("video:", &["a.mp4", "b.mkv"], &["a.mp3", "a.ts"]);
    check("zip:", &["a.zip", "b.tar.gz", "c.tgz"], &["a.tar.gzx"]);
    check("exe:", &["setup.exe", "tool.AppImage"], &["a.rs"]);
    check(
        "code:",
        &["main.rs", "app.ts", "Cargo.toml"],
        &["a.mp4", "Makefile"],
    );
    check("type:folder", &["d/"], &["f"]);
    check("type:file", &["f"], &["d/"]);
    assert!(m("type:symlink", &FakeEntry::symlink("l")));
    assert!(!m("type:symlink", &FakeEntry::file("l")));
    // A term right after a group applies as well.
    check("pic:beach", &["beach.jpg"], &["beach.txt", "city.jpg"]);
    check("pic: dm:thisweek", &["a.png"], &[]);
    check("pic:<a|b>", &["a.png", "b.gif"], &["c.png", "a.txt"]);
}

#[test]
fn child_function() {
    let repo = FakeEntry::dir("repo")
        .child("Cargo.toml", Kind::File)
        .child("src", Kind::Dir);
    let other = FakeEntry::dir("other").child("package.json", Kind::File);
    assert!(m("child:Cargo.toml", &repo));
    assert!(m("child:cargo", &repo));
    assert!(!m("child:Cargo.toml", &other));
    assert!(m("child:*.json", &other));
    assert!(!m("child:*.toml", &other));
    assert!(m("child:src", &repo));
    assert!(!m("case:child:cargo", &repo));
    assert!(m("regex:child:^Car.o\\.", &repo));
    assert!(m("wfn:child:src", &repo));
    assert!(!m("wfn:child:sr", &repo));
    // Files never match; empty folders never match.
    assert!(!m("child:x", &FakeEntry::file("x")));
    assert!(!m("child:", &FakeEntry::dir("empty")));
    assert!(m("child:", &repo));
    assert!(m("!child:Cargo.toml", &other));
}

#[test]
fn empty_function() {
    let empty_dir = FakeEntry::dir("e");
    let full_dir = FakeEntry::dir("f").child("x", Kind::File);
    assert!(m("folder: empty:", &empty_dir));
    assert!(!m("folder: empty:", &full_dir));
    assert!(!m("folder: empty:", &FakeEntry::file("z").size(0)));
    assert!(m("empty:", &FakeEntry::file("z").size(0)));
    assert!(!m("empty:", &FakeEntry::file("z").size(1)));
    assert!(!m("empty:", &FakeEntry::symlink("l").size(0)));
    assert!(m("empty:z", &FakeEntry::file("z").size(0)));
    assert!(!m("empty:y", &FakeEntry::file("z").size(0)));
}

#[test]
fn attrib_function() {
    assert!(m("attrib:H", &FakeEntry::file(".bashrc")));
    assert!(m("attrib:H", &FakeEntry::dir("a/.git")));
    assert!(!m("attrib:H", &FakeEntry::file("bashrc")));
    assert!(m("attrib:R", &FakeEntry::file("f").mode(0o444)));
    assert!(!m("attrib:R", &FakeEntry::file("f").mode(0o644)));
    assert!(!m("attrib:R", &FakeEntry::file("f").mode(0o464)));
    assert!(m("attrib:D", &FakeEntry::dir("d")));
    assert!(!m("attrib:D", &FakeEntry::file("d")));
    assert!(m("attrib:L", &FakeEntry::symlink("l")));
    assert!(!m("attrib:L", &FakeEntry::file("l")));
    assert!(m("attrib:X file:", &FakeEntry::file("run").mode(0o755)));
    assert!(m("attrib:x", &FakeEntry::file("run").mode(0o100744)));
    assert!(!m("attrib:X", &FakeEntry::file("run").mode(0o644)));
    assert!(!m("attrib:X", &FakeEntry::dir("d")));
    assert!(!m("attrib:X", &FakeEntry::symlink("l")));
    // Several letters: all must hold.
    assert!(m("attrib:HX", &FakeEntry::file(".run").mode(0o700)));
    assert!(!m("attrib:HX", &FakeEntry::file("run").mode(0o700)));
    assert!(m("attributes:d", &FakeEntry::dir("d")));
}

#[test]
fn dupe_functions_parse_but_are_not_supported_yet() {
    for query in ["dupe:", "file: sizedupe: size:>10mb"] {
        assert!(parse(query).is_ok());
        let e = Query::compile(query, &Options::default(), &CLOCK).unwrap_err();
        assert!(e.message.contains("not supported yet"), "{}", e.message);
        assert!(Query::compile(&e.example, &Options::default(), &CLOCK).is_ok());
    }
}

#[test]
fn content_parses_into_its_pattern_but_does_not_compile() {
    let ast = parse("ext:md content:\"TODO\"").unwrap().without_spans();
    let Ast::And(items) = ast else {
        panic!("{ast:?}")
    };
    let Ast::Func(f) = &items[1] else { panic!() };
    assert_eq!(f.function, Function::Content("TODO".into()));
    let e = Query::compile("ext:md content:\"TODO\"", &Options::default(), &CLOCK).unwrap_err();
    assert!(e.message.contains("top-level term"), "{}", e.message);
    assert!(e.message.contains("`grep` tool"), "{}", e.message);
    assert_eq!(e.position, 7);
    assert_eq!(e.example, "ext:md");
}

// ---------------------------------------------------------------------------
// Errors section: unknown functions, the empty query.

#[test]
fn unknown_functions_are_errors_not_substrings() {
    let e = parse("foo:bar").unwrap_err();
    assert!(
        e.message.contains("unknown function `foo:`"),
        "{}",
        e.message
    );
    assert_eq!(e.position, 0);
    assert_eq!(e.example, "\"foo:bar\"");
    check("\"foo:bar\"", &["foo:bar.txt"], &["foo"]);
    // Colons that do not follow a name are text.
    check("12:30", &["at 12:30.log"], &["1230"]);
}

#[test]
fn empty_query_matches_everything() {
    for query in ["", "   ", "\t\n"] {
        let compiled = q(query);
        assert!(compiled.matches(&FakeEntry::file("x")));
        assert!(compiled.matches(&FakeEntry::dir("")));
        assert!(compiled.matches(&FakeEntry::symlink("a/b")));
        assert!(!compiled.needs_path());
        assert!(compiled.required_name_literals().is_empty());
    }
}

// ---------------------------------------------------------------------------
// The public API around the language.

#[test]
fn and_negate_match_all() {
    let base = q("ext:rs");
    let exclude = q("\\target\\").negate();
    let combined = base.and(exclude);
    assert!(combined.matches(&FakeEntry::file("src/a.rs")));
    assert!(!combined.matches(&FakeEntry::file("target/a.rs")));
    assert!(!combined.matches(&FakeEntry::file("src/a.md")));
    assert!(Query::match_all().matches(&FakeEntry::file("x")));
    assert!(!Query::match_all().negate().matches(&FakeEntry::file("x")));
    assert!(q("x").negate().negate().matches(&FakeEntry::file("x")));
    assert!(Query::default().matches(&FakeEntry::dir("")));
    let kinds = q("ext:rs").and(q("file:"));
    assert_eq!(kinds.kind_restriction(), Some(Kind::File));
}

#[test]
fn needs_path_and_rel_path_calls() {
    assert!(!q("foo *.rs ext:rs size:>1kb dm:today child:x").needs_path());
    for query in [
        "src/",
        "path:x",
        "parent:src",
        "in:src",
        "regex:a/b",
        "x|!src/*.rs",
    ] {
        assert!(q(query).needs_path(), "{query}");
    }
    // Name-only queries never build the path.
    let e = FakeEntry::file("src/main.rs");
    assert!(m("main *.rs ext:rs", &e));
    assert_eq!(e.path_calls.get(), 0);
    // Path queries build it once, however many terms need it.
    let e = FakeEntry::file("src/main.rs");
    assert!(m("src/ path:main nocase:SRC/ parent:src in:src", &e));
    assert_eq!(e.path_calls.get(), 1);
    // Cheap terms run first: a failing extension test skips the path.
    let e = FakeEntry::file("src/main.md");
    assert!(!m("src/ ext:rs", &e));
    assert_eq!(e.path_calls.get(), 0);
    // parent:/in: check the depth before the path.
    let e = FakeEntry::file("a/b/c/d.rs");
    assert!(!m("parent:src", &e));
    assert_eq!(e.path_calls.get(), 0);
}

#[test]
fn required_name_literals_examples() {
    let lits = |query: &str| {
        q(query)
            .required_name_literals()
            .into_iter()
            .map(|l| String::from_utf8(l).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(lits("foo *.rs"), vec![".rs", "foo"]);
    assert_eq!(lits("file:Main"), vec!["main"]);
    assert_eq!(lits("case:Foo"), vec!["foo"]);
    assert_eq!(lits("report-??.txt"), vec![".txt", "report-"]);
    assert_eq!(lits("ext:rs"), vec![".rs"]);
    assert_eq!(lits("ext:tar.gz"), vec![".tar.gz"]);
    assert_eq!(lits("ÉCLAIR"), vec!["eclair"]);
    assert!(lits("ext:rs;toml").is_empty());
    assert!(lits("a|b").is_empty());
    assert!(lits("!foo").is_empty());
    assert!(lits("regex:foo").is_empty());
    assert!(lits("src/main").is_empty());
    assert!(lits("child:foo").is_empty());
    assert!(lits("\"\" *").is_empty());
}

#[test]
fn kind_restrictions() {
    assert_eq!(q("file: x").kind_restriction(), Some(Kind::File));
    assert_eq!(q("folder:").kind_restriction(), Some(Kind::Dir));
    assert_eq!(q("x folder:y").kind_restriction(), Some(Kind::Dir));
    assert_eq!(q("child:x").kind_restriction(), Some(Kind::Dir));
    assert_eq!(q("attrib:X").kind_restriction(), Some(Kind::File));
    assert_eq!(q("type:symlink").kind_restriction(), Some(Kind::Symlink));
    assert_eq!(q("a|file:").kind_restriction(), None);
    assert_eq!(q("!file:").kind_restriction(), None);
    assert_eq!(q("x").kind_restriction(), None);
}

#[test]
fn system_clock_is_now() {
    let c = crate::Clock::system();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((c.now_utc - now).abs() < 60);
    assert!(c.utc_offset_secs.abs() <= 14 * 3600);
    assert!(Query::compile("dm:today", &Options::default(), &c).is_ok());
}

#[test]
fn name_terms_ranges_and_extensions_for_an_index() {
    let (name, rest) = q("report ext:pdf size:>1mb dm:today file:").split_name_terms();
    assert!(!name.is_match_all() && !rest.is_match_all());
    assert!(name.matches_name(b"Report-2026.PDF"));
    assert!(!name.matches_name(b"report.txt"));
    let (name, rest) = q("size:>1mb").split_name_terms();
    assert!(name.is_match_all() && !rest.is_match_all());
    let (name, rest) = q("a|b !c").split_name_terms();
    assert!(rest.is_match_all() && name.matches_name(b"ab") && !name.matches_name(b"abc"));
    assert!(q("").is_match_all() && !q("").is_match_none());

    let query = q("ext:rs size:1kb..2kb dm:today");
    let ranges = query.ranges();
    assert_eq!(ranges.len(), 2);
    assert!(
        ranges
            .iter()
            .any(|(_, r)| *r == crate::Range::Size { lo: 1024, hi: 2048 })
    );
    for (i, r) in &ranges {
        let left = query.without_conjunct(*i);
        assert_eq!(left.ranges().len(), 1, "{r:?} removed leaves the other");
    }
    assert!(
        q("!size:>1kb").ranges().is_empty(),
        "negated ranges are not offered"
    );
    assert!(q("size:>1kb").without_conjunct(0).is_match_all());

    assert_eq!(
        q("ext:rs;TOML x").required_extensions(),
        Some(vec![b"rs".to_vec(), b"toml".to_vec()])
    );
    assert_eq!(q("ext:tar.gz").required_extensions(), None);
    assert_eq!(q("ext:").required_extensions(), None);
    assert_eq!(q("a|ext:rs").required_extensions(), None);
    assert!(q("ext:rs;toml").is_extension_list() && q("pic:").is_extension_list());
    assert_eq!(q("RePort").plain_name_literal(), Some(&b"report"[..]));
    assert_eq!(
        q("Main ext:rs src/lib").name_words(),
        vec![b"main".to_vec(), b"lib".to_vec()]
    );
    assert!(q("ext:rs *.md").name_words().is_empty());
    // A name or path typed as shown with escaped names is measured as typed
    // and narrowed by what its forms share; an `|` the query wrote is not.
    assert_eq!(q("caf%E9.txt").name_words(), vec![b"caf%e9.txt".to_vec()]);
    assert_eq!(q("d%FF/Inner").name_words(), vec![b"inner".to_vec()]);
    assert_eq!(
        q("d%FF/Inner").required_path_literals(),
        vec![b"inner".to_vec()]
    );
    assert!(q("in:d%FF").required_path_literals().is_empty());
    assert!(q("a|b").name_words().is_empty());
    assert!(q("a/x|b/x").required_path_literals().is_empty());
    for not_plain in [
        "case:Report",
        "ww:report",
        "startwith:rep",
        "report x",
        "rep*t",
        "a/b",
    ] {
        assert_eq!(q(not_plain).plain_name_literal(), None, "{not_plain}");
    }
    assert!(!q("ext:rs x").is_extension_list() && !q("ext:tar.gz").is_extension_list());
    // A glob's literal start, lower case: every match's folded name starts
    // so; and how many literal pieces the glob holds.
    let start = |t: &str, n| Some((t.as_bytes().to_vec(), n));
    assert_eq!(q("Invoice-*").glob_start(), start("invoice-", 1));
    assert_eq!(q("case:INV*").glob_start(), start("inv", 1));
    assert_eq!(q("ab?* size:>1kb").glob_start(), start("ab", 1));
    assert_eq!(q("invoice-*.csv").glob_start(), start("invoice-", 2));
    assert_eq!(q("a?c*").glob_start(), start("a", 2));
    // (Folded first: `ü` is `u`.)
    assert_eq!(q("Ü*").glob_start(), start("u", 1));
    for none in ["*.csv", "?x*", "!inv*", "a|inv*", "inv", "case:ü*"] {
        assert_eq!(q(none).glob_start(), None, "{none}");
    }
    // Nothing but a star and literal bytes: the bytes, folded.
    let suffix = |t: &str| Some(t.as_bytes().to_vec());
    assert_eq!(q("*.").glob_suffix(), suffix("."));
    assert_eq!(q("*_V2").glob_suffix(), suffix("_v2"));
    assert_eq!(q("*.csv").glob_suffix(), suffix(".csv"));
    // (Folded first: `é` is `e`; a name past ASCII is the query's to decide.)
    assert_eq!(q("*É").glob_suffix(), suffix("e"));
    for none in [
        "*.c size:>1",
        "case:*.C",
        "*a*b",
        "*?",
        "a*",
        "!*.",
        "*.|*x",
    ] {
        assert_eq!(q(none).glob_suffix(), None, "{none}");
    }
    // Stars alone match every entry, whatever the modifiers.
    for all in [
        "*",
        "**",
        "***",
        "case:*",
        "ww:*",
        "startwith:*",
        "endwith:*",
        "nopath:*",
    ] {
        assert!(q(all).is_match_all(), "{all}");
    }
    assert!(q("!*").is_match_none());
    assert!(!q("?").is_match_all() && !q("*/").is_match_all() && !q("*x").is_match_all());
}
