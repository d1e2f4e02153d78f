//! The live content index: loaded or built in the background after the name
//! index, kept fresh from its change feed, asked which files may match.
//!
//! One thread (`ferret-content`) changes the index: it builds or loads it,
//! checks a loaded one against the disk, re-reads the files the change feed
//! names, and now and then merges what it re-read into a new file. The feed
//! is drained by that thread and by every query before it answers, so each
//! path the name index has reported is pending by then: a pending file is
//! searched directly until it is read again, and an answer never rests on a
//! version of a file older than the name index's. A query first waits for
//! the name index's watcher to apply every change the kernel queued before
//! it ([`ferret_index::Index::sync`]), so a file written a moment before the
//! call is pending too. Queries read under a read lock.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    path::PathBuf,
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use ferret_fs::{Roots, Target};
use ferret_index::{EntryId, Index, Kind, Store};

use crate::{
    build::{self, BaseSource, Budget, BuildError, Entry, PairSource, Progress, Source},
    eval::{Bits, evaluate},
    format::{Base, Bytes, DocMeta, DocState, LoadError, Sink},
    grams::Extractor,
    paths::{Near, Paths, TOP},
    pattern::Grams,
    read::{self, Text},
    segments,
};

/// How the content index is run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the index file lives; `None`: in memory, rebuilt at each start.
    pub state_dir: Option<PathBuf>,
    pub budget: Budget,
    /// Answer only while the name index's watcher follows every folder (a
    /// server); a one-shot command checks every file's version instead.
    pub require_watcher: bool,
}

impl Config {
    pub fn new(state_dir: Option<PathBuf>) -> Config {
        Config {
            state_dir,
            budget: Budget {
                max_file_bytes: 10 << 20,
                max_total_bytes: 2 << 30,
                // Every core, each build thread at `nice` +10 (build.rs): the
                // threads that answer calls run at 0 and take the CPU first,
                // so a build uses what the calls leave. (Cores - 1 used to
                // mean one thread here on 2 cores, and that one ran the build
                // in the content thread at full priority.)
                threads: std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 8)),
                segment_from: SEGMENT_FROM,
            },
            require_watcher: true,
        }
    }
}

/// Text files from this size on get a segment table (`segments`): on the
/// Rust docs, 264 of 51,906 files, 225 of 622 MiB, whose false positives
/// were most of what a narrowed grep read.
pub const SEGMENT_FROM: u64 = 256 << 10;

/// A pending file is read again once it has been quiet this long (a file
/// being written is read once, not at every write)…
const QUIET: Duration = Duration::from_millis(30);
/// How often the change feed is read while nothing else is to do.
const POLL: Duration = Duration::from_millis(10);
/// …or once it has waited this long, however busy.
const MAX_WAIT: Duration = Duration::from_millis(500);
/// How often the index is compared with the name index as a whole. (Not
/// in this crate's tests: they check that the change feed alone keeps the
/// index right, which a timed comparison would hide.)
const RECONCILE_EVERY: Duration = Duration::from_secs(if cfg!(test) { 3600 } else { 30 });
/// …and, while they find nothing, at most this seldom (doubling from
/// [`RECONCILE_EVERY`]).
const RECONCILE_MAX: Duration = Duration::from_secs(if cfg!(test) { 3600 } else { 600 });
/// A failed build is tried again after this long.
const RETRY_AFTER: Duration = Duration::from_secs(300);
/// Files re-read since the last merge, past which they are merged into a new
/// index file (at least this many, or a quarter of the index).
const MERGE_AFTER: usize = 2048;
/// How long [`ContentIndex::shutdown`] waits for the background thread.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
/// Re-read files are merged into the file at least this often.
const MERGE_EVERY: Duration = Duration::from_secs(600);

/// What queries read. Each file the index knows has a number: its path
/// (`paths`, held once, looked up while the file is live), its version
/// (`metas`) and a bit in each set below. A file dropped or read again
/// keeps its number until the next merge, no longer live (read again, it
/// is held anew under a new number).
#[derive(Default)]
struct Live {
    base: Option<Base>,
    paths: Paths,
    metas: Vec<DocMeta>,
    /// Not dropped or replaced since.
    live: Bits,
    /// Checked against the disk since this process loaded it.
    verified: Bits,
    /// Sorted trigrams of the files read since the base was written.
    delta: HashMap<u32, Box<[u32]>>,
    /// Segment tables of the large files among them.
    delta_tables: HashMap<u32, Box<[u8]>>,
    /// Files (re)read since the base was written.
    since_merge: usize,
    text_bytes: u64,
    /// Live files the index cannot answer for (not checked against the disk
    /// since loaded, or not indexed: too large, sensitive, unreadable …),
    /// kept as files change, so that a grep asking the index first finds
    /// them without a pass over every file. (Sets of bits: a set of a
    /// million numbers in a hash set was 5 MiB, here 122 KiB.)
    unvouched: Bits,
    unvouched_count: usize,
    /// Live binary files the index answers for (left out, counted).
    binary: Bits,
    /// Every file the name index held when this index was last built or
    /// compared with it is among the live files, and every change since
    /// came on the change feed: a file the index does not know is pending.
    /// False after a load until the first comparison.
    complete: bool,
}

