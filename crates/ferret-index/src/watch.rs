//! Keeping the index fresh: the first build, the watcher's events applied in
//! small batches, and rescans that reconcile a folder with the disk (after a
//! restart, after a queue overflow, when the watch limit is reached, or when
//! ignore rules change).
//!
//! Every event names a watched folder by its entry; the folder is opened again
//! from its root's descriptor (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`),
//! checked against the device and inode it had when watched, and the changed
//! name is described relative to it. No path string below a root reaches the
//! kernel.

use std::{
    collections::{HashMap, VecDeque},
    os::fd::{AsFd, BorrowedFd, OwnedFd},
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

use crate::{
    Index,
    dirs::{ident, open_below},
    inotify_watch::{FsEvent, RawEvent, Watcher},
    journal::{Action, Change},
    now_rfc3339,
    reconcile::{apply_reconcile, change, plan_reconcile, register_watches},
    rules::{Chain, IgnoreCache, is_ignore_file},
    search::display_path,
    store::{EntryId, Kind, NONE, Store},
    walk::{self},
    watched_walk::{fd_meta, note_stats, note_two_paths, walk_apart, walk_into},
};

/// How long to gather events before applying them: short, so that a change shows
/// within the freshness budget, long enough to batch a burst.
const BATCH_WINDOW: Duration = Duration::from_millis(5);
/// How long the first half of a rename waits for its second half when no event
/// comes at all. (The kernel queues both halves together, so a half still alone
/// after the next batch has been applied moved out of the roots.)
const RENAME_PAIRING: Duration = Duration::from_millis(50);
/// How long a barrier's batch waits for the second half of a rename whose
/// first came before the barrier (see the loop in [`run`]).
const PAIR_AFTER_BARRIER: Duration = Duration::from_millis(5);
/// Quiet time after which a root whose picture went stale under churn is read
/// again.
const SETTLE_AFTER: Duration = Duration::from_millis(100);

/// Whether at least `n` entries lie below `folder` (counted no further).
fn below_at_least(store: &Store, folder: EntryId, n: usize) -> bool {
    if !store.is_live(folder) {
        return false;
    }
    let mut count = 0;
    let mut stack = vec![folder];
    while let Some(at) = stack.pop() {
        let children = store.children(at);
        count += children.len();
        if count >= n {
            return true;
        }
        stack.extend(
            children
                .iter()
                .copied()
                .filter(|&c| store.kind(c) == Kind::Dir),
        );
    }
    false
}

/// The background thread: watch and build (or reconcile), then follow the
/// watcher. Folders are watched before they are read, so no change falls in
/// between.
pub(crate) fn run(index: Index) {
    // Made from the running index of other settings: its watcher (`adopt`).
    let taken = crate::adopt::take_over(&index);
    let (tx, rx) = mpsc::sync_channel::<RawEvent>(crate::inotify_watch::EVENT_QUEUE);
    let watcher = if taken.is_some() {
        None
    } else if index.shared.config.watch {
        match Watcher::start(tx) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(
                    "file watching unavailable: {e}; the index is refreshed by periodic rescans"
                );
                index.set_status(|s| s.watcher = format!("unavailable: {e}"));
                None
            }
        }
    } else {
        index.set_status(|s| s.watcher = "off".into());
        None
    };
    let (watcher, rx) = taken.unwrap_or((watcher, rx));
    // Read before the build: a mount made during it is read after. (Where
    // the table cannot be watched, no part of the index is vouched for.)
    let mut mounts = if watcher.is_some() {
        let watch = crate::mounts::MountWatch::open(&index.root_fd_list());
        index
            .shared
            .mounts_unsure
            .store(watch.is_none(), Ordering::Release);
        watch
    } else {
        None
    };
    build(&index, watcher.as_ref(), &index.shared.progress);
    let mut applier = Applier::new(&index, watcher.as_ref());
    applier.settle.extend(crate::adopt::settle(&index));
    applier.note_mounted_files(mounts.as_ref());
    let mut last_snapshot = Instant::now();
    let mut last_limit_rescan = Instant::now();
    let snapshot_every = index.shared.config.snapshot_every;
    // The periodic snapshot's thread, while it runs.
    let mut saving: Option<std::thread::JoinHandle<()>> = None;
    let saved = |s: std::thread::JoinHandle<()>| {
        if s.join().is_err() {
            tracing::warn!(
                "the index snapshot could not be written (a panic); it is tried again after the next period"
            );
        }
    };
    // Events received while the orders were rebuilt, to apply before any
    // still in the queue (see `rebuild_listening`).
    let mut backlog: VecDeque<RawEvent> = VecDeque::new();
    let next = |backlog: &mut VecDeque<RawEvent>, wait: Duration| match backlog.pop_front() {
        Some(ev) => Ok(ev),
        None => rx.recv_timeout(wait),
    };
    while !index.shared.stop.load(Ordering::Relaxed) && !crate::adopt::asked(&index) {
        let wait = if !applier.pending_from.is_empty() {
            RENAME_PAIRING
        } else if !applier.settle.is_empty() {
            SETTLE_AFTER
        } else {
            Duration::from_millis(200)
        };
        match next(&mut backlog, wait) {
            Ok(first) => {
                applier.batches += 1;
                let barrier = index.shared.sync.wd();
                let mut barriers = u64::from(first.is_barrier(barrier));
                let mut batch = vec![first];
                let deadline = Instant::now() + BATCH_WINDOW;
                // A barrier's caller is waiting: apply what came before it now.
                while barriers == 0
                    && let Ok(ev) = next(
                        &mut backlog,
                        deadline.saturating_duration_since(Instant::now()),
                    )
                {
                    barriers += u64::from(ev.is_barrier(barrier));
                    batch.push(ev);
                    if batch.len() > 10_000 {
                        break;
                    }
                }
                // Events were dropped on the way: the roots are read again
                // after this batch. What still waits in the queue is older
                // than that reading and is let go unapplied (replaying it
                // would only delay the reading). The disk is read after the
                // drop, so nothing dropped is missed.
                if let Some(lost) = take_loss(watcher.as_ref(), &rx, &mut backlog) {
                    batch.push(lost);
                }
                let mut overflowed = batch.iter().any(RawEvent::is_overflow);
                applier.apply(batch);
                // A rename under way as the barrier came can have its halves
                // on either side of it (the kernel queues the two one after
                // the other, and the barrier's write can land between): what
                // is queued behind the barrier is applied too before a half
                // left alone counts as a move out (which would journal a
                // folder renamed as removed and created, and have its
                // followers look at it anew).
                // The halves alone before the barrier are of this batch and
                // older; what comes after it counts as a later batch, whose
                // first halves are left to pair as usual.
                let mut alone_before = None;
                if barriers > 0 && !applier.pending_from.is_empty() && !overflowed {
                    applier.batches += 1;
                    alone_before = Some(applier.batches);
                    overflowed = read_behind_barrier(
                        &mut applier,
                        &rx,
                        &mut backlog,
                        barrier,
                        &mut barriers,
                    );
                    if let Some(lost) = take_loss(watcher.as_ref(), &rx, &mut backlog) {
                        applier.apply(vec![lost]);
                        overflowed = true;
                    }
                }
                if barriers > 0 {
                    // A barrier's caller reads the index as it stands: a
                    // rename half still alone has no second half coming (the
                    // kernel queued both before the barrier), and a corner
                    // whose picture went stale is read again, first.
                    match alone_before {
                        Some(batch) => applier.expire_renames_before(batch),
                        None => applier.expire_renames_now(),
                    }
                    applier.settle_now();
                    // A mount made before the caller asked is read too.
                    applier.remount(&mut mounts);
                }
                match (&watcher, overflowed) {
                    // Barrier events may be lost: a new file (the roots
                    // were read again above), on which the barriers waiting
                    // on the old one start again.
                    (Some(w), true) => {
                        if let Some(old) = barrier {
                            w.unwatch_barrier(old);
                        }
                        index.shared.sync.install(barrier_file(&index, w));
                    }
                    _ => index.shared.sync.reached(barriers),
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                applier.batches += 1;
                // Renames left unpaired first: the roots read again after
                // them, not before (their moves out would undo the reading).
                applier.expire_renames();
                applier.settle_now();
                applier.remount(&mut mounts);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(200))
            }
        }
        applier.expire_renames();
        index.release_held();
        let limited = index.status().watch_limit_reached || watcher.is_none();
        if index.shared.config.watch
            && last_limit_rescan.elapsed() >= index.shared.config.limit_rescan_every
        {
            if limited {
                last_limit_rescan = Instant::now();
                for root in 0..index.shared.config.roots.len() {
                    applier.rescan_root(root, &AtomicU64::new(0));
                }
            } else if let Some(folders) = applier.network_folders() {
                // inotify hears only this machine's changes there.
                last_limit_rescan = Instant::now();
                for (root, folder) in folders {
                    applier.rescan(root, folder, &AtomicU64::new(0));
                }
            }
        }
        rebuild_listening(&index, &applier, &rx, &mut backlog, &mut mounts);
        if let Some(done) = saving.take_if(|s| s.is_finished()) {
            saved(done);
        }
        if saving.is_none()
            && index.shared.dirty.load(Ordering::Relaxed)
            && last_snapshot.elapsed() >= snapshot_every
        {
            last_snapshot = Instant::now();
            // In a thread of its own while this one goes on applying
            // changes: the save writes a copy of the store taken under a
            // short lock (`Index::save_snapshot`), so nothing here waits
            // for it. (In this thread, a search asked during a save waited
            // it out at the barrier, 250 ms, and answered `behind`; beside
            // it, changes waited in a backlog until the save was done.)
            let index = index.clone();
            let spawned = std::thread::Builder::new()
                .name("ferret-snapshot".into())
                .spawn(move || {
                    // Background work: the watcher (which may have arrays to
                    // copy while the save shares them) and the searches come
                    // first, as for the content index's build.
                    let _ =
                        rustix::process::setpriority_process(Some(rustix::thread::gettid()), 10);
                    if let Err(e) = index.save_snapshot_and_map() {
                        tracing::warn!("{e}");
                    }
                });
            match spawned {
                Ok(s) => saving = Some(s),
                Err(e) => tracing::warn!(
                    "the index snapshot could not be started ({e}); it is tried again after the next period"
                ),
            }
        }
    }
    if let Some(s) = saving.take() {
        saved(s);
    }
    // Asked by the index of new settings: the watcher and the events not
    // read yet go to it. A rename's first half still waiting for its
    // second is taken as a move out (the second half, if it comes, is then
    // a new entry there).
    if let Some(reply) = crate::adopt::ending(&index) {
        // What waits behind a rebuild, and the mounts made since the last
        // barrier, go into the store handed over (the new index reads the
        // mount table afresh from here).
        if !backlog.is_empty() {
            let barrier = index.shared.sync.wd();
            let events: Vec<RawEvent> = backlog.drain(..).collect();
            let barriers = events.iter().filter(|e| e.is_barrier(barrier)).count() as u64;
            applier.batches += 1;
            applier.apply(events);
            if barriers > 0 {
                index.shared.sync.reached(barriers);
            }
        }
        applier.remount(&mut mounts);
        applier.batches += 1;
        applier.expire_renames();
        let settle = std::mem::take(&mut applier.settle);
        drop(applier);
        let barrier = index.shared.sync.wd();
        crate::adopt::hand_over(
            &index,
            reply,
            crate::adopt::Taken {
                watcher,
                rx,
                settle,
                barrier,
            },
        );
    }
}

