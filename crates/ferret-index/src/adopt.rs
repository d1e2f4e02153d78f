//! A new index for a changed set of roots, made from the running one: the
//! roots both serve are carried over as they stand, and only the roots new
//! to the set are walked (`ferret.toml` changed while ferret runs).
//!
//! Why this way. One index holds every root: its snapshot, journal and
//! searches are of the whole set, so a new set of roots is a new index.
//! Opened as at start it would walk every root again (or, with a snapshot
//! of that set, read every folder again to compare it with the disk). So
//! instead the running index's thread stops between two batches and hands
//! over its watcher with the events it has not read yet
//! ([`hand_over`]); the new index copies the carried roots' entries from
//! the stopped one, which no longer changes ([`carry`]), points every
//! watch at the copy of its folder and drops those of the roots that left
//! ([`finish`]), walks the new roots, and then applies the events that
//! waited, so that no change made during the switch is lost. The carried
//! roots are not read from the disk, nor watched again: their folders keep
//! the very inotify watches they had. The copy is made with the store's
//! own insertion calls (as a walk inserts), so the entries are the same
//! and only the orders are rebuilt, in memory.
//!
//! What is not carried: the journal (the new set's is its own file, as at
//! start), and the use scores when paths are shown differently (one root
//! shows `src/a.rs`, several `name/src/a.rs`).

use std::{
    collections::HashMap,
    sync::{Mutex, mpsc},
    time::{Duration, Instant},
};

use crate::{
    Carried, Index, IndexConfig,
    inotify_watch::{RawEvent, Watcher},
    store::{EntryId, Kind, NewEntry, Store},
};

/// How long a new index waits for the running one to hand over (it does so
/// between two batches; a long rescan may hold it). Past this the new index
/// walks every root, as at start.
const HANDOVER_WAIT: Duration = Duration::from_secs(30);

/// What an index keeps for adoption: as the new index, what it takes over;
/// as the running one, whether it is asked to hand over.
#[derive(Default)]
pub(crate) struct Slots {
    adoption: Mutex<Option<Adoption>>,
    handover: Mutex<Handover>,
    settle: Mutex<Vec<usize>>,
}

impl Slots {
    fn adoption(&self) -> std::sync::MutexGuard<'_, Option<Adoption>> {
        self.adoption.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn handover(&self) -> std::sync::MutexGuard<'_, Handover> {
        self.handover.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct Adoption {
    donor: Index,
    /// For each root of the new index, the donor's root it carries over.
    carried: Vec<Option<usize>>,
    /// The use scores go over too (paths are shown alike in both sets).
    keep_uses: bool,
    /// Once handed over: the donor's watches, its barrier's, and the roots
    /// whose picture it had found stale (by the donor's numbering).
    taken: Option<(Vec<i32>, Option<i32>, Vec<usize>)>,
    /// Donor folder → the new index's copy of it.
    pairs: HashMap<EntryId, EntryId>,
    entries: u64,
    started: Option<Instant>,
}

#[derive(Default)]
struct Handover {
    asked: Option<mpsc::SyncSender<Taken>>,
    /// The thread has ended (stopped, or already handed over).
    gone: bool,
}

/// What the running index's thread hands over.
pub(crate) struct Taken {
    pub watcher: Option<Watcher>,
    pub rx: mpsc::Receiver<RawEvent>,
    /// Roots (donor's numbering) to read again once events pause.
    pub settle: Vec<usize>,
    /// Its barrier's watch, dropped by the new index.
    pub barrier: Option<i32>,
}

impl Index {
    /// An index for `config` made from `running`, which serves another set
    /// of roots (or the same roots with other settings): the roots of both
    /// (same name, path and rules) are carried over from it when this one
    /// starts, the others are walked. `running` stops following changes
    /// once it has handed over (its searches answer what it held until
    /// then); shut it down once this one is ready. A saved snapshot of
    /// `config` is not used: the running index is fresher and needs no
    /// comparison with the disk. Nothing runs until [`Index::start`].
    pub fn open_adopting(config: IndexConfig, running: &Index) -> Result<Index, String> {
        let (mine, theirs) = (config.rules, running.shared.config.rules);
        let same_rules = mine.hidden == theirs.hidden && mine.no_ignore == theirs.no_ignore;
        let donor_ready = running.status().ready;
        let donor_roots = &running.shared.config.roots;
        let carried: Vec<Option<usize>> = config
            .roots
            .iter()
            .map(|r| {
                donor_roots
                    .iter()
                    .position(|d| d.name == r.name && d.path == r.path)
                    .filter(|_| same_rules && donor_ready)
            })
            .collect();
        let single = |roots: &[crate::IndexRoot]| roots.len() == 1;
        let keep_uses = (single(&config.roots) == single(donor_roots))
            && (!single(&config.roots) || carried[0].is_some());
        let index = Index::open(config)?;
        if carried.iter().all(Option::is_none) {
            return Ok(index);
        }
        // A snapshot of the new set, if one was saved, would be compared
        // with the disk: what the running index holds is used instead.
        if index.status().loaded_from_snapshot {
            let mut store = Store::new();
            for (r, fd) in index.shared.config.roots.iter().zip(&index.shared.root_fds) {
                store.add_root(r.name.as_bytes(), crate::root_meta(fd.as_ref()));
            }
            *index.write_store() = store;
            index.set_status(|s| {
                s.loaded_from_snapshot = false;
                s.ready = false;
                s.reconciling = false;
                s.snapshot_load_ms = None;
            });
        }
        *index.shared.adopt.adoption() = Some(Adoption {
            donor: running.clone(),
            carried,
            keep_uses,
            taken: None,
            pairs: HashMap::new(),
            entries: 0,
            started: None,
        });
        Ok(index)
    }

