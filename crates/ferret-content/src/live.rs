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

use cap_std::fs::MetadataExt;
use ferret_fs::{Roots, Target};
use ferret_index::{EntryId, Index, Kind, search::display_path};

use crate::{
    build::{self, BaseSource, Budget, BuildError, Entry, PairSource, Progress, Source},
    format::{Base, Bytes, DocMeta, DocState, LoadError, Sink},
    grams::Extractor,
    pattern::Grams,
    read::{self, Text},
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
                // A core left for the calls that must answer at once, as
                // grep's own budget leaves one (ferret_grep::Budget).
                threads: std::thread::available_parallelism()
                    .map_or(1, |n| n.get().saturating_sub(1).clamp(1, 8)),
            },
            require_watcher: true,
        }
    }
}

/// A pending file is read again once it has been quiet this long (a file
/// being written is read once, not at every write)…
const QUIET: Duration = Duration::from_millis(30);
/// How often the change feed is read while nothing else is to do.
const POLL: Duration = Duration::from_millis(10);
/// …or once it has waited this long, however busy.
const MAX_WAIT: Duration = Duration::from_millis(500);
/// How long a query waits for the name index's watcher to apply the changes
/// made before it (it usually takes well under a millisecond).
const SYNC_WAIT: Duration = Duration::from_secs(1);
/// How often the index is compared with the name index as a whole.
const RECONCILE_EVERY: Duration = Duration::from_secs(30);
/// A failed build is tried again after this long.
const RETRY_AFTER: Duration = Duration::from_secs(300);
/// Files re-read since the last merge, past which they are merged into a new
/// index file (at least this many, or a quarter of the index).
const MERGE_AFTER: usize = 2048;
/// Re-read files are merged into the file at least this often.
const MERGE_EVERY: Duration = Duration::from_secs(600);

/// One file the index knows.
struct Doc {
    path: Arc<str>,
    meta: DocMeta,
    /// Checked against the disk since this process loaded it.
    verified: bool,
    live: bool,
}

/// What queries read.
#[derive(Default)]
struct Live {
    base: Option<Base>,
    docs: Vec<Doc>,
    by_path: HashMap<Arc<str>, u32>,
    /// Sorted trigrams of the files read since the base was written.
    delta: HashMap<u32, Box<[u32]>>,
    /// Files (re)read since the base was written.
    since_merge: usize,
    text_bytes: u64,
}

impl Live {
    fn from_docs(base: Option<Base>, docs: Vec<(Arc<str>, DocMeta)>, verified: bool) -> Live {
        let mut live = Live {
            base,
            ..Live::default()
        };
        for (i, (path, meta)) in docs.into_iter().enumerate() {
            live.by_path.insert(path.clone(), i as u32);
            live.docs.push(Doc {
                path,
                meta,
                verified,
                live: true,
            });
        }
        live.text_bytes = live.base.as_ref().map_or(0, |b| b.text_bytes);
        live
    }

    fn base_docs(&self) -> usize {
        self.base.as_ref().map_or(0, Base::doc_count)
    }

    fn drop_path(&mut self, path: &str) {
        if let Some(id) = self.by_path.remove(path) {
            let doc = &mut self.docs[id as usize];
            doc.live = false;
            if doc.meta.state.has_grams() {
                self.text_bytes = self.text_bytes.saturating_sub(doc.meta.size);
            }
            self.delta.remove(&id);
        }
    }

    fn insert(&mut self, path: Arc<str>, meta: DocMeta, grams: Option<Box<[u32]>>) {
        if let Some(&id) = self.by_path.get(&path) {
            let doc = &mut self.docs[id as usize];
            // Read again and found as it was (a file that is never indexed,
            // a document still not extracted): nothing to add.
            if !meta.state.has_grams()
                && doc.meta.state == meta.state
                && (doc.meta.same_version(&meta) || meta.mtime_s == i64::MIN)
            {
                doc.verified = true;
                return;
            }
        }
        self.drop_path(&path);
        let id = self.docs.len() as u32;
        if meta.state.has_grams() {
            self.text_bytes += meta.size;
        }
        if let Some(g) = grams {
            self.delta.insert(id, g);
        }
        self.by_path.insert(path.clone(), id);
        self.docs.push(Doc {
            path,
            meta,
            verified: true,
            live: true,
        });
        self.since_merge += 1;
    }
}