/// The events queued behind a barrier, applied while a rename half from
/// before it is still alone (at most [`PAIR_AFTER_BARRIER`], 10,000 events),
/// each rename's second half as it comes; barriers among them are counted
/// into `barriers`. Whether the kernel's queue overflowed among them.
fn read_behind_barrier(
    applier: &mut Applier<'_>,
    rx: &mpsc::Receiver<RawEvent>,
    backlog: &mut VecDeque<RawEvent>,
    barrier: Option<i32>,
    barriers: &mut u64,
) -> bool {
    let deadline = Instant::now() + PAIR_AFTER_BARRIER;
    let mut more = Vec::new();
    let mut overflowed = false;
    while !applier.pending_from.is_empty() && more.len() < 10_000 {
        let next = match backlog.pop_front() {
            Some(ev) => Ok(ev),
            None => rx.recv_timeout(deadline.saturating_duration_since(Instant::now())),
        };
        let Ok(ev) = next else { break };
        if ev.is_overflow() {
            overflowed = true;
            more.push(ev);
            break;
        }
        *barriers += u64::from(ev.is_barrier(barrier));
        let pairs = ev.is_moved_to();
        more.push(ev);
        if pairs {
            applier.apply(std::mem::take(&mut more));
        }
    }
    applier.apply(more);
    overflowed
}

/// When the watcher dropped events (its queue full), what still waits is let
/// go, and the overflow event that has the roots read again is returned.
fn take_loss(
    watcher: Option<&Watcher>,
    rx: &mpsc::Receiver<RawEvent>,
    backlog: &mut VecDeque<RawEvent>,
) -> Option<RawEvent> {
    if !watcher.is_some_and(Watcher::take_lost) {
        return None;
    }
    backlog.clear();
    while rx.try_recv().is_ok() {}
    Some(RawEvent::overflow())
}

/// Rebuild the orders when the changes call for it, in a helper thread while
/// this one keeps listening ([`listen_while`]). (The rebuild reads the whole
/// store, a second at a million entries; a search asked meanwhile waited it
/// out at the barrier and then answered `behind`.)
fn rebuild_listening(
    index: &Index,
    applier: &Applier<'_>,
    rx: &mpsc::Receiver<RawEvent>,
    backlog: &mut VecDeque<RawEvent>,
    mounts: &mut Option<crate::mounts::MountWatch>,
) {
    if !index.read_store().needs_rebuild() {
        return;
    }
    // A rename half or a stale corner waiting is settled by a barrier
    // first, which only the applier can do.
    let quiet = applier.pending_from.is_empty() && applier.settle.is_empty();
    if !listen_while(index, quiet, rx, backlog, mounts, || {
        index.rebuild_if_needed()
    }) {
        tracing::warn!(
            "the index's orders could not be rebuilt (a panic); they are built again after the next changes"
        );
    }
}

