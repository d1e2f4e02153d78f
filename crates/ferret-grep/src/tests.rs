use std::{fs, path::Path, sync::atomic::AtomicBool, time::Instant};

use ferret_fs::{Policy, Roots};
use ferret_index::{Index, IndexConfig, IndexRoot};
use ferret_query::{Clock, Query};

use super::*;
use crate::candidates::Globs;
use crate::file::Guarded;

fn roots(dir: &Path) -> Roots {
    Roots::open(&[dir.to_str().unwrap().parse().unwrap()], Policy::default()).unwrap()
}

fn cands(names: &[&str]) -> Vec<Candidate> {
    names
        .iter()
        .map(|n| Candidate::new(n.to_string(), 0, 0))
        .collect()
}

fn run(dir: &Path, pattern: Pattern, names: &[&str], options: &Options) -> Outcome {
    let matcher = compile(&pattern).unwrap();
    grep(
        &roots(dir),
        &matcher,
        pattern.multiline,
        &cands(names),
        options,
        &AtomicBool::new(false),
        None,
    )
}

fn pat(text: &str) -> Pattern {
    Pattern {
        text: text.into(),
        ..Pattern::default()
    }
}

fn tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    fs::write(d.join("a.txt"), "alpha\nbeta\ngamma\nbeta gamma\n").unwrap();
    fs::write(d.join("b.rs"), "fn main() {}\nlet betamax = 1;\n").unwrap();
    fs::write(d.join("bin.dat"), b"beta\0\0\0binary").unwrap();
    fs::write(d.join(".env"), "SECRET=beta\n").unwrap();
    t
}

#[test]
fn content_lines_in_candidate_order() {
    let t = tree();
    let o = run(
        t.path(),
        pat("beta"),
        &["b.rs", "a.txt"],
        &Options::default(),
    );
    let got: Vec<(&str, u64)> = o.lines.iter().map(|l| (l.path.as_str(), l.line)).collect();
    assert_eq!(got, [("b.rs", 2), ("a.txt", 2), ("a.txt", 4)]);
    assert_eq!(o.total, 3);
    assert_eq!(o.files_matched, 2);
    assert_eq!(o.files_scanned, 2);
    assert!(o.bytes_scanned > 0);
    assert!(!o.truncated);
}

#[test]
fn whole_word_case_and_literal() {
    let t = tree();
    let ww = Pattern {
        whole_word: true,
        ..pat("beta")
    };
    assert_eq!(
        run(t.path(), ww, &["a.txt", "b.rs"], &Options::default()).total,
        2
    );
    let ci = Pattern {
        case_insensitive: true,
        ..pat("ALPHA")
    };
    assert_eq!(run(t.path(), ci, &["a.txt"], &Options::default()).total, 1);
    let lit = Pattern {
        literal: true,
        ..pat("main()")
    };
    assert_eq!(run(t.path(), lit, &["b.rs"], &Options::default()).total, 1);
    assert!(compile(&pat("main(")).is_err());
}

#[test]
fn context_files_and_count() {
    let t = tree();
    let o = run(
        t.path(),
        pat("gamma"),
        &["a.txt"],
        &Options {
            before: 1,
            after: 0,
            ..Options::default()
        },
    );
    let got: Vec<(u64, bool)> = o.lines.iter().map(|l| (l.line, l.context)).collect();
    assert_eq!(got, [(2, true), (3, false), (4, false)]);
    let files = run(
        t.path(),
        pat("beta"),
        &["a.txt", "b.rs"],
        &Options {
            output: Output::Files,
            ..Options::default()
        },
    );
    assert_eq!(files.files, ["a.txt", "b.rs"]);
    let counts = run(
        t.path(),
        pat("beta"),
        &["a.txt", "b.rs"],
        &Options {
            output: Output::Count,
            ..Options::default()
        },
    );
    assert_eq!(
        counts.counts,
        [
            FileCount {
                path: "a.txt".into(),
                count: 2
            },
            FileCount {
                path: "b.rs".into(),
                count: 1
            }
        ]
    );
}