/// Paths the change feed named, not read again yet.
#[derive(Default)]
struct Pending {
    paths: HashMap<String, (u64, Instant)>,
    seq: u64,
}

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
    feed: Mutex<Option<std::sync::mpsc::Receiver<Vec<String>>>>,
    status: Mutex<Status>,
    progress: Progress,
    building: AtomicBool,
    stop: AtomicBool,
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
        let key = key_of(index.config(), &config);
        let file = file_for(index.config(), &config);
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
                status: Mutex::new(Status {
                    state: "waiting for the name index".into(),
                    ..Status::default()
                }),
                progress: Progress::default(),
                building: AtomicBool::new(false),
                stop: AtomicBool::new(false),
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
            Some(self.shared.index.touches());
        let shared = self.shared.clone();
        let _ = std::thread::Builder::new()
            .name("ferret-content".into())
            .spawn(move || run(&shared));
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

    /// Stop the background work.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
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
            let (mut files, mut indexed) = (0u64, 0u64);
            for d in live.docs.iter().filter(|d| d.live) {
                files += 1;
                if d.meta.state.indexed() {
                    indexed += 1;
                } else {
                    *not_indexed.entry(state_name(d.meta.state)).or_default() += 1;
                }
            }
            status.budget_reached = not_indexed.contains_key("over_budget");
            status.files = files;
            status.indexed_files = indexed;
            status.not_indexed = not_indexed;
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
    /// for (not indexed, changed since it was read, or pending).
    pub fn narrow(&self, query: &Grams, files: &[(&str, i64, u64)]) -> Result<Narrowed, Unused> {
        let s = &self.shared;
        if *query == Grams::All {
            return Err(Unused::Pattern);
        }
        if !self.is_ready() {
            if let Some(e) = self.failed() {
                return Err(Unused::Failed(e));
            }
            let p = progress_of(&s.progress);
            return Err(Unused::Building {
                done: p.files_done,
                total: p.files_total,
            });
        }
        if s.config.require_watcher {
            if !watching(&s.index) {
                return Err(Unused::NotWatching);
            }
            // Every change made before this call reaches the change feed
            // first, so a file written a moment ago is pending below (and
            // read directly), not answered for from its old trigrams.
            if !s.index.sync(SYNC_WAIT) {
                return Err(Unused::Behind);
            }
        }
        drain_feed(s);
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
        for &(path, mtime, size) in files {
            let keep = match live.by_path.get(path) {
                None => true,
                Some(&id) => {
                    let doc = &live.docs[id as usize];
                    if !doc.verified
                        || !doc.meta.state.indexed()
                        || doc.meta.mtime_s != mtime
                        || doc.meta.size != size
                        || pending.paths.contains_key(path)
                    {
                        true
                    } else {
                        out.answered += 1;
                        match doc.meta.state {
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
}

fn state_name(state: DocState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn progress_of(p: &Progress) -> BuildProgress {
    BuildProgress {
        files_done: p.files_done.load(Ordering::Relaxed),
        files_total: p.files_total.load(Ordering::Relaxed),
        bytes_done: p.bytes_done.load(Ordering::Relaxed),
        bytes_total: p.bytes_total.load(Ordering::Relaxed),
    }
}

/// Whether the name index hears of every change: built, its watcher running
/// on every folder, every root present.
fn watching(index: &Index) -> bool {
    let s = index.status();
    s.ready
        && s.watcher.starts_with("watching")
        && !s.watch_limit_reached
        && s.missing_roots.is_empty()
}

/// Where the index file of these roots and rules is (with a state directory).
pub fn file_for(index: &ferret_index::IndexConfig, config: &Config) -> Option<PathBuf> {
    let key = key_of(index, config);
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
}

/// The index file of these roots and rules: `Ok(None)` when there is none
/// yet, `Err` saying why it would be discarded.
pub fn inspect(
    index: &ferret_index::IndexConfig,
    config: &Config,
) -> Result<Option<Summary>, String> {
    let Some(path) = file_for(index, config) else {
        return Ok(None);
    };
    let bytes = match Bytes::map(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} cannot be read: {e}", path.display())),
    };
    let base = Base::open(bytes, key_of(index, config))
        .map_err(|e| format!("{} is not usable: {e}", path.display()))?;
    let indexed = (0..base.doc_count())
        .filter(|&i| base.doc(i).1.state.indexed())
        .count() as u64;
    Ok(Some(Summary {
        files: base.doc_count() as u64,
        indexed_files: indexed,
        text_bytes: base.text_bytes,
        size_bytes: base.len() as u64,
        built_at: base.built_at,
        path,
    }))
}

/// What makes an index file belong to these roots and rules.
fn key_of(c: &ferret_index::IndexConfig, config: &Config) -> u64 {
    let mut key = format!(
        "content v1 hidden={} no_ignore={} max_file={}",
        c.rules.hidden, c.rules.no_ignore, config.budget.max_file_bytes
    );
    for r in &c.roots {
        key.push_str(&format!("\n{}={}", r.name, r.path.display()));
    }
    ferret_index::snapshot::hash64(key.as_bytes())
}

/// A set of file numbers.
#[derive(Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, i: u32) {
        if let Some(w) = self.0.get_mut(i as usize / 64) {
            *w |= 1 << (i % 64);
        }
    }
    fn has(&self, i: u32) -> bool {
        self.0
            .get(i as usize / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    fn all(n: usize) -> Bits {
        let mut b = Bits(vec![u64::MAX; n.div_ceil(64)]);
        if !n.is_multiple_of(64)
            && let Some(last) = b.0.last_mut()
        {
            *last = (1u64 << (n % 64)) - 1;
        }
        b
    }
    fn and(&mut self, o: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a &= b;
        }
    }
    fn or(&mut self, o: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a |= b;
        }
    }
    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
}

/// The files of `base` whose trigrams satisfy `q`.
fn evaluate(base: &Base, q: &Grams) -> Bits {
    let n = base.doc_count();
    let mut memo: HashMap<u32, Bits> = HashMap::new();
    eval(base, q, n, &mut memo)
}

/// Terms of an AND beyond the rarest few are skipped once the running
/// answer holds few files (skipping a term only widens the answer).
const AND_TERMS: usize = 12;

fn eval(base: &Base, q: &Grams, n: usize, memo: &mut HashMap<u32, Bits>) -> Bits {
    match q {
        Grams::All => Bits::all(n),
        Grams::Gram(g) => {
            if let Some(b) = memo.get(g) {
                return Bits(b.0.clone());
            }
            let mut bits = Bits::new(n);
            if let Some(p) = base.posting(*g) {
                p.for_each(|d| bits.set(d));
            }
            memo.insert(*g, Bits(bits.0.clone()));
            bits
        }
        Grams::And(qs) => {
            // Rarest first: single trigrams by their list's length.
            let cost = |q: &Grams| match q {
                Grams::Gram(g) => base.posting(*g).map_or(0, |p| p.count as usize),
                _ => usize::MAX,
            };
            let mut order: Vec<&Grams> = qs.iter().collect();
            order.sort_by_key(|q| cost(q));
            let mut acc = Bits::all(n);
            for (i, q) in order.into_iter().enumerate() {
                if i >= AND_TERMS || acc.is_empty() {
                    break;
                }
                acc.and(&eval(base, q, n, memo));
            }
            acc
        }
        Grams::Or(qs) => {
            let mut acc = Bits::new(n);
            for q in qs {
                acc.or(&eval(base, q, n, memo));
            }
            acc
        }
    }
}

fn set_status(s: &Shared, f: impl FnOnce(&mut Status)) {
    f(&mut s.status.lock().unwrap_or_else(|p| p.into_inner()));
}

/// Mark pending every path the change feed has reported so far.
fn drain_feed(s: &Shared) {
    let feed = s.feed.lock().unwrap_or_else(|p| p.into_inner());
    let Some(rx) = feed.as_ref() else { return };
    let mut batches = Vec::new();
    while let Ok(paths) = rx.try_recv() {
        batches.push(paths);
    }
    drop(feed);
    if batches.is_empty() {
        return;
    }
    let mut p = s.pending.lock().unwrap_or_else(|p| p.into_inner());
    let now = Instant::now();
    for path in batches.into_iter().flatten() {
        p.seq += 1;
        let seq = p.seq;
        p.paths.insert(path, (seq, now));
    }
}

/// The background thread.
fn run(s: &Shared) {
    while !s.index.wait_ready(Duration::from_millis(200)) {
        if s.stop.load(Ordering::Relaxed) {
            return;
        }
    }
    let mut last_try = Instant::now();
    let mut ok = match load(s) {
        Ok(()) => {
            reconcile(s, true);
            true
        }
        Err(_) => build_all(s).is_ok(),
    };
    let mut last_reconcile = Instant::now();
    let mut last_merge = Instant::now();
    let mut merge_failed: Option<Instant> = None;
    let mut overflows = s.index.status().overflow_rescans;
    while !s.stop.load(Ordering::Relaxed) {
        if !ok {
            std::thread::sleep(Duration::from_millis(200));
            if last_try.elapsed() >= RETRY_AFTER {
                last_try = Instant::now();
                ok = build_all(s).is_ok();
            }
            continue;
        }
        let due = take_due(s);
        if !due.is_empty() {
            refresh(s, due);
        }
        // A queue overflow may have lost a rewrite that kept size and
        // mtime second: check every file's full version again.
        let now_overflows = s.index.overflow_rescans();
        if now_overflows != overflows || last_reconcile.elapsed() >= RECONCILE_EVERY {
            reconcile(s, now_overflows != overflows);
            overflows = now_overflows;
            last_reconcile = Instant::now();
        }
        let (since, base_docs) = s
            .live
            .read()
            .map_or((0, 0), |l| (l.since_merge, l.base_docs()));
        // A timed merge rewrites the whole index file: only for enough change
        // (1% of the files), not for the one file edited since the last.
        let due = since >= MERGE_AFTER.max(base_docs / 4)
            || (since > 0 && since * 100 >= base_docs && last_merge.elapsed() >= MERGE_EVERY);
        if due && merge_failed.is_none_or(|at| at.elapsed() >= RETRY_AFTER) {
            merge_failed = (!merge(s)).then(Instant::now);
            last_merge = Instant::now();
        }
    }
}

/// The pending paths that are due (quiet long enough, or waited long
/// enough), with their sequence numbers; waits a little when none is.
fn take_due(s: &Shared) -> Vec<(String, u64)> {
    std::thread::sleep(POLL);
    drain_feed(s);
    let p = s.pending.lock().unwrap_or_else(|p| p.into_inner());
    let first = p.paths.values().map(|(_, at)| *at).min();
    p.paths
        .iter()
        .filter(|(_, (_, at))| {
            at.elapsed() >= QUIET || first.is_some_and(|f| f.elapsed() >= MAX_WAIT)
        })
        .map(|(path, (seq, _))| (path.clone(), *seq))
        .take(4096)
        .collect()
}

/// Forget the pending paths handled, unless the feed named them again since.
fn clear_pending(s: &Shared, done: &[(String, u64)]) {
    let mut p = s.pending.lock().unwrap_or_else(|p| p.into_inner());
    for (path, seq) in done {
        if p.paths.get(path).is_some_and(|(now, _)| now == seq) {
            p.paths.remove(path);
        }
    }
}

/// Every file the name index holds, sorted by path.
fn name_index_files(index: &Index) -> Vec<(String, u64, i64)> {
    let mut files = index.with_store(|store| {
        let mut out = Vec::new();
        for id in 0..store.capacity_ids() as EntryId {
            if store.is_live(id) && store.kind(id) == Kind::File && !store.roots().contains(&id) {
                let m = store.meta(id);
                out.push((display_path(store, id), m.size, m.mtime));
            }
        }
        out
    });
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    files
}

/// Read the pending files again (or drop those gone).
fn refresh(s: &Shared, due: Vec<(String, u64)>) {
    let mut unknown = false;
    let mut reads = Vec::new();
    let mut drops = Vec::new();
    for (path, _) in &due {
        match s.index.file(path) {
            Some((size, _)) => reads.push(Entry {
                path: path.as_str().into(),
                size,
            }),
            None => {
                drops.push(path.clone());
                // A folder (moved, removed) or a name the index no longer
                // has: compare everything once.
                let known = s
                    .live
                    .read()
                    .is_ok_and(|l| l.by_path.contains_key(path.as_str()));
                unknown |= !known;
            }
        }
    }
    let read = read_files(s, &reads);
    {
        let mut live = s.live.write().unwrap_or_else(|p| p.into_inner());
        for p in &drops {
            live.drop_path(p);
        }
        for (path, meta, grams) in read {
            live.insert(path, meta, grams);
        }
    }
    clear_pending(s, &due);
    if unknown {
        reconcile(s, false);
    }
}

/// Read files for the index (not past the budget).
/// A file read again: its path, version, and sorted trigrams when indexed.
type Reread = (Arc<str>, DocMeta, Option<Box<[u32]>>);

fn read_files(s: &Shared, entries: &[Entry]) -> Vec<Reread> {
    let budget = &s.config.budget;
    let mut x = Extractor::new();
    let mut buf = Vec::new();
    let mut used = s.live.read().map_or(0, |l| l.text_bytes);
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        if s.stop.load(Ordering::Relaxed) {
            break;
        }
        let old = s.live.read().ok().and_then(|l| {
            l.by_path
                .get(&*e.path)
                .map(|&id| l.docs[id as usize].meta)
                .filter(|m| m.state.has_grams())
                .map_or(Some(0), |m| Some(m.size))
        });
        let room = used.saturating_sub(old.unwrap_or(0)) + e.size.min(budget.max_file_bytes)
            <= budget.max_total_bytes;
        let (meta, text) = if room {
            read::read(&s.roots, &e.path, budget.max_file_bytes, &mut buf)
        } else {
            (DocMeta::unread(e.size, DocState::OverBudget), Text::None)
        };
        let bytes: &[u8] = match &text {
            Text::Bytes => &buf,
            Text::Document(d) => d.text.as_bytes(),
            Text::None => &[],
        };
        let grams = meta.state.has_grams().then(|| {
            let mut g = x.distinct(bytes).to_vec();
            g.sort_unstable();
            g.into_boxed_slice()
        });
        if meta.state.has_grams() {
            used = used.saturating_sub(old.unwrap_or(0)) + meta.size;
        }
        out.push((e.path.clone(), meta, grams));
    }
    out
}

/// Compare the index with the name index (and, with `verify`, every file's
/// version with the disk): drop what is gone, read what is new or changed.
fn reconcile(s: &Shared, verify: bool) {
    let files = name_index_files(&s.index);
    let mut reads: Vec<Entry> = Vec::new();
    let mut verified: Vec<u32> = Vec::new();
    let drops: Vec<Arc<str>>;
    {
        let live = s.live.read().unwrap_or_else(|p| p.into_inner());
        let present: HashSet<&str> = files.iter().map(|(p, _, _)| p.as_str()).collect();
        drops = live
            .by_path
            .keys()
            .filter(|p| !present.contains(&***p))
            .cloned()
            .collect();
        for (path, size, mtime) in &files {
            let Some(&id) = live.by_path.get(path.as_str()) else {
                reads.push(Entry {
                    path: path.as_str().into(),
                    size: *size,
                });
                continue;
            };
            let doc = &live.docs[id as usize];
            let m = &doc.meta;
            let read_before = m.mtime_s != i64::MIN;
            let stale = m.size != *size
                || (read_before && m.mtime_s != *mtime)
                || matches!(
                    m.state,
                    DocState::Changed | DocState::Unreadable | DocState::DocumentPending
                )
                || (m.state == DocState::OverBudget
                    && live.text_bytes + size <= s.config.budget.max_total_bytes)
                || (verify || !doc.verified) && !same_on_disk(&s.roots, path, m);
            if stale {
                reads.push(Entry {
                    path: doc.path.clone(),
                    size: *size,
                });
            } else if !doc.verified {
                verified.push(id);
            }
        }
    }
    {
        let mut live = s.live.write().unwrap_or_else(|p| p.into_inner());
        for id in verified {
            live.docs[id as usize].verified = true;
        }
        for p in &drops {
            live.drop_path(p);
        }
    }
    for batch in reads.chunks(256) {
        let read = read_files(s, batch);
        let mut live = s.live.write().unwrap_or_else(|p| p.into_inner());
        for (path, meta, grams) in read {
            live.insert(path, meta, grams);
        }
    }
}

/// Whether the file at `shown` is still the version `m` (size, times, inode).
fn same_on_disk(roots: &Roots, shown: &str, m: &DocMeta) -> bool {
    let Ok(Target::In(root, rel)) = roots.resolve(shown) else {
        return false;
    };
    let Ok(meta) = root.dir().symlink_metadata(rel.as_os_path()) else {
        return false;
    };
    // Files never read (sensitive, too large) only keep their size.
    if m.mtime_s == i64::MIN {
        return meta.len() == m.size;
    }
    meta.len() == m.size
        && meta.mtime() == m.mtime_s
        && meta.mtime_nsec() as u32 == m.mtime_ns
        && meta.ctime() == m.ctime_s
        && meta.ctime_nsec() as u32 == m.ctime_ns
        && meta.ino() == m.ino
}

/// Load the index file; its files are checked against the disk before the
/// index answers for them.
fn load(s: &Shared) -> Result<(), LoadError> {
    let Some(path) = &s.file else {
        return Err(LoadError::Corrupt("no state directory"));
    };
    set_status(s, |st| st.state = "loading".into());
    let started = Instant::now();
    let bytes = match Bytes::map(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LoadError::Corrupt("missing"));
        }
        Err(e) => {
            tracing::warn!(
                "content index {} unreadable ({e}); rebuilding",
                path.display()
            );
            return Err(LoadError::Corrupt("unreadable"));
        }
    };
    let base = match Base::open(bytes, s.key) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(
                "content index {} discarded: {e}; rebuilding",
                path.display()
            );
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
    };
    let docs: Vec<(Arc<str>, DocMeta)> = (0..base.doc_count())
        .map(|i| {
            let (p, m) = base.doc(i);
            (Arc::from(p), m)
        })
        .collect();
    let deny_changed: Vec<Arc<str>> = docs
        .iter()
        .filter(|(p, m)| m.state.has_grams() && is_sensitive_now(&s.roots, p))
        .map(|(p, _)| p.clone())
        .collect();
    let mut live = Live::from_docs(Some(base), docs, false);
    // A file denied since the index was written: forget what it held.
    for p in deny_changed {
        live.drop_path(&p);
    }
    let files = live.docs.len();
    *s.live.write().unwrap_or_else(|p| p.into_inner()) = live;
    s.ready.store(true, Ordering::Release);
    let ms = started.elapsed().as_millis() as u64;
    set_status(s, |st| {
        st.state = "ready".into();
        st.loaded_from_disk = true;
        st.load_ms = Some(ms);
        st.last_error = None;
    });
    tracing::info!(files, ms, "content index loaded");
    Ok(())
}