impl Live {
    /// The files of `paths` with their versions (`metas`, by number), all
    /// live, all checked against the disk or none.
    fn new(base: Option<Base>, paths: Paths, metas: Vec<DocMeta>, verified: bool) -> Live {
        debug_assert_eq!(paths.len(), metas.len());
        let n = metas.len();
        let mut live = Live {
            base,
            paths,
            metas,
            ..Live::default()
        };
        live.live = Bits::all(n);
        live.verified = if verified { Bits::all(n) } else { Bits::new(n) };
        // A path added twice (two names shown alike) is live once: as the
        // later, the one looked up.
        if live.paths.live() != n {
            for id in 0..n as u32 {
                if !live.paths.is_live(id) {
                    live.live.put(id, false);
                }
            }
        }
        for id in 0..n as u32 {
            live.sort(id);
        }
        live.text_bytes = live.base.as_ref().map_or(0, |b| b.text_bytes);
        live
    }

    /// The live files' numbers, ascending.
    fn live_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.live.ones()
    }

    fn is_live(&self, id: u32) -> bool {
        self.live.has(id)
    }

    fn is_verified(&self, id: u32) -> bool {
        self.verified.has(id)
    }

    fn meta(&self, id: u32) -> &DocMeta {
        &self.metas[id as usize]
    }

    fn path(&self, id: u32) -> Arc<str> {
        Arc::from(self.paths.path(id))
    }

    /// File `id` into `unvouched` or `binary` as it now is (after any change
    /// to it: read, verified, dropped).
    fn sort(&mut self, id: u32) {
        let live = self.is_live(id);
        let state = self.metas[id as usize].state;
        let unvouched = live && (!self.is_verified(id) || !state.indexed());
        let binary = live && !unvouched && state == DocState::Binary;
        if unvouched != self.unvouched.has(id) {
            self.unvouched.put(id, unvouched);
            if unvouched {
                self.unvouched_count += 1;
            } else {
                self.unvouched_count -= 1;
            }
        }
        self.binary.put(id, binary);
    }

    /// File `id` checked against the disk: answered for from now on.
    fn set_verified(&mut self, id: u32) {
        self.verified.put(id, true);
        self.sort(id);
    }

    fn base_docs(&self) -> usize {
        self.base.as_ref().map_or(0, Base::doc_count)
    }

    fn drop_path(&mut self, path: &str) {
        if let Some(id) = self.paths.remove(path) {
            self.forget(id);
        }
    }

    /// File `id` (live) no longer looked up by its path: dropped.
    fn drop_id(&mut self, id: u32) {
        if self.is_live(id) {
            self.paths.remove_id(id);
            self.forget(id);
        }
    }

    fn forget(&mut self, id: u32) {
        self.live.put(id, false);
        let meta = self.metas[id as usize];
        if meta.state.has_grams() {
            self.text_bytes = self.text_bytes.saturating_sub(meta.size);
        }
        self.delta.remove(&id);
        self.delta_tables.remove(&id);
        self.sort(id);
    }

    /// The segment table of file `id`, if it has one.
    fn table(&self, id: u32) -> Option<&[u8]> {
        if (id as usize) < self.base_docs() {
            self.base.as_ref()?.table(id)
        } else {
            self.delta_tables.get(&id).map(|t| &t[..])
        }
    }

    fn insert(&mut self, path: &str, reading: Reading) {
        let Reading { meta, grams, table } = reading;
        if let Some(id) = self.paths.get(path) {
            let doc = self.metas[id as usize];
            // Read again and found as it was (a file that is never indexed,
            // a document still not extracted): nothing to add.
            if !meta.state.has_grams()
                && doc.state == meta.state
                && (doc.same_version(&meta) || { meta.mtime_s } == i64::MIN)
            {
                self.set_verified(id);
                return;
            }
        }
        self.drop_path(path);
        let Some(id) = self.paths.push(path) else {
            // No room for its path (4 GiB of names since the last merge):
            // not held, so searched; and `answer` must not take the files
            // held for all of them.
            self.complete = false;
            return;
        };
        debug_assert_eq!(id as usize, self.metas.len());
        if meta.state.has_grams() {
            self.text_bytes += meta.size;
        }
        if let Some(g) = grams {
            self.delta.insert(id, g);
        }
        if let Some(t) = table {
            self.delta_tables.insert(id, t);
        }
        self.metas.push(meta);
        self.live.put(id, true);
        self.verified.put(id, true);
        self.sort(id);
        self.since_merge += 1;
    }
}