    /// Whether `other` is this very index (a clone of it), not another.
    pub fn same_as(&self, other: &Index) -> bool {
        std::sync::Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// What this index carried over from the one it replaced (`None`: it
    /// was not made from another).
    pub fn carried(&self) -> Option<Carried> {
        self.shared.status_carried()
    }
}

impl crate::Shared {
    fn status_carried(&self) -> Option<Carried> {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .carried
            .clone()
    }
}

/// In the new index's thread, before its build: take over the running
/// index's watcher and unread events. `None` when this index adopts
/// nothing, or the running one did not hand over (then every root is
/// walked, as at start).
pub(crate) fn take_over(index: &Index) -> Option<(Option<Watcher>, mpsc::Receiver<RawEvent>)> {
    let donor = {
        let mut adoption = index.shared.adopt.adoption();
        let a = adoption.as_mut()?;
        a.started = Some(Instant::now());
        a.donor.clone()
    };
    let (tx, rx) = mpsc::sync_channel(1);
    let asked = {
        let mut h = donor.shared.adopt.handover();
        let free = !h.gone && h.asked.is_none();
        if free {
            h.asked = Some(tx);
        }
        free
    };
    // Its thread looks between two batches; waiting for events, it wakes
    // at the latest every 200 ms, at once when its barrier is passed.
    if asked {
        donor.shared.sync.wait(Duration::from_millis(100));
    }
    // (Its thread ended, or another index took its watcher: nothing comes.)
    let taken = asked.then(|| rx.recv_timeout(HANDOVER_WAIT).ok()).flatten();
    let mut adoption = index.shared.adopt.adoption();
    let Some(taken) = taken else {
        tracing::warn!(
            "the running index did not hand over its watcher; every root is walked again"
        );
        *adoption = None;
        return None;
    };
    let a = adoption.as_mut().expect("set above");
    let wds = taken.watcher.as_ref().map(Watcher::wds).unwrap_or_default();
    a.taken = Some((wds, taken.barrier, taken.settle));
    let donor_status = donor.status();
    drop(adoption);
    if donor_status.watch_limit_reached {
        // Some of the carried folders have no watch: rescanned on the timer.
        index.set_status(|s| s.watch_limit_reached = true);
    }
    Some((taken.watcher, taken.rx))
}

/// In the new index's build, for root number `root` (its entry `top` in
/// `store`): copy the donor's entries of that root when it is carried over
/// and its folder is still the one the donor holds. Whether it did (else
/// the root is walked).
pub(crate) fn carry(index: &Index, root: usize, store: &mut Store, top: EntryId) -> bool {
    let mut adoption = index.shared.adopt.adoption();
    let Some(a) = adoption.as_mut() else {
        return false;
    };
    let Some(from_root) = a.carried.get(root).copied().flatten() else {
        return false;
    };
    if a.taken.is_none() {
        return false;
    }
    let donor = a.donor.clone();
    let d = donor.read_store();
    let Some(&from) = d.roots().get(from_root) else {
        a.carried[root] = None;
        return false;
    };
    let here = index
        .root_fd(root)
        .and_then(|fd| crate::dirs::ident(fd).ok());
    let there = d.dir(from).map(|x| (x.dev, x.ino));
    if here.is_none() || here != there {
        // Another folder at that path now: read it as a new root.
        a.carried[root] = None;
        return false;
    }
    a.entries += copy_below(&d, from, store, top, &mut a.pairs);
    true
}

/// Copy what lies below `from` in `d` under `top` (which has no children
/// yet), with the folders' identities and watches; returns how many entries
/// were copied. `pairs` learns which copy each folder is.
fn copy_below(
    d: &Store,
    from: EntryId,
    store: &mut Store,
    top: EntryId,
    pairs: &mut HashMap<EntryId, EntryId>,
) -> u64 {
    let copy_dir = |store: &mut Store, from: EntryId, to: EntryId| {
        if let Some(x) = d.dir(from) {
            store.set_ident(to, (x.dev, x.ino));
            let wd = x.wd;
            if let Some(y) = store.dir_mut(to) {
                y.wd = wd;
            }
        }
    };
    copy_dir(store, from, top);
    pairs.insert(from, top);
    let mut copied = 0u64;
    let mut ids = Vec::new();
    let mut stack = vec![(from, top)];
    while let Some((from, to)) = stack.pop() {
        let kids = d.children(from);
        store.insert_walked(
            to,
            kids.iter().map(|&c| {
                (
                    d.name(c),
                    NewEntry {
                        kind: d.kind(c),
                        meta: d.meta(c),
                        ident: d.dir(c).map_or((0, 0), |x| (x.dev, x.ino)),
                    },
                )
            }),
            &mut ids,
        );
        copied += kids.len() as u64;
        for (&c, &n) in kids.iter().zip(ids.iter()) {
            if d.kind(c) == Kind::Dir {
                copy_dir(store, c, n);
                pairs.insert(c, n);
                stack.push((c, n));
            }
        }
    }
    copied
}

/// After the new index's build has copied and walked its roots: point the
/// donor's watches at the copies of their folders (under the new roots'
/// numbers), stop those of folders not carried over (roots that left, or
/// were walked again), drop the donor's barrier, and take over its network
/// folders and use scores. The roots the running index had found stale are
/// kept for [`settle`].
pub(crate) fn finish(index: &Index, watcher: Option<&Watcher>) {
    let Some(a) = index.shared.adopt.adoption().take() else {
        return;
    };
    let Some((wds, barrier, settle)) = a.taken else {
        return;
    };
    let root_of: HashMap<usize, usize> = a
        .carried
        .iter()
        .enumerate()
        .filter_map(|(new, from)| from.map(|f| (f, new)))
        .collect();
    if let Some(w) = watcher {
        if let Some(b) = barrier {
            w.unwatch_barrier(b);
        }
        w.rebase(&wds, |root, folder| {
            Some((*root_of.get(&root)?, *a.pairs.get(&folder)?))
        });
    }
    let donor = &a.donor;
    {
        let theirs = donor.unheard().clone();
        let mine: Vec<_> = theirs
            .into_iter()
            .filter_map(|(root, rel, fs)| Some((*root_of.get(&root)?, rel, fs)))
            .collect();
        if !mine.is_empty() {
            let shown = index.shown_network(&mine);
            index.unheard().extend(mine);
            index.set_status(|s| s.network_folders.extend(shown));
        }
    }
    if a.keep_uses {
        let uses = donor
            .shared
            .uses
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        *index.shared.uses.write().unwrap_or_else(|p| p.into_inner()) = uses;
    }
    let names = |carried: bool| -> Vec<String> {
        index
            .shared
            .config
            .roots
            .iter()
            .zip(&a.carried)
            .filter(|(_, c)| c.is_some() == carried)
            .map(|(r, _)| r.name.clone())
            .collect()
    };
    let carried = Carried {
        roots: names(true),
        walked: names(false),
        entries: a.entries,
        ms: a.started.map_or(0, |t| t.elapsed().as_millis() as u64),
    };
    tracing::info!(
        carried = carried.roots.len(),
        walked = carried.walked.len(),
        entries = carried.entries,
        "index made from the running one: carried roots kept their entries and watches"
    );
    index.set_status(|s| s.carried = Some(carried));
    *index
        .shared
        .adopt
        .settle
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = settle
        .into_iter()
        .filter_map(|r| root_of.get(&r).copied())
        .collect();
}

/// In the running index's thread, between two batches: whether a new
/// index asks for its watcher.
pub(crate) fn asked(index: &Index) -> bool {
    index.shared.adopt.handover().asked.is_some()
}

/// In the running index's thread, as it ends: the index that asked for
/// its watcher, if one did (none can ask from now on).
pub(crate) fn ending(index: &Index) -> Option<mpsc::SyncSender<Taken>> {
    let mut h = index.shared.adopt.handover();
    h.gone = true;
    h.asked.take()
}

/// Hand the watcher and the events not read yet to the index that asked.
/// From then on this index no longer follows changes: it says so in its
/// status, and calls waiting at its barrier give up (they look at the disk
/// instead).
pub(crate) fn hand_over(index: &Index, reply: mpsc::SyncSender<Taken>, taken: Taken) {
    index.shared.sync.install(None);
    index.set_status(|s| s.watcher = "handed over to the index of the new settings".into());
    let _ = reply.send(taken);
}

/// The roots (new numbering) the running index had found stale: read again
/// once events pause. Once.
pub(crate) fn settle(index: &Index) -> Vec<usize> {
    std::mem::take(
        &mut *index
            .shared
            .adopt
            .settle
            .lock()
            .unwrap_or_else(|p| p.into_inner()),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::testing::paths_of as names;
    use crate::{Index, IndexConfig, IndexRoot};

    fn config(roots: &[(&str, &std::path::Path)]) -> IndexConfig {
        IndexConfig::new(
            roots
                .iter()
                .map(|(n, p)| IndexRoot::new(*n, p.to_path_buf()))
                .collect(),
        )
    }

    fn wait_for(what: &str, f: impl Fn() -> bool) {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(std::time::Instant::now() < until, "timed out: {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A root added: the roots both sets serve are copied, not walked (the
    /// walk counts only the new root's entries), keep their watches
    /// (changes made during and after the switch are seen), and the root
    /// that left has none.
    #[test]
    fn carried_roots_are_copied_with_their_watches_and_only_new_roots_are_walked() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("c"),
        );
        for (dir, n) in [(&a, 30), (&b, 20), (&c, 5)] {
            std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
            for i in 0..n {
                std::fs::write(dir.join(format!("sub/f{i}.txt")), "x").unwrap();
            }
            std::fs::write(dir.join("sub/deeper/inner.md"), "x").unwrap();
        }
        let old = Index::open(config(&[("a", &a), ("b", &b)])).unwrap();
        old.start();
        assert!(old.wait_ready(Duration::from_secs(10)));
        let walked_before = old.progress();
        assert_eq!(walked_before, 2 * 3 + 30 + 20);
        let below = |index: &Index, root: &str| -> Vec<String> {
            let mut all = names(index, "");
            all.retain(|p| p.starts_with(&format!("{root}/")));
            all
        };
        let before = below(&old, "a");
        let new = Index::open_adopting(config(&[("a", &a), ("c", &c)]), &old).unwrap();
        new.start();
        // A change while the two switch over: seen by the new index.
        std::fs::write(a.join("sub/during.txt"), "x").unwrap();
        assert!(new.wait_ready(Duration::from_secs(10)));
        let carried = new.carried().expect("made from the running index");
        assert_eq!(carried.roots, ["a"]);
        assert_eq!(carried.walked, ["c"]);
        // (during.txt among them if the old index saw it before it handed over)
        assert!(
            (3 + 30..=3 + 30 + 1).contains(&carried.entries),
            "{carried:?}"
        );
        assert_eq!(new.progress(), 3 + 5, "only the new root was walked");
        assert!(!old.hears_every_change(), "the old index no longer follows");
        wait_for("the change made during the switch", || {
            names(&new, "during.txt") == ["a/sub/during.txt"]
        });
        let mut after = below(&new, "a");
        after.retain(|p| !p.ends_with("during.txt"));
        assert_eq!(after, before, "the carried root answers as it did");
        assert!(below(&new, "b").is_empty());
        assert_eq!(
            names(&new, "inner.md"),
            ["a/sub/deeper/inner.md", "c/sub/deeper/inner.md"]
        );
        // The carried folders' watches follow their copies, deep ones too.
        std::fs::write(a.join("sub/deeper/later.rs"), "x").unwrap();
        std::fs::create_dir(a.join("sub/deeper/new")).unwrap();
        std::fs::write(a.join("sub/deeper/new/inside.rs"), "x").unwrap();
        std::fs::remove_file(a.join("sub/f0.txt")).unwrap();
        assert!(new.sync(Duration::from_secs(5)));
        assert!(new.caught_up(Duration::from_secs(5)));
        assert_eq!(
            names(&new, "ext:rs"),
            ["a/sub/deeper/later.rs", "a/sub/deeper/new/inside.rs"]
        );
        assert_eq!(names(&new, "f0.txt"), ["c/sub/f0.txt"]);
        // The root that left: its changes are not heard.
        std::fs::write(b.join("sub/gone.txt"), "x").unwrap();
        assert!(new.sync(Duration::from_secs(5)));
        assert!(names(&new, "gone.txt").is_empty());
        // a's 3 folders and c's, not b's.
        assert_eq!(new.status().watcher, "watching 6 folders");
        old.shutdown();
        new.shutdown();
    }

    /// A root whose folder was replaced at the same path, and an index of
    /// other rules, are walked, not carried.
    #[test]
    fn a_replaced_folder_or_other_rules_are_walked() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir_all(a.join("x")).unwrap();
        std::fs::create_dir_all(b.join("y")).unwrap();
        let old = Index::open(config(&[("a", &a), ("b", &b)])).unwrap();
        old.start();
        assert!(old.wait_ready(Duration::from_secs(10)));
        std::fs::rename(&b, tmp.path().join("b-old")).unwrap();
        std::fs::create_dir_all(b.join("z")).unwrap();
        let new = Index::open_adopting(config(&[("a", &a), ("b", &b)]), &old).unwrap();
        new.start();
        assert!(new.wait_ready(Duration::from_secs(10)));
        let carried = new.carried().unwrap();
        assert_eq!(
            (carried.roots, carried.walked),
            (vec!["a".to_string()], vec!["b".to_string()])
        );
        assert_eq!(names(&new, "z"), ["b/z"]);
        let mut other = config(&[("a", &a)]);
        other.rules.hidden = true;
        let third = Index::open_adopting(other, &new).unwrap();
        assert!(third.carried().is_none());
        third.start();
        assert!(third.wait_ready(Duration::from_secs(10)));
        assert!(third.carried().is_none(), "other rules: walked as at start");
        for i in [old, new, third] {
            i.shutdown();
        }
    }

    /// From one root to two and back: paths gain and lose the root's name,
    /// the carried root is copied each time, and a rename under way in the
    /// switch ends where it went.
    #[test]
    fn one_root_to_two_and_back() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, c) = (tmp.path().join("a"), tmp.path().join("c"));
        std::fs::create_dir_all(a.join("docs")).unwrap();
        std::fs::create_dir_all(&c).unwrap();
        std::fs::write(a.join("docs/one.md"), "x").unwrap();
        std::fs::write(c.join("two.md"), "x").unwrap();
        let first = Index::open(config(&[("a", &a)])).unwrap();
        first.start();
        assert!(first.wait_ready(Duration::from_secs(10)));
        assert_eq!(names(&first, "ext:md"), ["docs/one.md"]);
        let second = Index::open_adopting(config(&[("a", &a), ("c", &c)]), &first).unwrap();
        second.start();
        std::fs::rename(a.join("docs"), a.join("papers")).unwrap();
        assert!(second.wait_ready(Duration::from_secs(10)));
        wait_for("the rename made during the switch", || {
            names(&second, "ext:md") == ["a/papers/one.md", "c/two.md"]
        });
        assert_eq!(second.carried().unwrap().walked, ["c"]);
        let third = Index::open_adopting(config(&[("a", &a)]), &second).unwrap();
        third.start();
        assert!(third.wait_ready(Duration::from_secs(10)));
        assert_eq!(names(&third, "ext:md"), ["papers/one.md"]);
        let carried = third.carried().unwrap();
        assert_eq!(
            (carried.roots, carried.walked.len()),
            (vec!["a".to_string()], 0)
        );
        assert_eq!(third.progress(), 0, "nothing walked");
        std::fs::write(a.join("papers/three.md"), "x").unwrap();
        assert!(third.caught_up(Duration::from_secs(5)));
        assert_eq!(
            names(&third, "ext:md"),
            ["papers/one.md", "papers/three.md"]
        );
        for i in [first, second, third] {
            i.shutdown();
        }
    }
}