#[test]
fn paging_by_offset_and_limit() {
    let t = tree();
    let o = run(
        t.path(),
        pat("a"),
        &["a.txt"],
        &Options {
            offset: 1,
            limit: 2,
            ..Options::default()
        },
    );
    assert_eq!(o.lines.iter().map(|l| l.line).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(o.total, 4);
    assert!(o.truncated);
    assert_eq!(o.next_offset, Some(3));
}

#[test]
fn binary_sensitive_too_large_and_missing_are_counted() {
    let t = tree();
    fs::write(t.path().join("big.txt"), "beta\n".repeat(1000)).unwrap();
    let o = run(
        t.path(),
        pat("beta"),
        &["bin.dat", ".env", "big.txt", "gone.txt", "a.txt"],
        &Options {
            max_file_bytes: 1000,
            ..Options::default()
        },
    );
    assert_eq!(o.skipped.binary, 1);
    assert_eq!(o.skipped.sensitive, 1);
    assert_eq!(o.skipped.too_large, 1);
    assert_eq!(o.skipped.changed, 1);
    assert_eq!(o.total, 2);
    assert!(o.lines.iter().all(|l| l.path == "a.txt"));
}

#[test]
fn utf16_and_gbk_are_decoded() {
    let t = tempfile::tempdir().unwrap();
    let mut utf16 = vec![0xff, 0xfe];
    for u in "première ligne\nhéllo wörld\n".encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    fs::write(t.path().join("u16.txt"), utf16).unwrap();
    let (gbk, _, _) = encoding_rs::GBK.encode(
        "中文编码检测需要足够长的文本才能可靠地判断，这是一段测试文字。\n第二行：你好世界\n",
    );
    fs::write(t.path().join("gbk.txt"), gbk).unwrap();
    let o = run(t.path(), pat("wörld"), &["u16.txt"], &Options::default());
    assert_eq!(o.lines.len(), 1);
    assert_eq!(o.lines[0].line, 2);
    assert_eq!(o.lines[0].text, "héllo wörld");
    let o = run(t.path(), pat("你好世界"), &["gbk.txt"], &Options::default());
    assert_eq!(o.lines.len(), 1, "{o:?}");
    assert_eq!(o.lines[0].text, "第二行：你好世界");
}

#[test]
fn long_lines_are_clipped_around_the_match() {
    let t = tempfile::tempdir().unwrap();
    let line = format!("{}NEEDLE{}\n", "x".repeat(5000), "y".repeat(5000));
    fs::write(t.path().join("long.txt"), line).unwrap();
    let o = run(
        t.path(),
        pat("NEEDLE"),
        &["long.txt"],
        &Options {
            max_line_chars: 100,
            ..Options::default()
        },
    );
    assert_eq!(o.clipped_lines, 1);
    assert!(o.lines[0].clipped);
    assert_eq!(o.lines[0].text.chars().count(), 100);
    assert!(o.lines[0].text.contains("NEEDLE"));
}

#[test]
fn multiline_matches_span_lines() {
    let t = tree();
    let m = Pattern {
        multiline: true,
        ..pat("alpha\\nbeta")
    };
    let o = run(t.path(), m, &["a.txt"], &Options::default());
    assert_eq!(o.total, 1);
    assert_eq!(o.lines[0].line, 1);
    assert_eq!(o.lines[0].text, "alpha\nbeta");
    // Without `multiline`, a pattern holding `\n` is refused (grep-regex
    // bans the line terminator), with the way to match across lines.
    let err = compile(&pat("alpha\\nbeta")).unwrap_err();
    assert!(
        err.contains(r#"the literal "\n" is not allowed"#) && err.contains("multiline"),
        "{err}"
    );
}

#[test]
fn oversized_patterns_are_refused() {
    let err = compile(&pat("(\\w{100}){100}")).unwrap_err();
    assert!(err.contains("size limit"), "{err}");
}

#[test]
fn cancellation_and_deadline_stop_the_workers() {
    let t = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..200).map(|i| format!("f{i}.txt")).collect();
    let body = "some text without the word\n".repeat(20_000);
    for n in &names {
        fs::write(t.path().join(n), &body).unwrap();
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let matcher = compile(&pat("zzz[0-9]+")).unwrap();
    let cancel = AtomicBool::new(true);
    let o = grep(
        &roots(t.path()),
        &matcher,
        false,
        &cands(&refs),
        &Options::default(),
        &cancel,
        None,
    );
    assert_eq!(o.stopped, Some(Stopped::Cancelled));
    assert_eq!(o.files_scanned, 0);
    let started = Instant::now();
    let o = grep(
        &roots(t.path()),
        &matcher,
        false,
        &cands(&refs),
        &Options {
            deadline: Some(Instant::now() + std::time::Duration::from_millis(5)),
            ..Options::default()
        },
        &AtomicBool::new(false),
        None,
    );
    assert_eq!(o.stopped, Some(Stopped::Timeout));
    assert!(o.files_scanned < 200);
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    // Cancelled while files are being read (every line matches: the workers are
    // busy): a stopped reader must not be retried forever.
    let busy = compile(&pat("o")).unwrap();
    let cancel = AtomicBool::new(false);
    let started = Instant::now();
    let o = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(30));
            cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        grep(
            &roots(t.path()),
            &busy,
            false,
            &cands(&refs),
            &Options {
                output: Output::Count,
                ..Options::default()
            },
            &cancel,
            None,
        )
    });
    assert_eq!(o.stopped, Some(Stopped::Cancelled));
    assert!(o.files_scanned < 200, "{}", o.files_scanned);
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn candidates_come_from_the_index_and_fresh_folders() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    fs::create_dir(d.join("src")).unwrap();
    fs::write(d.join("src/a.rs"), "x").unwrap();
    fs::write(d.join("src/b.md"), "x").unwrap();
    fs::write(d.join(".gitignore"), "ignored/\n").unwrap();
    fs::create_dir(d.join("ignored")).unwrap();
    fs::write(d.join("ignored/c.rs"), "x").unwrap();
    let r = roots(d);
    let index = Index::open(IndexConfig::new(vec![IndexRoot::new(
        r.roots()[0].name.clone(),
        r.roots()[0].path.clone(),
    )]))
    .unwrap();
    index.build_now(None);
    let scope = |filter: &str, path: Option<&'static str>| Scope {
        path,
        query: Query::compile(filter, &Default::default(), &Clock::system()).unwrap(),
        globs: Globs::default(),
        stop: Default::default(),
    };
    let paths = |g: candidates::Gathered| -> Vec<String> {
        let mut v: Vec<String> = g.candidates.into_iter().map(|c| c.path).collect();
        v.sort();
        v
    };
    assert_eq!(
        paths(gather(&index, &r, &scope("ext:rs", None)).unwrap()),
        ["src/a.rs"]
    );
    // Created after the index was built: found by listing the changed folder.
    fs::write(d.join("src/new.rs"), "x").unwrap();
    fs::create_dir(d.join("src/sub")).unwrap();
    fs::write(d.join("src/sub/deep.rs"), "x").unwrap();
    let g = gather(&index, &r, &scope("ext:rs", Some("src"))).unwrap();
    assert_eq!(g.from_walk, 2);
    assert_eq!(paths(g), ["src/a.rs", "src/new.rs", "src/sub/deep.rs"]);
    let globbed = Scope {
        globs: Globs::new(&["*.md".into()]).unwrap(),
        ..scope("", None)
    };
    assert_eq!(paths(gather(&index, &r, &globbed).unwrap()), ["src/b.md"]);
    // A file path is searched as asked.
    assert_eq!(
        paths(gather(&index, &r, &scope("ext:md", Some("src/a.rs"))).unwrap()),
        ["src/a.rs"]
    );
    assert!(gather(&index, &r, &scope("", Some("missing"))).is_err());
    // Choosing the files stops with the grep: its caller gone, or its time up.
    let gone = AtomicBool::new(true);
    let cancelled = Scope {
        stop: ferret_index::Stop::on(&gone),
        ..scope("ext:rs", None)
    };
    let e = gather(&index, &r, &cancelled).unwrap_err();
    assert_eq!(e.code, ferret_fs::ErrorCode::Cancelled);
    let past = std::time::Instant::now() - std::time::Duration::from_millis(1);
    let late = Scope {
        stop: ferret_index::Stop::NEVER.until(Some(past)),
        ..scope("ext:rs", None)
    };
    let e = gather(&index, &r, &late).unwrap_err();
    assert_eq!(e.code, ferret_fs::ErrorCode::Timeout);
    assert!(e.hint.unwrap_or_default().contains("timeout_ms"));
}