/// Run `work` (which changes nothing the events name) in a helper thread
/// while this one keeps receiving events: with `quiet`, a barrier that comes
/// before any other event is passed at once, since every event before it was
/// applied before `work` began (unless the mount table changed: a barrier
/// then waits for the mounts to be read, after `work`). Other events wait
/// in `backlog`, in order, to be applied after it; past `EVENT_QUEUE` of
/// them the queue is left to fill (and, full, to drop events, read again as
/// after an overflow). Whether `work` ended without a panic.
fn listen_while(
    index: &Index,
    quiet: bool,
    rx: &mpsc::Receiver<RawEvent>,
    backlog: &mut VecDeque<RawEvent>,
    mounts: &mut Option<crate::mounts::MountWatch>,
    work: impl FnOnce() + Send,
) -> bool {
    let barrier = index.shared.sync.wd();
    std::thread::scope(|scope| {
        let job = scope.spawn(work);
        while !job.is_finished() {
            if backlog.len() >= crate::inotify_watch::EVENT_QUEUE {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            }
            match rx.recv_timeout(Duration::from_millis(2)) {
                Ok(ev)
                    if quiet
                        && backlog.is_empty()
                        && ev.is_barrier(barrier)
                        && !mounts
                            .as_mut()
                            .is_some_and(crate::mounts::MountWatch::marked) =>
                {
                    index.shared.sync.reached(1);
                }
                Ok(ev) => backlog.push_back(ev),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(Duration::from_millis(2))
                }
            }
        }
        job.join().is_ok()
    })
}

/// The barrier's file (in the temporary folder, else the state folder),
/// watched; `None`, with a log line, when there is none.
fn barrier_file(index: &Index, w: &Watcher) -> Option<(OwnedFd, i32)> {
    let mut dirs = vec![std::env::temp_dir()];
    dirs.extend(index.shared.config.state_dir.clone());
    let made =
        crate::sync::private_file(&dirs).and_then(|f| w.watch_barrier(f.as_fd()).map(|wd| (f, wd)));
    match made {
        Ok(made) => Some(made),
        Err(e) => {
            tracing::warn!(
                "no file for the watcher's barrier ({e}): searches cannot confirm the watcher has caught up, so the content index is not used"
            );
            None
        }
    }
}

/// Build the index from scratch, or reconcile a loaded snapshot with the disk.
pub(crate) fn build(index: &Index, watcher: Option<&Watcher>, progress: &AtomicU64) {
    let started = Instant::now();
    let reconcile = index.status().loaded_from_snapshot;
    index.set_status(|s| {
        s.unreadable_folders = 0;
        s.walk_races = 0;
    });
    if reconcile {
        let mut applier = Applier::new(index, watcher);
        for root in 0..index.shared.config.roots.len() {
            applier.rescan_root(root, progress);
        }
    } else {
        let mut store = Store::new();
        for (i, r) in index.shared.config.roots.iter().enumerate() {
            let root_fd = index.root_fd(i);
            let meta = root_fd.map(fd_meta).unwrap_or_default();
            let top = store.add_root(r.name.as_bytes(), meta);
            // Carried over from the running index of other settings (`adopt`).
            if crate::adopt::carry(index, i, &mut store, top) {
                continue;
            }
            // A new open of the root, not a copy of its descriptor: a copy would
            // share the directory's read position, left at the end by the last walk.
            let Some(fd) = root_fd.and_then(|fd| open_below(fd, b"").ok()) else {
                continue;
            };
            let (stats, added) = walk_into(
                index,
                watcher,
                i,
                &mut store,
                top,
                fd,
                Vec::new(),
                Chain::root(None),
                progress,
                false,
            );
            note_stats(index, i, &stats);
            for a in added {
                if let Some(d) = store.dir_mut(a.folder) {
                    d.wd = a.wd;
                }
            }
        }
        crate::adopt::finish(index, watcher);
        crate::orders::rebuild_store(&mut store);
        store.shrink_to_fit();
        *index.write_store() = store;
        crate::trim::give_back_memory();
        note_two_paths(index);
    }
    let ms = started.elapsed().as_millis() as u64;
    index.shared.dirty.store(true, Ordering::Relaxed);
    let missing = index.missing_roots();
    // Ready and watching in one step: a search that waits for the build
    // finds the watcher's barrier usable the moment it is woken.
    let watching = watcher.map(|w| w.watched_folders());
    // The barrier before the index is ready: its events queue behind those
    // of changes made during the build, so a caller that passes it sees them.
    // (Added after the folders' watches, so that it never takes a folder's
    // place under the watch limit.)
    if let Some(w) = watcher {
        index.shared.sync.install(barrier_file(index, w));
    }
    index.set_status(|s| {
        if let Some(folders) = watching {
            s.watcher = if s.watch_limit_reached {
                format!("degraded: the inotify watch limit was reached after {folders} folders")
            } else {
                format!("watching {folders} folders")
            };
        }
        s.ready = true;
        s.reconciling = false;
        s.build_ms = Some(ms);
        s.updated_at = Some(now_rfc3339());
        s.missing_roots = missing;
    });
    tracing::info!(
        entries = index.status().entries,
        ms,
        reconcile,
        "index built"
    );
}

/// Folders opened while applying one batch, by entry.
#[derive(Default)]
struct Opened {
    fds: HashMap<EntryId, Option<OwnedFd>>,
}

pub(crate) struct Applier<'a> {
    index: &'a Index,
    watcher: Option<&'a Watcher>,
    ignore: Vec<IgnoreCache>,
    /// First halves of renames, by inotify cookie: (root, folder, name, batch).
    pending_from: HashMap<u32, (usize, EntryId, Vec<u8>, u64)>,
    /// Batches received so far (timeouts count too): the clock renames pair by.
    batches: u64,
    /// Roots where an event came from a watched folder the index lost track of
    /// (under churn a folder can move again before its first move is applied):
    /// read again once events pause.
    settle: Vec<usize>,
}