fn is_sensitive_now(roots: &Roots, shown: &str) -> bool {
    match roots.resolve(shown) {
        Ok(Target::In(_, rel)) => roots.policy.deny.is_sensitive(&rel),
        _ => false,
    }
}

/// Build the index from every file the name index holds.
fn build_all(s: &Shared) -> Result<(), String> {
    set_status(s, |st| st.state = "building".into());
    s.building.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let entries: Vec<Entry> = name_index_files(&s.index)
        .into_iter()
        .map(|(path, size, _)| Entry {
            path: path.into(),
            size,
        })
        .collect();
    let sink = match &s.file {
        Some(path) => Sink::file(path).map_err(|e| write_error(path, &e)),
        None => Ok(Sink::memory()),
    };
    let built = sink.and_then(|sink| {
        build::build(
            &s.roots,
            entries,
            &s.config.budget,
            s.key,
            sink,
            &s.progress,
            &s.stop,
        )
        .map_err(|e| match (&e, &s.file) {
            (BuildError::Io(io), Some(path)) => write_error(path, io),
            _ => e.to_string(),
        })
    });
    s.building.store(false, Ordering::Relaxed);
    match built {
        Ok(built) => {
            let files = built.docs.len();
            let bytes = built.base.len();
            let live = Live::from_docs(Some(built.base), built.docs, true);
            *s.live.write().unwrap_or_else(|p| p.into_inner()) = live;
            s.ready.store(true, Ordering::Release);
            let ms = started.elapsed().as_millis() as u64;
            set_status(s, |st| {
                st.state = "ready".into();
                st.build_ms = Some(ms);
                st.last_error = None;
            });
            tracing::info!(files, bytes, ms, "content index built");
            Ok(())
        }
        Err(e) => {
            tracing::warn!("content index not built: {e}; grep reads every file meanwhile");
            set_status(s, |st| {
                st.state = "failed".into();
                st.last_error = Some(e.clone());
            });
            Err(e)
        }
    }
}