/// What reading a file again gave: its version, and when indexed its
/// sorted trigrams (and, for a large file, its segment table).
struct Reading {
    meta: DocMeta,
    grams: Option<Box<[u32]>>,
    table: Option<Box<[u8]>>,
}

/// Paths the change feed named, not read again yet.
#[derive(Default)]
struct Pending {
    paths: HashMap<String, (u64, Instant)>,
    seq: u64,
    /// Folders the feed said were moved, in order, not yet carried over:
    /// old path, new path, and the sequence numbers their paths were made
    /// pending with (both stay pending, searched directly, unless the move
    /// is carried over: [`worker::carry_moves`]).
    moves: Vec<Move>,
}

/// A folder moved ([`Pending::moves`]).
struct Move {
    from: (String, u64),
    to: (String, u64),
    /// Each path was pending before the move was (for a change of its own,
    /// not compared yet).
    from_was: bool,
    to_was: bool,
}

/// How long a query waits for the index's thread to carry over the folders
/// moved before it (a folder of a million files, renamed: a grep at once
/// took 0.17–0.22 s in all, waiting for it; searching it directly instead,
/// 5.4 s).
const MOVE_WAIT: Duration = Duration::from_millis(1000);

/// What `diagnostics` and `doctor` show.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Status {
    /// `waiting for the name index`, `loading`, `building`, `ready`, `failed`.
    pub state: String,
    /// Files the index knows.
    pub files: u64,
    /// Files it answers for (text, documents' text, binaries).
    pub indexed_files: u64,
    /// Bytes of text indexed.
    pub indexed_bytes: u64,
    /// Files searched directly, by reason.
    pub not_indexed: BTreeMap<String, u64>,
    /// Files of an index loaded from disk not yet checked against the disk
    /// (each is searched directly until it is): right after a restart, the
    /// first greps read every file while this falls to 0.
    pub unverified_files: u64,
    /// The text budget was reached: these files are searched directly.
    pub budget_reached: bool,
    pub max_total_bytes: u64,
    pub path: Option<String>,
    /// Size of the index file (or of the index in memory).
    pub size_bytes: u64,
    pub memory_mapped: bool,
    pub build_ms: Option<u64>,
    pub load_ms: Option<u64>,
    pub loaded_from_disk: bool,
    /// While building: files and bytes read so far, and in all.
    pub progress: Option<BuildProgress>,
    /// Changed files not read again yet (searched directly meanwhile), and
    /// how long the oldest has waited.
    pub pending_files: u64,
    pub lag_ms: u64,
    /// Files re-read since the index file was written.
    pub files_since_merge: u64,
    pub merges: u64,
    pub last_error: Option<String>,
    /// Files taken over from the content index of the settings before
    /// (ferret.toml changed while ferret ran): not read again.
    pub carried_files: Option<u64>,
    /// Comparisons with the name index since the start: whole ones (every
    /// file it lists against every file held here), and those below a
    /// folder the change feed named (created, moved or removed).
    pub whole_comparisons: u64,
    pub folder_comparisons: u64,
    /// Files those comparisons looked at (listed by the name index, or held
    /// here), in all: what a folder event costs beyond reading its files.
    pub files_compared: u64,
    /// Files read again since the start (named by the change feed, or found
    /// new or changed by a comparison).
    pub files_reread: u64,
    /// Folders moved on disk whose files were carried over to their new
    /// paths (not compared, not read again), and those files.
    pub folders_carried: u64,
    pub files_carried: u64,
}

#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct BuildProgress {
    pub files_done: u64,
    pub files_total: u64,
    pub bytes_done: u64,
    pub bytes_total: u64,
}

