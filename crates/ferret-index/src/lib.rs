//! ferret's live index: every file and folder under the roots, in memory.
//!
//! [`Index::open`] loads the last snapshot (so answers come at once after a
//! restart), [`Index::start`] walks or reconciles the roots in the background and
//! then follows inotify, journalling what
//! changed. Searches run on a read lock while updates take short write locks.
//!
//! ```no_run
//! use ferret_index::{Index, IndexConfig, IndexRoot};
//! let index = Index::open(IndexConfig::new(vec![IndexRoot::new("docs", "/srv/docs")])).unwrap();
//! index.build_now(None);
//! let query = ferret_query::Query::compile("ext:md", &Default::default(), &ferret_query::Clock::system()).unwrap();
//! println!("{} markdown files", index.count(&query));
//! ```
//!
//! Invariants: this crate reads names and metadata, never file contents, and never
//! follows a symlink; it knows nothing of MCP.

mod adopt;
mod arr;
mod at_paths;
mod base;
mod cores;
mod hits;
mod orders;
mod plan;
mod request;
mod stop;
mod trim;
mod wire;
pub use cores::cores;
pub use hits::find_display_path;
pub use trim::map_large_allocations;
mod complete;
mod config;
mod dirs;
mod echo;
mod folders;
pub mod fuzzy;
pub mod health;
mod inotify_watch;
pub mod journal;
mod mounts;
mod names;
mod postings;
mod rank;
mod reconcile;
mod rules;
mod scratch;
pub mod search;
pub mod snapshot;
mod status;
pub mod store;
mod suggest;
mod sync;
#[cfg(test)]
mod testing;
mod threshold;
pub mod uses;
pub mod walk;
mod watch;
mod watched_walk;