#[test]
fn a_folder_listed_past_the_list_limit_says_so() {
    // A folder the index does not hold (ignored) is listed to find its
    // files; the listing stops at `max_walk_entries`, and the gathering
    // says it did, not only by having fewer candidates.
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    fs::write(d.join(".gitignore"), "ignored/\n").unwrap();
    fs::create_dir(d.join("ignored")).unwrap();
    for i in 0..30 {
        fs::write(d.join(format!("ignored/f{i:02}.rs")), "x").unwrap();
    }
    fs::write(d.join("kept.rs"), "x").unwrap();
    let open = |max_walk_entries: usize| {
        let mut policy = Policy::default();
        policy.limits.max_walk_entries = max_walk_entries;
        let r = Roots::open(&[d.to_str().unwrap().parse().unwrap()], policy).unwrap();
        let index = Index::open(IndexConfig::new(vec![IndexRoot::new(
            r.roots()[0].name.clone(),
            r.roots()[0].path.clone(),
        )]))
        .unwrap();
        index.build_now(None);
        (r, index)
    };
    let scope = |path: Option<&'static str>| Scope {
        path,
        query: Query::compile("", &Default::default(), &Clock::system()).unwrap(),
        globs: Globs::default(),
        stop: Default::default(),
    };
    let (r, index) = open(10);
    let g = gather(&index, &r, &scope(Some("ignored"))).unwrap();
    assert!(g.walk_capped);
    assert_eq!(g.candidates.len(), 10);
    // Under the limit, the whole folder, and nothing to say.
    let (r, index) = open(100);
    let g = gather(&index, &r, &scope(Some("ignored"))).unwrap();
    assert!(!g.walk_capped);
    assert_eq!(g.candidates.len(), 30);
    // The index's own folders are not listed: no limit applies.
    let (r, index) = open(10);
    let g = gather(&index, &r, &scope(None)).unwrap();
    assert!(!g.walk_capped);
}