struct Shared {
    config: Config,
    key: u64,
    file: Option<PathBuf>,
    roots: Arc<Roots>,
    index: Index,
    live: RwLock<Live>,
    ready: AtomicBool,
    pending: Mutex<Pending>,
    /// The name index's change feed (from [`ContentIndex::start`]).
    feed: Mutex<Option<std::sync::mpsc::Receiver<Vec<ferret_index::Touch>>>>,
    /// Told when the moves pending were carried over (or given up), and when
    /// the thread is no longer busy.
    moved: std::sync::Condvar,
    /// The index's thread is in a refresh, a comparison or a merge (it
    /// carries moves only between them).
    busy: AtomicBool,
    status: Mutex<Status>,
    progress: Progress,
    building: AtomicBool,
    stop: AtomicBool,
    /// The background thread, for [`ContentIndex::shutdown`] to wait on.
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Its thread has ended (after [`ContentIndex::shutdown`]).
    ended: AtomicBool,
    /// The content index of the settings before, whose files this one
    /// takes over when it starts (`adopt`).
    adopt_from: Mutex<Option<ContentIndex>>,
    /// Made to take over another's files, until it has (or could not).
    adopting: AtomicBool,
    /// What it took over is in the file of the settings before: written
    /// under its own name once the new settings have held a while.
    foreign_file: AtomicBool,
}

/// The content index. Cheap to clone.
#[derive(Clone)]
pub struct ContentIndex {
    shared: Arc<Shared>,
}

/// Why the index did not narrow a search (it was searched in full).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unused {
    /// The pattern has no trigram every match must hold.
    Pattern,
    /// The first build is running.
    Building { done: u64, total: u64 },
    /// The name index's watcher does not follow every folder, so a change
    /// could go unseen.
    NotWatching,
    /// The name index's watcher could not confirm in time that it has
    /// applied every change made before the search (a storm of changes, a
    /// queue overflow).
    Behind,
    /// The index could not be built (the error says why).
    Failed(String),
}

impl std::fmt::Display for Unused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unused::Pattern => f.write_str("the pattern has no 3-character literal"),
            Unused::Building { done, total } => {
                write!(f, "building ({done} of {total} files)")
            }
            Unused::NotWatching => f.write_str("the file watcher does not follow every folder"),
            Unused::Behind => f.write_str("the file watcher is behind"),
            Unused::Failed(e) => write!(f, "unavailable: {e}"),
        }
    }
}

/// The index's answer for a list of files.
#[derive(Debug, Clone, Default)]
pub struct Narrowed {
    /// Per file: search it.
    pub keep: Vec<bool>,
    /// Files the index answered for (the rest were kept: not indexed,
    /// changed since, or pending).
    pub answered: u64,
    /// Of the files left out, those left out because they are binary.
    pub binary: u64,
}

impl ContentIndex {
    /// An index over `roots`, the files `index` lists. Nothing runs until
    /// [`ContentIndex::start`] (or [`ContentIndex::build_now`]).
    pub fn new(config: Config, roots: Arc<Roots>, index: Index) -> ContentIndex {
        let key = key_of(index.config(), &config, &roots);
        let file = file_for(index.config(), &config, &roots);
        ContentIndex {
            shared: Arc::new(Shared {
                config,
                key,
                file,
                roots,
                index,
                live: RwLock::new(Live::default()),
                ready: AtomicBool::new(false),
                pending: Mutex::new(Pending::default()),
                feed: Mutex::new(None),
                moved: std::sync::Condvar::new(),
                busy: AtomicBool::new(false),
                status: Mutex::new(Status {
                    state: "waiting for the name index".into(),
                    ..Status::default()
                }),
                progress: Progress::default(),
                building: AtomicBool::new(false),
                stop: AtomicBool::new(false),
                worker: Mutex::new(None),
                ended: AtomicBool::new(false),
                adopt_from: Mutex::new(None),
                adopting: AtomicBool::new(false),
                foreign_file: AtomicBool::new(false),
            }),
        }
    }

    /// Where the index file is (with a state directory).
    pub fn file(&self) -> Option<&std::path::Path> {
        self.shared.file.as_deref()
    }

    /// Follow the change feed, then load or build in the background and keep
    /// the index fresh. Returns at once.
    pub fn start(&self) {
        *self.shared.feed.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(self.shared.index.touches_with_moves());
        let shared = self.shared.clone();
        let worker = std::thread::Builder::new()
            .name("ferret-content".into())
            .spawn(move || {
                // Set however `run` ends (a panic too): queries stop waiting
                // on the thread (`wait_for_moves`).
                struct Ended(Arc<Shared>);
                impl Drop for Ended {
                    fn drop(&mut self) {
                        self.0.ended.store(true, Ordering::Release);
                        self.0.moved.notify_all();
                    }
                }
                let ended = Ended(shared);
                run(&ended.0);
            })
            .ok();
        *self.shared.worker.lock().unwrap_or_else(|p| p.into_inner()) = worker;
    }

