use std::{fs, path::Path, sync::Arc, time::Duration};

use ferret_fs::{Policy, Roots};
use ferret_index::{Index, IndexConfig, IndexRoot};

use super::*;
use crate::pattern::{PatternSpec, query};

struct Served {
    index: Index,
    content: ContentIndex,
}

/// The tree as one root, and a name index's settings for it.
fn opened(tree: &Path) -> (Roots, IndexConfig) {
    let roots = Roots::open(
        &[tree.to_str().unwrap().parse().unwrap()],
        Policy::default(),
    )
    .unwrap();
    let root = &roots.roots()[0];
    let config = IndexConfig::new(vec![IndexRoot {
        name: root.name.clone(),
        path: root.path.clone(),
        walk_path: root.handle_path(),
    }]);
    (roots, config)
}

fn serve(tree: &Path, state: Option<&Path>) -> Served {
    let (roots, mut config) = opened(tree);
    config.state_dir = state.map(Path::to_path_buf);
    let index = Index::open(config).unwrap();
    index.start();
    let mut c = Config::new(state.map(Path::to_path_buf));
    c.budget.threads = 2;
    let content = ContentIndex::new(c, Arc::new(roots), index.clone());
    content.start();
    Served { index, content }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.content.shutdown();
        self.index.shutdown();
    }
}

fn until(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn literal(text: &str) -> Grams {
    query(&PatternSpec {
        text,
        literal: true,
        case_insensitive: false,
        multiline: false,
    })
}

/// The files the index says to search, of those the name index lists.
fn kept(s: &Served, q: &Grams) -> Result<Vec<String>, Unused> {
    let files = name_index_files(&s.index);
    let list: Vec<(&str, i64, u64)> = files
        .iter()
        .map(|(p, size, m)| (p.as_str(), *m, *size))
        .collect();
    let n = s.content.narrow(q, &list, false)?;
    Ok(list
        .iter()
        .zip(n.keep)
        .filter(|(_, k)| *k)
        .map(|((p, _, _), _)| p.to_string())
        .collect())
}

/// The files the index names for `q` when asked first (`answer`), as the
/// name index holds them: its hits, the files it cannot answer for, and
/// those at or below a pending path. `None`: it leaves the choice to a pass
/// over the files.
fn named(s: &Served, q: &Grams) -> Option<Vec<String>> {
    let a = s.content.answer(q, None, false, true).unwrap()?;
    let mut out: Vec<String> = name_index_files(&s.index)
        .into_iter()
        .map(|(p, _, _)| p)
        .filter(|p| {
            a.hits
                .iter()
                .map(|h| &h.path)
                .chain(&a.unvouched)
                .any(|h| **h == **p)
                || a.pending
                    .iter()
                    .any(|d| **d == **p || p.starts_with(&format!("{d}/")))
        })
        .collect();
    out.sort();
    Some(out)
}

/// The index's binary files, as it names them.
fn binaries(s: &Served) -> Vec<String> {
    let a = s
        .content
        .answer(&literal("needle"), None, false, true)
        .unwrap()
        .unwrap();
    let mut out: Vec<String> = a.binary.iter().map(|p| p.to_string()).collect();
    out.sort();
    // Asked only to count them: the same binaries, pending ones left out.
    let c = s
        .content
        .answer(&literal("needle"), None, false, false)
        .unwrap()
        .unwrap();
    let below_pending = |p: &str| {
        c.pending
            .iter()
            .any(|d| **d == *p || p.starts_with(&format!("{d}/")))
    };
    assert!(c.binary.is_empty(), "not listed when not asked");
    assert_eq!(
        c.binary_count,
        out.iter().filter(|p| !below_pending(p)).count() as u64
    );
    assert_eq!(a.binary_count, c.binary_count);
    out
}

fn tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    fs::create_dir_all(d.join("src")).unwrap();
    for i in 0..30 {
        fs::write(
            d.join(format!("src/m{i:02}.rs")),
            format!("fn module_{i}() {{}}\n"),
        )
        .unwrap();
    }
    fs::write(d.join("src/needle.rs"), "// a needle here\n").unwrap();
    fs::write(d.join("bin.dat"), b"needle\0\0binary").unwrap();
    fs::write(d.join(".env"), "needle=1\n").unwrap();
    t
}

/// The content index answers, and the name index's watcher follows every
/// folder (its status says so a moment after the name index is ready).
fn ready(s: &Served) {
    until("the content index", || s.content.is_ready());
    until("the watcher", || {
        s.index.status().watcher.starts_with("watching")
    });
}