#[test]
fn a_stopped_reader_fails_without_asking_for_a_retry() {
    // `Interrupted` is retried by readers (encoding_rs_io's BOM peek loops on it),
    // so a stopped search must fail with another kind.
    let cancel = AtomicBool::new(true);
    let control = Control {
        cancel: &cancel,
        deadline: None,
        stopped: std::sync::atomic::AtomicUsize::new(RUNNING),
    };
    let mut reader = Guarded {
        inner: &b"text"[..],
        control: &control,
        bytes: 0,
    };
    let err = std::io::Read::read(&mut reader, &mut [0u8; 4]).unwrap_err();
    assert_ne!(err.kind(), std::io::ErrorKind::Interrupted);
    assert_eq!(control.stopped(), Some(Stopped::Cancelled));
}

#[test]
fn filters_that_name_documents_search_them() {
    assert!(names_documents("ext:pdf", &[], None));
    assert!(names_documents("ext:md;DOCX invoices/", &[], None));
    assert!(names_documents("", &["*.xlsx".into()], None));
    assert!(names_documents("", &[], Some("papers/paper.pdf")));
    assert!(names_documents("*.epub", &[], None));
    assert!(!names_documents(
        "ext:rs !target/",
        &["*.md".into()],
        Some("src")
    ));
    assert!(!names_documents("!ext:pdf", &[], None));
    assert!(!names_documents("", &[], None));
}