    /// Load the index file, or build and write it, in this thread; every
    /// loaded file's version is checked against the disk. For `ferret index`
    /// and one-shot commands. `Err` says why no index is usable.
    pub fn build_now(&self, rebuild: bool) -> Result<(), String> {
        let s = &self.shared;
        if !rebuild && load(s).is_ok() {
            reconcile(s, true);
            // What changed since the file was written goes into it now.
            if s.live.read().is_ok_and(|l| l.since_merge > 0) && !merge(s) {
                return Err(self.status().last_error.unwrap_or_default());
            }
            return Ok(());
        }
        build_all(s)
    }

    /// Load the saved index file for a one-shot search (`ferret grep`),
    /// without building or writing one: every file's version is checked
    /// against the disk, and the files found changed are searched directly,
    /// as are files the index does not hold. `Ok` gives how many files it
    /// answers for; `Err` says why there is no usable file (none saved yet,
    /// or discarded), and the search is then a scan.
    pub fn open_saved(&self) -> Result<usize, String> {
        let s = &self.shared;
        match &s.file {
            None => return Err("there is no state directory to keep one in".into()),
            Some(f) if !f.exists() => {
                return Err(format!(
                    "none is saved yet at {} (`ferret index` or a running `ferret serve` writes it)",
                    f.display()
                ));
            }
            Some(_) => {}
        }
        load(s).map_err(|e| format!("the saved one is not usable: {e}"))?;
        Ok(verify_loaded(s))
    }

