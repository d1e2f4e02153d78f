//! The watcher's barrier: once `Index::sync` returns true, every change made
//! before it is in the index and on the touch feed, with no waiting beyond it.

use std::time::Duration;

use ferret_index::{Index, IndexConfig, IndexRoot};

fn watching(index: &Index) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !index.status().watcher.starts_with("watching") {
        assert!(std::time::Instant::now() < deadline, "{:?}", index.status());
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn has(index: &Index, rel: &str) -> bool {
    index.with_store(|s| s.lookup(s.roots()[0], rel.as_bytes()).is_some())
}

#[test]
fn after_a_sync_every_earlier_change_is_applied_and_published() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir(root.join("d")).unwrap();
    let index = Index::open(IndexConfig::new(vec![IndexRoot::new("r", &root)])).unwrap();
    let feed = index.touches();
    index.start();
    assert!(index.wait_ready(Duration::from_secs(30)));
    watching(&index);
    for i in 0..60 {
        let name = format!("d/f{i}.txt");
        std::fs::write(root.join(&name), format!("version {i}")).unwrap();
        // A rewrite of an older file keeping its size: only the feed tells.
        let older = format!("d/f{}.txt", i / 2);
        std::fs::write(root.join(&older), format!("VERSION {}", i / 2)).unwrap();
        assert!(index.sync(Duration::from_secs(10)), "sync {i} timed out");
        assert!(
            has(&index, &name),
            "{name} is not in the index after the sync"
        );
        let heard: Vec<String> = feed.try_iter().flatten().collect();
        assert!(
            heard.contains(&name) && heard.contains(&older),
            "round {i}: the feed had {heard:?}"
        );
        if i % 10 == 9 {
            std::fs::remove_file(root.join(&name)).unwrap();
            assert!(index.sync(Duration::from_secs(10)));
            assert!(!has(&index, &name), "{name} is still in the index");
            let _ = feed.try_iter().count();
        }
    }
    // Several callers at once each get their own answer.
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..20 {
                    assert!(index.sync(Duration::from_secs(10)));
                }
            });
        }
    });
    index.shutdown();
}

/// A move out of the roots is told as one half of a rename, whose other
/// half never comes. The watcher used to wait for it past the barrier
/// (up to 50 ms), so a search right after a sync still found the file.
#[test]
fn after_a_sync_a_file_moved_out_of_the_roots_is_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (root, outside) = (base.join("root"), base.join("outside"));
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::create_dir(&outside).unwrap();
    for i in 0..20 {
        std::fs::write(root.join(format!("d/f{i}.txt")), "x").unwrap();
    }
    let index = Index::open(IndexConfig::new(vec![IndexRoot::new("r", &root)])).unwrap();
    index.start();
    assert!(index.wait_ready(Duration::from_secs(30)));
    watching(&index);
    for i in 0..20 {
        let name = format!("d/f{i}.txt");
        std::fs::rename(root.join(&name), outside.join(format!("f{i}.txt"))).unwrap();
        assert!(index.sync(Duration::from_secs(10)), "sync {i} timed out");
        assert!(!has(&index, &name), "{name} moved out, still in the index");
    }
    index.shutdown();
}

#[test]
fn without_a_watcher_there_is_no_barrier() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = IndexConfig::new(vec![IndexRoot::new("r", tmp.path())]);
    config.watch = false;
    let index = Index::open(config).unwrap();
    index.start();
    assert!(index.wait_ready(Duration::from_secs(30)));
    assert!(!index.sync(Duration::from_millis(50)));
    index.shutdown();
}