/// A large file's windows (from the content index's segments): no match in
/// them, and the file is not read on; a match on a line wholly inside one,
/// and a files grep needs no more; a match only where a window cuts a line
/// (`main$` at its end, `^fn` at its start), and the whole file decides;
/// windows of another version (another size) are not used.
#[test]
fn windows_are_read_first_and_a_cut_line_never_decides() {
    let t = tempfile::tempdir().unwrap();
    let mut text = "xx main yy\n".repeat(100);
    text.push_str("fn at the end main\n");
    fs::write(t.path().join("big.txt"), &text).unwrap();
    let size = text.len() as u64;
    let roots = roots(t.path());
    let grep_with = |pattern: &str, windows: Vec<(u64, u64)>, size: u64, output: Output| {
        let matcher = compile(&pat(pattern)).unwrap();
        let mut c = Candidate::new("big.txt".into(), 0, size);
        c.windows = windows;
        grep(
            &roots,
            &matcher,
            false,
            &[c],
            &Options {
                output,
                ..Options::default()
            },
            &AtomicBool::new(false),
            None,
        )
    };
    let last = 1100; // where the last line starts
    for output in [Output::Files, Output::Count, Output::Content] {
        // Nothing in the window: the file is not read on.
        let o = grep_with("the end", vec![(0, 50)], size, output);
        assert_eq!(
            (o.files_matched, o.files_scanned, o.bytes_scanned),
            (0, 1, 50)
        );
        // `main$` matches at the cut end of "xx main": read whole, and the
        // only real match is the last line.
        let o = grep_with("main$", vec![(0, 7)], size, output);
        assert_eq!(o.files_matched, 1, "{output:?}");
        assert!(o.bytes_scanned >= size, "{output:?}");
        // `^fn` matches at the cut start of "fn at": read whole (a match
        // is there, on the last line).
        let o = grep_with("^fn at", vec![(last, size)], size, output);
        assert_eq!(o.files_matched, 1);
        // Another version of the file: its windows are not used.
        let o = grep_with("the end", vec![(0, 50)], size - 1, output);
        assert_eq!(o.files_matched, 1);
    }
    // A whole line of a window holds the match: a files grep stops there.
    let o = grep_with("the end", vec![(last - 5, size)], size, Output::Files);
    assert_eq!(o.files, ["big.txt"]);
    assert_eq!(o.bytes_scanned, size - last + 5);
    // The same for lines: they need the whole file (line numbers).
    let o = grep_with("the end", vec![(last - 5, size)], size, Output::Content);
    assert_eq!(o.lines.len(), 1);
    assert_eq!(o.lines[0].line, 101);
    // A cut line alone never shows a file: `main$` at the window's cut end,
    // in a file whose lines all end otherwise.
    let none = "xx main yy\n".repeat(100);
    fs::write(t.path().join("big.txt"), &none).unwrap();
    let o = grep_with("main$", vec![(0, 7)], none.len() as u64, Output::Files);
    assert!(o.files.is_empty(), "{:?}", o.files);
    let o = grep_with("^main", vec![(3, 40)], none.len() as u64, Output::Files);
    assert!(o.files.is_empty(), "{:?}", o.files);
}

/// A files grep of the file `path`, of `size` bytes when the content index
/// read it, through its `windows`.
fn files_through(
    roots: &Roots,
    matcher: &RegexMatcher,
    path: &str,
    size: u64,
    windows: Vec<(u64, u64)>,
) -> Outcome {
    let mut c = Candidate::new(path.into(), 0, size);
    c.windows = windows;
    let options = Options {
        output: Output::Files,
        ..Options::default()
    };
    grep(
        roots,
        matcher,
        false,
        &[c],
        &options,
        &AtomicBool::new(false),
        None,
    )
}

