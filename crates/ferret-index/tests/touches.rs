//! The touch feed that resource subscriptions are built on: every change on disk
//! reaches it, including rewrites the journal cannot see (same size, same second).

use std::{sync::mpsc::Receiver, time::Duration};

use ferret_index::{Index, IndexConfig, IndexRoot};

/// Wait for a batch that names `path`; every batch seen is returned.
fn wait_for(feed: &Receiver<Vec<String>>, path: &str) -> Vec<Vec<String>> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match feed.recv_timeout(left) {
            Ok(batch) => {
                let hit = batch.iter().any(|p| p == path);
                seen.push(batch);
                if hit {
                    return seen;
                }
            }
            Err(_) => break,
        }
    }
    panic!("`{path}` never reached the feed; saw {seen:?}");
}

#[test]
fn writes_creates_moves_and_deletes_reach_the_feed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir(root.join("docs")).unwrap();
    std::fs::write(root.join("docs/a.txt"), "one").unwrap();
    let mut config = IndexConfig::new(vec![IndexRoot::new("r", &root)]);
    config.snapshot_every = Duration::from_secs(3600);
    let index = Index::open(config).unwrap();
    let feed = index.touches();
    index.start();
    assert!(index.wait_ready(Duration::from_secs(30)));

    // The same size, at once: size and mtime second may not change at all.
    std::fs::write(root.join("docs/a.txt"), "two").unwrap();
    wait_for(&feed, "docs/a.txt");
    std::fs::write(root.join("docs/a.txt"), "six").unwrap();
    wait_for(&feed, "docs/a.txt");

    std::fs::write(root.join("docs/new.md"), "x").unwrap();
    wait_for(&feed, "docs/new.md");
    std::fs::rename(root.join("docs/new.md"), root.join("docs/moved.md")).unwrap();
    let seen = wait_for(&feed, "docs/moved.md");
    assert!(
        seen.iter().flatten().any(|p| p == "docs/new.md"),
        "a move names its old path too: {seen:?}"
    );
    std::fs::remove_file(root.join("docs/moved.md")).unwrap();
    wait_for(&feed, "docs/moved.md");
    index.shutdown();
}

#[test]
fn ferrets_own_changes_reach_the_feed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = IndexConfig::new(vec![IndexRoot::new("r", tmp.path())]);
    config.watch = false;
    let index = Index::open(config).unwrap();
    let feed = index.touches();
    index.record(&[ferret_index::Change {
        action: ferret_index::Action::Modified,
        path: "notes.txt".into(),
        old_path: None,
        kind: ferret_query::Kind::File,
        at_ms: 0,
        by: "ferret",
    }]);
    assert_eq!(
        feed.recv_timeout(Duration::from_secs(1)).unwrap(),
        ["notes.txt"]
    );
    drop(feed);
    // A dropped receiver is forgotten, not an error.
    index.record(&[]);
}

/// A folder renamed while barriers are asked for all along (queries passing
/// the watcher's barrier as the rename happens) is told as one move, its old
/// path with it, every time: a barrier between the kernel's two halves of
/// the rename does not split it into a removal and a creation.
#[test]
fn a_rename_under_way_at_a_barrier_stays_a_move() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir_all(root.join("a/inner")).unwrap();
    std::fs::write(root.join("a/inner/f.txt"), "x").unwrap();
    let mut config = IndexConfig::new(vec![IndexRoot::new("r", &root)]);
    config.snapshot_every = Duration::from_secs(3600);
    let index = Index::open(config).unwrap();
    let feed = index.touches_with_moves();
    index.start();
    assert!(index.wait_ready(Duration::from_secs(30)));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let asking = {
        let (index, stop) = (index.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                index.sync(Duration::from_secs(1));
            }
        })
    };
    let (mut moves, rounds) = (0, 200);
    for i in 0..rounds {
        let (from, to) = if i % 2 == 0 { ("a", "b") } else { ("b", "a") };
        std::fs::rename(root.join(from), root.join(to)).unwrap();
        assert!(index.sync(Duration::from_secs(10)));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let batch = feed
                .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
                .expect("the rename reached the feed");
            if let Some(t) = batch.iter().find(|t| t.path == to) {
                moves += usize::from(t.moved_from.as_deref() == Some(from) && t.folder);
                break;
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    asking.join().unwrap();
    assert_eq!(moves, rounds, "renames told as moves");
    index.shutdown();
}