#[test]
fn answers_with_the_files_that_hold_the_trigrams() {
    let t = tree();
    let s = serve(t.path(), None);
    ready(&s);
    // .env is hidden: not in the name index at all. bin.dat is binary.
    assert_eq!(kept(&s, &literal("needle")).unwrap(), ["src/needle.rs"]);
    assert_eq!(kept(&s, &literal("module_17")).unwrap(), ["src/m17.rs"]);
    assert!(kept(&s, &literal("nowhere at all")).unwrap().is_empty());
    assert_eq!(kept(&s, &Grams::All), Err(Unused::Pattern));
    // Asked first, it names the same files itself, and its binaries.
    assert_eq!(named(&s, &literal("needle")).unwrap(), ["src/needle.rs"]);
    assert_eq!(named(&s, &literal("module_17")).unwrap(), ["src/m17.rs"]);
    assert!(named(&s, &literal("nowhere at all")).unwrap().is_empty());
    assert_eq!(binaries(&s), ["bin.dat"]);
    assert_eq!(
        s.content.answer(&Grams::All, None, false, true).err(),
        Some(Unused::Pattern)
    );
    let st = s.content.status();
    assert_eq!(st.state, "ready");
    assert_eq!(st.files, 32);
    assert_eq!(st.indexed_files, 32);
}

#[test]
fn a_changed_file_is_searched_until_read_again_then_answered() {
    let t = tree();
    let s = serve(t.path(), None);
    ready(&s);
    let feed = s.index.touches();
    fs::write(t.path().join("src/m03.rs"), "fn module_3() { needle() }\n").unwrap();
    // Once the name index has seen the change, the file is pending (searched)
    // even before it is read again.
    let seen = feed.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(seen.iter().any(|p| p == "src/m03.rs"), "{seen:?}");
    let now = kept(&s, &literal("needle")).unwrap();
    assert!(now.contains(&"src/m03.rs".to_string()), "{now:?}");
    let now = named(&s, &literal("needle")).unwrap();
    assert!(now.contains(&"src/m03.rs".to_string()), "{now:?}");
    // Read again: answered by the index, and still found.
    until("the file read again", || {
        s.content.status().pending_files == 0
    });
    assert_eq!(
        kept(&s, &literal("needle")).unwrap(),
        ["src/m03.rs", "src/needle.rs"]
    );
    let (size, mtime) = s.index.file("src/m03.rs").unwrap();
    let n = s
        .content
        .narrow(&literal("needle"), &[("src/m03.rs", mtime, size)], false)
        .unwrap();
    assert_eq!((n.keep, n.answered), (vec![true], 1));
    // Deleted, created, renamed.
    fs::remove_file(t.path().join("src/needle.rs")).unwrap();
    fs::write(t.path().join("src/new.rs"), "needle again\n").unwrap();
    fs::rename(t.path().join("src/m05.rs"), t.path().join("src/moved.rs")).unwrap();
    until("the changes", || {
        s.content.status().pending_files == 0
            && s.index.file("src/new.rs").is_some()
            && kept(&s, &literal("needle")).unwrap() == ["src/m03.rs", "src/new.rs"]
    });
    until("the rename", || {
        kept(&s, &literal("module_5(")).unwrap() == ["src/moved.rs"]
    });
    assert_eq!(s.content.status().files, 32);
    assert_eq!(
        named(&s, &literal("needle")).unwrap(),
        ["src/m03.rs", "src/new.rs"]
    );
    assert_eq!(named(&s, &literal("module_5(")).unwrap(), ["src/moved.rs"]);
}

/// A folder renamed: the change feed names the folder (and its old path),
/// not its files. Its files are carried over to their new paths, not read
/// again, and a query asked the moment the name index has the move waits for
/// that (or, failing it, names every file below the new path as pending):
/// never a file left out.
#[test]
fn a_folder_renamed_is_carried_over_not_read_again() {
    let t = tree();
    fs::create_dir_all(t.path().join("src/inner/deep")).unwrap();
    fs::write(
        t.path().join("src/inner/deep/x.rs"),
        "fn inner_needle() {}\n",
    )
    .unwrap();
    let s = serve(t.path(), None);
    ready(&s);
    until("the new files read", || {
        named(&s, &literal("inner_needle")) == Some(vec!["src/inner/deep/x.rs".into()])
    });
    until("nothing pending", || s.content.status().pending_files == 0);
    let before = s.content.status();
    let feed = s.index.touches();
    fs::rename(t.path().join("src/inner"), t.path().join("moved")).unwrap();
    // The moment the name index has it, the index names the file below the
    // new folder, carried over or pending.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !feed
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .unwrap()
        .iter()
        .any(|p| p == "moved")
    {}
    let q = literal("inner_needle");
    assert_eq!(named(&s, &q).unwrap(), ["moved/deep/x.rs"]);
    until("carried over", || s.content.status().folders_carried == 1);
    let a = s.content.answer(&q, None, false, true).unwrap().unwrap();
    assert!(a.pending.is_empty() && a.unvouched.is_empty(), "{a:?}");
    assert_eq!(
        a.hits.iter().map(|h| &*h.path).collect::<Vec<_>>(),
        ["moved/deep/x.rs"]
    );
    let after = s.content.status();
    assert_eq!(after.files_carried, 1);
    assert_eq!(
        after.files_reread, before.files_reread,
        "no file read again"
    );
    assert_eq!(
        held(&s.content),
        fresh(&s),
        "held as a fresh build holds it"
    );
}