    /// Stop the background work.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // A build or merge writing the index file sees the flag within a few
        // thousand files and removes its temporary file: wait for that (a
        // while at most), or a process that exits now leaves the file behind.
        let worker = self
            .shared
            .worker
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(worker) = worker {
            let deadline = Instant::now() + SHUTDOWN_WAIT;
            while !worker.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if worker.is_finished() {
                let _ = worker.join();
            }
        }
    }

    /// Whether the index answers queries yet.
    pub fn is_ready(&self) -> bool {
        self.shared.ready.load(Ordering::Acquire)
    }

    /// Files and bytes read by the running build, and in all.
    pub fn progress(&self) -> Option<BuildProgress> {
        self.shared
            .building
            .load(Ordering::Relaxed)
            .then(|| progress_of(&self.shared.progress))
    }

    /// Wait until the index answers, at most `timeout` (or until `stop`).
    pub fn wait_ready(&self, timeout: Duration, stop: &dyn Fn() -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        while !self.is_ready() {
            if stop() || Instant::now() >= deadline || self.failed().is_some() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    fn failed(&self) -> Option<String> {
        let s = self.shared.status.lock().unwrap_or_else(|p| p.into_inner());
        (s.state == "failed").then(|| s.last_error.clone().unwrap_or_default())
    }

    pub fn status(&self) -> Status {
        let s = &self.shared;
        drain_feed(s);
        let mut status = s.status.lock().unwrap_or_else(|p| p.into_inner()).clone();
        status.max_total_bytes = s.config.budget.max_total_bytes;
        status.path = s.file.as_ref().map(|p| p.display().to_string());
        if s.building.load(Ordering::Relaxed) {
            status.progress = Some(progress_of(&s.progress));
        }
        {
            let live = s.live.read().unwrap_or_else(|p| p.into_inner());
            let mut not_indexed: BTreeMap<String, u64> = BTreeMap::new();
            let (mut files, mut indexed, mut unverified) = (0u64, 0u64, 0u64);
            for id in live.live_ids() {
                files += 1;
                unverified += u64::from(!live.is_verified(id));
                let state = live.meta(id).state;
                if state.indexed() {
                    indexed += 1;
                } else {
                    *not_indexed.entry(state_name(state)).or_default() += 1;
                }
            }
            status.budget_reached = not_indexed.contains_key("over_budget");
            status.files = files;
            status.indexed_files = indexed;
            status.not_indexed = not_indexed;
            status.unverified_files = unverified;
            status.indexed_bytes = live.text_bytes;
            status.files_since_merge = live.since_merge as u64;
            if let Some(b) = &live.base {
                status.size_bytes = b.len() as u64;
                status.memory_mapped = b.is_mapped();
            }
        }
        let pending = s.pending.lock().unwrap_or_else(|p| p.into_inner());
        status.pending_files = pending.paths.len() as u64;
        status.lag_ms = pending
            .paths
            .values()
            .map(|(_, at)| at.elapsed().as_millis() as u64)
            .max()
            .unwrap_or(0);
        status
    }

    /// Which of `files` (paths as shown, with the modification time and size
    /// the name index gives) may hold a match of `query`: the files the index
    /// answers for that hold its trigrams, and every file it cannot answer
    /// for (not indexed, changed since it was read, or pending). `synced`:
    /// the caller passed [`Index::caught_up`] before it gathered `files`, so
    /// the watcher's barrier is not waited for a second time.
    pub fn narrow(
        &self,
        query: &Grams,
        files: &[(&str, i64, u64)],
        synced: bool,
    ) -> Result<Narrowed, Unused> {
        let s = &self.shared;
        self.usable_for(query)?;
        if s.config.require_watcher && !synced {
            self.catch_up()?;
        }
        drain_feed(s);
        wait_for_moves(s, MOVE_WAIT);
        let live = s.live.read().unwrap_or_else(|p| p.into_inner());
        let hits = live
            .base
            .as_ref()
            .map(|b| evaluate(b, query))
            .unwrap_or_default();
        let pending = s.pending.lock().unwrap_or_else(|p| p.into_inner());
        let base_docs = live.base_docs();
        let mut out = Narrowed {
            keep: Vec::with_capacity(files.len()),
            ..Narrowed::default()
        };
        let mut near = Near::default();
        for &(path, mtime, size) in files {
            let keep = match live.paths.get_near(path, &mut near) {
                None => true,
                Some(id) => {
                    let meta = live.meta(id);
                    if !live.is_verified(id)
                        || !meta.state.indexed()
                        || { meta.mtime_s } != mtime
                        || { meta.size } != size
                        || pending.paths.contains_key(path)
                    {
                        true
                    } else {
                        out.answered += 1;
                        match meta.state {
                            DocState::Binary => {
                                out.binary += 1;
                                false
                            }
                            _ if (id as usize) < base_docs => hits.has(id),
                            _ => live.delta.get(&id).is_some_and(|grams| {
                                query.holds(&|g| grams.binary_search(&g).is_ok())
                            }),
                        }
                    }
                }
            };
            out.keep.push(keep);
        }
        Ok(out)
    }

    /// Whether the index can judge `query` now: a pattern with trigrams,
    /// an index built or loaded (else how far its build is, or why it failed).
    fn usable_for(&self, query: &Grams) -> Result<(), Unused> {
        if *query == Grams::All {
            return Err(Unused::Pattern);
        }
        if !self.is_ready() {
            if let Some(e) = self.failed() {
                return Err(Unused::Failed(e));
            }
            let p = progress_of(&self.shared.progress);
            return Err(Unused::Building {
                done: p.files_done,
                total: p.files_total,
            });
        }
        Ok(())
    }

    /// Past the name index's barrier: every change made before this call
    /// reaches the change feed first, so a file written a moment ago is
    /// pending (and read directly), not answered for from its old trigrams.
    fn catch_up(&self) -> Result<(), Unused> {
        let index = &self.shared.index;
        if !index.hears_every_change() {
            return Err(Unused::NotWatching);
        }
        if !index.sync(ferret_index::CATCH_UP_WAIT) {
            return Err(Unused::Behind);
        }
        Ok(())
    }

    /// The files that may hold a match of `query`, named by the index
    /// itself ([`Answer`]); `synced` as for [`ContentIndex::narrow`] (the
    /// caller passed [`Index::caught_up`] before it asks). `Ok(None)`:
    /// the index cannot list what it does not answer for without a pass over
    /// the files (it does not follow the change feed, as in a one-shot
    /// command; it was loaded and not yet compared with the name index; or
    /// too many files are unchecked or pending): the caller lists its scope
    /// and asks [`ContentIndex::narrow`]. Every file the name index holds
    /// that may match is then among the hits, the unvouched, the binaries
    /// or below a pending path, provided every change the name index
    /// applied reached its change feed (which it publishes before its
    /// barrier is passed). The binaries' paths are listed only when
    /// `list_binaries` (a caller whose scope is narrower than the index
    /// judges each): a tree of many binaries would build every path.
    pub fn answer(
        &self,
        query: &Grams,
        reach: Option<usize>,
        synced: bool,
        list_binaries: bool,
    ) -> Result<Option<Answer>, Unused> {
        let s = &self.shared;
        self.usable_for(query)?;
        let follows_feed = s.feed.lock().is_ok_and(|f| f.is_some());
        if !s.config.require_watcher || !follows_feed {
            return Ok(None);
        }
        if !synced {
            self.catch_up()?;
        }
        drain_feed(s);
        wait_for_moves(s, MOVE_WAIT);
        let live = s.live.read().unwrap_or_else(|p| p.into_inner());
        let pending = s.pending.lock().unwrap_or_else(|p| p.into_inner());
        let unsure = live.unvouched_count + pending.paths.len();
        if !live.complete || (unsure > UNSURE_FLOOR && unsure * UNSURE_SHARE > live.paths.live()) {
            return Ok(None);
        }
        let mut out = Answer {
            pending: pending
                .paths
                .keys()
                .map(|p| Arc::from(p.as_str()))
                .collect(),
            ..Answer::default()
        };
        drop(pending);
        out.unvouched = live.unvouched.ones().map(|id| live.path(id)).collect();
        if list_binaries || !out.pending.is_empty() {
            let all: Vec<Arc<str>> = live.binary.ones().map(|id| live.path(id)).collect();
            // A binary pending (or below a pending folder) may have changed:
            // the caller reads what the pending paths hold.
            let pending: HashSet<&str, foldhash::fast::RandomState> =
                out.pending.iter().map(|p| &**p).collect();
            let changed = |p: &str| {
                pending.contains(p) || p.match_indices('/').any(|(i, _)| pending.contains(&p[..i]))
            };
            out.binary_count = all.iter().filter(|p| !changed(p)).count() as u64;
            if list_binaries {
                out.binary = all;
                out.binary_listed = true;
            }
        } else {
            out.binary_count = live.binary.ones().count() as u64;
        }
        let answered = |id: u32| live.is_live(id) && !live.unvouched.has(id);
        let mut ids: Vec<u32> = Vec::new();
        if let Some(base) = &live.base {
            let hits = evaluate(base, query);
            let base_docs = live.base_docs();
            ids.extend(
                hits.ones()
                    .take_while(|&id| (id as usize) < base_docs)
                    .filter(|&id| answered(id)),
            );
        }
        ids.extend(live.delta.iter().filter_map(|(id, grams)| {
            (answered(*id) && query.holds(&|g| grams.binary_search(&g).is_ok())).then_some(*id)
        }));
        for id in ids {
            let size = live.meta(id).size;
            // Where in a large file a match can be, when every match fits
            // in a segment.
            let pairs = match (live.table(id), reach) {
                (Some(table), Some(r)) if r as u64 <= segments::seg_len(size) => {
                    Some(segments::reach(table, query))
                }
                _ => None,
            };
            let windows = match pairs {
                Some(0) => {
                    out.apart += 1;
                    continue;
                }
                Some(p) => segments::windows(p, size),
                None => Vec::new(),
            };
            out.hits.push(Hit {
                path: live.path(id),
                windows,
                size,
            });
        }
        Ok(Some(out))
    }
}

/// The index's answer for a query, without a list of files to judge
/// ([`ContentIndex::answer`]): the files that may hold a match, as the index
/// names them, plus those it cannot answer for. A caller maps these few
/// paths to the name index (which has the last word on what exists and is
/// in scope) instead of looking up every file of its scope here.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// Files the index answers for whose trigrams satisfy the query.
    pub hits: Vec<Hit>,
    /// Large files whose trigrams satisfy the query but never within two
    /// adjacent segments: no match fits there, so they are left out.
    pub apart: u64,
    /// Files the index knows but cannot answer for (not checked against the
    /// disk since loaded, or not indexed): read whatever they hold.
    pub unvouched: Vec<Arc<str>>,
    /// Paths the change feed named that are not read again yet: files
    /// created, changed or renamed to, and folders moved or created, each of
    /// which stands for every file below it. Read whatever they hold.
    pub pending: Vec<Arc<str>>,
    /// Binary files the index answers for (never a match; counted), when
    /// asked to list them (`binary_listed`).
    pub binary: Vec<Arc<str>>,
    /// Whether `binary` lists them (the caller asked).
    pub binary_listed: bool,
    /// How many binary files the index answers for, pending paths and the
    /// files below them left out (listed or not).
    pub binary_count: u64,
}