use std::{
    os::fd::{AsFd, BorrowedFd, OwnedFd},
    sync::{
        Arc, Condvar, Mutex, RwLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

pub use complete::Completion;
pub use config::{IndexConfig, IndexRoot};
pub use journal::{Action, Change, ChangesQuery, Journal};
pub use rules::Rules;
pub use search::{GroupBy, Hit, SearchOutcome, SearchRequest, SortKey};
pub use status::{Carried, Status, Tally};
pub use stop::{SEARCH_CPU_BUDGET, Stop, Stopped};
pub use store::{EntryId, Kind, Meta, Store};
pub use walk::WalkStats;

/// How long a search waits at the watcher's barrier ([`Index::caught_up`])
/// before it answers without it: well under a millisecond when the watcher
/// is idle; past this it is busy, and the caller looks at the disk itself.
pub const CATCH_UP_WAIT: Duration = Duration::from_secs(1);

/// How long a name search waits at the watcher's barrier before it answers
/// from the index as it stands and says it may be behind. Shorter than
/// [`CATCH_UP_WAIT`] (grep looks at the disk when the barrier is not
/// passed; a name search has nothing else to look at): changes that come
/// while the orders are rebuilt (a second at a million entries) wait for the
/// rebuild, and so does a barrier behind them; a search then should not wait
/// it out. An idle watcher passes a barrier in tens of microseconds.
pub const SEARCH_CATCH_UP_WAIT: Duration = Duration::from_millis(250);

/// How many bytes of an array [`Index::read_in_place`] compares under one
/// read lock: about a millisecond's work (pages of the new snapshot's map
/// faulted in, then compared).
const READ_BACK_SLICE: usize = 1 << 20;

/// A path below a root: the root's number, the path's bytes.
pub(crate) type RootPath = (usize, Vec<u8>);

/// Uses kept while the scores are being read (see `Shared::pending_uses`).
const PENDING_USES_MAX: usize = 10_000;

/// One path of the change feed ([`Index::touches_with_moves`]): a change
/// there, or, with `moved_from`, an entry moved or renamed from that path
/// (the kernel said so: a rename, not a guess from what the disk now holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touch {
    /// The path as shown to agents.
    pub path: String,
    /// For a move or rename, where the entry was.
    pub moved_from: Option<String>,
    /// The entry is a folder (what lies below it moved with it).
    pub folder: bool,
}

/// A follower of the change feed, as it asked for it.
pub(crate) enum Listener {
    /// [`Index::touches`]: paths, a move as its new path and its old one.
    Paths(mpsc::Sender<Vec<String>>),
    /// [`Index::touches_with_moves`].
    Touches(mpsc::Sender<Vec<Touch>>),
}

pub(crate) struct Shared {
    pub config: IndexConfig,
    /// Each root's folder, opened once: every walk, watch and rescan starts from
    /// it (`None` when the root could not be opened).
    pub root_fds: Vec<Option<OwnedFd>>,
    pub store: RwLock<Store>,
    /// How many times the store's write lock was taken: read under the read
    /// lock, it says whether the store may have changed since it was last
    /// read (see [`Index::read_in_place`]).
    pub store_writes: AtomicU64,
    pub status: Mutex<Status>,
    pub ready: Condvar,
    pub journal: Mutex<Option<Journal>>,
    pub dirty: AtomicBool,
    pub stop: AtomicBool,
    pub progress: AtomicU64,
    /// What ferret's own writes left, so that the watcher's echo of the same
    /// change is not journalled a second time as `external` (see `echo`).
    pub own_changes: echo::OwnWrites,
    /// Files used lately through ferret (read, edited, matched). Read by
    /// relevance and fuzzy searches, which may hold it for as long as they run
    /// (a whole-tree search, seconds on a loaded machine): uses are written
    /// only by whoever gets it at once, never waited for (see `pending_uses`).
    pub uses: RwLock<uses::Uses>,
    /// Uses recorded while `uses` was busy, applied by the next writer that
    /// gets it (at most `PENDING_USES_MAX`; the rest are dropped: a use is a
    /// ranking hint, and a read must not wait on a search).
    pub pending_uses: Mutex<Vec<(String, f64, i64)>>,
    /// Held while the snapshot (and the use scores) are written: a save at
    /// shutdown can come while the periodic one runs beside the watcher, and
    /// both write through the same temporary file.
    pub saving: Mutex<()>,
    /// Receivers of [`Index::touches`].
    pub touch_listeners: Mutex<Vec<Listener>>,
    /// The watcher's barrier (see [`Index::sync`]).
    pub sync: sync::SyncPoint,
    /// Built, watching every folder of every root (no watch limit reached,
    /// no root missing): kept by `set_status`, read by [`Index::caught_up`]
    /// without cloning the status.
    pub hears_all: AtomicBool,
    /// As `hears_all`, but for the folders in `network`: what
    /// [`Index::caught_up_but`] reads.
    pub hears_outside: AtomicBool,
    /// The mount table cannot be watched, or a change to it could not be
    /// read (`mounts.rs`): the watcher may miss a change anywhere, so
    /// nothing is vouched for.
    pub mounts_unsure: AtomicBool,
    /// ferret's own temporary files the walks met, (root, path below it),
    /// until [`Index::take_own_temps`] takes them; `None` from then on (the
    /// start-up sweep is over, and later walks collect nothing).
    pub own_temps: Mutex<Option<Vec<RootPath>>>,
    /// Folders on network or FUSE file systems the walks entered, and
    /// folders they reached at two paths (`walk::TWO_PATHS`): (root, path
    /// below it, file system), read again every `limit_rescan_every`.
    pub network: Mutex<Vec<(usize, Vec<u8>, &'static str)>>,
    /// Made from, or handing over to, the index of other settings (`adopt`).
    pub adopt: adopt::Slots,
}

/// The live index. Cheap to clone.
#[derive(Clone)]
pub struct Index {
    pub(crate) shared: Arc<Shared>,
}

pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn root_meta(fd: Option<&OwnedFd>) -> Meta {
    fd.and_then(|fd| walk::describe(fd.as_fd(), b".").ok())
        .map(|(_, m, _)| m)
        .unwrap_or_default()
}

impl Index {
    /// Load the snapshot when there is one (logging why not otherwise) and open
    /// the journal. Nothing is walked yet: see [`Index::start`] and [`Index::build_now`].
    pub fn open(config: IndexConfig) -> Result<Index, String> {
        let mut status = Status {
            watcher: "not started".into(),
            ..Status::default()
        };
        let mut store = None;
        if let Some(path) = config.snapshot_path() {
            let started = Instant::now();
            let trust = if config.one_shot {
                snapshot::Trust::Layout
            } else {
                snapshot::Trust::Checked
            };
            match snapshot::load_with(&path, &config.key(), trust) {
                Ok(loaded) if loaded.roots().len() == config.roots.len() => {
                    status.loaded_from_snapshot = true;
                    status.ready = true;
                    status.reconciling = true;
                    status.snapshot_load_ms = Some(started.elapsed().as_millis() as u64);
                    status.entries = loaded.len() as u64;
                    tracing::info!(
                        entries = loaded.len(),
                        ms = started.elapsed().as_millis() as u64,
                        "index snapshot loaded"
                    );
                    store = Some(loaded);
                }
                Ok(_) => tracing::warn!(
                    "index snapshot {} does not match the roots; discarded",
                    path.display()
                ),
                Err(snapshot::SnapshotError::Missing) => {}
                Err(e) => tracing::warn!("index snapshot {} discarded: {e}", path.display()),
            }
        }
        let root_fds: Vec<Option<OwnedFd>> = config
            .roots
            .iter()
            .map(|r| match dirs::open_root(&r.walk_path) {
                Ok(fd) => Some(fd),
                Err(e) => {
                    tracing::warn!(root = %r.name, "root cannot be opened: {e}");
                    None
                }
            })
            .collect();
        let store = store.unwrap_or_else(|| {
            let mut s = Store::new();
            for (r, fd) in config.roots.iter().zip(&root_fds) {
                s.add_root(r.name.as_bytes(), root_meta(fd.as_ref()));
            }
            s
        });
        let uses = config
            .uses_path()
            .map(|p| uses::Uses::load(&p))
            .unwrap_or_default();
        let journal = match config.journal_path() {
            // Nothing to journal: the one-shot process changes nothing.
            _ if config.one_shot => None,
            Some(path) => match Journal::open(
                &path,
                config.journal_max_age.as_millis() as i64,
                config.journal_max_rows,
            ) {
                Ok(j) => Some(j),
                Err(e) => {
                    let msg = format!("journal {} unusable: {e}", path.display());
                    tracing::warn!("{msg}; changes are kept in memory");
                    status.journal_error = Some(msg);
                    Journal::in_memory(
                        config.journal_max_age.as_millis() as i64,
                        config.journal_max_rows,
                    )
                    .ok()
                }
            },
            None => Journal::in_memory(
                config.journal_max_age.as_millis() as i64,
                config.journal_max_rows,
            )
            .ok(),
        };
        Ok(Index {
            shared: Arc::new(Shared {
                config,
                root_fds,
                store: RwLock::new(store),
                status: Mutex::new(status),
                ready: Condvar::new(),
                journal: Mutex::new(journal),
                dirty: AtomicBool::new(false),
                stop: AtomicBool::new(false),
                progress: AtomicU64::new(0),
                store_writes: AtomicU64::new(0),
                own_changes: echo::OwnWrites::default(),
                uses: RwLock::new(uses),
                pending_uses: Mutex::new(Vec::new()),
                saving: Mutex::new(()),
                touch_listeners: Mutex::new(Vec::new()),
                sync: sync::SyncPoint::default(),
                hears_all: AtomicBool::new(false),
                hears_outside: AtomicBool::new(false),
                mounts_unsure: AtomicBool::new(false),
                own_temps: Mutex::new(Some(Vec::new())),
                network: Mutex::new(Vec::new()),
                adopt: adopt::Slots::default(),
            }),
        })
    }

    pub fn config(&self) -> &IndexConfig {
        &self.shared.config
    }

    /// Entries walked so far by the current build (for progress bars).
    pub fn progress(&self) -> u64 {
        self.shared.progress.load(Ordering::Relaxed)
    }

    /// How many times the watcher's queue overflowed and the index rescanned
    /// (a cheap read, for loops that only need this of [`Index::status`]).
    pub fn overflow_rescans(&self) -> u64 {
        self.shared
            .status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .overflow_rescans
    }

    /// The size and mtime of the file at a path as shown to agents; `None`
    /// when the index has no such file (or it is a folder).
    pub fn file(&self, shown: &str) -> Option<(u64, i64)> {
        let store = self.read_store();
        let id = hits::find_display_path(&store, shown)?;
        (store.kind(id) == Kind::File).then(|| {
            let m = store.meta(id);
            (m.size, m.mtime)
        })
    }

    pub fn status(&self) -> Status {
        let mut s = self
            .shared
            .status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        s.entries = self
            .read_store()
            .len()
            .saturating_sub(self.shared.config.roots.len()) as u64;
        for name in self.missing_roots() {
            if !s.missing_roots.contains(&name) {
                s.missing_roots.push(name);
            }
        }
        s
    }

    /// Roots whose folder is gone (checked live: a deleted folder that ferret
    /// still holds open sends no inotify event until the last handle closes,
    /// which ferret never does).
    pub(crate) fn missing_roots(&self) -> Vec<String> {
        self.shared
            .config
            .roots
            .iter()
            .zip(&self.shared.root_fds)
            .filter(|(r, fd)| {
                !fd.as_ref()
                    .is_some_and(|fd| same_folder(&r.path, fd.as_fd()))
            })
            .map(|(r, _)| r.name.clone())
            .collect()
    }

    /// The folders the watcher cannot hear (`Shared::network`), locked.
    pub(crate) fn unheard(&self) -> std::sync::MutexGuard<'_, Vec<(usize, Vec<u8>, &'static str)>> {
        self.shared
            .network
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The status's list of the folders the watcher cannot hear, made from
    /// `listed` (the locked list, let go here).
    pub(crate) fn publish_unheard(
        &self,
        listed: std::sync::MutexGuard<'_, Vec<(usize, Vec<u8>, &'static str)>>,
    ) {
        let shown = self.shown_network(&listed);
        drop(listed);
        self.set_status(|s| s.network_folders = shown);
    }

    /// Every root's open handle, by root number (`None` where it could not
    /// be opened).
    pub(crate) fn root_fd_list(&self) -> Vec<Option<BorrowedFd<'_>>> {
        (0..self.shared.config.roots.len())
            .map(|r| self.root_fd(r))
            .collect()
    }

    /// The open folder of root number `root`.
    pub(crate) fn root_fd(&self, root: usize) -> Option<BorrowedFd<'_>> {
        self.shared
            .root_fds
            .get(root)?
            .as_ref()
            .map(|fd| fd.as_fd())
    }

    /// Rebuild the sorted orders and name lists when enough has changed since the
    /// last rebuild: built under the read lock (searches go on), swapped in under
    /// a short write lock. Only the index's own thread changes the store, so
    /// nothing changes in between.
    pub(crate) fn rebuild_if_needed(&self) {
        if !self.read_store().needs_rebuild() {
            return;
        }
        let started = Instant::now();
        let rebuilt = orders::rebuild(&self.read_store());
        let built = started.elapsed();
        self.write_store().install(rebuilt);
        trim::give_back_memory();
        tracing::debug!(
            build_ms = built.as_millis() as u64,
            swap_us = (started.elapsed() - built).as_micros() as u64,
            "index orders rebuilt"
        );
    }

    pub fn journal_len(&self) -> u64 {
        self.shared
            .journal
            .lock()
            .ok()
            .and_then(|j| j.as_ref().map(Journal::len))
            .unwrap_or(0)
    }

    pub(crate) fn read_store(&self) -> std::sync::RwLockReadGuard<'_, Store> {
        self.shared.store.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn write_store(&self) -> std::sync::RwLockWriteGuard<'_, Store> {
        let store = self.shared.store.write().unwrap_or_else(|p| p.into_inner());
        // Counted while held: under a read lock the count cannot move.
        self.shared.store_writes.fetch_add(1, Ordering::Relaxed);
        store
    }

    /// Every folder at or below `under` (below every root when `None`): its
    /// path as shown to agents, its modification time as the index last saw
    /// it, and its id. What grep needs to notice folders changed on disk since.
    pub fn folders_below(&self, under: Option<EntryId>) -> Vec<(String, i64, EntryId)> {
        let store = self.read_store();
        let mut stack: Vec<EntryId> = match under {
            Some(u) => vec![u],
            None => store.roots().to_vec(),
        };
        let mut out = Vec::new();
        while let Some(id) = stack.pop() {
            if !store.is_live(id) || store.kind(id) != Kind::Dir {
                continue;
            }
            out.push((hits::display_path(&store, id), store.meta(id).mtime, id));
            stack.extend(
                store
                    .children(id)
                    .iter()
                    .copied()
                    .filter(|&c| store.kind(c) == Kind::Dir),
            );
        }
        out
    }

    /// Run `f` on the store under the read lock (for measurements: the
    /// store's parts are not an API).
    pub fn with_store<T>(&self, f: impl FnOnce(&Store) -> T) -> T {
        f(&self.read_store())
    }

    /// Wait until the first build (or snapshot load) is done, at most `timeout`.
    pub fn wait_ready(&self, timeout: Duration) -> bool {
        let status = self.shared.status.lock().unwrap_or_else(|p| p.into_inner());
        let (status, _) = self
            .shared
            .ready
            .wait_timeout_while(status, timeout, |s| !s.ready)
            .unwrap_or_else(|p| p.into_inner());
        status.ready
    }

    pub(crate) fn set_status(&self, f: impl FnOnce(&mut Status)) {
        let mut s = self.shared.status.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut s);
        let hears_outside = s.ready
            && !s.reconciling
            && s.watcher.starts_with("watching")
            && !s.watch_limit_reached
            && s.missing_roots.is_empty();
        let hears_all = hears_outside && s.network_folders.is_empty();
        self.shared
            .hears_outside
            .store(hears_outside, Ordering::Release);
        self.shared.hears_all.store(hears_all, Ordering::Release);
        if s.ready {
            self.shared.ready.notify_all();
        }
    }

    /// Walk every root now, in this thread, replacing what the index held (or, after
    /// a snapshot load, reconciling with it). `progress` ticks once per entry.
    pub fn build_now(&self, progress: Option<&AtomicU64>) {
        let counter = progress.unwrap_or(&self.shared.progress);
        watch::build(self, None, counter);
    }

    /// Build (or reconcile) in the background, then follow the watcher; also
    /// writes the snapshot periodically. Returns at once.
    pub fn start(&self) -> std::thread::JoinHandle<()> {
        let index = self.clone();
        std::thread::Builder::new()
            .name("ferret-index".into())
            .spawn(move || watch::run(index))
            .expect("spawning the index thread")
    }

    /// Ask the background thread to stop, write the snapshot and flush the journal.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Err(e) = self.save_snapshot() {
            tracing::warn!("index snapshot not written: {e}");
        }
        if let Ok(journal) = self.shared.journal.lock()
            && let Some(journal) = journal.as_ref()
            && let Err(e) = journal.checkpoint()
        {
            tracing::warn!("journal not flushed: {e}");
        }
    }

    /// [`Index::save_snapshot`], then the store's arrays that the snapshot
    /// holds unchanged are read in place from it (mapped, as after a
    /// restart) and their heap copies let go: a server that built its index
    /// itself holds it as one restarted from the snapshot does. Pages of a
    /// mapped file are clean: the kernel can drop them under pressure and
    /// read them back, which it cannot do with the heap.
    pub(crate) fn save_snapshot_and_map(&self) -> Result<Option<u64>, String> {
        let saved = self.save_snapshot()?;
        if saved.is_some()
            && let Some(path) = self.shared.config.snapshot_path()
        {
            self.read_in_place(&path);
        }
        Ok(saved)
    }

    /// The arrays of the store that the snapshot at `path` holds unchanged,
    /// read in place from it. Each array is compared with the heap's in
    /// slices of [`READ_BACK_SLICE`] bytes, each under a read lock of its
    /// own (searches go on; a change waits for one slice at most), then
    /// taken under a short write lock if no write lock was taken since its
    /// first slice was read. (Compared whole under the write lock, the
    /// records of 10M entries, 240 MB, kept every search waiting.)
    fn read_in_place(&self, path: &std::path::Path) {
        let started = Instant::now();
        let key = self.shared.config.key();
        // Only the layout is checked: a part is taken only when every byte
        // equals the store's own.
        let saved = match snapshot::load_with(path, &key, snapshot::Trust::Layout) {
            Ok(saved) => saved,
            Err(e) => {
                tracing::debug!("snapshot not read back in place: {e}");
                return;
            }
        };
        let (freed, changed, longest) = self.read_back(saved, |_| {});
        if freed > 0 {
            trim::give_back_memory();
        }
        tracing::debug!(
            freed,
            changed,
            longest_lock_us = longest.as_micros() as u64,
            ms = started.elapsed().as_millis() as u64,
            "index arrays read in place from the snapshot"
        );
    }

    /// [`Index::read_in_place`] from the store `saved` read from the
    /// snapshot: the heap bytes let go, the parts not taken (changed since
    /// or not equal), the longest a lock was held (from when it was had:
    /// a write lock waits for the searches under way first). `between(part)` runs
    /// after each slice compared, with no lock held (the tests change the
    /// store there).
    fn read_back(
        &self,
        mut saved: Store,
        mut between: impl FnMut(usize),
    ) -> (usize, usize, Duration) {
        let (mut freed, mut changed) = (0, 0);
        let mut longest = Duration::ZERO;
        let writes = || self.shared.store_writes.load(Ordering::Relaxed);
        'parts: for part in 0.. {
            // The write count when the part's first slice was read.
            let mut seen = None;
            let mut at = 0;
            let same = loop {
                let (slice_same, len, held) = {
                    let store = self.read_store();
                    let held = Instant::now();
                    let (Some(mine), Some(theirs)) =
                        (store.part_bytes(part), saved.part_bytes(part))
                    else {
                        break 'parts;
                    };
                    if *seen.get_or_insert_with(writes) != writes() || mine.len() != theirs.len() {
                        break false;
                    }
                    let end = (at + READ_BACK_SLICE).min(mine.len());
                    let same = mine[at..end] == theirs[at..end];
                    at = end;
                    (same, mine.len(), held)
                };
                longest = longest.max(held.elapsed());
                between(part);
                if !slice_same || at == len {
                    break slice_same;
                }
            };
            // Not `write_store`: taking what holds the same bytes changes
            // nothing a reader could see. (A part not taken is only let go:
            // the pages compared leave the process.)
            let mut store = self.shared.store.write().unwrap_or_else(|p| p.into_inner());
            let held = Instant::now();
            let take = same && seen == Some(writes());
            freed += store.adopt_part(&mut saved, part, take).unwrap_or(0);
            changed += usize::from(!take);
            drop(store);
            longest = longest.max(held.elapsed());
        }
        (freed, changed, longest)
    }

    /// Before the watcher changes the store: the arrays a change writes to
    /// that it would have to copy first (read in place from the snapshot,
    /// or shared with a snapshot being written) are copied to the heap
    /// under a read lock (searches go on), then taken under a short write
    /// lock if no write lock came since. Copied under the watcher's write
    /// lock instead, they kept every search waiting: on the first change
    /// after each snapshot (the records read back from the file, 24 MB at
    /// 1M entries), and on the first change during a save at 10M (the
    /// records, names and children copied: a call of 1.2 s).
    pub(crate) fn copy_before_change(&self) {
        let (seen, copies) = {
            let store = self.read_store();
            // Counted while a lock is held: under a read lock it cannot move.
            let seen = self.shared.store_writes.load(Ordering::Relaxed);
            match store.copies_for_change() {
                Some(copies) => (seen, copies),
                None => return,
            }
        };
        // Not `write_store`: the same bytes from another place change
        // nothing a reader could see.
        let mut store = self.shared.store.write().unwrap_or_else(|p| p.into_inner());
        if self.shared.store_writes.load(Ordering::Relaxed) == seen {
            store.take_copies(copies);
        }
    }

    /// Write the snapshot now (when persistence is on and the index is complete).
    pub fn save_snapshot(&self) -> Result<Option<u64>, String> {
        self.save_snapshot_with(|| {})
    }

    /// [`Index::save_snapshot`], running `while_written` once the copy to
    /// write is taken, with no lock held (the tests change the store there).
    fn save_snapshot_with(&self, while_written: impl FnOnce()) -> Result<Option<u64>, String> {
        let Some(path) = self.shared.config.snapshot_path() else {
            return Ok(None);
        };
        if !self.status().ready {
            return Ok(None);
        }
        let _saving = self.shared.saving.lock().unwrap_or_else(|p| p.into_inner());
        let started = Instant::now();
        // Written as it is made: a copy of the snapshot in memory was a
        // second index's worth of memory at every save. Written from a copy
        // whose arrays are shared with the store (taken under a short write
        // lock), not under the store's read lock: a change that came while
        // the file was written waited for all of it (seconds at 10M), and
        // every search behind that change with it.
        let key = self.shared.config.key();
        let copy = {
            // Not `write_store`: sharing the arrays changes nothing a reader
            // could see (nor where their bytes lie).
            let mut store = self.shared.store.write().unwrap_or_else(|p| p.into_inner());
            // Under the lock: a change after this one is not in the copy,
            // and marks the index dirty again.
            self.shared.dirty.store(false, Ordering::Relaxed);
            store.for_snapshot()
        };
        while_written();
        let result = write_atomically_with(&path, |f| snapshot::write(&copy, &key, f));
        drop(copy);
        if let Some(uses_path) = self.shared.config.uses_path() {
            self.apply_pending_uses();
            let json = self
                .shared
                .uses
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .to_json();
            if let Err(e) = write_atomically(&uses_path, json.as_bytes()) {
                tracing::warn!("use scores not saved to {}: {e}", uses_path.display());
            }
        }
        match result {
            Ok(len) => {
                self.set_status(|s| {
                    s.last_snapshot = Some(now_rfc3339());
                    s.snapshot_error = None;
                });
                tracing::debug!(
                    bytes = len,
                    ms = started.elapsed().as_millis() as u64,
                    "index snapshot written"
                );
                Ok(Some(len))
            }
            Err(e) => {
                self.shared.dirty.store(true, Ordering::Relaxed);
                let msg = format!("cannot write {}: {e}", path.display());
                self.set_status(|s| s.snapshot_error = Some(msg.clone()));
                Err(msg)
            }
        }
    }

    /// Run a search. Only relevance order reads the use scores; other orders
    /// (grep's candidates, newest first) never touch them.
    pub fn search(&self, request: &SearchRequest) -> SearchOutcome {
        self.search_until(request, Stop::NEVER).unwrap_or_default()
    }

    /// [`Index::search`], given up as [`Stopped`] once `stop` says so (the
    /// caller went away, or its deadline passed): every long loop of the
    /// search asks it.
    pub fn search_until(
        &self,
        request: &SearchRequest,
        stop: Stop<'_>,
    ) -> Result<SearchOutcome, Stopped> {
        if request.sort != SortKey::Relevance {
            return search::search_until(&self.read_store(), request, None, stop);
        }
        let uses = self.shared.uses.read().unwrap_or_else(|p| p.into_inner());
        search::search_until(&self.read_store(), request, Some(&uses), stop)
    }

    /// Every match of `request.query` as a [`search::Fact`], in no order
    /// (`sort`, `offset` and `limit` unread; see
    /// [`search::matching_facts_until`]), given up as [`Stopped`] once
    /// `stop` says so.
    pub fn matching_facts_until(
        &self,
        request: &SearchRequest,
        stop: Stop<'_>,
    ) -> Result<Vec<search::Fact>, Stopped> {
        search::matching_facts_until(&self.read_store(), request, stop)
    }

    /// The files among `paths` (as shown to agents; a folder stands for
    /// every file below it) that match `request.query` below
    /// `request.under`, as [`search::Fact`]s, each once, in no order: each
    /// path looked up, not every entry visited (see [`at_paths::facts_at`]).
    /// For a grep whose candidates the content index named.
    pub fn matching_facts_at(
        &self,
        request: &SearchRequest,
        paths: &[&str],
        stop: Stop<'_>,
    ) -> Result<Vec<search::Fact>, Stopped> {
        at_paths::facts_at(&self.read_store(), request, paths, stop)
    }

    /// Hand the memory freed by a large piece of work (a whole-tree grep's
    /// candidates) back to the system (glibc keeps it in its arenas otherwise).
    pub fn give_back_memory() {
        trim::give_back_memory();
    }

    /// Whether some entry's name may be exactly one of `words` (case folded),
    /// or its stem, as [`search::name_is_exact`] asks of a hit: `false` only
    /// when no name the index holds is. Read off the name dictionary in
    /// microseconds, so a caller can skip a fuzzy search whose answer it
    /// would take only if its best match were such a name.
    pub fn holds_exact_name(&self, words: &[String]) -> bool {
        search::holds_exact_name(&self.read_store(), words)
    }

    /// Run a fuzzy search (see [`fuzzy`]).
    pub fn fuzzy(&self, request: &fuzzy::FuzzyRequest<'_>) -> SearchOutcome {
        self.fuzzy_until(request, Stop::NEVER).unwrap_or_default()
    }

    /// [`Index::fuzzy`], given up as [`Stopped`] once `stop` says so.
    pub fn fuzzy_until(
        &self,
        request: &fuzzy::FuzzyRequest<'_>,
        stop: Stop<'_>,
    ) -> Result<SearchOutcome, Stopped> {
        let uses = self.shared.uses.read().unwrap_or_else(|p| p.into_inner());
        fuzzy::fuzzy_until(&self.read_store(), request, Some(&uses), stop)
    }

    /// The entries whose name is one edit from a plain search's one word
    /// ([`fuzzy::close_until`]), the paths in `skip` left out.
    pub fn close_until(
        &self,
        request: &fuzzy::FuzzyRequest<'_>,
        skip: &[&str],
        stop: Stop<'_>,
    ) -> Result<Vec<Hit>, Stopped> {
        let uses = self.shared.uses.read().unwrap_or_else(|p| p.into_inner());
        fuzzy::close_until(&self.read_store(), request, skip, Some(&uses), stop)
    }

    /// Apply the uses recorded while the scores were being read, if the scores
    /// can be written at once; otherwise they wait for the next writer.
    fn apply_pending_uses(&self) {
        let mut uses = match self.shared.uses.try_write() {
            Ok(uses) => uses,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let pending = std::mem::take(
            &mut *self
                .shared
                .pending_uses
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for (path, weight, at) in pending {
            uses.record(&path, weight, at);
        }
    }

    /// Count a use of a file (a path as shown to agents) through ferret: `weight`
    /// 1 for a read or an edit, less for a grep match. Relevance and fuzzy search
    /// rank used files higher; the scores fade by half every week.
    pub fn record_use(&self, path: &str, weight: f64) {
        let now = chrono::Utc::now().timestamp();
        {
            let mut pending = self
                .shared
                .pending_uses
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if pending.len() < PENDING_USES_MAX {
                pending.push((path.to_string(), weight, now));
            }
        }
        self.apply_pending_uses();
    }

    /// Files, folders and the bytes of the files below `under` (every root when
    /// `None`), the folder itself not counted.
    pub fn tally(&self, under: Option<EntryId>) -> Tally {
        let store = self.read_store();
        let mut t = Tally::default();
        for id in 0..store.capacity_ids() as EntryId {
            if !store.is_live(id) || store.roots().contains(&id) || Some(id) == under {
                continue;
            }
            if under.is_some_and(|u| !store.is_within(id, u)) {
                continue;
            }
            match store.kind(id) {
                Kind::Dir => t.dirs += 1,
                Kind::File => {
                    t.files += 1;
                    t.bytes += store.meta(id).size;
                }
                _ => t.other += 1,
            }
        }
        t
    }

    /// How many entries match (no paging).
    pub fn count(&self, query: &ferret_query::Query) -> u64 {
        let request = SearchRequest {
            query,
            under: None,
            sort: SortKey::Name,
            descending: false,
            offset: 0,
            limit: 0,
            group_by: None,
        };
        self.search(&request).total
    }

    /// The record of a folder given as shown to agents (`.`, `src`, `root/src` with
    /// several roots); `None` when the index has no such folder (or it is a file).
    pub fn folder(&self, shown: &str) -> Option<EntryId> {
        let store = self.read_store();
        let trimmed = shown.trim_matches('/');
        let trimmed = if trimmed.is_empty() { "." } else { trimmed };
        hits::find_display_path(&store, trimmed).filter(|&id| store.kind(id) == Kind::Dir)
    }

    /// Journal entries, newest first, with the total.
    pub fn changes(&self, query: &ChangesQuery) -> Result<(Vec<Change>, u64), String> {
        let journal = self
            .shared
            .journal
            .lock()
            .map_err(|_| "journal lock poisoned".to_string())?;
        match journal.as_ref() {
            Some(j) => j
                .query(query)
                .map_err(|e| format!("journal query failed: {e}")),
            None => Ok((Vec::new(), 0)),
        }
    }

    /// [`Index::touches`] with each move as one [`Touch`] (its path and its
    /// old path), so that a follower can carry what it held under the old
    /// path over to the new one instead of looking at it anew.
    pub fn touches_with_moves(&self) -> mpsc::Receiver<Vec<Touch>> {
        self.follow(Listener::Touches)
    }

    /// A new follower of the change feed, as `listener` wraps its sender.
    fn follow<T>(&self, listener: impl FnOnce(mpsc::Sender<T>) -> Listener) -> mpsc::Receiver<T> {
        let (tx, rx) = mpsc::channel();
        self.shared
            .touch_listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(listener(tx));
        rx
    }

    /// A feed of the paths (as shown to agents) that changed on disk: every
    /// journalled change (its path and, for moves, its old path) and every file
    /// the watcher saw written even when its size and mtime second stayed the
    /// same. Batches arrive as the watcher applies them; a path may repeat.
    /// The feed ends when the receiver is dropped.
    pub fn touches(&self) -> mpsc::Receiver<Vec<String>> {
        self.follow(Listener::Paths)
    }

    /// Wait until the watcher has applied every change the kernel queued
    /// before this call (and published it on [`Index::touches`]), at most
    /// `timeout`. `false` when that is not known: no watcher, not following
    /// yet (or handed over), or the watcher busy past the timeout (reading
    /// the roots again after events were lost to a queue overflow, say).
    /// Takes well under a millisecond when the watcher is idle.
    pub fn sync(&self, timeout: Duration) -> bool {
        self.shared.sync.wait(timeout)
    }

    /// Whether the index holds every change completed before this call: it
    /// watches every folder of every root, and the watcher's barrier
    /// ([`Index::sync`]) was passed within `timeout`. When `true`, a search
    /// that starts now cannot miss a file created, changed or removed before
    /// the call (new folders included: they are read before the barrier is
    /// passed); when `false`, callers must look at the disk themselves.
    pub fn caught_up(&self, timeout: Duration) -> bool {
        self.hears_every_change() && self.sync(timeout)
    }

    /// [`Index::caught_up`], but for the folders the watcher cannot hear
    /// (on a network or FUSE file system, or reached at two paths: a bind
    /// mount): `Some` with their paths as agents see them (none when it
    /// hears every change) when it hears every change elsewhere and its
    /// barrier was passed within `timeout`. A search that starts now then
    /// misses no change made before the call outside those folders; inside
    /// them, callers must look at the disk themselves. `None` when it cannot
    /// vouch for any folder (building, `reconciling`, a watch limit, a root
    /// missing) or the barrier was not passed, and when a folder listed is
    /// no longer in the index where it was listed (removed: its path may now
    /// be another folder's, which must not be taken as heard).
    pub fn caught_up_but(&self, timeout: Duration) -> Option<Vec<String>> {
        if !self.shared.hears_outside.load(Ordering::Acquire) || !self.sync(timeout) {
            return None;
        }
        // (After the barrier: the mounts made before it were read.)
        if self.shared.mounts_unsure.load(Ordering::Acquire) {
            return None;
        }
        let folders = self.unheard().clone();
        if !folders.is_empty() {
            let store = self.read_store();
            let held = |(root, rel, _): &(usize, Vec<u8>, &str)| {
                let Some(&top) = store.roots().get(*root) else {
                    return false;
                };
                let id = if rel.is_empty() {
                    Some(top)
                } else {
                    store.lookup(top, rel)
                };
                id.is_some_and(|id| store.kind(id) == store::Kind::Dir)
            };
            if !folders.iter().all(held) {
                return None;
            }
        }
        Some(
            folders
                .iter()
                .map(|(r, rel, _)| self.shown_below(*r, &ferret_names::shown_path(rel)))
                .collect(),
        )
    }

    /// What a name search (or a read of the journal) does first: where the
    /// watcher hears every change (but, it may be, in folders it cannot
    /// hear: the rest is then as fresh, and a mount made before the call is
    /// read), wait at its barrier, at most `timeout`; whether the index is
    /// behind, i.e. the barrier was not passed in time and changes made
    /// before this call may be missing. `false` at once where the watcher
    /// cannot hear every change: the status says why (building,
    /// `reconciling`, a watch limit), and there is nothing to wait for.
    pub fn behind_after_waiting(&self, timeout: Duration) -> bool {
        self.shared.hears_outside.load(Ordering::Acquire) && !self.sync(timeout)
    }

    /// Whether the watcher hears every change: built, not comparing the
    /// index with the disk (`Status::reconciling`), watching every folder
    /// of every root, none missing, none on a network or FUSE file system.
    /// (A flag kept with the status, not a copy of it.)
    pub fn hears_every_change(&self) -> bool {
        self.shared.hears_all.load(Ordering::Acquire)
            && !self.shared.mounts_unsure.load(Ordering::Acquire)
    }

    /// The temporary files of ferret's atomic writes (`.ferret-tmp-*`,
    /// never indexed) that the walks met until now, as paths shown to
    /// agents: what killed writes left behind, for the file layer to judge
    /// and remove. Once; later walks collect none (the files they would meet
    /// are this process's own writes under way). Folders the index does not
    /// walk (ignored, hidden) are not looked in.
    pub fn take_own_temps(&self) -> Vec<String> {
        let temps = self
            .shared
            .own_temps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_default();
        temps
            .into_iter()
            .map(|(root, path)| self.shown_below(root, &ferret_names::shown_path(&path)))
            .collect()
    }

    /// A path below root number `root` as agents see it: with several roots
    /// it starts with the root's name; the root itself is `.` (or its name).
    pub(crate) fn shown_below(&self, root: usize, rel: &str) -> String {
        let roots = &self.shared.config.roots;
        match (roots.len() > 1, rel.is_empty()) {
            (true, true) => roots[root].name.clone(),
            (true, false) => format!("{}/{rel}", roots[root].name),
            (false, true) => ".".into(),
            (false, false) => rel.to_string(),
        }
    }

    /// Network folders (root, path below it, file system) as the status
    /// shows them: each path as agents see it, its file system after it.
    pub(crate) fn shown_network(&self, folders: &[(usize, Vec<u8>, &'static str)]) -> Vec<String> {
        folders
            .iter()
            .map(|(r, rel, fs)| {
                format!(
                    "{} ({fs})",
                    self.shown_below(*r, &ferret_names::shown_path(rel))
                )
            })
            .collect()
    }

    /// Whether anyone follows [`Index::touches`]: without a listener the
    /// watcher and the journal build no path lists for it (rescans of big trees
    /// journal many changes).
    pub(crate) fn touches_followed(&self) -> bool {
        !self
            .shared
            .touch_listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    pub(crate) fn publish_touched(&self, touches: Vec<Touch>) {
        if touches.is_empty() {
            return;
        }
        let mut listeners = self
            .shared
            .touch_listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        listeners.retain(|l| match l {
            Listener::Touches(tx) => tx.send(touches.clone()).is_ok(),
            Listener::Paths(tx) => tx
                .send(
                    touches
                        .iter()
                        .flat_map(|t| std::iter::once(t.path.clone()).chain(t.moved_from.clone()))
                        .collect(),
                )
                .is_ok(),
        });
    }

    /// Journal changes. What ferret's own changes (`by: ferret`) left on disk is
    /// remembered, so that the watcher's report of that same version is dropped
    /// while a change by another program, however soon after, is kept.
    pub fn record(&self, changes: &[Change]) {
        let kept = self
            .shared
            .own_changes
            .sift(&|p: &str| self.version_of(p), changes);
        self.journal_kept(kept);
    }

    /// Ferret is about to change these paths (as shown to agents; a folder
    /// covers what lies below it): the watcher's reports on them wait for
    /// ferret's own [`Index::record`] before they are told from its echo.
    pub fn expect_own_changes(&self, paths: &[String]) {
        self.shared.own_changes.expect(paths);
    }

    /// Ferret will not change these announced paths after all (its write failed).
    pub fn withdraw_own_changes(&self, paths: &[String]) {
        let kept = self
            .shared
            .own_changes
            .withdraw(&|p: &str| self.version_of(p), paths);
        if !kept.is_empty() {
            self.journal_kept(kept);
        }
    }

    /// Journal the reports held for changes ferret announced and never recorded.
    pub(crate) fn release_held(&self) {
        let kept = self
            .shared
            .own_changes
            .release_expired(&|p: &str| self.version_of(p));
        if !kept.is_empty() {
            self.journal_kept(kept);
        }
    }

    /// What a shown path is on disk now, looked up through its root's
    /// descriptor (never by a path string below the root).
    fn version_of(&self, shown: &str) -> Option<echo::Version> {
        let roots = &self.shared.config.roots;
        let (root, rel) = if roots.len() == 1 {
            (0, shown)
        } else {
            let (name, rel) = shown.split_once('/').unwrap_or((shown, ""));
            (roots.iter().position(|r| r.name == name)?, rel)
        };
        let rel = if rel == "." { "" } else { rel };
        let root_fd = self.root_fd(root)?;
        let (parent, name) = match rel.rsplit_once('/') {
            Some((p, n)) => (p, n),
            None if rel.is_empty() => return None,
            None => ("", rel),
        };
        let stat = |dir: &std::os::fd::OwnedFd, name: &[u8]| {
            rustix::fs::statx(
                dir,
                name,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                rustix::fs::StatxFlags::BASIC_STATS,
            )
        };
        let st = if !rel.contains('%') {
            let dir = dirs::open_below(root_fd, parent.as_bytes()).ok()?;
            stat(&dir, name.as_bytes()).ok()?
        } else {
            // Escaped names (`ferret_names`) read as the file layer reads
            // them: each name as written, else the bytes it stands for.
            let written_or_escaped = |part: &str| {
                std::iter::once(part.as_bytes().to_vec()).chain(ferret_names::escaped_bytes(part))
            };
            let mut dir = dirs::open_below(root_fd, b"").ok()?;
            for part in parent.split('/').filter(|p| !p.is_empty()) {
                dir = written_or_escaped(part)
                    .find_map(|b| dirs::open_below(dir.as_fd(), &b).ok())?;
            }
            written_or_escaped(name).find_map(|b| stat(&dir, &b).ok())?
        };
        let ns =
            |t: rustix::fs::StatxTimestamp| t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128;
        Some(echo::Version {
            dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            size: st.stx_size,
            mtime_ns: ns(st.stx_mtime),
            ctime_ns: ns(st.stx_ctime),
            dir: rustix::fs::FileType::from_raw_mode(u32::from(st.stx_mode))
                == rustix::fs::FileType::Directory,
        })
    }

    fn journal_kept(&self, kept: Vec<Change>) {
        if self.touches_followed() {
            self.publish_touched(
                kept.iter()
                    .map(|c| Touch {
                        path: c.path.clone(),
                        moved_from: c.old_path.clone(),
                        folder: c.kind == ferret_query::Kind::Dir,
                    })
                    .collect(),
            );
        }
        if let Ok(mut j) = self.shared.journal.lock()
            && let Some(j) = j.as_mut()
            && let Err(e) = j.record(&kept)
        {
            tracing::warn!("journal write failed: {e}");
        }
    }
}

/// Whether `path` still names the open folder `fd`. (The operator's path is
/// looked up by its name here on purpose: the question is what it names now.)
fn same_folder(path: &std::path::Path, fd: BorrowedFd<'_>) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(path), dirs::ident(fd)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == b,
        _ => false,
    }
}

fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    write_atomically_with(path, |f| f.write_all(bytes))
}

/// [`write_atomically`] of what `write` writes to the file.
fn write_atomically_with<T>(
    path: &std::path::Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<T>,
) -> std::io::Result<T> {
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        let out = write(&mut f)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(out)
    })();
    let out = match written {
        Ok(out) => out,
        Err(e) => {
            // A full disk (or any failure) leaves no half-written snapshot behind.
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(out)
}

#[cfg(test)]
mod in_place_tests {
    use super::*;

    use crate::testing::paths_of as names;

    fn saved(index: &Index, deadline: Instant) -> bool {
        while Instant::now() < deadline {
            if index.status().last_snapshot.is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// The periodic snapshot is written in a thread of its own while the
    /// watcher goes on: a barrier asked while a save is under way is passed,
    /// and a change made meanwhile is applied and found (here the save
    /// waits for the use scores, held by the test, after writing the file).
    /// In the watcher's thread a search waited out its 250 ms at the barrier
    /// during every save and answered `behind`; beside it, with the watcher
    /// only listening, a change (and every barrier after it) waited for the
    /// save to end.
    #[test]
    fn a_change_is_applied_while_the_snapshot_is_written() {
        let tree = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::write(tree.path().join("a.txt"), "x").unwrap();
        let mut config = IndexConfig::new(vec![IndexRoot::new("r", tree.path())]);
        config.state_dir = Some(state.path().to_path_buf());
        config.snapshot_every = Duration::from_millis(50);
        let index = Index::open(config).unwrap();
        let uses = index.shared.uses.write().unwrap();
        index.start();
        assert!(index.wait_ready(Duration::from_secs(30)));
        let path = index.shared.config.snapshot_path().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !path.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(path.exists(), "the save began");
        assert!(
            index.status().last_snapshot.is_none(),
            "and waits for the use scores"
        );
        assert!(index.sync(Duration::from_secs(10)), "the barrier passed");
        std::fs::write(tree.path().join("late.txt"), "x").unwrap();
        assert!(
            index.sync(Duration::from_secs(10)),
            "the barrier after a change passed"
        );
        assert_eq!(names(&index, "late"), ["late.txt"]);
        assert!(
            index.status().last_snapshot.is_none(),
            "while the save waits"
        );
        drop(uses);
        assert!(saved(&index, Instant::now() + Duration::from_secs(30)));
    }

    /// A snapshot is written from a copy taken under a short lock: a change
    /// made while the file is written neither waits for it (no lock is held:
    /// it used to be the store's read lock, for the whole write) nor gets
    /// into it, and leaves the index to be saved again.
    #[test]
    fn a_change_while_the_snapshot_is_written_waits_for_nothing() {
        let (index, _dirs) = unwatched_persisted((0..20).map(|i| format!("report_{i}.txt")));
        let path = index.shared.config.snapshot_path().unwrap();
        let key = index.shared.config.key();
        let size_of = |store: &Store| {
            let f = store.lookup(store.roots()[0], b"report_3.txt").unwrap();
            store.meta(f).size
        };
        index
            .save_snapshot_with(|| {
                // What the watcher does before a change: the records the
                // save shares are copied under a read lock, not under its
                // write lock.
                let shared = |index: &Index| {
                    matches!(index.read_store().records, crate::arr::Arr::Shared { .. })
                };
                assert!(shared(&index));
                index.copy_before_change();
                assert!(!shared(&index), "copied before the change");
                let mut store = index
                    .shared
                    .store
                    .try_write()
                    .expect("no lock held while written");
                let f = store.lookup(store.roots()[0], b"report_3.txt").unwrap();
                let meta = store.meta(f);
                store.set_meta(f, crate::store::Meta { size: 77, ..meta });
                index.shared.dirty.store(true, Ordering::Relaxed);
            })
            .unwrap()
            .unwrap();
        let saved = snapshot::load_with(&path, &key, snapshot::Trust::Checked).unwrap();
        assert_eq!(
            size_of(&saved),
            1,
            "the snapshot holds the store as it was copied"
        );
        assert_eq!(size_of(&index.read_store()), 77);
        assert!(
            index.shared.dirty.load(Ordering::Relaxed),
            "to be saved again"
        );
        index.save_snapshot().unwrap().unwrap();
        let saved = snapshot::load_with(&path, &key, snapshot::Trust::Checked).unwrap();
        assert_eq!(size_of(&saved), 77);
        assert!(!index.shared.dirty.load(Ordering::Relaxed));
    }

    /// A persisted index, not watching, of a folder of the files `names`,
    /// built; the folder and the state folder with it.
    fn unwatched_persisted(names: impl Iterator<Item = String>) -> (Index, [tempfile::TempDir; 2]) {
        let tree = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        for name in names {
            std::fs::write(tree.path().join(name), "x").unwrap();
        }
        let mut config = IndexConfig::new(vec![IndexRoot::new("r", tree.path())]);
        config.state_dir = Some(state.path().to_path_buf());
        config.watch = false;
        let index = Index::open(config).unwrap();
        index.start();
        assert!(index.wait_ready(Duration::from_secs(30)));
        (index, [tree, state])
    }

    /// Saves at once from two threads (the periodic one beside the
    /// watcher, one at shutdown) each leave a whole snapshot: they share
    /// one temporary file, and the second's truncation used to cut into the
    /// first's writing.
    #[test]
    fn saves_at_once_leave_a_whole_snapshot() {
        let (index, _dirs) = unwatched_persisted((0..300).map(|i| format!("file_{i}.txt")));
        let path = index.shared.config.snapshot_path().unwrap();
        let key = index.shared.config.key();
        for _ in 0..20 {
            std::thread::scope(|scope| {
                for _ in 0..2 {
                    scope.spawn(|| index.save_snapshot().unwrap().unwrap());
                }
            });
            let back = snapshot::load_with(&path, &key, snapshot::Trust::Checked).unwrap();
            assert_eq!(back.len(), index.read_store().len());
        }
    }

    /// A part is taken only if no write lock was taken since its first
    /// slice was compared: a write after the comparison, before the part is
    /// taken, keeps that part on the heap (and only that one); a part that
    /// differs is never taken; the rest are.
    #[test]
    fn a_part_written_while_compared_is_not_taken() {
        let (index, _dirs) = unwatched_persisted((0..20).map(|i| format!("report_{i}.txt")));
        index.save_snapshot().unwrap().unwrap();
        let path = index.shared.config.snapshot_path().unwrap();
        let load = || {
            snapshot::load_with(&path, &index.shared.config.key(), snapshot::Trust::Layout).unwrap()
        };
        // A write lock taken (nothing changed) after the records' slice.
        let (_, changed, _) = index.read_back(load(), |part| {
            if part == 0 {
                drop(index.write_store());
            }
        });
        assert_eq!(changed, 1);
        {
            let store = index.read_store();
            assert!(!store.records.is_mapped(), "written to while compared");
            assert!(store.names_of.is_mapped() && store.base.by_name.is_mapped());
        }
        // The records now differ from the snapshot's: compared, not taken.
        {
            let mut store = index.write_store();
            let root = store.roots()[0];
            let f = store.lookup(root, b"report_3.txt").unwrap();
            let meta = store.meta(f);
            store.set_meta(f, crate::store::Meta { size: 77, ..meta });
        }
        let (_, changed, _) = index.read_back(load(), |_| {});
        assert_eq!(changed, 1);
        assert!(!index.read_store().records.is_mapped());
        assert_eq!(names(&index, "report").len(), 20);
        index.read_store().check().unwrap();
    }

    /// After each periodic snapshot, the arrays it holds unchanged are read
    /// in place from it (as after a restart) and answer as the heap's did; a
    /// change copies what it changes back to the heap, and the next
    /// snapshot maps it again. The folders' array (its watches are this
    /// process's) stays on the heap.
    #[test]
    fn arrays_the_snapshot_holds_unchanged_are_read_in_place() {
        let tree = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        for i in 0..50 {
            let dir = tree.path().join(format!("d{}", i % 5));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("report_{i}.txt")), "x").unwrap();
        }
        let mut config = IndexConfig::new(vec![IndexRoot::new("r", tree.path())]);
        config.state_dir = Some(state.path().to_path_buf());
        config.snapshot_every = Duration::from_millis(50);
        let index = Index::open(config).unwrap();
        index.start();
        assert!(index.wait_ready(Duration::from_secs(30)));
        let before = names(&index, "report");
        assert_eq!(before.len(), 50);
        {
            let store = index.read_store();
            assert!(!store.records.is_mapped() && !store.base.by_name.is_mapped());
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        assert!(saved(&index, deadline), "a snapshot was written");
        // The arrays are taken just after the status says it was written.
        // Every array the snapshot holds left the heap: the records, the
        // names and their lists (but for the extensions' few bytes), the
        // children and every order.
        let on_heap = |store: &Store| -> Vec<(&'static str, usize)> {
            store
                .heap_parts()
                .into_iter()
                .filter(|&(part, bytes)| match part {
                    "name lists" => bytes > 1024,
                    "folders" | "folder names (fuzzy)" | "delta" => false,
                    _ => bytes > 0,
                })
                .collect()
        };
        while !on_heap(&index.read_store()).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        {
            let store = index.read_store();
            assert_eq!(
                on_heap(&store),
                [],
                "the snapshot's arrays were not all taken"
            );
            assert!(store.records.is_mapped() && store.base.by_name.is_mapped());
            assert!(
                !store.dirs.is_mapped(),
                "the folders hold this process's watches"
            );
            store.check().unwrap();
        }
        assert_eq!(names(&index, "report"), before);
        assert!(index.sync(Duration::from_secs(10)));
        assert!(
            index.read_store().records.is_mapped(),
            "a search's barrier copies nothing"
        );
        // A change: the arrays it writes to are copied back to the heap
        // (before the watcher's write lock, `Index::copy_before_change`).
        std::fs::write(tree.path().join("d1/report_new.txt"), "y").unwrap();
        assert!(index.caught_up(Duration::from_secs(10)));
        let mut after = before.clone();
        after.push("d1/report_new.txt".to_string());
        after.sort();
        assert_eq!(names(&index, "report"), after);
        {
            let store = index.read_store();
            assert!(!store.records.is_mapped() && !store.names_of.is_mapped());
            assert!(!store.children.is_mapped());
        }
        // The next snapshot maps them again, from its own file.
        while !index.read_store().records.is_mapped() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(index.read_store().records.is_mapped());
        assert_eq!(names(&index, "report"), after);
        index.read_store().check().unwrap();
        index.shutdown();
    }
}

#[cfg(test)]
mod uses_tests {
    use super::*;

    /// A relevance search holding the use scores (a whole-tree one can hold
    /// them for seconds) must not stall a `read` recording a use, nor grep's
    /// candidates (newest first): under load both queued behind it.
    #[test]
    fn reads_and_other_orders_never_wait_for_a_search_holding_the_scores() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "a").unwrap();
        std::fs::write(tmp.path().join("b.txt"), "b").unwrap();
        let mut config = IndexConfig::new(vec![IndexRoot::new("r", tmp.path())]);
        config.watch = false;
        let index = Index::open(config).unwrap();
        index.start();
        assert!(index.wait_ready(Duration::from_secs(30)));

        let held = index.shared.uses.read().unwrap();
        let (tx, rx) = mpsc::channel();
        let other = index.clone();
        std::thread::spawn(move || {
            other.record_use("a.txt", 1.0);
            let files = ferret_query::Query::compile(
                "file:",
                &ferret_query::Options::default(),
                &ferret_query::Clock::system(),
            )
            .unwrap();
            let found = other.search(&SearchRequest {
                query: &files,
                under: None,
                sort: SortKey::Modified,
                descending: true,
                offset: 0,
                limit: 10,
                group_by: None,
            });
            tx.send(found.total).unwrap();
        });
        let total = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("neither the use nor the search waited for the scores");
        assert_eq!(total, 2);
        drop(held);

        // The use recorded meanwhile was kept, and lands with the next one.
        index.record_use("b.txt", 1.0);
        let now = chrono::Utc::now().timestamp();
        let uses = index.shared.uses.read().unwrap();
        assert!(
            uses.score("a.txt", now) > 0.99,
            "the use recorded while busy"
        );
        assert!(uses.score("b.txt", now) > 0.99);
    }
}

#[cfg(test)]
mod version_tests {
    use super::*;

    /// What a shown path is on disk, for the journal's echo check: an
    /// escaped name (`ferret_names`) read as its bytes, a name as written
    /// first. (Read as written, such a path was never found, and every
    /// change to it after ferret wrote it passed for ferret's echo.)
    #[test]
    fn a_shown_path_with_an_escaped_name_has_a_version() {
        use std::os::unix::ffi::OsStrExt;
        let tmp = tempfile::tempdir().unwrap();
        let at = |b: &[u8]| tmp.path().join(std::ffi::OsStr::from_bytes(b));
        std::fs::create_dir(at(b"d\xff")).unwrap();
        std::fs::write(at(b"d\xff/caf\xe9.txt"), "x").unwrap();
        std::fs::write(at(b"tw%E9in"), "literal").unwrap();
        std::fs::write(at(b"tw\xe9in"), "escaped").unwrap();
        let mut config = IndexConfig::new(vec![IndexRoot::new("r", tmp.path())]);
        config.watch = false;
        let index = Index::open(config).unwrap();
        let ino =
            |b: &[u8]| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(at(b)).unwrap());
        assert_eq!(
            index.version_of("d%FF/caf%E9.txt").map(|v| v.ino),
            Some(ino(b"d\xff/caf\xe9.txt"))
        );
        assert_eq!(
            index.version_of("tw%E9in").map(|v| v.ino),
            Some(ino(b"tw%E9in"))
        );
        assert!(index.version_of("d%FF/missing%E9.txt").is_none());
    }
}
