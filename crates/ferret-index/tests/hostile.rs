//! A hostile tree: while the index walks, watches and rescans, another thread
//! swaps folders with symlinks to a folder outside the root, ignore files with
//! FIFOs, and files with folders, thousands of times (`renameat2` with
//! `RENAME_EXCHANGE`, so each swap is atomic). No name from outside the root
//! may ever enter the index, and no walk may hang on a FIFO.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use ferret_index::{Index, IndexConfig, IndexRoot, SearchRequest, SortKey};
use ferret_query::{Clock, Options, Query};
use rustix::fs::{CWD, FileType, Mode, RenameFlags, mknodat, renameat_with};

fn count(index: &Index, query: &str) -> u64 {
    let q = Query::compile(query, &Options::default(), &Clock::system()).unwrap();
    index
        .search(&SearchRequest {
            query: &q,
            under: None,
            sort: SortKey::Name,
            descending: false,
            offset: 0,
            limit: 5,
            group_by: None,
        })
        .total
}

fn exchange(a: &Path, b: &Path) -> bool {
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).is_ok()
}

#[test]
fn swaps_of_folders_links_and_fifos_never_let_outside_names_in() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(outside.join("outsidesub")).unwrap();
    for i in 0..50 {
        std::fs::write(outside.join(format!("outsidesecret{i}.txt")), "x").unwrap();
    }
    std::fs::write(outside.join("outsidesub/outsidedeep.txt"), "x").unwrap();
    std::fs::write(outside.join(".gitignore"), "*.txt\n").unwrap();
    for i in 0..6 {
        let d = root.join(format!("d{i}"));
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join(format!("inner{i}.txt")), "x").unwrap();
        std::fs::write(d.join("sub/deeper.txt"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, root.join(format!("l{i}"))).unwrap();
    }
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    mknodat(
        CWD,
        root.join("gifo"),
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    std::fs::write(root.join("fileordir"), "x").unwrap();
    std::fs::create_dir(root.join("dirorfile")).unwrap();
    std::fs::write(root.join("dirorfile/x.txt"), "x").unwrap();

    // One index watches (ignore-file swaps make it rescan the root); the other
    // walks the tree from scratch again and again.
    let mut watched = IndexConfig::new(vec![IndexRoot::new("r", &root)]);
    watched.watch = true;
    let watching = Index::open(watched).unwrap();
    watching.start();
    assert!(watching.wait_ready(Duration::from_secs(30)));
    let mut walked = IndexConfig::new(vec![IndexRoot::new("r", &root)]);
    walked.watch = false;
    let walking = Index::open(walked).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let racer = {
        let (stop, swaps, root) = (stop.clone(), swaps.clone(), root.clone());
        std::thread::spawn(move || {
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let k = i % 6;
                let mut done = 0;
                done += u64::from(exchange(
                    &root.join(format!("d{k}")),
                    &root.join(format!("l{k}")),
                ));
                done += u64::from(exchange(&root.join(".gitignore"), &root.join("gifo")));
                done += u64::from(exchange(&root.join("fileordir"), &root.join("dirorfile")));
                swaps.fetch_add(done, Ordering::Relaxed);
                i += 1;
            }
        })
    };
    let started = Instant::now();
    let (mut builds, mut checks) = (0, 0);
    while started.elapsed() < Duration::from_secs(4) || swaps.load(Ordering::Relaxed) < 3000 {
        let build = Instant::now();
        walking.build_now(None);
        assert!(
            build.elapsed() < Duration::from_secs(20),
            "a walk hung (a FIFO waited on?)"
        );
        builds += 1;
        for index in [&walking, &watching] {
            for probe in ["outside", "outsidesecret", "outsidedeep"] {
                assert_eq!(count(index, probe), 0, "{probe} entered the index");
            }
            checks += 1;
        }
        if started.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    racer.join().unwrap();
    let swapped = swaps.load(Ordering::Relaxed);
    // Once the watcher has caught up with the last swaps, both indexes hold the
    // inside names (the tree was really indexed) and still nothing from outside.
    walking.build_now(None);
    let want = all_paths(&walking);
    // Once the watcher has applied every event queued before now (its
    // barrier passed; `false` while it drops a backlog and reads the root
    // again), its picture is the disk's: not a moment of it during the
    // replay of old events, but for good.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !watching.sync(Duration::from_secs(1)) {
        assert!(Instant::now() < deadline, "the watcher never caught up");
    }
    let got = all_paths(&watching);
    let extra: Vec<_> = got.iter().filter(|p| !want.contains(p)).collect();
    let missing: Vec<_> = want.iter().filter(|p| !got.contains(p)).collect();
    // Nothing the disk does not hold (above all nothing from outside), and
    // nothing it holds left out.
    assert!(
        extra.is_empty(),
        "the watched index holds what a fresh walk does not: {extra:?}"
    );
    assert!(
        missing.is_empty(),
        "the watched index misses what a fresh walk holds: {missing:?}"
    );
    for (what, index) in [("walking", &walking), ("watching", &watching)] {
        assert_eq!(count(index, "outside"), 0, "{what}");
        assert_eq!(count(index, "deeper.txt"), 6, "{what}");
    }
    assert!(swapped >= 3000, "only {swapped} swaps");
    eprintln!("{swapped} swaps, {builds} walks, {checks} checks, no outside name");
    watching.shutdown();
}