fn write_error(path: &std::path::Path, e: &std::io::Error) -> String {
    format!(
        "cannot write {}: {e}; free space in the state directory or choose another (--state-dir), or turn the index off (--content-index off)",
        path.display()
    )
}

/// Write the files re-read since the last merge into a new index file;
/// whether that worked.
fn merge(s: &Shared) -> bool {
    let started = Instant::now();
    let result = {
        let live = s.live.read().unwrap_or_else(|p| p.into_inner());
        let mut renumber = vec![u32::MAX; live.docs.len()];
        let mut docs: Vec<(Arc<str>, DocMeta)> = Vec::with_capacity(live.by_path.len());
        let mut verified = Vec::with_capacity(live.by_path.len());
        for (id, d) in live.docs.iter().enumerate() {
            if d.live {
                renumber[id] = docs.len() as u32;
                docs.push((d.path.clone(), d.meta));
                verified.push(d.verified);
            }
        }
        let mut pairs = Vec::new();
        for (&id, grams) in &live.delta {
            let n = renumber[id as usize];
            if n != u32::MAX {
                pairs.extend(grams.iter().map(|&g| (u64::from(g) << 32) | u64::from(n)));
            }
        }
        let base_docs = live.base_docs();
        let mut sources: Vec<Box<dyn Source + '_>> = Vec::new();
        if let Some(base) = &live.base {
            sources.push(Box::new(BaseSource::new(base, &renumber[..base_docs])));
        }
        sources.push(Box::new(PairSource::new(pairs)));
        let sink = match &s.file {
            Some(path) => Sink::file(path).map_err(|e| write_error(path, &e)),
            None => Ok(Sink::memory()),
        };
        let text_bytes = live.text_bytes;
        sink.and_then(|sink| {
            build::write(sink, sources, &docs, s.key, text_bytes, &s.stop).map_err(|e| {
                match (&e, &s.file) {
                    (BuildError::Io(io), Some(path)) => write_error(path, io),
                    _ => e.to_string(),
                }
            })
        })
        .map(|base| (base, docs, verified))
    };
    match result {
        Ok((base, docs, verified)) => {
            let mut fresh = Live::from_docs(Some(base), docs, false);
            for (d, v) in fresh.docs.iter_mut().zip(verified) {
                d.verified = v;
            }
            let files = fresh.docs.len();
            *s.live.write().unwrap_or_else(|p| p.into_inner()) = fresh;
            set_status(s, |st| st.merges += 1);
            tracing::debug!(
                files,
                ms = started.elapsed().as_millis() as u64,
                "content index merged"
            );
            true
        }
        Err(e) => {
            // The index in memory still answers; only the file is behind.
            tracing::warn!("content index not merged: {e}");
            set_status(s, |st| st.last_error = Some(e));
            false
        }
    }
}

#[cfg(test)]
mod tests;