/// A file of one long line (minified code, a search index): a window cuts
/// it at both ends. A match well inside the window shows the file, and a
/// files grep reads no more; a match near a cut leaves the whole file to
/// decide: a character the cut splits must not pass for a word boundary.
#[test]
fn a_match_far_from_a_windows_cuts_shows_a_file_of_one_line() {
    let t = tempfile::tempdir().unwrap();
    let roots = roots(t.path());
    let grep_in = |text: &str, pattern: Pattern, window: (u64, u64)| {
        fs::write(t.path().join("one.js"), text).unwrap();
        let matcher = compile(&pattern).unwrap();
        let o = files_through(&roots, &matcher, "one.js", text.len() as u64, vec![window]);
        (o.files, o.bytes_scanned)
    };
    let line = format!("{}needle{}", "a".repeat(1000), "b".repeat(1000));
    let size = line.len() as u64;
    // Well inside the window: the window alone.
    assert_eq!(
        grep_in(&line, pat("needle"), (900, 1200)),
        (vec!["one.js".to_string()], 300)
    );
    // Three bytes from the cut: the whole file decides (and holds it).
    let (files, read) = grep_in(&line, pat("needle"), (997, 1200));
    assert_eq!(files, ["one.js"]);
    assert!(read >= size, "{read}");
    // A word right after the cut: in the window its start is a boundary;
    // in the file `é` comes before it, a letter, so no whole word is there.
    let word = format!("{}émain {}", "a".repeat(1000), "b".repeat(1000));
    let whole_word = Pattern {
        whole_word: true,
        ..pat("main")
    };
    let (files, read) = grep_in(&word, whole_word.clone(), (1002, 1300));
    assert!(files.is_empty(), "{files:?}");
    assert!(read >= word.len() as u64, "{read}");
    // A window that starts inside a four-byte letter: three bytes of it,
    // then the word. In the file the letter comes before it: no boundary.
    let four = format!("{}𝐀main {}", "a".repeat(1000), "b".repeat(1000));
    let (files, read) = grep_in(&four, pat(r"\bmain"), (1001, 1300));
    assert!(files.is_empty(), "{files:?}");
    assert!(read >= four.len() as u64, "{read}");
    // The same word after a space, well inside the window: the window alone.
    let spaced = format!("{} main {}", "a".repeat(1000), "b".repeat(1000));
    assert_eq!(
        grep_in(&spaced, whole_word, (900, 1200)),
        (vec!["one.js".to_string()], 300)
    );
}

/// A files grep through windows never shows a file a whole read does not:
/// texts of long lines with letters of one to four bytes and spaces, windows anywhere
/// (cutting lines and characters), patterns with word boundaries, anchors,
/// whole words and either case. Where the windows cover every match of the
/// whole file, it answers as the whole file does.
#[test]
fn windows_anywhere_never_show_a_file_a_whole_read_does_not() {
    let t = tempfile::tempdir().unwrap();
    let roots = roots(t.path());
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let patterns: Vec<Pattern> = vec![
        pat("main"),
        pat(r"\bmain"),
        pat(r"main\b"),
        pat("^main"),
        pat("main$"),
        pat(r"\Bain\b"),
        pat("éma"),
        Pattern {
            whole_word: true,
            ..pat("main")
        },
        Pattern {
            case_insensitive: true,
            ..pat("MAIN")
        },
    ];
    let tokens = [
        "main", "é", "a", " ", "x", "émain", "mainé", "MAIN", "日main", "𝐀main", "\n",
    ];
    let mut shown = 0;
    for round in 0..400 {
        let mut text = String::new();
        while text.len() < 300 + next(300) {
            // Line ends are rare: most windows cut the line at both ends.
            let tok = tokens[next(tokens.len())];
            if tok != "\n" || next(6) == 0 {
                text.push_str(tok);
            }
        }
        fs::write(t.path().join("f.txt"), &text).unwrap();
        let size = text.len() as u64;
        let pattern = &patterns[round % patterns.len()];
        let matcher = compile(pattern).unwrap();
        let files = |windows: Vec<(u64, u64)>| {
            !files_through(&roots, &matcher, "f.txt", size, windows)
                .files
                .is_empty()
        };
        let whole = files(Vec::new());
        // One to three windows anywhere, in order.
        let mut cuts: Vec<u64> = (0..2 + 2 * next(3))
            .map(|_| next(size as usize) as u64)
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let windows: Vec<(u64, u64)> = cuts
            .chunks_exact(2)
            .map(|w| (w[0], w[1]))
            .filter(|w| w.0 < w.1)
            .collect();
        if windows.is_empty() {
            continue;
        }
        let through = files(windows.clone());
        assert!(
            whole || !through,
            "round {round}: {pattern:?} shown through {windows:?} of {text:?}"
        );
        shown += usize::from(through);
        // A window over the whole file answers as the whole file does.
        assert_eq!(files(vec![(0, size)]), whole, "round {round}: {pattern:?}");
    }
    assert!(shown > 50, "only {shown} files shown through windows");
}