/// A file that may hold a match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub path: Arc<str>,
    /// For a large file whose segments tell where a match can be: the byte
    /// ranges that may hold one (every match of the pattern lies inside
    /// one, with the character on each side of it). The file holds a match
    /// only if one of them does. Empty: anywhere.
    pub windows: Vec<(u64, u64)>,
    /// Its size, as the index read it (the windows are of that version).
    pub size: u64,
}

/// Past this share of the files it knows (a quarter), and this many, the
/// files the index cannot answer for make it leave the choice to a pass over
/// the caller's scope ([`ContentIndex::answer`] says `None`): right after a
/// load, before every file is checked against the disk, or after a storm of
/// changes, looking up each of them by its path would cost more than the
/// pass, which visits each file of the scope once.
const UNSURE_SHARE: usize = 4;
const UNSURE_FLOOR: usize = 1024;

fn state_name(state: DocState) -> String {
    state.as_str().to_string()
}

fn progress_of(p: &Progress) -> BuildProgress {
    BuildProgress {
        files_done: p.files_done.load(Ordering::Relaxed),
        files_total: p.files_total.load(Ordering::Relaxed),
        bytes_done: p.bytes_done.load(Ordering::Relaxed),
        bytes_total: p.bytes_total.load(Ordering::Relaxed),
    }
}

