//! What a folder event costs the running content index: a served name index
//! (watching every folder) and a content index are built over DIR, then
//! folders are created, renamed and removed in it, and each change is timed
//! from the moment the file-system call returned until the content index
//! holds it (the name index's barrier passed, no path pending; each step
//! after a pause of 3 s, the name index's rebuild of its orders done), with the
//! files the index compared with the name index and read for it
//! (`Status::files_compared`, `files_reread`).
//!
//! ```text
//! cargo run --release -p ferret-content --example folder_events -- DIR [FILES]
//! ```
//!
//! DIR must be writable: the program makes `ferret-folder-events/` in it
//! (FILES files, 10,000 unless told, small text files) and removes what it
//! made before it ends. Steps, each timed:
//! 1. a `mkdir` holding 5 files;
//! 2. a folder of FILES files written (the setup of 3 and 4, timed too);
//! 3. that folder renamed (as a `git checkout` moves a folder): every file
//!    below it is held under its new path;
//! 4. that folder removed (`rm -rf`).

use std::{
    fs,
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use ferret_content::{
    Config, ContentIndex, Status,
    pattern::{PatternSpec, query},
};
use ferret_fs::{Policy, Roots};
use ferret_index::{Index, IndexConfig, IndexRoot};

const TOP: &str = "ferret-folder-events";

/// The pause before each step (see [`step`]).
const PAUSE: Duration = Duration::from_secs(3);

fn wait(what: &str, limit: Duration, f: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The content index holds every change made before the call: the name
/// index's barrier passed (so its feed named them), then no path pending.
fn settled(index: &Index, content: &ContentIndex) {
    wait("the name index's barrier", Duration::from_secs(600), || {
        index.sync(Duration::from_secs(5))
    });
    wait("the content index", Duration::from_secs(600), || {
        content.status().pending_files == 0
    });
}

/// Run `change`, then time until the content index holds it.
fn step(what: &str, index: &Index, content: &ContentIndex, change: impl FnOnce()) -> Status {
    settled(index, content);
    // The name index rebuilds its orders after a change to its folders (a
    // second or two at a million entries), and a change made meanwhile
    // waits for that: each step starts once the last one's is done, so it
    // times its own work.
    std::thread::sleep(PAUSE);
    let before = content.status();
    let started = Instant::now();
    change();
    let change_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    settled(index, content);
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let after = content.status();
    println!(
        "{what}: held {ms:.0} ms after the change ({change_ms:.0} ms to make it); \
         {} whole and {} folder comparisons, {} files compared, {} read; \
         the index holds {} files",
        after.whole_comparisons - before.whole_comparisons,
        after.folder_comparisons - before.folder_comparisons,
        after.files_compared - before.files_compared,
        after.files_reread - before.files_reread,
        after.files,
    );
    after
}

/// How many of `paths` (shown) the content index answers for as the name
/// index holds them now.
fn answered(index: &Index, content: &ContentIndex, paths: &[String]) -> u64 {
    let facts: Vec<(&str, i64, u64)> = paths
        .iter()
        .filter_map(|p| index.file(p).map(|(size, mtime)| (p.as_str(), mtime, size)))
        .collect();
    let q = query(&PatternSpec {
        text: "zyzzyva",
        literal: true,
        case_insensitive: false,
        multiline: false,
    });
    content.narrow(&q, &facts, false).map_or(0, |n| n.answered)
}

fn write_files(dir: &Path, n: usize) {
    fs::create_dir_all(dir).expect("a folder");
    for i in 0..n {
        let sub = dir.join(format!("d{}", i / 500));
        if i % 500 == 0 {
            fs::create_dir_all(&sub).expect("a folder");
        }
        fs::write(
            sub.join(format!("f{i}.txt")),
            format!("fn file_{i}() {{ \"text of file {i}\" }}\n"),
        )
        .expect("a file");
    }
}

fn shown(n: usize, folder: &str) -> Vec<String> {
    (0..n)
        .map(|i| format!("{TOP}/{folder}/d{}/f{i}.txt", i / 500))
        .collect()
}

fn main() {
    ferret_index::map_large_allocations();
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("a folder"));
    let files: usize = args.next().map_or(10_000, |n| n.parse().expect("a count"));
    let top = dir.join(TOP);
    assert!(!top.exists(), "{} exists: remove it first", top.display());

    let roots = Roots::open(
        &[dir.to_str().expect("UTF-8").parse().expect("a root")],
        Policy::default(),
    )
    .expect("the root opens");
    let root = &roots.roots()[0];
    let config = IndexConfig::new(vec![IndexRoot {
        name: root.name.clone(),
        path: root.path.clone(),
        walk_path: root.handle_path(),
    }]);
    let index = Index::open(config).expect("the name index");
    index.start();
    let started = Instant::now();
    while !index.wait_ready(Duration::from_secs(1)) {}
    wait("the watcher", Duration::from_secs(600), || {
        index.hears_every_change()
    });
    println!(
        "name index of {}: {} entries, ready and watching in {:.1} s",
        dir.display(),
        index.status().entries,
        started.elapsed().as_secs_f64()
    );
    let mut c = Config::new(None);
    c.budget.threads = 2;
    let content = ContentIndex::new(c, Arc::new(roots), index.clone());
    let started = Instant::now();
    content.start();
    wait("the content index", Duration::from_secs(3600), || {
        content.is_ready()
    });
    settled(&index, &content);
    println!(
        "content index: {} files, built in {:.1} s",
        content.status().files,
        started.elapsed().as_secs_f64()
    );

    fs::create_dir(&top).expect("the test folder");
    settled(&index, &content);

    let st = step("mkdir with 5 files", &index, &content, || {
        write_files(&top.join("small"), 5)
    });
    assert_eq!(answered(&index, &content, &shown(5, "small")), 5);
    let held = st.files;

    let st = step(
        &format!("a folder of {files} files written"),
        &index,
        &content,
        || write_files(&top.join("big"), files),
    );
    assert_eq!(st.files, held + files as u64);
    assert_eq!(
        answered(&index, &content, &shown(files, "big")),
        files as u64
    );

    let st = step(
        &format!("a folder of {files} files renamed"),
        &index,
        &content,
        || fs::rename(top.join("big"), top.join("moved")).expect("the rename"),
    );
    assert_eq!(st.files, held + files as u64);
    assert_eq!(
        answered(&index, &content, &shown(files, "moved")),
        files as u64
    );

    let st = step(
        &format!("a folder of {files} files removed"),
        &index,
        &content,
        || fs::remove_dir_all(top.join("moved")).expect("the removal"),
    );
    assert_eq!(st.files, held);

    fs::remove_dir_all(&top).expect("the test folder removed");
    settled(&index, &content);
    content.shutdown();
    index.shutdown();
}