/// Context is shown beside the page's matches alone: every line within
/// `before` above or `after` below a match of the page, a match off the
/// page among them as context, and nothing else; checked against the
/// lines worked out from the files themselves, for random files, pages and
/// context sizes.
#[test]
fn context_lines_are_those_of_the_page_matches() {
    let t = tempfile::tempdir().unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for round in 0..60 {
        let names = ["one.txt", "two.txt"];
        let mut files: Vec<Vec<bool>> = Vec::new();
        for name in names {
            let lines: Vec<bool> = (0..5 + next(30)).map(|_| next(4) == 0).collect();
            let text: String = lines
                .iter()
                .enumerate()
                .map(|(i, &hit)| {
                    if hit {
                        format!("hit {i}\n")
                    } else {
                        format!("line {i}\n")
                    }
                })
                .collect();
            fs::write(t.path().join(name), text).unwrap();
            files.push(lines);
        }
        for _ in 0..20 {
            let options = Options {
                before: next(4) as usize,
                after: next(4) as usize,
                offset: next(8) as usize,
                limit: 1 + next(5) as usize,
                ..Options::default()
            };
            let o = run(t.path(), pat("hit"), &names, &options);
            // The oracle: (file, line, is a match of the page) in order.
            let mut want: Vec<(String, u64, bool)> = Vec::new();
            let mut k = 0usize;
            for (name, lines) in names.iter().zip(&files) {
                let mut page = Vec::new();
                for (i, &hit) in lines.iter().enumerate() {
                    if hit {
                        if k >= options.offset && k < options.offset + options.limit {
                            page.push(i);
                        }
                        k += 1;
                    }
                }
                for (i, &hit) in lines.iter().enumerate() {
                    let on_page = page.contains(&i);
                    let near = page
                        .iter()
                        .any(|&m| i + options.before >= m && i <= m + options.after);
                    if on_page || near {
                        want.push((name.to_string(), i as u64 + 1, on_page && hit));
                    }
                }
            }
            let got: Vec<(String, u64, bool)> = o
                .lines
                .iter()
                .map(|l| (l.path.clone(), l.line, !l.context))
                .collect();
            assert_eq!(got, want, "round {round}, {options:?}");
            assert_eq!(o.count, want.iter().filter(|w| w.2).count());
        }
    }
}

/// `!` excludes, as in ripgrep; a pattern may list several at commas
/// outside braces.
#[test]
fn globs_exclude_with_a_bang_and_split_at_commas() {
    let g = |p: &[&str]| Globs::new(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let rs_not_tests = g(&["*.rs", "!*test*"]);
    assert!(rs_not_tests.matches("src/main.rs"));
    assert!(!rs_not_tests.matches("src/tests.rs"));
    assert!(!rs_not_tests.matches("README.md"));
    let not_rs = g(&["!*.rs"]);
    assert!(not_rs.matches("README.md"));
    assert!(!not_rs.matches("src/main.rs"));
    let two = g(&["*.rs,*.md"]);
    assert!(two.matches("src/main.rs") && two.matches("README.md"));
    assert!(!two.matches("Cargo.toml"));
    let braces = g(&["*.{rs,md}", "!src/**"]);
    assert!(braces.matches("README.md") && braces.matches("tests/a.rs"));
    assert!(!braces.matches("src/main.rs"));
    assert!(!names_documents("", &["!*.pdf".into()], None));
    assert!(names_documents("", &["*.rs,*.pdf".into()], None));
}

/// Anchors see a CRLF line's end as an LF one's, across lines too.
#[test]
fn anchors_match_at_crlf_line_ends() {
    let t = tempfile::tempdir().unwrap();
    fs::write(t.path().join("crlf.txt"), "a\r\nb\r\nc b\r\n").unwrap();
    fs::write(t.path().join("lf.txt"), "a\nb\nc b\n").unwrap();
    for file in ["crlf.txt", "lf.txt"] {
        let o = run(t.path(), pat("^b$"), &[file], &Options::default());
        let lines: Vec<(u64, &str)> = o.lines.iter().map(|l| (l.line, l.text.as_str())).collect();
        assert_eq!(lines, [(2, "b")], "{file}");
        let o = run(t.path(), pat("b$"), &[file], &Options::default());
        assert_eq!(o.total, 2, "{file}");
        let o = run(
            t.path(),
            Pattern {
                text: "^a$\\s+^b$".into(),
                multiline: true,
                ..Pattern::default()
            },
            &[file],
            &Options::default(),
        );
        assert_eq!(o.total, 1, "{file}");
    }
}