impl<'a> Applier<'a> {
    pub(crate) fn new(index: &'a Index, watcher: Option<&'a Watcher>) -> Applier<'a> {
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
            settle: Vec::new(),
        }
    }

    /// Whether an event's folder is still the one its watch was added for. When
    /// it is not, the folder lives on somewhere the index does not know: its
    /// root is read again once events pause.
    fn current(&mut self, root: usize, folder: EntryId, wd: i32) -> bool {
        let current = self
            .index
            .read_store()
            .dir(folder)
            .is_some_and(|d| d.wd == wd);
        if !current {
            self.settle_later(root);
        }
        current
    }

    /// Read `root` again once events pause (its picture may be stale).
    fn settle_later(&mut self, root: usize) {
        if !self.settle.contains(&root) {
            self.settle.push(root);
        }
    }

    /// Events paused: read again the roots whose picture went stale.
    fn settle_now(&mut self) {
        for root in std::mem::take(&mut self.settle) {
            self.rescan_root(root, &AtomicU64::new(0));
        }
    }

    fn apply(&mut self, batch: Vec<RawEvent>) {
        // Every event the watcher asks for but the barrier's is a change
        // (or a loss, read again as changes).
        let barrier = self.index.shared.sync.wd();
        if batch.iter().any(|e| !e.is_barrier(barrier)) {
            self.index.copy_before_change();
        }
        let mut changes = Vec::new();
        let mut rescans: Vec<(usize, EntryId)> = Vec::new();
        // Files written in this batch: a rewrite that keeps the size within the
        // same mtime second journals nothing, but subscribers must still hear of it.
        let mut written: Vec<String> = Vec::new();
        let followed = self.index.touches_followed();
        let mut opened = Opened::default();
        // Events were lost: until the roots are read again the index is
        // being compared with the disk, as after a restart.
        let mut lost = false;
        for raw in batch {
            let Some(event) = self.watcher.and_then(|w| w.translate(raw)) else {
                continue;
            };
            match event {
                FsEvent::Overflow => {
                    tracing::warn!("inotify queue overflowed; rescanning the roots");
                    lost = true;
                    self.index.set_status(|s| {
                        s.overflow_rescans += 1;
                        s.reconciling = true;
                    });
                    // Every root is read again after this batch: rename
                    // halves told before the loss are in that reading, and
                    // their partners may be lost.
                    self.pending_from.clear();
                    let roots = self.index.read_store().roots().to_vec();
                    rescans.extend(roots.into_iter().enumerate());
                }
                FsEvent::RootGone { root } => self.root_gone(root),
                FsEvent::MovedFrom {
                    root,
                    folder,
                    wd,
                    name,
                    cookie,
                } => {
                    if self.current(root, folder, wd) {
                        self.pending_from
                            .insert(cookie, (root, folder, name, self.batches));
                    }
                }
                FsEvent::MovedTo {
                    root,
                    folder,
                    wd,
                    name,
                    cookie,
                } => {
                    if !self.current(root, folder, wd) {
                        continue;
                    }
                    match self.pending_from.remove(&cookie) {
                        Some((from_root, from_folder, from_name, _)) if from_root == root => self
                            .rename(
                                root,
                                (from_folder, &from_name),
                                (folder, &name),
                                &mut opened,
                                &mut changes,
                                &mut rescans,
                            ),
                        Some((_, from_folder, from_name, _)) => {
                            self.moved_out(from_folder, &from_name, &mut changes);
                            self.refresh(
                                root,
                                folder,
                                &name,
                                &mut opened,
                                &mut changes,
                                &mut rescans,
                            );
                        }
                        None => {
                            // Moved in from outside: whatever it holds is new.
                            self.refresh(
                                root,
                                folder,
                                &name,
                                &mut opened,
                                &mut changes,
                                &mut rescans,
                            )
                        }
                    }
                }
                FsEvent::Removed {
                    root,
                    folder,
                    wd,
                    name,
                } => {
                    if self.current(root, folder, wd) {
                        self.removed(folder, &name, &mut changes);
                    }
                }
                FsEvent::Changed {
                    root,
                    folder,
                    wd,
                    name,
                } => {
                    if !self.current(root, folder, wd) {
                        continue;
                    }
                    if followed {
                        let store = self.index.read_store();
                        let mut path = display_path(&store, folder);
                        drop(store);
                        if path == "." {
                            path.clear();
                        } else {
                            path.push('/');
                        }
                        ferret_names::push_shown(&mut path, &name);
                        written.push(path);
                    }
                    self.refresh(root, folder, &name, &mut opened, &mut changes, &mut rescans)
                }
            }
        }
        written.retain(|p| !changes.iter().any(|c| &c.path == p));
        written.sort();
        written.dedup();
        self.finish(changes, rescans);
        if lost {
            self.index.set_status(|s| s.reconciling = false);
        }
        self.index.publish_touched(
            written
                .into_iter()
                .map(|path| crate::Touch {
                    path,
                    moved_from: None,
                    folder: false,
                })
                .collect(),
        );
    }

    fn root_gone(&mut self, root: usize) {
        tracing::warn!(root = %self.index.shared.config.roots[root].name, "a root disappeared while served");
        let name = self.index.shared.config.roots[root].name.clone();
        self.index.set_status(|s| {
            if !s.missing_roots.contains(&name) {
                s.missing_roots.push(name);
            }
        });
    }

    fn finish(&mut self, changes: Vec<Change>, mut rescans: Vec<(usize, EntryId)>) {
        rescans.sort_unstable();
        rescans.dedup();
        let had_changes = !changes.is_empty();
        if had_changes {
            self.index.record(&changes);
        }
        for (root, folder) in rescans {
            self.rescan(root, folder, &AtomicU64::new(0));
        }
        if had_changes {
            self.index.shared.dirty.store(true, Ordering::Relaxed);
            self.index
                .set_status(|s| s.updated_at = Some(now_rfc3339()));
        }
    }

    /// Renames whose second half never came: the entry left the roots (or
    /// went where the index does not follow), and its old name is looked at
    /// again.
    fn expire_renames(&mut self) {
        self.expire_renames_before(self.batches);
    }

    /// Every rename half still alone, whatever its age: its second half
    /// would have come before the barrier just passed.
    fn expire_renames_now(&mut self) {
        self.expire_renames_before(u64::MAX);
    }

    fn expire_renames_before(&mut self, batches: u64) {
        let expired: Vec<u32> = self
            .pending_from
            .iter()
            .filter(|(_, (_, _, _, batch))| *batch < batches)
            .map(|(&c, _)| c)
            .collect();
        if expired.is_empty() {
            return;
        }
        let mut changes = Vec::new();
        let mut rescans = Vec::new();
        let mut opened = Opened::default();
        for c in expired {
            if let Some((root, folder, name, _)) = self.pending_from.remove(&c) {
                self.moved_out(folder, &name, &mut changes);
                // The name may be filled again already (an exchange whose
                // other half was told to a folder the index does not follow,
                // or a new entry): it is what the disk says.
                self.refresh(root, folder, &name, &mut opened, &mut changes, &mut rescans);
            }
        }
        self.finish(changes, rescans);
    }

    /// The watches of the folders at and below `id`, with their folders.
    fn watches_below(&self, id: EntryId) -> Vec<(i32, EntryId)> {
        let store = self.index.read_store();
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(at) = stack.pop() {
            if let Some(d) = store.dir(at) {
                if d.wd >= 0 {
                    out.push((d.wd, at));
                }
                stack.extend_from_slice(store.children(at));
            }
        }
        out
    }

    /// An entry moved out of the roots: gone from the index, its folders unwatched.
    fn moved_out(&mut self, folder: EntryId, name: &[u8], changes: &mut Vec<Change>) {
        let child = self.index.read_store().child(folder, name);
        if let (Some(w), Some(id)) = (self.watcher, child) {
            for (wd, folder) in self.watches_below(id) {
                // Not a watch the folder shares with an entry made for it
                // since (the kernel gives a folder one watch, whoever asks).
                w.forget_of(wd, folder);
            }
        }
        self.removed(folder, name, changes);
    }

    fn removed(&mut self, folder: EntryId, name: &[u8], changes: &mut Vec<Change>) {
        let mut store = self.index.write_store();
        if !store.is_live(folder) {
            return;
        }
        if let Some(id) = store.child(folder, name) {
            changes.push(change(&store, id, Action::Deleted, None));
            store.remove(id);
        }
    }

    /// The open folder of an entry, checked against the device and inode it
    /// was indexed with (`None`, and a rescan of the folder itself, when it is
    /// not it).
    fn open<'o>(
        &self,
        root: usize,
        folder: EntryId,
        opened: &'o mut Opened,
        rescans: &mut Vec<(usize, EntryId)>,
    ) -> Option<BorrowedFd<'o>> {
        if let std::collections::hash_map::Entry::Vacant(slot) = opened.fds.entry(folder) {
            let (rel, want) = {
                let store = self.index.read_store();
                if !store.is_live(folder) {
                    return None;
                }
                (
                    store.rel_path(folder),
                    store.dir(folder).map(|d| (d.dev, d.ino)),
                )
            };
            let fd = self
                .index
                .root_fd(root)
                .and_then(|r| open_below(r, &rel).ok())
                .filter(|fd| want.is_none_or(|w| w == (0, 0) || ident(fd.as_fd()).ok() == Some(w)));
            if fd.is_none() {
                // Gone, or (more often, under churn) moved with an ancestor by
                // a rename whose events come later in this batch or the next:
                // the change that brought us here is lost unless the folder
                // itself is read again. The rescan runs once the batch is
                // applied, at the path the entry has then (it followed the
                // rename); if the folder is gone from there too, the rescan
                // reads its parent instead, and the rename's events, when
                // they come, bring the folder back whole. (A rescan of the
                // parent alone missed it: a folder moved away is in neither.)
                rescans.push((root, folder));
            }
            slot.insert(fd);
        }
        opened.fds.get(&folder)?.as_ref().map(|fd| fd.as_fd())
    }

    fn excluded(&mut self, root: usize, folder: EntryId, name: &[u8], is_dir: bool) -> bool {
        let Some(root_fd) = self.index.root_fd(root) else {
            return true;
        };
        let mut rel = self.index.read_store().rel_path(folder);
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(name);
        let rules = self.index.shared.config.rules;
        self.ignore[root].excluded(root_fd, rules, &rel, is_dir)
    }

    /// The entry `name` in `folder` may have appeared or changed: look at it.
    fn refresh(
        &mut self,
        root: usize,
        folder: EntryId,
        name: &[u8],
        opened: &mut Opened,
        changes: &mut Vec<Change>,
        rescans: &mut Vec<(usize, EntryId)>,
    ) {
        if is_ignore_file(name) {
            // The rules changed: what belongs below that folder may differ.
            self.ignore[root].clear();
            rescans.push((root, folder));
        }
        let Some(fd) = self.open(root, folder, opened, rescans) else {
            return;
        };
        let described = walk::describe(fd, name);
        let (kind, meta, ident) = match described {
            Ok(d) => d,
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOENT.raw_os_error()) => {
                self.removed(folder, name, changes);
                return;
            }
            Err(_) => return,
        };
        if self.excluded(root, folder, name, kind == Kind::Dir) {
            let mut store = self.index.write_store();
            if let Some(id) = store.child(folder, name) {
                store.remove(id);
            }
            return;
        }
        let mut store = self.index.write_store();
        if !store.is_live(folder) {
            return;
        }
        match store.child(folder, name) {
            Some(id) if store.kind(id) == kind => {
                let before = store.meta(id);
                if before != meta {
                    store.set_meta(id, meta);
                    if kind != Kind::Dir && (before.size != meta.size || before.mtime != meta.mtime)
                    {
                        changes.push(change(&store, id, Action::Modified, None));
                    }
                }
                if kind == Kind::Dir && store.dir(id).is_some_and(|d| (d.dev, d.ino) != ident) {
                    // Another folder under the same name: read it afresh.
                    store.set_ident(id, ident);
                    rescans.push((root, id));
                }
            }
            other => {
                if let Some(id) = other {
                    changes.push(change(&store, id, Action::Deleted, None));
                    store.remove(id);
                }
                let id = store.insert_new(folder, name, kind, meta);
                changes.push(change(&store, id, Action::Created, None));
                if kind == Kind::Dir {
                    store.set_ident(id, ident);
                    // Watch it and read it: files may have landed before the watch.
                    rescans.push((root, id));
                }
            }
        }
    }

    /// A rename's two halves, paired: `from`'s entry is moved to `to`, or
    /// `to` looked at afresh when what arrived is not what the index held.
    /// Then the name left behind is looked at too: an exchange (`renameat2`
    /// with RENAME_EXCHANGE) leaves both names filled, and when the watcher
    /// lags behind, the disk may already hold a later state than the event.
    fn rename(
        &mut self,
        root: usize,
        from: (EntryId, &[u8]),
        to: (EntryId, &[u8]),
        opened: &mut Opened,
        changes: &mut Vec<Change>,
        rescans: &mut Vec<(usize, EntryId)>,
    ) {
        if self.move_entry(root, from, to, opened, changes, rescans) {
            self.refresh(root, from.0, from.1, opened, changes, rescans);
        }
    }

    /// [`Self::rename`]'s move; returns whether the name left behind must
    /// still be looked at (not when it is known to hold the folder it held).
    fn move_entry(
        &mut self,
        root: usize,
        from: (EntryId, &[u8]),
        to: (EntryId, &[u8]),
        opened: &mut Opened,
        changes: &mut Vec<Change>,
        rescans: &mut Vec<(usize, EntryId)>,
    ) -> bool {
        let Some(id) = self.index.read_store().child(from.0, from.1) else {
            self.refresh(root, to.0, to.1, opened, changes, rescans);
            return true;
        };
        let Some(fd) = self.open(root, to.0, opened, rescans) else {
            self.moved_out(from.0, from.1, changes);
            return true;
        };
        let Ok((kind, meta, found)) = walk::describe(fd, to.1) else {
            // Gone again already: later events (or a rescan) tell the rest.
            self.moved_out(from.0, from.1, changes);
            return true;
        };
        let (same_kind, same_folder) = {
            let store = self.index.read_store();
            (
                store.kind(id) == kind,
                store.dir(id).is_none_or(|d| (d.dev, d.ino) == found),
            )
        };
        if !same_folder {
            // An exchange (`renameat2` with RENAME_EXCHANGE) is told as two
            // renames, each name to the other's place: by the second, the
            // first has already moved the index's folder to the name this
            // one leaves. When that name still holds the folder on disk,
            // only what arrived is new.
            let still_there = self.open(root, from.0, opened, rescans).is_some_and(|fd| {
                walk::describe(fd, from.1).is_ok_and(|(kind, _, found)| {
                    let store = self.index.read_store();
                    kind == Kind::Dir && store.dir(id).is_some_and(|d| (d.dev, d.ino) == found)
                })
            });
            if still_there {
                self.refresh(root, to.0, to.1, opened, changes, rescans);
                return false;
            }
            // What arrived is not the folder the index had under the old name:
            // the index's picture of this corner is stale. Drop the old entry
            // (its folder lives on elsewhere: read the root again once events
            // pause) and look at what arrived.
            self.removed(from.0, from.1, changes);
            self.settle_later(root);
            self.refresh(root, to.0, to.1, opened, changes, rescans);
            return true;
        }
        if !same_kind || self.excluded(root, to.0, to.1, kind == Kind::Dir) {
            self.moved_out(from.0, from.1, changes);
            if !same_kind {
                self.refresh(root, to.0, to.1, opened, changes, rescans);
            }
            return true;
        }
        let mut store = self.index.write_store();
        if !store.is_live(to.0) || store.is_within(to.0, id) {
            // The index's picture of this corner is stale (the destination would
            // lie inside the entry itself): look at the disk again.
            drop(store);
            self.moved_out(from.0, from.1, changes);
            self.refresh(root, to.0, to.1, opened, changes, rescans);
            return true;
        }
        let old_path = display_path(&store, id);
        let old_parent = store.parent(id);
        let old_rel = (kind == Kind::Dir).then(|| store.rel_path(id));
        if let Some(existing) = store.child(to.0, to.1)
            && existing != id
        {
            changes.push(change(&store, existing, Action::Deleted, None));
            if store.is_within(id, existing) {
                // The entry replaces a folder the index has it inside: the
                // disk cannot hold that, so the picture is stale; what else
                // lay in that folder is read again once events pause.
                self.settle_later(root);
            }
        }
        store.rename(id, to.0, to.1);
        store.set_meta(id, meta);
        // The folders the watcher cannot hear move with it.
        let relisted = old_rel.and_then(|old_rel| {
            let new_rel = store.rel_path(id);
            let mut listed = self.index.unheard();
            let mut moved = false;
            for (r, rel, _) in listed.iter_mut() {
                if *r == root && crate::watched_walk::within(rel, &old_rel) {
                    let mut renamed = new_rel.clone();
                    renamed.extend_from_slice(&rel[old_rel.len()..]);
                    *rel = renamed;
                    moved = true;
                }
            }
            moved.then_some(listed)
        });
        let action = if old_parent == to.0 {
            Action::Renamed
        } else {
            Action::Moved
        };
        changes.push(change(&store, id, action, Some(old_path)));
        drop(store);
        if let Some(listed) = relisted {
            self.index.publish_unheard(listed);
        }
        true
    }

    /// The folders on network or FUSE file systems, as entries (`None`
    /// when there are none).
    fn network_folders(&self) -> Option<Vec<(usize, EntryId)>> {
        let wanted = self.index.unheard().clone();
        if wanted.is_empty() {
            return None;
        }
        let store = self.index.read_store();
        let mut folders: Vec<(usize, EntryId)> = wanted
            .iter()
            .filter_map(|(root, rel, _)| {
                let top = *store.roots().get(*root)?;
                let id = if rel.is_empty() {
                    top
                } else {
                    store.lookup(top, rel)?
                };
                Some((*root, id))
            })
            .collect();
        // A folder inside another one is read with it.
        folders.sort_unstable();
        folders.dedup();
        let inside: Vec<bool> = folders
            .iter()
            .map(|&(_, id)| {
                folders
                    .iter()
                    .any(|&(_, other)| other != id && store.is_within(id, other))
            })
            .collect();
        let mut keep = inside.into_iter();
        folders.retain(|_| !keep.next().unwrap_or(false));
        Some(folders)
    }

    /// Read again each indexed folder where something was mounted,
    /// unmounted or mounted anew since the mount table was last read
    /// (neither makes an inotify event), its folders the watcher cannot hear
    /// forgotten first (the walk names them again if they still are), then
    /// ask the whole index for folders at two paths: a network file system
    /// is named as the walk enters it, a bind mount here. A mount point
    /// that is a file has its folder's entries compared.
    fn remount(&mut self, mounts: &mut Option<crate::mounts::MountWatch>) {
        // (One `poll` at each barrier; the roots' handles only once marked.)
        let Some(watch) = mounts.as_mut() else {
            return;
        };
        if !watch.marked() {
            return;
        }
        let Some(changed) = watch.changed(&self.index.root_fd_list()) else {
            // Read again at the next barrier; until then nothing is vouched for.
            self.index
                .shared
                .mounts_unsure
                .store(true, Ordering::Release);
            return;
        };
        if changed.is_empty() {
            // (Read, or known unchanged: a failed reading is made good.)
            if self.index.shared.mounts_unsure.load(Ordering::Acquire) {
                self.note_mounted_files(Some(watch));
            }
            return;
        }
        {
            let mut listed = self.index.unheard();
            listed.retain(|(r, rel, fs)| {
                *fs == walk::TWO_PATHS
                    || *fs == walk::FILE_MOUNT
                    || !changed
                        .iter()
                        .any(|(root, point)| root == r && crate::watched_walk::within(rel, point))
            });
        }
        for (root, rel) in &changed {
            let (folder, shallow) = {
                let store = self.index.read_store();
                let at = store
                    .roots()
                    .get(*root)
                    .and_then(|&top| store.lookup(top, rel));
                match at {
                    Some(id) if store.kind(id) == Kind::Dir => (Some(id), false),
                    Some(id) => (Some(store.parent(id)), true),
                    None => (None, false),
                }
            };
            match folder {
                Some(folder) if shallow => {
                    self.rescan_part(*root, folder, true, &AtomicU64::new(0))
                }
                Some(folder) => {
                    tracing::debug!(root, "a mount changed: its folder read again");
                    self.rescan(*root, folder, &AtomicU64::new(0));
                }
                None => {}
            }
        }
        note_two_paths(self.index);
        self.note_mounted_files(Some(watch));
    }

    /// The folders holding a mount point below a root that is a file the
    /// index holds (its changes are heard at neither path), listed with the
    /// folders the watcher cannot hear ([`walk::FILE_MOUNT`]) in place of
    /// the last ones; and the table known read.
    fn note_mounted_files(&self, mounts: Option<&crate::mounts::MountWatch>) {
        let Some(watch) = mounts else {
            return;
        };
        let mut folders: Vec<(usize, Vec<u8>)> = {
            let store = self.index.read_store();
            watch
                .points()
                .filter_map(|(root, rel)| {
                    let id = store.lookup(*store.roots().get(root)?, rel)?;
                    (store.kind(id) != Kind::Dir).then(|| (root, store.rel_path(store.parent(id))))
                })
                .collect()
        };
        folders.sort();
        folders.dedup();
        let mut listed = self.index.unheard();
        let before = listed.len();
        listed.retain(|e| e.2 != walk::FILE_MOUNT);
        if before != listed.len() || !folders.is_empty() {
            for (root, rel) in folders {
                crate::watched_walk::list_unheard(&mut listed, root, rel, walk::FILE_MOUNT);
            }
            self.index.publish_unheard(listed);
        }
        self.index
            .shared
            .mounts_unsure
            .store(false, Ordering::Release);
    }

    /// Reconcile a whole root with the disk.
    pub(crate) fn rescan_root(&mut self, root: usize, progress: &AtomicU64) {
        let top = self.index.read_store().roots()[root];
        self.rescan(root, top, progress);
        // A bind mount made since is found here (it makes no event).
        note_two_paths(self.index);
    }

    /// Walk the folder `folder` again and make the index agree with it,
    /// journalling every difference; its folders are (re)watched as they are
    /// read. A part of the tree at most `rescan_part` entries large is
    /// walked whole into a store of its own and compared; a larger folder
    /// has its own entries compared, and then each of its subfolders in the
    /// same way. (Walking a whole large tree beside the index doubled the
    /// memory of a restart: 1M entries, 98 → 207 MiB.)
    fn rescan(&mut self, root: usize, folder: EntryId, progress: &AtomicU64) {
        let started = Instant::now();
        let (mut parts, mut shallow) = (0u64, 0u64);
        let part = self.index.shared.config.rescan_part;
        let mut stack = vec![folder];
        while let Some(folder) = stack.pop() {
            parts += 1;
            let large = below_at_least(&self.index.read_store(), folder, part);
            self.rescan_part(root, folder, large, progress);
            if large {
                shallow += 1;
                let store = self.index.read_store();
                if store.is_live(folder) && store.kind(folder) == Kind::Dir {
                    stack.extend(
                        store
                            .children(folder)
                            .iter()
                            .copied()
                            .filter(|&c| store.kind(c) == Kind::Dir),
                    );
                }
            }
        }
        if parts > 1 {
            tracing::debug!(
                parts,
                shallow,
                ms = started.elapsed().as_millis() as u64,
                "folder read again in parts"
            );
        }
    }

    /// [`Applier::rescan`] of one part: `folder` and all below it, or with
    /// `shallow` its own entries alone (a new subfolder is added empty, to
    /// be read by its own part).
    fn rescan_part(&mut self, root: usize, folder: EntryId, shallow: bool, progress: &AtomicU64) {
        let (rel, parent, is_dir) = {
            let store = self.index.read_store();
            if !store.is_live(folder) {
                return;
            }
            (
                store.rel_path(folder),
                store.parent(folder),
                store.kind(folder) == Kind::Dir,
            )
        };
        if !is_dir {
            return;
        }
        let Some(root_fd) = self.index.root_fd(root) else {
            return;
        };
        let fd = match open_below(root_fd, &rel) {
            Ok(fd) => fd,
            Err(_) if parent != NONE => {
                // Gone, or no longer a folder: its parent says what it is now.
                self.rescan(root, parent, progress);
                return;
            }
            Err(_) => return,
        };
        let chain = if rel.is_empty() || self.index.shared.config.rules.no_ignore {
            Chain::root(None)
        } else {
            let parent_rel = match memchr::memrchr(b'/', &rel) {
                Some(i) => &rel[..i],
                None => &rel[..0],
            };
            self.ignore[root].chain_of(root_fd, parent_rel)
        };
        let (fresh, fresh_top, stats, added) = walk_apart(
            self.index,
            self.watcher,
            root,
            fd,
            rel,
            chain,
            progress,
            shallow,
        );
        note_stats(self.index, root, &stats);
        let mut changes = Vec::new();
        let mut pairs = HashMap::new();
        let ops = {
            let store = self.index.read_store();
            if !store.is_live(folder) {
                // (The walk's watches stand for its own store's entries:
                // undone, not left pointing at entries of another.)
                if let Some(w) = self.watcher {
                    for a in &added {
                        w.undo(a.wd, a.before);
                    }
                }
                return;
            }
            plan_reconcile(&store, folder, &fresh, fresh_top, &mut pairs, shallow)
        };
        apply_reconcile(self.index, ops, &fresh, &mut changes, &mut pairs);
        {
            let mut store = self.index.write_store();
            if let Some(d) = fresh.dir(fresh_top) {
                store.set_ident(folder, (d.dev, d.ino));
            }
            register_watches(&mut store, self.watcher, root, &added, &pairs);
        }
        if !changes.is_empty() {
            self.index.shared.dirty.store(true, Ordering::Relaxed);
            self.index.record(&changes);
            self.index
                .set_status(|s| s.updated_at = Some(now_rfc3339()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{IndexConfig, IndexRoot};

    /// An index of `tmp` built with a watcher whose events the test hands to
    /// an [`Applier`] itself, in the batches it chooses.
    fn watched(tmp: &std::path::Path) -> (Index, Watcher, mpsc::Receiver<RawEvent>) {
        let index = Index::open(IndexConfig::new(vec![IndexRoot::new("r", tmp)])).unwrap();
        let (tx, rx) = mpsc::sync_channel(crate::inotify_watch::EVENT_QUEUE);
        let watcher = Watcher::start(tx).unwrap();
        build(&index, Some(&watcher), &AtomicU64::new(0));
        (index, watcher, rx)
    }

    /// While the orders are rebuilt, a barrier with nothing before it is
    /// passed at once; one behind a change waits, with the change, in order,
    /// for the applier.
    #[test]
    fn a_barrier_is_passed_during_a_rebuild_only_when_no_change_came_first() {
        let tmp = tempfile::tempdir().unwrap();
        let (index, _w, rx) = watched(tmp.path());
        let mut backlog = VecDeque::new();
        // The "rebuild" lasts until the barrier's caller has its answer.
        let during =
            |work_done: &std::sync::atomic::AtomicBool, backlog: &mut VecDeque<RawEvent>, wait| {
                std::thread::scope(|scope| {
                    let asked = scope.spawn(|| {
                        let passed = index.sync(wait);
                        work_done.store(true, Ordering::Release);
                        passed
                    });
                    // Listening ends when the caller has its answer: the
                    // barrier's event is received while the "rebuild" runs.
                    listen_while(&index, true, &rx, backlog, &mut None, || {
                        while !work_done.load(Ordering::Acquire) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    });
                    asked.join().unwrap()
                })
            };
        let done = std::sync::atomic::AtomicBool::new(false);
        assert!(during(&done, &mut backlog, Duration::from_secs(10)));
        assert!(backlog.is_empty());
        std::fs::write(tmp.path().join("made.txt"), "x").unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        assert!(!during(&done, &mut backlog, Duration::from_millis(300)));
        let barrier = index.shared.sync.wd();
        assert!(
            !backlog.is_empty() && !backlog[0].is_barrier(barrier),
            "the change first"
        );
        assert!(
            backlog.iter().any(|e| e.is_barrier(barrier)),
            "then the barrier, held"
        );
    }

    /// The raw events queued up to the move of a folder to `to`.
    fn events_until_moved_to(
        w: &Watcher,
        rx: &mpsc::Receiver<RawEvent>,
        to: &[u8],
    ) -> Vec<RawEvent> {
        let mut out = Vec::new();
        loop {
            let raw = rx.recv_timeout(Duration::from_secs(5)).expect("an event");
            let last = matches!(w.translate(raw.clone()), Some(FsEvent::MovedTo { name, .. }) if name == to);
            out.push(raw);
            if last {
                return out;
            }
        }
    }

    fn has(index: &Index, rel: &str) -> bool {
        let store = index.read_store();
        store.lookup(store.roots()[0], rel.as_bytes()).is_some()
    }

    /// A file made in a folder that then moves, before the watcher has
    /// applied either: the file's event finds the folder gone from the path
    /// the index knows. The folder itself must be read again once the move
    /// is applied (reading only its old parent, which no longer holds it,
    /// lost the file for good).
    #[test]
    fn a_file_made_in_a_folder_that_moves_before_the_event_is_applied_is_kept() {
        for split in [false, true] {
            let tmp = tempfile::tempdir().unwrap();
            let t = tmp.path();
            std::fs::create_dir_all(t.join("a/b")).unwrap();
            std::fs::create_dir(t.join("c")).unwrap();
            let (index, w, rx) = watched(t);
            let mut applier = Applier::new(&index, Some(&w));
            std::fs::write(t.join("a/b/new.txt"), "x").unwrap();
            std::fs::rename(t.join("a/b"), t.join("c/moved")).unwrap();
            let mut events = events_until_moved_to(&w, &rx, b"moved");
            if split {
                // The move in the next batch: the folder is first read at
                // its old path (gone), then its move brings it back whole.
                let moves = events.split_off(events.len() - 2);
                applier.batches += 1;
                applier.apply(events);
                applier.batches += 1;
                applier.apply(moves);
            } else {
                applier.batches += 1;
                applier.apply(events);
            }
            applier.expire_renames();
            assert!(has(&index, "c/moved/new.txt"), "split {split}");
            assert!(!has(&index, "a/b"), "split {split}");
        }
    }

    /// A folder exchanged with a symlink (`renameat2` with RENAME_EXCHANGE:
    /// two renames, each name to the other's place) is held at its new name
    /// once both halves are applied, without waiting for the root to be read
    /// again (the second half used to drop it: its name no longer held what
    /// arrived at the other).
    #[test]
    fn a_folder_exchanged_with_a_link_is_kept_at_its_new_name() {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        std::fs::create_dir(t.join("d")).unwrap();
        std::fs::write(t.join("d/inner.txt"), "x").unwrap();
        std::os::unix::fs::symlink("nowhere", t.join("l")).unwrap();
        let (index, w, rx) = watched(t);
        let mut applier = Applier::new(&index, Some(&w));
        renameat_with(CWD, t.join("d"), CWD, t.join("l"), RenameFlags::EXCHANGE).unwrap();
        let events = events_until_moved_to(&w, &rx, b"d");
        applier.batches += 1;
        applier.apply(events);
        assert!(applier.settle.is_empty(), "nothing left to read again");
        assert!(has(&index, "l/inner.txt"));
        let store = index.read_store();
        let d = store.lookup(store.roots()[0], b"d").expect("d is held");
        assert_eq!(store.kind(d), Kind::Symlink);
    }

    /// The same when an ancestor of the folder moves.
    #[test]
    fn a_file_made_below_a_folder_that_moves_before_the_event_is_applied_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        std::fs::create_dir_all(t.join("a/b/deep")).unwrap();
        std::fs::create_dir(t.join("c")).unwrap();
        let (index, w, rx) = watched(t);
        let mut applier = Applier::new(&index, Some(&w));
        std::fs::write(t.join("a/b/deep/new.txt"), "x").unwrap();
        std::fs::rename(t.join("a"), t.join("c/moved")).unwrap();
        let events = events_until_moved_to(&w, &rx, b"moved");
        applier.batches += 1;
        applier.apply(events);
        assert!(has(&index, "c/moved/b/deep/new.txt"));
        assert!(!has(&index, "a"));
    }

    /// Names exchanged again and again (`renameat2` with RENAME_EXCHANGE)
    /// while the watcher lags behind: when the events of one exchange are
    /// applied, the disk may already hold a later one. Both names of every
    /// exchange still exist, so once all events are applied the index holds
    /// both, as they are on disk, without waiting for a rescan (the second
    /// half used to drop the name it left when what it found there was of
    /// another kind, or hidden).
    #[test]
    fn names_exchanged_under_a_lagging_watcher_are_both_kept() {
        use rustix::fs::{CWD, FileType, Mode, RenameFlags, mknodat, renameat_with};
        for swaps in 1..=4 {
            for per_swap in [false, true] {
                let tmp = tempfile::tempdir().unwrap();
                let t = tmp.path();
                std::fs::write(t.join("fileordir"), "x").unwrap();
                std::fs::create_dir(t.join("dirorfile")).unwrap();
                std::fs::write(t.join("dirorfile/x.txt"), "x").unwrap();
                std::fs::write(t.join(".hidden"), "x").unwrap();
                std::fs::write(t.join("one"), "1").unwrap();
                std::fs::write(t.join("two"), "22").unwrap();
                mknodat(
                    CWD,
                    t.join("gifo"),
                    FileType::Fifo,
                    Mode::from_raw_mode(0o644),
                    0,
                )
                .unwrap();
                let (index, w, rx) = watched(t);
                let mut applier = Applier::new(&index, Some(&w));
                let mut batches = Vec::new();
                for _ in 0..swaps {
                    for (a, b) in [
                        ("fileordir", "dirorfile"),
                        (".hidden", "gifo"),
                        ("one", "two"),
                    ] {
                        renameat_with(CWD, t.join(a), CWD, t.join(b), RenameFlags::EXCHANGE)
                            .unwrap();
                        batches.push(events_until_moved_to(&w, &rx, a.as_bytes()));
                    }
                }
                if !per_swap {
                    batches = vec![batches.concat()];
                }
                for events in batches {
                    applier.batches += 1;
                    applier.apply(events);
                }
                applier.expire_renames();
                let odd = swaps % 2 == 1;
                let what = format!("{swaps} swaps, per swap {per_swap}");
                let store = index.read_store();
                let top = store.roots()[0];
                let kind = |rel: &str| store.lookup(top, rel.as_bytes()).map(|id| store.kind(id));
                let (f, d) = if odd {
                    ("dirorfile", "fileordir")
                } else {
                    ("fileordir", "dirorfile")
                };
                assert_eq!(kind(f), Some(Kind::File), "{what}: {f}");
                assert_eq!(kind(d), Some(Kind::Dir), "{what}: {d}");
                assert_eq!(kind(&format!("{d}/x.txt")), Some(Kind::File), "{what}");
                let gifo = if odd { Kind::File } else { Kind::Other };
                assert_eq!(kind("gifo"), Some(gifo), "{what}: gifo");
                assert_eq!(kind(".hidden"), None, "{what}");
                let size = |rel: &str| {
                    store
                        .lookup(top, rel.as_bytes())
                        .map(|id| store.meta(id).size)
                };
                let (one, two) = if odd { (2, 1) } else { (1, 2) };
                assert_eq!((size("one"), size("two")), (Some(one), Some(two)), "{what}");
            }
        }
    }
}