#[test]
fn a_restart_loads_the_file_and_checks_every_version() {
    let t = tree();
    let state = tempfile::tempdir().unwrap();
    {
        let s = serve(t.path(), Some(state.path()));
        ready(&s);
        assert!(!s.content.status().loaded_from_disk);
        assert!(s.content.status().memory_mapped);
    }
    // Rewritten while ferret was down: same size, same mtime second.
    let p = t.path().join("src/m07.rs");
    let before = fs::metadata(&p).unwrap();
    fs::write(&p, "fn needle_7() {}\n").unwrap();
    let f = fs::File::options().write(true).open(&p).unwrap();
    f.set_modified(before.modified().unwrap()).unwrap();
    drop(f);
    assert_eq!(fs::metadata(&p).unwrap().len(), before.len());
    let s = serve(t.path(), Some(state.path()));
    ready(&s);
    let st = s.content.status();
    assert!(st.loaded_from_disk, "{st:?}");
    until("every file checked", || {
        kept(&s, &literal("needle")).unwrap() == ["src/m07.rs", "src/needle.rs"]
    });
    // Asked first, it names the files only once it has compared itself
    // with the name index (until then it says to list them), and the same.
    until("compared with the name index", || {
        named(&s, &literal("needle")).is_some()
    });
    assert_eq!(
        named(&s, &literal("needle")).unwrap(),
        ["src/m07.rs", "src/needle.rs"]
    );
    // Once every file is checked the status says so (until then it counts
    // the files still read directly).
    until("no file left unchecked", || {
        s.content.status().unverified_files == 0
    });
    assert_eq!(s.content.status().files, st.files);
}

/// Names that are not UTF-8 are held by their shown paths (`caf%E9.txt`),
/// read, named in answers, and after a restart checked against the disk by
/// the bytes they stand for (read as written, they were never found the
/// same, and stayed searched directly).
#[test]
fn names_not_utf8_are_held_and_checked_by_their_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let t = tempfile::tempdir().unwrap();
    let at = |b: &[u8]| t.path().join(std::ffi::OsStr::from_bytes(b));
    fs::write(at(b"caf\xe9.txt"), "fn needle() {}\n").unwrap();
    fs::create_dir(at(b"d\xff")).unwrap();
    fs::write(at(b"d\xff/x.txt"), "needle\n").unwrap();
    fs::write(at(b"other.txt"), "nothing\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    {
        let s = serve(t.path(), Some(state.path()));
        ready(&s);
        until("named", || named(&s, &literal("needle")).is_some());
        assert_eq!(
            named(&s, &literal("needle")).unwrap(),
            ["caf%E9.txt", "d%FF/x.txt"]
        );
    }
    // As a one-shot search opens it (`ferret grep`): every file vouched
    // for by the check of its version alone.
    let (roots, config) = opened(t.path());
    let index = Index::open(config).unwrap();
    let c = ContentIndex::new(
        Config::new(Some(state.path().to_path_buf())),
        Arc::new(roots),
        index,
    );
    assert_eq!(c.open_saved(), Ok(3));
}

/// What the change feed did not bring, the whole comparison finds (made
/// in parts of a few files in these tests, the name index's lock let go
/// between them): files and a folder gone are dropped, new and changed
/// ones read, and the index ends as a fresh build's.
#[test]
fn a_whole_comparison_drops_what_went_and_reads_what_came() {
    let t = bigger_tree();
    let s = serve(t.path(), None);
    ready(&s);
    settles_as_built(&s, t.path());
    // The feed let go: only the comparison can find these changes.
    *s.content.shared.feed.lock().unwrap() = None;
    fs::remove_file(t.path().join("src/needle.rs")).unwrap();
    fs::remove_dir_all(t.path().join("keep/s1")).unwrap();
    fs::create_dir_all(t.path().join("new/deep")).unwrap();
    fs::write(t.path().join("new/deep/needle2.rs"), "// needle again\n").unwrap();
    fs::write(t.path().join("src/m03.rs"), "// a needle, grown longer\n").unwrap();
    assert!(s.index.sync(Duration::from_secs(10)));
    let before = s.content.status().whole_comparisons;
    assert!(worker::reconcile(&s.content.shared, false), "found nothing");
    assert_eq!(s.content.status().whole_comparisons, before + 1);
    assert_eq!(held(&s.content), fresh(&s));
    let kept = kept(&s, &literal("needle")).unwrap();
    for p in ["new/deep/needle2.rs", "src/m03.rs", "keep/s0/f0.txt"] {
        assert!(kept.contains(&p.to_string()), "{p} not in {kept:?}");
    }
    assert!(
        !kept
            .iter()
            .any(|p| p == "src/needle.rs" || p.starts_with("keep/s1/")),
        "{kept:?}"
    );
    // Nothing more to find.
    assert!(!worker::reconcile(&s.content.shared, false));
}

