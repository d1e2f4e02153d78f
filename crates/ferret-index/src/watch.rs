//! Keeping the index fresh: the watcher's events, applied in small batches, and
//! rescans that reconcile a folder with the disk (after a restart, after a queue
//! overflow, when the watch limit is reached, or when ignore rules change).

use std::{
    collections::HashMap,
    os::unix::ffi::OsStrExt,
    path::PathBuf,
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

use crate::{
    Index,
    inotify_watch::{FsEvent, RawEvent, WatchError, Watcher},
    journal::{Action, Change},
    now_rfc3339,
    rules::{IgnoreCache, bytes_to_path, is_ignore_file},
    search::display_path,
    store::{EntryId, Kind, Meta, NONE, Store},
    walk,
};

/// How long to gather events before applying them: short, so that a change shows
/// within the freshness budget, long enough to batch a burst.
const BATCH_WINDOW: Duration = Duration::from_millis(5);
/// How long the first half of a rename waits for its second half when no event
/// comes at all. (The kernel queues both halves together, so a half still alone
/// after the next batch has been applied moved out of the roots.)
const RENAME_PAIRING: Duration = Duration::from_millis(50);
/// Quiet time after which folders touched by folder moves are read again.
const SETTLE_AFTER: Duration = Duration::from_millis(100);
/// With the watch limit reached, unwatched folders are rescanned this often.
const LIMIT_RESCAN_EVERY: Duration = Duration::from_secs(60);

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The background thread: watch, build or reconcile, then follow the watcher.
/// Folders are watched before they are walked, so no change falls in between.
pub(crate) fn run(index: Index) {
    let (tx, rx) = mpsc::channel::<RawEvent>();
    let mut watcher = None;
    if index.shared.config.watch {
        let roots = index
            .shared
            .config
            .roots
            .iter()
            .map(|r| r.walk_path.clone())
            .collect();
        match Watcher::start(roots, tx) {
            Ok(w) => {
                for root in 0..index.shared.config.roots.len() {
                    watch_tree(&index, &w, root, b"");
                }
                let limited = index.status().watch_limit_reached;
                index.set_status(|s| {
                    s.watcher = if limited {
                        format!(
                            "degraded: the inotify watch limit was reached after {} folders",
                            w.watched_folders()
                        )
                    } else {
                        format!("watching {} folders", w.watched_folders())
                    }
                });
                watcher = Some(w);
            }
            Err(e) => {
                tracing::warn!(
                    "file watching unavailable: {e}; the index is refreshed by periodic rescans"
                );
                index.set_status(|s| s.watcher = format!("unavailable: {e}"));
            }
        }
    } else {
        index.set_status(|s| s.watcher = "off".into());
    }
    index.build_now(None);

    let mut applier = Applier::new(&index, watcher.as_ref());
    let mut last_snapshot = Instant::now();
    let mut last_limit_rescan = Instant::now();
    let snapshot_every = index.shared.config.snapshot_every;
    while !index.shared.stop.load(Ordering::Relaxed) {
        let wait = if !applier.pending_from.is_empty() {
            RENAME_PAIRING
        } else if !applier.settle.is_empty() {
            SETTLE_AFTER
        } else {
            Duration::from_millis(200)
        };
        match rx.recv_timeout(wait) {
            Ok(first) => {
                applier.batches += 1;
                let mut batch = vec![first];
                let deadline = Instant::now() + BATCH_WINDOW;
                while let Ok(ev) =
                    rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                {
                    batch.push(ev);
                    if batch.len() > 10_000 {
                        break;
                    }
                }
                applier.apply(batch);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                applier.batches += 1;
                applier.settle_now();
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(200))
            }
        }
        applier.expire_renames();
        let limited = index.status().watch_limit_reached || watcher.is_none();
        if limited && index.shared.config.watch && last_limit_rescan.elapsed() >= LIMIT_RESCAN_EVERY
        {
            last_limit_rescan = Instant::now();
            for i in 0..index.shared.config.roots.len() {
                rescan_root(&index, i, &AtomicU64::new(0));
            }
        }
        if index.shared.dirty.load(Ordering::Relaxed) && last_snapshot.elapsed() >= snapshot_every {
            last_snapshot = Instant::now();
            if let Err(e) = index.save_snapshot() {
                tracing::warn!("{e}");
            }
        }
    }
}