/// Where the index file of these roots and rules is (with a state directory).
pub fn file_for(
    index: &ferret_index::IndexConfig,
    config: &Config,
    roots: &Roots,
) -> Option<PathBuf> {
    let key = key_of(index, config, roots);
    config
        .state_dir
        .as_ref()
        .map(|d| d.join(format!("content-{key:016x}.idx")))
}

/// What an index file on disk holds, for `doctor` (read, checked, not used).
#[derive(Debug, Clone)]
pub struct Summary {
    pub path: PathBuf,
    pub files: u64,
    pub indexed_files: u64,
    pub text_bytes: u64,
    pub size_bytes: u64,
    /// Unix seconds.
    pub built_at: u64,
    /// Files with more than one hard link: never answered for, so read by
    /// every grep whose scope holds them (`linked`).
    pub linked_files: u64,
}

/// The index file of these roots and rules: `Ok(None)` when there is none
/// yet, `Err` saying why it would be discarded.
pub fn inspect(
    index: &ferret_index::IndexConfig,
    config: &Config,
    roots: &Roots,
) -> Result<Option<Summary>, String> {
    let Some(path) = file_for(index, config, roots) else {
        return Ok(None);
    };
    let bytes = match Bytes::map(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} cannot be read: {e}", path.display())),
    };
    let base = Base::open(bytes, key_of(index, config, roots))
        .map_err(|e| format!("{} is not usable: {e}", path.display()))?;
    let (mut indexed, mut linked_files) = (0, 0);
    for i in 0..base.doc_count() {
        let state = base.meta(i).state;
        indexed += u64::from(state.indexed());
        linked_files += u64::from(state == DocState::Linked);
    }
    Ok(Some(Summary {
        files: base.doc_count() as u64,
        indexed_files: indexed,
        text_bytes: base.text_bytes,
        size_bytes: base.len() as u64,
        built_at: base.built_at,
        linked_files,
        path,
    }))
}

/// What makes an index file belong to these roots and rules: the roots, the
/// ignore rules, the file size bound and the operator's deny patterns (a file
/// they make sensitive must not keep its text in an index built without
/// them; in any order, as they deny the same files).
fn key_of(c: &ferret_index::IndexConfig, config: &Config, roots: &Roots) -> u64 {
    let mut key = format!(
        "content v1 hidden={} no_ignore={} max_file={}",
        c.rules.hidden, c.rules.no_ignore, config.budget.max_file_bytes
    );
    for r in &c.roots {
        key.push_str(&format!("\n{}={}", r.name, r.path.display()));
    }
    let mut deny: Vec<&str> = roots
        .policy
        .deny
        .extra_patterns()
        .iter()
        .map(String::as_str)
        .collect();
    deny.sort_unstable();
    deny.dedup();
    for pattern in deny {
        // A NUL cannot be in a pattern (they come from flags and the file).
        key.push_str("\ndeny\0");
        key.push_str(pattern);
    }
    ferret_index::snapshot::hash64(key.as_bytes())
}

mod adopt;
mod worker;

#[cfg(test)]
use worker::name_index_files;
use worker::{build_all, drain_feed, load, merge, reconcile, run, verify_loaded, wait_for_moves};

#[cfg(test)]
mod tests;