#[test]
fn a_damaged_file_is_discarded_and_rebuilt() {
    let t = tree();
    let state = tempfile::tempdir().unwrap();
    let file = {
        let s = serve(t.path(), Some(state.path()));
        ready(&s);
        s.content.file().unwrap().to_path_buf()
    };
    let mut bytes = fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xFF;
    fs::write(&file, &bytes).unwrap();
    let s = serve(t.path(), Some(state.path()));
    ready(&s);
    let st = s.content.status();
    assert!(!st.loaded_from_disk && st.build_ms.is_some(), "{st:?}");
    assert_eq!(kept(&s, &literal("needle")).unwrap(), ["src/needle.rs"]);
    // Rebuilt and readable again.
    assert!(Base::open(Bytes::map(&file).unwrap(), s.content.shared.key).is_ok());
}

#[test]
fn an_unwritable_state_directory_leaves_grep_to_scan() {
    let t = tree();
    let state = tempfile::tempdir().unwrap();
    // A file where the state directory should be: nothing can be written.
    let blocked = state.path().join("blocked");
    fs::write(&blocked, "").unwrap();
    let roots = Roots::open(
        &[t.path().to_str().unwrap().parse().unwrap()],
        Policy::default(),
    )
    .unwrap();
    let index = Index::open(IndexConfig::new(vec![IndexRoot::new(
        roots.roots()[0].name.clone(),
        roots.roots()[0].path.clone(),
    )]))
    .unwrap();
    index.start();
    let content = ContentIndex::new(
        Config::new(Some(blocked.join("sub"))),
        Arc::new(roots),
        index.clone(),
    );
    content.start();
    until("the build to fail", || content.status().state == "failed");
    let st = content.status();
    let e = st.last_error.unwrap();
    assert!(
        e.contains("cannot write") && e.contains("--content-index off"),
        "{e}"
    );
    match content.narrow(&literal("needle"), &[("src/needle.rs", 0, 0)], false) {
        Err(Unused::Failed(_)) => {}
        other => panic!("{other:?}"),
    }
    match content.answer(&literal("needle"), None, false, true) {
        Err(Unused::Failed(_)) => {}
        other => panic!("{other:?}"),
    }
    content.shutdown();
    index.shutdown();
}

#[test]
fn without_a_watcher_a_server_index_does_not_answer() {
    let t = tree();
    let roots = Roots::open(
        &[t.path().to_str().unwrap().parse().unwrap()],
        Policy::default(),
    )
    .unwrap();
    let mut config = IndexConfig::new(vec![IndexRoot::new("x", roots.roots()[0].path.clone())]);
    config.watch = false;
    let index = Index::open(config).unwrap();
    index.start();
    let content = ContentIndex::new(Config::new(None), Arc::new(roots), index.clone());
    content.start();
    until("ready", || content.is_ready());
    assert_eq!(
        content
            .narrow(&literal("needle"), &[("src/needle.rs", 0, 0)], false)
            .err(),
        Some(Unused::NotWatching)
    );
    assert_eq!(
        content.answer(&literal("needle"), None, false, true).err(),
        Some(Unused::NotWatching)
    );
    content.shutdown();
    index.shutdown();
}

#[test]
fn the_deny_rules_choose_the_index_file() {
    // An index built without the operator's deny patterns may hold the text
    // of files they make sensitive: it is another file, never loaded with
    // them (in any order, since they deny the same files).
    let t = tree();
    let state = tempfile::tempdir().unwrap();
    let file = |deny: &[&str]| {
        let deny: Vec<String> = deny.iter().map(|d| d.to_string()).collect();
        let policy = Policy {
            deny: ferret_fs::Denylist::with_patterns(&deny).unwrap(),
            ..Policy::default()
        };
        let roots = Roots::open(&[t.path().to_str().unwrap().parse().unwrap()], policy).unwrap();
        let root = &roots.roots()[0];
        let index = IndexConfig::new(vec![IndexRoot::new(root.name.clone(), root.path.clone())]);
        file_for(
            &index,
            &Config::new(Some(state.path().to_path_buf())),
            &roots,
        )
        .unwrap()
    };
    let plain = file(&[]);
    let denied = file(&["*.secret", "private/"]);
    assert_ne!(plain, denied);
    assert_eq!(denied, file(&["private/", "*.secret", "*.secret"]));
    assert_ne!(denied, file(&["*.secret"]));
}