/// Watch `rel` and every folder below it that the index covers (hidden and
/// ignore rules apply, symlinks are not followed). Reads folder entries only.
fn watch_tree(index: &Index, watcher: &Watcher, root: usize, rel: &[u8]) {
    let rules = index.shared.config.rules;
    let mut ignore = IgnoreCache::default();
    let mut stack = vec![rel.to_vec()];
    while let Some(dir) = stack.pop() {
        match watcher.watch(root, &dir) {
            Ok(()) => {}
            Err(WatchError::Limit) => {
                if !index.status().watch_limit_reached {
                    tracing::warn!(
                        "inotify watch limit reached; unwatched folders are rescanned every {}s. Raise it: sysctl fs.inotify.max_user_watches=1048576",
                        LIMIT_RESCAN_EVERY.as_secs()
                    );
                }
                index.set_status(|s| {
                    s.watch_limit_reached = true;
                    s.watcher = "degraded: the inotify watch limit was reached".into();
                });
                return;
            }
            Err(WatchError::Other) => continue, // vanished or unreadable
        }
        let path = watcher.root_path(root).join(bytes_to_path(&dir));
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let child = if dir.is_empty() {
                entry.file_name().as_bytes().to_vec()
            } else {
                [&dir[..], b"/", entry.file_name().as_bytes()].concat()
            };
            if !ignore.excluded(watcher.root_path(root), rules, &child, true) {
                stack.push(child);
            }
        }
    }
}

/// Reconcile a whole root with the disk.
pub(crate) fn rescan_root(index: &Index, root_index: usize, progress: &AtomicU64) {
    rescan(index, root_index, b"", progress);
}

/// Walk `rel` (a folder below a root) and make the index agree with it,
/// journalling every difference.
fn rescan(index: &Index, root_index: usize, rel: &[u8], progress: &AtomicU64) {
    let root = &index.shared.config.roots[root_index];
    let dir = if rel.is_empty() {
        root.walk_path.clone()
    } else {
        root.walk_path.join(bytes_to_path(rel))
    };
    let mut fresh = Store::new();
    let fresh_root = fresh.add_root(b"", Meta::default());
    if dir.is_dir() {
        let walked = walk::walk(&dir, index.shared.config.rules, progress);
        walk::insert_walked(&mut fresh, fresh_root, walked);
    }
    let mut changes = Vec::new();
    {
        let mut store = index.write_store();
        let root_id = store.roots()[root_index];
        let Some(target) = store.lookup(root_id, rel) else {
            return;
        };
        reconcile(&mut store, target, &fresh, fresh_root, &mut changes);
    }
    if !changes.is_empty() {
        index.shared.dirty.store(true, Ordering::Relaxed);
        index.record(&changes);
        index.set_status(|s| s.updated_at = Some(now_rfc3339()));
    }
}

fn change(store: &Store, id: EntryId, action: Action, old_path: Option<String>) -> Change {
    Change {
        action,
        path: display_path(store, id),
        old_path,
        kind: store.kind(id).name(),
        at_ms: now_ms(),
        by: "external",
    }
}

/// Make the children of `old` (in `store`) equal those of `new` (in `fresh`).
fn reconcile(
    store: &mut Store,
    old: EntryId,
    fresh: &Store,
    new: EntryId,
    changes: &mut Vec<Change>,
) {
    let mut existing: HashMap<Vec<u8>, EntryId> = store
        .children(old)
        .map(|c| (store.name(c).to_vec(), c))
        .collect();
    for child in fresh.children(new) {
        let name = fresh.name(child);
        let kind = fresh.kind(child);
        let meta = fresh.meta(child);
        match existing.remove(name) {
            Some(id) if store.kind(id) == kind => {
                let before = store.meta(id);
                if before != meta {
                    store.upsert(old, name, kind, meta);
                    if kind != Kind::Dir && (before.size != meta.size || before.mtime != meta.mtime)
                    {
                        changes.push(change(store, id, Action::Modified, None));
                    }
                }
                if kind == Kind::Dir {
                    reconcile(store, id, fresh, child, changes);
                }
            }
            other => {
                if let Some(id) = other {
                    changes.push(change(store, id, Action::Deleted, None));
                    store.remove(id);
                }
                copy_subtree(store, old, fresh, child, changes);
            }
        }
    }
    for (_, id) in existing {
        changes.push(change(store, id, Action::Deleted, None));
        store.remove(id);
    }
}