fn all_paths(index: &Index) -> Vec<(String, &'static str)> {
    let q = Query::compile("", &Options::default(), &Clock::system()).unwrap();
    index
        .search(&SearchRequest {
            query: &q,
            under: None,
            sort: SortKey::Path,
            descending: false,
            offset: 0,
            limit: usize::MAX / 4,
            group_by: None,
        })
        .hits
        .into_iter()
        .map(|h| (h.path, h.kind.as_str()))
        .collect()
}

#[test]
fn odd_names_loops_deep_chains_and_special_files_are_indexed() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    // Names that are not UTF-8, hold a newline, or are nothing but spaces.
    std::fs::write(root.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt")), "x").unwrap();
    std::fs::write(root.join("two\nlines.txt"), "x").unwrap();
    std::fs::write(root.join("   "), "x").unwrap();
    // A symlink loop and a link to itself.
    std::os::unix::fs::symlink("loop-b", root.join("loop-a")).unwrap();
    std::os::unix::fs::symlink("loop-a", root.join("loop-b")).unwrap();
    std::os::unix::fs::symlink(".", root.join("self")).unwrap();
    // A FIFO, a socket, and a FIFO named .gitignore in a subfolder.
    mknodat(
        CWD,
        root.join("pipe"),
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap();
    std::fs::create_dir(root.join("ig")).unwrap();
    mknodat(
        CWD,
        root.join("ig/.gitignore"),
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    std::fs::write(root.join("ig/kept.log"), "x").unwrap();
    // 600 levels deep: 6,000 bytes of path, more than PATH_MAX.
    let mut deep = root.clone();
    for i in 0..600 {
        deep.push(format!("lvl{i:05}"));
    }
    std::fs::create_dir_all(&deep).unwrap_or_else(|_| {
        // create_dir_all goes by path; build the chain one folder at a time.
        let mut at = rustix::fs::open(&root, rustix::fs::OFlags::DIRECTORY, Mode::empty()).unwrap();
        for i in 0..600 {
            let name = format!("lvl{i:05}");
            let _ = rustix::fs::mkdirat(&at, name.as_str(), Mode::from_raw_mode(0o755));
            at = rustix::fs::openat(
                &at,
                name.as_str(),
                rustix::fs::OFlags::DIRECTORY,
                Mode::empty(),
            )
            .unwrap();
        }
        rustix::fs::openat(
            &at,
            "bottom.txt",
            rustix::fs::OFlags::CREATE | rustix::fs::OFlags::WRONLY,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
    });
    if deep.join("bottom.txt").as_os_str().len() < 4000 {
        std::fs::write(deep.join("bottom.txt"), "x").unwrap();
    }
    // A folder of 50,000 entries.
    std::fs::create_dir(root.join("big")).unwrap();
    for i in 0..50_000 {
        std::fs::write(root.join(format!("big/f{i:06}")), "").unwrap();
    }

    let mut config = IndexConfig::new(vec![IndexRoot::new("r", &root)]);
    config.watch = false;
    let index = Index::open(config).unwrap();
    let started = Instant::now();
    index.build_now(None);
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(count(&index, "caf"), 1);
    assert_eq!(count(&index, "lines.txt"), 1);
    assert_eq!(count(&index, "loop-"), 2);
    assert_eq!(count(&index, "type:symlink"), 3);
    assert_eq!(count(&index, "bottom.txt"), 1, "600 levels down");
    assert_eq!(count(&index, "lvl"), 600);
    assert_eq!(
        count(&index, "kept.log"),
        1,
        "a FIFO .gitignore is not read"
    );
    let kinds: Vec<(String, &str)> = all_paths(&index)
        .into_iter()
        .filter(|(p, _)| p == "pipe" || p == "sock")
        .collect();
    assert_eq!(
        kinds,
        [("pipe".to_string(), "other"), ("sock".to_string(), "other")]
    );
    // The big folder: every entry, and a lookup in it is a binary search.
    assert_eq!(count(&index, "parent:big"), 50_000);
    assert_eq!(count(&index, "f049999"), 1);
    assert!(index.folder("big").is_some());
    // The ten names that start with it first, then the others it fits.
    let done = index.complete_path("big/f04999", false, 100);
    assert!(
        done.values[..10]
            .iter()
            .all(|v| v.starts_with("big/f04999"))
    );
    assert!(
        !done.values[10..]
            .iter()
            .any(|v| v.starts_with("big/f04999"))
    );
}

#[test]
fn folders_that_vanish_mid_walk_leave_a_true_index() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    for i in 0..20 {
        std::fs::create_dir_all(root.join(format!("keep{i}/sub"))).unwrap();
        std::fs::write(root.join(format!("keep{i}/sub/k.txt")), "x").unwrap();
    }
    let mut config = IndexConfig::new(vec![IndexRoot::new("r", &root)]);
    config.watch = false;
    let index = Index::open(config).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (stop, root) = (stop.clone(), root.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let d = root.join(format!("gone{}", i % 4));
                let _ = std::fs::create_dir_all(d.join("a/b/c"));
                let _ = std::fs::write(d.join("a/b/c/x.txt"), "x");
                let _ = std::fs::remove_dir_all(&d);
                i += 1;
            }
        })
    };
    for _ in 0..60 {
        index.build_now(None);
        // The folders that stayed are always whole.
        assert_eq!(count(&index, "k.txt"), 20);
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().unwrap();
    index.build_now(None);
    assert_eq!(count(&index, "gone"), 0);
    assert_eq!(count(&index, "k.txt"), 20);
}

#[test]
fn past_the_watch_limit_unwatched_folders_are_rescanned() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    for i in 0..10 {
        std::fs::create_dir_all(root.join(format!("d{i}"))).unwrap();
    }
    let mut config = IndexConfig::new(vec![IndexRoot::new("r", &root)]);
    config.max_watches = Some(3);
    config.limit_rescan_every = Duration::from_millis(500);
    let index = Index::open(config).unwrap();
    index.start();
    assert!(index.wait_ready(Duration::from_secs(30)));
    let status = index.status();
    assert!(status.watch_limit_reached, "{status:?}");
    assert!(status.watcher.contains("degraded"), "{}", status.watcher);
    // A change in every folder, watched or not, is seen.
    for i in 0..10 {
        std::fs::write(root.join(format!("d{i}/late.txt")), "x").unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while count(&index, "late.txt") < 10 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(count(&index, "late.txt"), 10);
    index.shutdown();
}