/// Stopped in the middle of its first build, the index leaves no temporary
/// file in the state directory: shutdown waits for the build to notice and
/// remove what it wrote (a server that exits on a signal mid-build left one).
#[test]
fn a_build_stopped_midway_leaves_no_temporary_file() {
    let tree = tempfile::tempdir().unwrap();
    for d in 0..40 {
        let dir = tree.path().join(format!("d{d}"));
        fs::create_dir(&dir).unwrap();
        for f in 0..200 {
            fs::write(
                dir.join(format!("f{f}.txt")),
                format!("line {d} {f} of text\n"),
            )
            .unwrap();
        }
    }
    let state = tempfile::tempdir().unwrap();
    let served = serve(tree.path(), Some(state.path()));
    until("the build to start", || {
        served.content.progress().is_some() || served.content.is_ready()
    });
    served.content.shutdown();
    let left: Vec<String> = fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Files dropped and read again keep their numbers until a merge, which
/// writes the live files alone (their paths in a new set, the folders of
/// files gone forgotten); the merged file answers alike, and so does a
/// restart that loads it.
#[test]
fn a_merge_keeps_the_live_files_and_forgets_the_rest() {
    let t = tree();
    let d = t.path();
    fs::create_dir_all(d.join("gone/deep")).unwrap();
    fs::write(d.join("gone/deep/g.rs"), "needle gone\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let expect = ["deep/er/z.rs", "src/m03.rs"];
    {
        let s = serve(d, Some(state.path()));
        ready(&s);
        let folders = s.content.shared.live.read().unwrap().paths.folder_count();
        fs::remove_dir_all(d.join("gone")).unwrap();
        fs::remove_file(d.join("src/needle.rs")).unwrap();
        fs::create_dir_all(d.join("deep/er")).unwrap();
        fs::write(d.join("deep/er/z.rs"), "needle deep\n").unwrap();
        fs::write(d.join("src/m03.rs"), "fn module_3() { needle() }\n").unwrap();
        until("the changes read", || {
            s.content.status().pending_files == 0 && kept(&s, &literal("needle")).unwrap() == expect
        });
        let before = s.content.status();
        assert!(before.files_since_merge > 0);
        assert!(merge(&s.content.shared));
        let after = s.content.status();
        assert_eq!(after.files_since_merge, 0);
        assert_eq!(
            (after.files, after.indexed_files),
            (before.files, before.indexed_files)
        );
        assert_eq!(kept(&s, &literal("needle")).unwrap(), expect);
        assert_eq!(named(&s, &literal("needle")).unwrap(), expect);
        assert_eq!(binaries(&s), ["bin.dat"]);
        let live = s.content.shared.live.read().unwrap();
        assert_eq!(live.metas.len(), after.files as usize);
        // gone and gone/deep forgotten, deep and deep/er held.
        assert_eq!(live.paths.folder_count(), folders);
        assert_eq!(live.paths.get("gone/deep/g.rs"), None);
        assert!(live.paths.get("deep/er/z.rs").is_some());
    }
    let s = serve(d, Some(state.path()));
    ready(&s);
    assert!(s.content.status().loaded_from_disk);
    until("compared with the name index", || {
        named(&s, &literal("needle")).is_some()
    });
    assert_eq!(named(&s, &literal("needle")).unwrap(), expect);
    until("every file checked", || {
        kept(&s, &literal("needle")).unwrap() == expect
    });
}

/// What an index holds, by path: each live file's version and state, its
/// trigrams, whether it cannot answer for it (`unvouched`) and whether it
/// counts it binary; and whether it holds every file (`complete`).
#[derive(Debug, PartialEq)]
struct Held {
    files: BTreeMap<String, (DocMeta, Vec<u32>, bool, bool)>,
    complete: bool,
}

fn held(c: &ContentIndex) -> Held {
    let live = c.shared.live.read().unwrap();
    let mut base_grams: Vec<Vec<u32>> = vec![Vec::new(); live.base_docs()];
    if let Some(b) = &live.base {
        for i in 0..b.gram_count() {
            let p = b.posting_by_index(i);
            p.for_each(|d| base_grams[d as usize].push(p.gram));
        }
    }
    // The sets hold live files only, and their count is theirs.
    assert!(live.unvouched.ones().all(|id| live.is_live(id)));
    assert!(live.binary.ones().all(|id| live.is_live(id)));
    assert_eq!(live.unvouched_count, live.unvouched.ones().count());
    assert_eq!(live.paths.live(), live.live_ids().count());
    let files = live
        .live_ids()
        .map(|id| {
            let grams = match base_grams.get(id as usize) {
                Some(g) => g.clone(),
                None => live.delta.get(&id).map(|g| g.to_vec()).unwrap_or_default(),
            };
            let f = (
                *live.meta(id),
                grams,
                live.unvouched.has(id),
                live.binary.has(id),
            );
            (live.paths.path(id), f)
        })
        .collect();
    Held {
        files,
        complete: live.complete,
    }
}

/// A content index built now from the files the name index lists.
fn fresh(s: &Served) -> Held {
    let mut c = Config::new(None);
    c.budget.threads = 2;
    let f = ContentIndex::new(c, s.content.shared.roots.clone(), s.index.clone());
    f.build_now(true).unwrap();
    held(&f)
}

/// Every text file the name index lists whose text on disk holds `needle` is
/// among those the index says to search, listed (`narrow`) or asked first
/// (`answer`, when it answers): never one left out, even while the change
/// is pending.
fn sound(s: &Served, root: &Path) {
    let q = literal("needle");
    let want: Vec<String> = name_index_files(&s.index)
        .into_iter()
        .map(|(p, _, _)| p)
        .filter(|p| {
            // (A binary file is never a match: grep skips it.)
            fs::read(root.join(p))
                .is_ok_and(|b| !b.contains(&0) && b.windows(6).any(|w| w == b"needle"))
        })
        .collect();
    let listed = kept(s, &q).unwrap();
    for p in &want {
        assert!(listed.contains(p), "{p} left out of {listed:?}");
    }
    if let Some(named) = named(s, &q) {
        for p in &want {
            assert!(named.contains(p), "{p} left out of the answer {named:?}");
        }
    }
}

/// Once every change reached it, the index holds what a fresh build holds
/// (checked for soundness on the way).
fn settles_as_built(s: &Served, root: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        sound(s, root);
        if s.index.sync(Duration::from_secs(5)) && s.content.status().pending_files == 0 {
            let (now, want) = (held(&s.content), fresh(s));
            if now == want {
                return;
            }
            if Instant::now() >= deadline {
                let differ: Vec<&String> = now
                    .files
                    .keys()
                    .chain(want.files.keys())
                    .filter(|p| now.files.get(*p) != want.files.get(*p))
                    .take(10)
                    .collect();
                panic!(
                    "not a fresh build's: complete {} (want {}), paths differing {differ:?}",
                    now.complete, want.complete
                );
            }
        }
        assert!(Instant::now() < deadline, "timed out waiting to settle");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `tree()` and `keep/`, 300 files the folder events below never touch.
fn bigger_tree() -> tempfile::TempDir {
    let t = tree();
    write_folder(&t.path().join("keep"), 300, "kept");
    t
}

/// `n` files in `dir` (in folders of 100), one in seven holding the needle.
fn write_folder(dir: &Path, n: usize, word: &str) {
    for i in 0..n {
        let sub = dir.join(format!("s{}", i / 100));
        fs::create_dir_all(&sub).unwrap();
        let text = if i % 7 == 0 {
            format!("{word} {i} needle\n")
        } else {
            format!("{word} {i}\n")
        };
        fs::write(sub.join(format!("f{i}.txt")), text).unwrap();
    }
}

/// Run `change` and wait until the index equals a fresh build, from the
/// change feed alone (the timed whole comparison does not run in these
/// tests); the files the index compared with the name index for it. No
/// whole comparison runs: what the name index can say is compared below
/// the paths the feed named.
fn event(s: &Served, root: &Path, change: impl FnOnce()) -> u64 {
    settles_as_built(s, root);
    let before = s.content.status();
    change();
    settles_as_built(s, root);
    let after = s.content.status();
    assert_eq!(
        after.whole_comparisons, before.whole_comparisons,
        "a whole comparison for a folder event"
    );
    after.files_compared - before.files_compared
}

fn at_most(compared: u64, most: u64) {
    assert!(
        compared <= most,
        "{compared} files compared, more than {most}"
    );
}

#[test]
fn a_new_folder_is_compared_alone() {
    let t = bigger_tree();
    let d = t.path();
    let s = serve(d, None);
    ready(&s);
    at_most(
        event(&s, d, || write_folder(&d.join("new/deep"), 5, "new")),
        40,
    );
    assert!(s.content.status().folder_comparisons > 0);
    // An empty folder, then files put in it.
    event(&s, d, || fs::create_dir(d.join("empty")).unwrap());
    event(&s, d, || write_folder(&d.join("empty"), 3, "late"));
}

#[test]
fn a_folder_moved_within_the_root_out_and_back_in() {
    let t = bigger_tree();
    let d = t.path();
    let outside = tempfile::tempdir().unwrap();
    write_folder(&d.join("a/b"), 250, "moving");
    let s = serve(d, None);
    ready(&s);
    // Within the root, deeper: every file held under its new path alone,
    // carried over (the new folders above it compared, nothing read).
    event(&s, d, || fs::create_dir_all(d.join("x/y")).unwrap());
    let read = s.content.status().files_reread;
    let compared = event(&s, d, || {
        fs::rename(d.join("a/b"), d.join("x/y/b")).unwrap();
    });
    at_most(compared, 0);
    let status = s.content.status();
    assert_eq!(
        (
            status.files_reread,
            status.folders_carried,
            status.files_carried
        ),
        (read, 1, 250)
    );
    // Into a folder whose name a sensitivity rule reads: compared and read
    // again, as any folder event, then out again the same way.
    let compared = event(&s, d, || {
        fs::rename(d.join("x/y/b"), d.join("objects")).unwrap();
    });
    at_most(compared, 4 * 250 + 50);
    assert_eq!(s.content.status().folders_carried, 1);
    event(&s, d, || {
        fs::rename(d.join("objects"), d.join("x/y/b")).unwrap()
    });
    // Out of the root, then back in under another name.
    let out = event(&s, d, || {
        fs::rename(d.join("x/y/b"), outside.path().join("b")).unwrap()
    });
    at_most(out, 2 * 250 + 50);
    // (Moved in, its folders and files are named too, by the name index's
    // reading of it: those that come in a later batch than the folder are
    // compared again, so twice the files listed and held.)
    let back = event(&s, d, || {
        fs::rename(outside.path().join("b"), d.join("back")).unwrap()
    });
    at_most(back, 4 * 250 + 50);
    // Renamed onto a folder it replaces, with a file of the old one's.
    event(&s, d, || {
        write_folder(&d.join("other"), 20, "other");
        fs::remove_dir_all(d.join("back/s1")).unwrap();
        fs::rename(d.join("other/s0"), d.join("back/s1")).unwrap();
    });
}

/// Run `change` while the content index's thread cannot drain the change
/// feed, until the name index has read all of it: its touches then reach
/// the thread in one drain, as when the thread was busy with other work
/// while they came. (Left to timing, the thread drains every 10 ms and a
/// sequence of changes seldom lands in one drain: a test of it then passes
/// whether or not the fault it is about is there.)
fn in_one_drain(s: &Served, change: impl FnOnce()) {
    let held = s.content.shared.feed.lock().unwrap();
    change();
    assert!(
        s.index.sync(Duration::from_secs(10)),
        "the name index read the changes"
    );
    drop(held);
}

/// A folder moved in and renamed at once, before the index read any of its
/// files, both in one drain of the feed: every answer on the way names
/// every file holding the needle, and the index settles as a fresh build.
/// (The name index tells this chain as paths added, not as a move, so no
/// fault in carrying moves can reach this test: a move carried with nothing
/// to carry passes it, and fails `moves_onto_paths_just_emptied_or_filled`.)
#[test]
fn a_folder_moved_in_and_renamed_before_it_was_read() {
    let t = bigger_tree();
    let d = t.path();
    let outside = tempfile::tempdir().unwrap();
    let s = serve(d, None);
    ready(&s);
    for round in 0..3 {
        let (came, went) = (format!("came{round}"), format!("went{round}"));
        write_folder(&outside.path().join(&came), 120, "arrived");
        settles_as_built(&s, d);
        in_one_drain(&s, || {
            fs::rename(outside.path().join(&came), d.join(&came)).unwrap();
            fs::rename(d.join(&came), d.join(&went)).unwrap();
        });
        let deadline = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < deadline {
            if s.index.sync(Duration::from_secs(5)) {
                sound(&s, d);
            }
        }
        settles_as_built(&s, d);
    }
}

/// Moves whose old path held something else a moment before, or receives
/// something else a moment after: `mv A B; mv C A` and a file of the new `A`
/// changed; `rm -rf build; mv build.tmp build; mv build release`. Each in
/// one drain of the feed ([`in_one_drain`]), each answer on the way names
/// every file holding the needle, and the index settles as a fresh build:
/// what the index held at the old path is never carried as the new path's.
#[test]
fn moves_onto_paths_just_emptied_or_filled() {
    let t = bigger_tree();
    let d = t.path();
    let s = serve(d, None);
    ready(&s);
    let watch = |s: &Served| {
        let deadline = Instant::now() + Duration::from_millis(800);
        while Instant::now() < deadline {
            if s.index.sync(Duration::from_secs(5)) {
                sound(s, d);
            }
        }
    };
    for round in 0..3 {
        let (a, b, c) = (
            format!("a{round}"),
            format!("b{round}"),
            format!("c{round}"),
        );
        write_folder(&d.join(&a), 30, "first");
        write_folder(&d.join(&c), 30, "second");
        settles_as_built(&s, d);
        in_one_drain(&s, || {
            fs::rename(d.join(&a), d.join(&b)).unwrap();
            fs::rename(d.join(&c), d.join(&a)).unwrap();
            fs::write(d.join(&a).join("s0/f1.txt"), "now a needle\n").unwrap();
        });
        watch(&s);
        settles_as_built(&s, d);

        let (build, tmp, release) = (
            format!("build{round}"),
            format!("tmp{round}"),
            format!("release{round}"),
        );
        write_folder(&d.join(&build), 30, "old");
        write_folder(&d.join(&tmp), 30, "new");
        fs::write(d.join(&tmp).join("s0/only_new.txt"), "a needle only here\n").unwrap();
        settles_as_built(&s, d);
        in_one_drain(&s, || {
            fs::remove_dir_all(d.join(&build)).unwrap();
            fs::rename(d.join(&tmp), d.join(&build)).unwrap();
            fs::rename(d.join(&build), d.join(&release)).unwrap();
        });
        watch(&s);
        settles_as_built(&s, d);
    }
}

/// A move whose old path was pending before it is compared, not carried:
/// `rm -rf build; mv tmp build; mv build release`, told in one drain as a
/// watcher that pairs every rename tells it, leaves what the index held at
/// `build` (the removed tree) out of the new `release`, where a file the two
/// trees share holds the needle only in the new one. (The name index itself
/// tells a chain of renames as paths removed and added, so these touches
/// are the test's own; its are held back until the thread has dealt with
/// them.)
#[test]
fn a_move_from_a_path_pending_before_it_is_compared() {
    let t = bigger_tree();
    let d = t.path();
    let s = serve(d, None);
    ready(&s);
    write_folder(&d.join("build"), 30, "old");
    write_folder(&d.join("tmp"), 30, "new");
    fs::write(d.join("tmp/s0/f1.txt"), "new 1 needle\n").unwrap();
    settles_as_built(&s, d);
    let (tx, rx) = std::sync::mpsc::channel();
    let real = {
        let mut feed = s.content.shared.feed.lock().unwrap();
        let real = feed.replace(rx);
        fs::remove_dir_all(d.join("build")).unwrap();
        fs::rename(d.join("tmp"), d.join("build")).unwrap();
        fs::rename(d.join("build"), d.join("release")).unwrap();
        assert!(s.index.sync(Duration::from_secs(10)));
        let touch = |path: &str, from: Option<&str>| ferret_index::Touch {
            path: path.into(),
            moved_from: from.map(Into::into),
            folder: true,
        };
        tx.send(vec![
            touch("build", None),
            touch("build", Some("tmp")),
            touch("release", Some("build")),
        ])
        .unwrap();
        real
    };
    // The touches drained at once (here, or by the index's thread if it
    // came first), then the moves carried or left.
    worker::drain_feed(&s.content.shared);
    until("the moves dealt with", || {
        s.content.shared.pending.lock().unwrap().moves.is_empty()
    });
    sound(&s, d);
    *s.content.shared.feed.lock().unwrap() = real;
    settles_as_built(&s, d);
}

#[test]
fn a_folder_removed() {
    let t = bigger_tree();
    let d = t.path();
    write_folder(&d.join("gone"), 250, "gone");
    let s = serve(d, None);
    ready(&s);
    at_most(
        event(&s, d, || fs::remove_dir_all(d.join("gone")).unwrap()),
        2 * 250 + 50,
    );
    assert_eq!(s.content.status().files, 32 + 300);
}

#[test]
fn a_folder_replaced_by_a_file_and_back() {
    let t = bigger_tree();
    let d = t.path();
    write_folder(&d.join("x"), 30, "x");
    let s = serve(d, None);
    ready(&s);
    event(&s, d, || {
        fs::remove_dir_all(d.join("x")).unwrap();
        fs::write(d.join("x"), "a file with the needle\n").unwrap();
    });
    event(&s, d, || {
        fs::remove_file(d.join("x")).unwrap();
        write_folder(&d.join("x"), 10, "x again");
    });
    // A file whose name a folder moved to takes.
    write_folder(&d.join("y"), 10, "y");
    event(&s, d, || {
        fs::remove_dir_all(d.join("x")).unwrap();
        fs::write(d.join("x"), "a file again\n").unwrap();
    });
    event(&s, d, || {
        fs::remove_file(d.join("x")).unwrap();
        fs::rename(d.join("y"), d.join("x")).unwrap();
    });
}

/// A checkout: a folder of 1,000 files renamed, another written, a third
/// removed, at once.
#[test]
fn many_files_changed_at_once() {
    let t = bigger_tree();
    let d = t.path();
    write_folder(&d.join("one"), 1000, "one");
    write_folder(&d.join("two"), 1000, "two");
    let s = serve(d, None);
    ready(&s);
    at_most(
        event(&s, d, || fs::rename(d.join("one"), d.join("uno")).unwrap()),
        2 * 1000 + 50,
    );
    event(&s, d, || {
        fs::rename(d.join("uno"), d.join("one")).unwrap();
        write_folder(&d.join("three"), 1000, "three");
        fs::remove_dir_all(d.join("two")).unwrap();
    });
}