fn copy_subtree(
    store: &mut Store,
    parent: EntryId,
    fresh: &Store,
    from: EntryId,
    changes: &mut Vec<Change>,
) {
    let id = store.insert_new(parent, fresh.name(from), fresh.kind(from), fresh.meta(from));
    changes.push(change(store, id, Action::Created, None));
    for c in fresh.children(from) {
        copy_subtree(store, id, fresh, c, changes);
    }
}

struct Applier<'a> {
    index: &'a Index,
    watcher: Option<&'a Watcher>,
    ignore: Vec<IgnoreCache>,
    /// First halves of renames, by inotify cookie: (root, rel, when).
    pending_from: HashMap<u32, (usize, Vec<u8>, u64)>,
    /// Batches received so far (timeouts count too): the clock renames pair by.
    batches: u64,
    /// Folders found missing from the index while applying events: rescanned.
    missed_folders: Vec<(usize, Vec<u8>)>,
    /// Folders that took part in folder moves, read again once events pause:
    /// inotify names a folder by the path it had when its watch reported, so
    /// under churn an event can name a folder by a name it no longer has.
    settle: Vec<(usize, Vec<u8>)>,
}

impl<'a> Applier<'a> {
    fn new(index: &'a Index, watcher: Option<&'a Watcher>) -> Applier<'a> {
        Applier {
            index,
            watcher,
            ignore: index
                .shared
                .config
                .roots
                .iter()
                .map(|_| IgnoreCache::default())
                .collect(),
            pending_from: HashMap::new(),
            batches: 0,
            missed_folders: Vec::new(),
            settle: Vec::new(),
        }
    }

    fn apply(&mut self, batch: Vec<RawEvent>) {
        let mut changes = Vec::new();
        let mut rescans: Vec<(usize, Vec<u8>)> = Vec::new();
        // Files written in this batch: a rewrite that keeps the size within the
        // same mtime second journals nothing, but subscribers must still hear of it.
        let mut written: Vec<String> = Vec::new();
        let followed = self.index.touches_followed();
        for raw in batch {
            // Translated here, in order: a folder renamed by an earlier event of
            // this batch already has its new path.
            let Some(event) = self.watcher.and_then(|w| w.translate(raw)) else {
                continue;
            };
            match event {
                FsEvent::Overflow => {
                    tracing::warn!("inotify queue overflowed; rescanning the roots");
                    self.index.set_status(|s| s.overflow_rescans += 1);
                    rescans.extend((0..self.ignore.len()).map(|i| (i, Vec::new())));
                }
                FsEvent::RootGone { root } => self.removed(root, b"", &mut changes),
                FsEvent::MovedFrom { root, rel, cookie } => {
                    self.pending_from.insert(cookie, (root, rel, self.batches));
                }
                FsEvent::MovedTo { root, rel, cookie } => match self.pending_from.remove(&cookie) {
                    Some((from_root, from_rel, _)) if from_root == root => {
                        self.rename(root, &from_rel, &rel, &mut changes, &mut rescans)
                    }
                    Some((from_root, from_rel, _)) => {
                        self.moved_out(from_root, &from_rel, &mut changes);
                        self.refresh(root, &rel, &mut changes, &mut rescans);
                    }
                    None => {
                        // Moved in from outside: whatever it holds is new to the index.
                        self.refresh(root, &rel, &mut changes, &mut rescans);
                        if std::fs::symlink_metadata(self.walk_path(root, &rel))
                            .is_ok_and(|m| m.is_dir())
                        {
                            rescans.push((root, rel));
                        }
                    }
                },
                FsEvent::Removed { root, rel } => self.removed(root, &rel, &mut changes),
                FsEvent::Changed { root, rel } => {
                    if followed {
                        written.push(self.index.shown_path(root, &rel));
                    }
                    self.refresh(root, &rel, &mut changes, &mut rescans)
                }
            }
        }
        written.retain(|p| !changes.iter().any(|c| &c.path == p));
        written.sort();
        written.dedup();
        self.finish(changes, rescans);
        self.index.publish_touched(written);
    }

    fn finish(&mut self, changes: Vec<Change>, mut rescans: Vec<(usize, Vec<u8>)>) {
        rescans.append(&mut self.missed_folders);
        rescans.sort();
        rescans.dedup();
        let had_changes = !changes.is_empty();
        if had_changes {
            self.index.record(&changes);
        }
        for (root, rel) in rescans {
            // Folders are (re)watched before they are read, so nothing falls between
            // and every watch names the folder's current path.
            if let Some(w) = self.watcher {
                watch_tree(self.index, w, root, &rel);
            }
            rescan(self.index, root, &rel, &AtomicU64::new(0));
        }
        if had_changes {
            self.index.shared.dirty.store(true, Ordering::Relaxed);
            self.index
                .set_status(|s| s.updated_at = Some(now_rfc3339()));
        }
    }

    /// Events paused: read again the folders that folder moves touched.
    fn settle_now(&mut self) {
        if self.settle.is_empty() {
            return;
        }
        let mut folders = std::mem::take(&mut self.settle);
        folders.sort();
        folders.dedup();
        // Many folders: one walk of their roots is cheaper than many small ones.
        if folders.len() > 64 {
            folders = folders.into_iter().map(|(r, _)| (r, Vec::new())).collect();
            folders.dedup();
        }
        self.finish(Vec::new(), folders);
    }

    /// Renames whose second half never came: the entry left the roots.
    fn expire_renames(&mut self) {
        let expired: Vec<u32> = self
            .pending_from
            .iter()
            .filter(|(_, (_, _, batch))| *batch < self.batches)
            .map(|(&c, _)| c)
            .collect();
        if expired.is_empty() {
            return;
        }
        let mut changes = Vec::new();
        for c in expired {
            if let Some((root, rel, _)) = self.pending_from.remove(&c) {
                self.moved_out(root, &rel, &mut changes);
            }
        }
        self.finish(changes, Vec::new());
    }

    /// An entry moved out of the roots: gone from the index, and its folders unwatched.
    fn moved_out(&mut self, root: usize, rel: &[u8], changes: &mut Vec<Change>) {
        if let Some(w) = self.watcher {
            w.forget(root, rel);
        }
        self.removed(root, rel, changes);
    }

    fn walk_path(&self, root: usize, rel: &[u8]) -> PathBuf {
        self.index.shared.config.roots[root]
            .walk_path
            .join(bytes_to_path(rel))
    }

    fn excluded(&mut self, root: usize, rel: &[u8], is_dir: bool) -> bool {
        let walk_root = self.index.shared.config.roots[root].walk_path.clone();
        let rules = self.index.shared.config.rules;
        self.ignore[root].excluded(&walk_root, rules, rel, is_dir)
    }

    /// The entry at `rel` may have appeared or changed: look at the disk.
    fn refresh(
        &mut self,
        root: usize,
        rel: &[u8],
        changes: &mut Vec<Change>,
        rescans: &mut Vec<(usize, Vec<u8>)>,
    ) {
        if rel.is_empty() {
            return;
        }
        let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
        if is_ignore_file(name) {
            // The rules changed: what belongs in the index below that folder may differ.
            self.ignore[root].clear();
            let folder = &rel[..rel.len() - name.len()];
            rescans.push((root, folder.strip_suffix(b"/").unwrap_or(folder).to_vec()));
        }
        let full = self.walk_path(root, rel);
        let Ok(m) = std::fs::symlink_metadata(&full) else {
            self.removed(root, rel, changes);
            return;
        };
        let kind = walk::kind_of(&m.file_type());
        if self.excluded(root, rel, kind == Kind::Dir) {
            self.removed_silently(root, rel);
            return;
        }
        let meta = walk::meta_of(&m);
        let Some(parent) = self.ensure_parent(root, rel, changes) else {
            return;
        };
        let mut store = self.index.write_store();
        let existing = store.child(parent, name);
        match existing {
            Some(id) if store.kind(id) == kind => {
                let before = store.meta(id);
                if before != meta {
                    store.upsert(parent, name, kind, meta);
                    if kind != Kind::Dir && (before.size != meta.size || before.mtime != meta.mtime)
                    {
                        changes.push(change(&store, id, Action::Modified, None));
                    }
                }
            }
            other => {
                if let Some(id) = other {
                    changes.push(change(&store, id, Action::Deleted, None));
                    store.remove(id);
                }
                let id = store.insert_new(parent, name, kind, meta);
                changes.push(change(&store, id, Action::Created, None));
                if kind == Kind::Dir {
                    // Files may have landed before the new folder was watched.
                    rescans.push((root, rel.to_vec()));
                }
            }
        }
    }

    /// Make sure the folders above `rel` are in the index; returns the parent's id.
    fn ensure_parent(
        &mut self,
        root: usize,
        rel: &[u8],
        changes: &mut Vec<Change>,
    ) -> Option<EntryId> {
        let parts: Vec<&[u8]> = rel
            .split(|&b| b == b'/')
            .filter(|p| !p.is_empty())
            .collect();
        let mut at = self.index.read_store().roots()[root];
        for i in 0..parts.len().saturating_sub(1) {
            let existing = self.index.read_store().child(at, parts[i]);
            at = match existing {
                Some(id) => id,
                None => {
                    let prefix = parts[..=i].join(&b'/');
                    let m = std::fs::symlink_metadata(self.walk_path(root, &prefix)).ok()?;
                    if !m.is_dir() {
                        return None;
                    }
                    let mut store = self.index.write_store();
                    let id = store.insert_new(at, parts[i], Kind::Dir, walk::meta_of(&m));
                    changes.push(change(&store, id, Action::Created, None));
                    // A folder the index did not know: the rest of it is unknown too.
                    self.missed_folders.push((root, prefix));
                    id
                }
            };
        }
        Some(at)
    }

    fn lookup(&self, root: usize, rel: &[u8]) -> Option<EntryId> {
        let store = self.index.read_store();
        let r = store.roots()[root];
        store.lookup(r, rel).filter(|&id| id != r)
    }

    fn removed(&mut self, root: usize, rel: &[u8], changes: &mut Vec<Change>) {
        if rel.is_empty() {
            tracing::warn!(root = %self.index.shared.config.roots[root].name, "a root disappeared while served");
            let name = self.index.shared.config.roots[root].name.clone();
            self.index.set_status(|s| {
                if !s.missing_roots.contains(&name) {
                    s.missing_roots.push(name);
                }
            });
            return;
        }
        if let Some(id) = self.lookup(root, rel) {
            let mut store = self.index.write_store();
            changes.push(change(&store, id, Action::Deleted, None));
            store.remove(id);
        }
    }

    fn removed_silently(&mut self, root: usize, rel: &[u8]) {
        if let Some(id) = self.lookup(root, rel) {
            self.index.write_store().remove(id);
        }
    }

    fn rename(
        &mut self,
        root: usize,
        from: &[u8],
        to: &[u8],
        changes: &mut Vec<Change>,
        rescans: &mut Vec<(usize, Vec<u8>)>,
    ) {
        let Some(id) = self.lookup(root, from) else {
            self.refresh(root, to, changes, rescans);
            return;
        };
        let full = self.walk_path(root, to);
        let is_dir = std::fs::symlink_metadata(&full)
            .map(|m| m.is_dir())
            .unwrap_or(false);
        if self.excluded(root, to, is_dir) {
            self.removed(root, from, changes);
            return;
        }
        let Some(parent) = self.ensure_parent(root, to, changes) else {
            self.removed(root, from, changes);
            return;
        };
        let name = to.rsplit(|&b| b == b'/').next().unwrap_or(to);
        if !self.index.read_store().is_live(id) || self.index.read_store().is_within(parent, id) {
            // The index's picture of this corner is already stale (the destination
            // would lie inside the entry itself): drop it and look at the disk.
            self.removed(root, from, changes);
            self.refresh(root, to, changes, rescans);
            rescans.push((root, to.to_vec()));
            return;
        }
        let mut store = self.index.write_store();
        let old_path = display_path(&store, id);
        let old_parent = store.parent(id);
        let new_id = store.rename(id, parent, name);
        if let Ok(m) = std::fs::symlink_metadata(&full) {
            let kind = walk::kind_of(&m.file_type());
            store.upsert(parent, name, kind, walk::meta_of(&m));
        }
        if let Some(w) = self.watcher {
            w.moved(root, from, to);
        }
        if is_dir {
            // Changes made inside the folder just before it moved were reported under
            // its old name, which no longer exists: look at it again, now and once
            // events pause, with the folders on both sides.
            rescans.push((root, to.to_vec()));
            let parent_of =
                |p: &[u8]| p[..p.iter().rposition(|&b| b == b'/').unwrap_or(0)].to_vec();
            self.settle.push((root, to.to_vec()));
            self.settle.push((root, parent_of(to)));
            self.settle.push((root, parent_of(from)));
        }
        let action = if old_parent == parent {
            Action::Renamed
        } else {
            Action::Moved
        };
        changes.push(change(&store, new_id, action, Some(old_path)));
        debug_assert!(store.parent(new_id) != NONE);
    }
}
