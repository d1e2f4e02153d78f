//! Building an index from the files the name index lists, and merging
//! indexes.
//!
//! Files are numbered in path order and cut into chunks of about
//! [`CHUNK_BYTES`]; worker threads take chunks in turn, read each file through
//! the roots, and collect `(trigram, file)` pairs. When a buffer fills (or a
//! chunk ends) the pairs are sorted by trigram (a stable radix sort keeps the
//! files in order) and appended to a spill as a *run*: its trigram table,
//! then its lists. The runs are then merged trigram by trigram into the final
//! index; because each run holds a range of files and runs are taken in
//! order, a trigram's lists simply follow one another. Memory stays at the
//! workers' buffers ([`RUN_PAIRS`] in all, however many workers) and the
//! files' paths (held once, `paths`) and versions, whatever the size of the
//! tree; the spill lives next to the index (or in memory without a state
//! directory).

use std::{
    io::{self, Write},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
};

use ferret_fs::Roots;

use crate::{
    format::{Base, Bytes, DocMeta, DocState, Sink, Writer},
    grams::{Extractor, get_varint, put_varint},
    paths::Paths,
    radix,
    read::{self, Text},
    segments,
};

/// A file to read again, as the name index knows it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub path: Arc<str>,
    pub size: u64,
}

/// How far a build has got (for progress bars and `diagnostics`).
#[derive(Debug, Default)]
pub struct Progress {
    pub files_total: AtomicU64,
    pub files_done: AtomicU64,
    pub bytes_total: AtomicU64,
    pub bytes_done: AtomicU64,
}

/// What a build may read.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Larger files are not indexed (they are searched directly).
    pub max_file_bytes: u64,
    /// Text indexed in all; the files past it are searched directly.
    pub max_total_bytes: u64,
    pub threads: usize,
    /// Text files at least this large (with no NUL byte) also get a table
    /// of where their trigrams are (`segments`), so that a grep reads only
    /// the parts of them where a match can be.
    pub segment_from: u64,
}

#[derive(Debug)]
pub enum BuildError {
    Stopped,
    Io(io::Error),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Stopped => f.write_str("stopped"),
            BuildError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for BuildError {
    fn from(e: io::Error) -> Self {
        BuildError::Io(e)
    }
}

/// A finished index and what it holds of each file (by number, as the
/// paths it was built from).
pub struct Built {
    pub base: Base,
    pub metas: Vec<DocMeta>,
}

/// Text per chunk of work (small in tests, so that they cross chunks).
const CHUNK_BYTES: u64 = if cfg!(test) { 2048 } else { 16 << 20 };
/// Pairs the workers collect in all before each writes a run (shared out
/// among them, so more cores do not mean more memory): 8 bytes each, and
/// as many again to sort them, 32 MiB in all. (4 Mi pairs a worker, whose
/// buffers also doubled past it, were a 319 MiB peak on the Rust docs; runs
/// of 3 Mi a worker sorted a fifth slower than runs of 1 Mi, whose buffers
/// stay nearer the cache, and merging the more runs costs less than that.)
const RUN_PAIRS: usize = if cfg!(test) { 2100 } else { 2 << 20 };

/// Where runs go while a build runs.
enum Spill {
    File(io::BufWriter<std::fs::File>, std::path::PathBuf),
    Memory(Vec<u8>),
}

struct SpillState {
    spill: Spill,
    at: u64,
    runs: Vec<RunInfo>,
    /// Segment tables written to the spill: (file, offset, length).
    tables: Vec<(u32, u64, u64)>,
}

/// A run in the spill: `grams` entries of (trigram, files, the list's bytes,
/// its last file; u32 each), then the lists (first file number, then gaps,
/// varints). The bytes and the last file let the merge copy a list instead
/// of decoding and encoding it again (it was a seventh of a build's time,
/// on one core).
#[derive(Debug, Clone, Copy)]
struct RunInfo {
    order: (usize, u32),
    table: u64,
    grams: u32,
    lists: u64,
}

/// The state of one file before it is read: read it, or what it is.
fn plan(sizes: &[u64], budget: &Budget) -> (Vec<Option<DocState>>, u64) {
    let mut total = 0u64;
    let plan = sizes
        .iter()
        .map(|&size| {
            if size > budget.max_file_bytes {
                // Opened for its head only (a document's text may be small).
                None
            } else if total + size > budget.max_total_bytes {
                Some(DocState::OverBudget)
            } else {
                total += size;
                None
            }
        })
        .collect();
    (plan, total)
}

/// Build the index of the files of `paths` (by number, each of the size in
/// `sizes`) into `sink`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    roots: &Roots,
    paths: &Paths,
    sizes: &[u64],
    budget: &Budget,
    key: u64,
    sink: Sink,
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<Built, BuildError> {
    debug_assert_eq!(paths.len(), sizes.len());
    let (planned, to_read) = plan(sizes, budget);
    progress
        .files_total
        .store(sizes.len() as u64, Ordering::Relaxed);
    progress.bytes_total.store(to_read, Ordering::Relaxed);
    let mut chunks: Vec<(usize, usize)> = Vec::new();
    let (mut start, mut bytes) = (0usize, 0u64);
    for (i, &size) in sizes.iter().enumerate() {
        if planned[i].is_none() {
            bytes += size.min(budget.max_file_bytes);
        }
        if bytes >= CHUNK_BYTES {
            chunks.push((start, i + 1));
            start = i + 1;
            bytes = 0;
        }
    }
    if start < sizes.len() {
        chunks.push((start, sizes.len()));
    }
    let spill = match &sink {
        Sink::File { dest, .. } => {
            let path = dest.with_extension(format!("runs{}", std::process::id()));
            let file = crate::format::private_file(&path)?;
            Spill::File(io::BufWriter::with_capacity(1 << 20, file), path)
        }
        Sink::Memory(_) => Spill::Memory(Vec::new()),
    };
    let state = Mutex::new(SpillState {
        spill,
        at: 0,
        runs: Vec::new(),
        tables: Vec::new(),
    });
    // A file no worker got to (the build failed) is unreadable.
    let metas: Mutex<Vec<DocMeta>> = Mutex::new(
        sizes
            .iter()
            .map(|&size| DocMeta::unread(size, DocState::Unreadable))
            .collect(),
    );
    let text_bytes = AtomicU64::new(0);
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<BuildError>> = Mutex::new(None);
    let threads = budget.threads.clamp(1, 16).min(chunks.len().max(1));
    let work = || {
        let mut worker = Worker::new(RUN_PAIRS / threads);
        loop {
            let c = next.fetch_add(1, Ordering::Relaxed);
            if c >= chunks.len() || failed.lock().map_or(true, |f| f.is_some()) {
                return;
            }
            let (from, to) = chunks[c];
            let r = worker.chunk(
                roots,
                paths,
                &sizes[from..to],
                from,
                &planned[from..to],
                budget,
                c,
                &state,
                progress,
                stop,
                &text_bytes,
            );
            match r {
                Ok(m) => {
                    let mut all = metas.lock().unwrap_or_else(|p| p.into_inner());
                    all[from..to].copy_from_slice(&m);
                }
                Err(e) => {
                    let mut f = failed.lock().unwrap_or_else(|p| p.into_inner());
                    f.get_or_insert(e);
                    return;
                }
            }
        }
    };
    // Threads of their own even when one is enough: the priority is lowered
    // on them, never on the caller's thread (the content thread, which
    // re-reads changed files, or a command's main thread).
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                // Background work: below the threads that answer calls.
                let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 10);
                work()
            });
        }
    });
    let state = state.into_inner().unwrap_or_else(|p| p.into_inner());
    let (spill_bytes, spill_path) = match state.spill {
        Spill::File(out, path) => {
            let flushed = out.into_inner().map_err(|e| e.into_error());
            let mapped = flushed.and_then(|_| Bytes::map(&path));
            (mapped, Some(path))
        }
        Spill::Memory(v) => (Ok(Bytes::Heap(v)), None),
    };
    let cleanup = |path: &Option<std::path::PathBuf>| {
        if let Some(p) = path {
            let _ = std::fs::remove_file(p);
        }
    };
    if let Some(e) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        cleanup(&spill_path);
        sink.discard();
        return Err(e);
    }
    let spill_bytes = match spill_bytes {
        Ok(b) => b,
        Err(e) => {
            cleanup(&spill_path);
            sink.discard();
            return Err(e.into());
        }
    };
    let mut runs = state.runs;
    runs.sort_by_key(|r| r.order);
    let metas: Vec<DocMeta> = metas.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut tables: Vec<(u32, &[u8])> = state
        .tables
        .iter()
        .map(|&(doc, at, len)| (doc, &spill_bytes[at as usize..(at + len) as usize]))
        .collect();
    tables.sort_unstable_by_key(|t| t.0);
    // Once the runs are merged, the spill's pages leave the process's
    // memory before the index file is written and read whole for its
    // checksum (the tables' pages come back as they are copied): both
    // resident at once were the build's peak.
    let written = Writer::new(sink)
        .map_err(BuildError::from)
        .and_then(|mut writer| {
            match merge_in_parts(&mut writer, &spill_bytes, &runs, threads, stop) {
                Ok(()) => {
                    spill_bytes.forget_pages();
                    finish(
                        writer,
                        paths,
                        &metas,
                        &tables,
                        key,
                        text_bytes.load(Ordering::Relaxed),
                    )
                }
                Err(e) => {
                    writer.discard();
                    Err(e)
                }
            }
        });
    drop(tables);
    drop(spill_bytes);
    cleanup(&spill_path);
    Ok(Built {
        base: open(written?, key)?,
        metas,
    })
}

/// The index just written, checked as a loaded one is but for its checksum
/// (just computed from the same bytes); its pages then leave the process's
/// memory (summing it read them all): queries bring back those they read.
fn open(bytes: Bytes, key: u64) -> Result<Base, BuildError> {
    let base = Base::open_written(bytes, key)
        .map_err(|e| BuildError::Io(io::Error::other(e.to_string())))?;
    base.forget_pages();
    Ok(base)
}

/// Merge `sources` (each holding a later range of files than the one before)
/// into a finished index of the files of `paths` (versions in `metas`, by
/// number), with the segment tables of its large files (`tables`, by file
/// number, ascending).
#[allow(clippy::too_many_arguments)]
pub(crate) fn write(
    sink: Sink,
    sources: Vec<Box<dyn Source + '_>>,
    paths: &Paths,
    metas: &[DocMeta],
    tables: &[(u32, &[u8])],
    key: u64,
    text_bytes: u64,
    stop: &AtomicBool,
) -> Result<Base, BuildError> {
    let mut writer = Writer::new(sink)?;
    if let Err(e) = merge_runs(&mut writer, sources, stop) {
        writer.discard();
        return Err(e);
    }
    open(finish(writer, paths, metas, tables, key, text_bytes)?, key)
}

fn finish(
    writer: Writer,
    paths: &Paths,
    metas: &[DocMeta],
    tables: &[(u32, &[u8])],
    key: u64,
    text_bytes: u64,
) -> Result<Bytes, BuildError> {
    Ok(writer.finish(paths, metas, tables, key, text_bytes)?)
}

/// The runs merged into `writer` (which the caller discards on an error), in
/// `parts` ranges of trigrams at once: every run is read by each part from
/// the first trigram of its range, and each part but the first writes its
/// lists apart (a file beside the index, when it goes to one), appended in
/// turn. The ranges hold about as many bytes of lists each. (On one thread
/// the merge was a fifth of a build's time, with every other core idle.)
fn merge_in_parts(
    writer: &mut Writer,
    spill: &[u8],
    runs: &[RunInfo],
    parts: usize,
    stop: &AtomicBool,
) -> Result<(), BuildError> {
    let bounds = part_bounds(spill, runs, parts);
    let sources = |p: usize| -> Vec<Box<dyn Source + '_>> {
        runs.iter()
            .map(|r| {
                Box::new(RunCursor::new(spill, *r, bounds[p], bounds[p + 1])) as Box<dyn Source>
            })
            .collect()
    };
    let mut others = Vec::new();
    for p in 1..bounds.len() - 1 {
        match writer.sink_part(p) {
            Ok(sink) => others.push(Writer::part(sink)),
            Err(e) => {
                others.into_iter().for_each(Writer::discard);
                return Err(e.into());
            }
        }
    }
    let merged = std::thread::scope(|s| {
        let handles: Vec<_> = others
            .iter_mut()
            .enumerate()
            .map(|(i, part)| {
                let sources = &sources;
                s.spawn(move || {
                    let _ =
                        rustix::process::setpriority_process(Some(rustix::thread::gettid()), 10);
                    merge_runs(part, sources(i + 1), stop)
                })
            })
            .collect();
        let first = merge_runs(writer, sources(0), stop);
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(BuildError::Io(io::Error::other(
                        "a thread merging the index failed",
                    )))
                })
            })
            .fold(first, Result::and)
    });
    let mut others = others.into_iter();
    if let Err(e) = merged {
        others.for_each(Writer::discard);
        return Err(e);
    }
    while let Some(part) = others.next() {
        if let Err(e) = writer.append(part) {
            others.for_each(Writer::discard);
            return Err(e.into());
        }
    }
    Ok(())
}

/// Bytes of lists a part of the merge is worth a thread from (small in
/// tests, so that their builds merge in parts).
const PART_FROM: u64 = if cfg!(test) { 64 } else { 4 << 20 };

/// The first trigram of each of `parts` ranges (and the end, 1 << 24), so
/// that each holds about as many bytes of lists: cut at multiples of 2^16
/// by the runs' tables. Fewer ranges where the lists are too few to share.
fn part_bounds(spill: &[u8], runs: &[RunInfo], parts: usize) -> Vec<u32> {
    const BUCKET: u32 = 16;
    let mut bytes = [0u64; 1 << (24 - BUCKET)];
    for run in runs {
        for i in 0..run.grams as usize {
            let at = run.table as usize + i * RUN_ENTRY;
            let gram = u32::from_le_bytes(spill[at..at + 4].try_into().expect("4 bytes"));
            let len = u32::from_le_bytes(spill[at + 8..at + 12].try_into().expect("4 bytes"));
            bytes[(gram >> BUCKET) as usize] += u64::from(len);
        }
    }
    let total: u64 = bytes.iter().sum();
    let parts = parts.clamp(1, (total / PART_FROM).max(1) as usize);
    let mut bounds = vec![0u32];
    let mut sum = 0u64;
    for (b, &n) in bytes.iter().enumerate() {
        if bounds.len() < parts && sum >= total * bounds.len() as u64 / parts as u64 && sum > 0 {
            bounds.push((b as u32) << BUCKET);
        }
        sum += n;
    }
    bounds.push(1 << 24);
    bounds
}

/// The posting lists of `sources`, merged trigram by trigram into `writer`
/// (which the caller discards on an error).
fn merge_runs(
    writer: &mut Writer,
    mut sources: Vec<Box<dyn Source + '_>>,
    stop: &AtomicBool,
) -> Result<(), BuildError> {
    let mut list = Vec::new();
    let mut n = 0u32;
    // Each source's trigram, read again only from a source just taken from
    // (`u32::MAX` at its end: trigrams are below 2^24). Asking every source
    // twice for each trigram was a sixth of the time after the workers.
    let mut heads: Vec<u32> = sources
        .iter()
        .map(|s| s.gram().unwrap_or(u32::MAX))
        .collect();
    loop {
        let gram = heads.iter().copied().min().unwrap_or(u32::MAX);
        if gram == u32::MAX {
            break;
        }
        list.clear();
        let mut gaps = Gaps::default();
        for (s, head) in sources.iter_mut().zip(heads.iter_mut()) {
            if *head == gram {
                s.take(&mut gaps, &mut list);
                *head = s.gram().unwrap_or(u32::MAX);
            }
        }
        n = n.wrapping_add(1);
        if n.is_multiple_of(4096) && stop.load(Ordering::Relaxed) {
            return Err(BuildError::Stopped);
        }
        writer.add_encoded(gram, gaps.count, &list)?;
    }
    Ok(())
}

/// A posting list as the index writes it, being appended to: each file a
/// varint gap from the one before (the first from 0).
#[derive(Debug, Default)]
pub struct Gaps {
    /// The last file appended (0 before any).
    pub last: u32,
    /// How many files were appended.
    pub count: u32,
}

impl Gaps {
    /// Append `file`, above every file appended before.
    pub fn push(&mut self, out: &mut Vec<u8>, file: u32) {
        put_varint(out, file - self.last);
        self.last = file;
        self.count += 1;
    }
}

/// A sorted stream of (trigram, files) for [`write`].
pub trait Source {
    /// The current trigram, `None` at the end.
    fn gram(&self) -> Option<u32>;
    /// Append the current trigram's files to the list `out` (through
    /// `gaps`, which holds them above every file appended before: sources
    /// hold later files in turn) and move to the next.
    fn take(&mut self, gaps: &mut Gaps, out: &mut Vec<u8>);
}

struct RunCursor<'a> {
    bytes: &'a [u8],
    run: RunInfo,
    index: u32,
    /// Where the range read ends: the first entry past it.
    end: u32,
    at: usize,
}

impl<'a> RunCursor<'a> {
    /// The run's trigrams from `from` to before `to`.
    fn new(bytes: &'a [u8], run: RunInfo, from: u32, to: u32) -> RunCursor<'a> {
        let mut cursor = RunCursor {
            bytes,
            run,
            index: 0,
            end: run.grams,
            at: run.lists as usize,
        };
        // The table is in trigram order: the first entry at `from` or past
        // it, and the first at `to` or past it.
        let first_at = |gram: u32| {
            let (mut lo, mut hi) = (0, run.grams);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let probe = RunCursor {
                    index: mid,
                    ..cursor
                };
                if probe.entry(0) < gram {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        let (start, end) = (first_at(from), first_at(to));
        for _ in 0..start {
            cursor.at += cursor.entry(2) as usize;
            cursor.index += 1;
        }
        cursor.end = end;
        cursor
    }

    fn entry(&self, field: usize) -> u32 {
        let at = self.run.table as usize + self.index as usize * RUN_ENTRY + field * 4;
        u32::from_le_bytes(self.bytes[at..at + 4].try_into().expect("4 bytes"))
    }
}

/// Bytes of a run's table entry: trigram, files, the list's bytes, its last
/// file (see [`RunInfo`]).
const RUN_ENTRY: usize = 16;

impl Source for RunCursor<'_> {
    fn gram(&self) -> Option<u32> {
        (self.index < self.end).then(|| self.entry(0))
    }

    /// The list copied as it is, but for its first file: in the run a gap
    /// from 0, here from the last file appended.
    fn take(&mut self, gaps: &mut Gaps, out: &mut Vec<u8>) {
        let (count, len, last) = (self.entry(1), self.entry(2) as usize, self.entry(3));
        let end = self.at + len;
        let first = get_varint(self.bytes, &mut self.at).unwrap_or(0);
        gaps.push(out, first);
        out.extend_from_slice(&self.bytes[self.at..end]);
        self.at = end;
        self.index += 1;
        gaps.count += count - 1;
        gaps.last = last;
    }
}

/// The pairs of files added since the last merge, sorted.
pub struct PairSource {
    pairs: Vec<u64>,
    at: usize,
}

impl PairSource {
    /// `pairs`: `(trigram << 32) | file`, in any order.
    pub fn new(mut pairs: Vec<u64>) -> PairSource {
        pairs.sort_unstable();
        PairSource { pairs, at: 0 }
    }
}

impl Source for PairSource {
    fn gram(&self) -> Option<u32> {
        self.pairs.get(self.at).map(|p| (p >> 32) as u32)
    }

    fn take(&mut self, gaps: &mut Gaps, out: &mut Vec<u8>) {
        let Some(g) = self.gram() else { return };
        while let Some(&p) = self.pairs.get(self.at) {
            if (p >> 32) as u32 != g {
                break;
            }
            gaps.push(out, p as u32);
            self.at += 1;
        }
    }
}

/// An existing index's lists, its files renumbered (`renumber[old]`, or
/// `u32::MAX` for a file dropped).
pub struct BaseSource<'a> {
    base: &'a Base,
    renumber: &'a [u32],
    next: usize,
}

impl<'a> BaseSource<'a> {
    pub fn new(base: &'a Base, renumber: &'a [u32]) -> BaseSource<'a> {
        BaseSource {
            base,
            renumber,
            next: 0,
        }
    }
}

impl Source for BaseSource<'_> {
    fn gram(&self) -> Option<u32> {
        (self.next < self.base.gram_count()).then(|| self.base.posting_by_index(self.next).gram)
    }

    fn take(&mut self, gaps: &mut Gaps, out: &mut Vec<u8>) {
        let p = self.base.posting_by_index(self.next);
        p.for_each(|d| {
            if let Some(&n) = self.renumber.get(d as usize)
                && n != u32::MAX
            {
                gaps.push(out, n);
            }
        });
        self.next += 1;
    }
}

/// One worker's buffers.
struct Worker {
    extractor: Extractor,
    buf: Vec<u8>,
    /// The path of the file being read.
    path: String,
    run: Run,
    segments: Vec<u32>,
    /// A segmented file's trigrams, read off its segment table.
    table_grams: Vec<u32>,
}

/// The pairs a worker collects, written as a run before they pass
/// `run_pairs`.
struct Run {
    pairs: Vec<u64>,
    /// How many of `pairs` have each value of the trigram's low and high
    /// twelve bits (the radix sort's two digits), counted as they are added.
    counts: Box<Counts>,
    run_pairs: usize,
    scratch: Vec<u64>,
    table: Vec<u8>,
    encoded: Vec<u8>,
}

impl Worker {
    fn new(run_pairs: usize) -> Worker {
        Worker {
            extractor: Extractor::new(),
            buf: Vec::new(),
            path: String::new(),
            run: Run {
                pairs: Vec::new(),
                counts: Box::new([[0; 4096]; 2]),
                run_pairs: run_pairs.max(1),
                scratch: Vec::new(),
                table: Vec::new(),
                encoded: Vec::new(),
            },
            segments: Vec::new(),
            table_grams: Vec::new(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn chunk(
        &mut self,
        roots: &Roots,
        paths: &Paths,
        sizes: &[u64],
        first: usize,
        planned: &[Option<DocState>],
        budget: &Budget,
        chunk: usize,
        spill: &Mutex<SpillState>,
        progress: &Progress,
        stop: &AtomicBool,
        text_bytes: &AtomicU64,
    ) -> Result<Vec<DocMeta>, BuildError> {
        let mut metas = Vec::with_capacity(sizes.len());
        let mut seq = 0u32;
        for (i, &size) in sizes.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                return Err(BuildError::Stopped);
            }
            let doc = (first + i) as u64;
            let (meta, text) = match planned[i] {
                Some(state) => (DocMeta::unread(size, state), Text::None),
                None => {
                    paths.write(doc as u32, &mut self.path);
                    read::read(roots, &self.path, budget.max_file_bytes, &mut self.buf)
                }
            };
            let bytes: &[u8] = match &text {
                Text::Bytes => &self.buf,
                Text::Document(d) => d.text.as_bytes(),
                Text::Decoded(d) => d,
                Text::None => &[],
            };
            text_bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            // A large file's segment table holds every trigram of the file:
            // its trigrams are read off the table rather than found in a
            // second pass over the text.
            let table = segmented(meta.state, bytes, budget).then(|| {
                let table = segments::table(&mut self.extractor, bytes, &mut self.segments);
                self.table_grams.clear();
                self.table_grams.extend(segments::grams(&table));
                table
            });
            let n = match table {
                Some(_) => self.table_grams.len(),
                None => self.extractor.distinct(bytes).len(),
            };
            // Written as a run first if this file's pairs would pass the
            // bound (the buffer is never grown past it, but for a file
            // whose trigrams alone do).
            let run = &mut self.run;
            if !run.pairs.is_empty() && run.pairs.len() + n > run.run_pairs {
                run.flush((chunk, seq), spill)?;
                seq += 1;
            }
            // Made at the first file with text (a tree of binaries makes none).
            if run.pairs.capacity() == 0 && n > 0 {
                run.pairs.reserve_exact(run.run_pairs.max(n));
            }
            let grams = match table {
                Some(_) => &self.table_grams[..],
                None => self.extractor.last(),
            };
            run.add(grams, doc);
            if let Some(table) = table {
                let mut s = spill.lock().unwrap_or_else(|p| p.into_inner());
                match &mut s.spill {
                    Spill::File(out, _) => out.write_all(&table)?,
                    Spill::Memory(v) => v.extend_from_slice(&table),
                }
                let at = s.at;
                s.at += table.len() as u64;
                s.tables.push((doc as u32, at, table.len() as u64));
            }
            metas.push(meta);
            progress.files_done.fetch_add(1, Ordering::Relaxed);
            if planned[i].is_none() {
                progress
                    .bytes_done
                    .fetch_add(size.min(budget.max_file_bytes), Ordering::Relaxed);
            }
        }
        if !self.run.pairs.is_empty() {
            self.run.flush((chunk, seq), spill)?;
        }
        Ok(metas)
    }
}

impl Run {
    /// The pairs of `doc`'s distinct trigrams.
    fn add(&mut self, grams: &[u32], doc: u64) {
        self.pairs
            .extend(grams.iter().map(|&g| (u64::from(g) << 32) | doc));
        count_digits(&mut self.counts, grams);
    }

    /// Sort the pairs by trigram and append them to the spill as a run.
    fn flush(&mut self, order: (usize, u32), spill: &Mutex<SpillState>) -> io::Result<()> {
        radix_sort_by_gram(&mut self.pairs, &mut self.scratch, &mut self.counts);
        encode_run(&self.pairs, &mut self.table, &mut self.encoded);
        let table = &self.table;
        let grams = (table.len() / RUN_ENTRY) as u32;
        self.pairs.clear();
        let mut s = spill.lock().unwrap_or_else(|p| p.into_inner());
        let table_at = s.at;
        match &mut s.spill {
            Spill::File(out, _) => {
                out.write_all(table)?;
                out.write_all(&self.encoded)?;
            }
            Spill::Memory(v) => {
                v.extend_from_slice(table);
                v.extend_from_slice(&self.encoded);
            }
        }
        s.at += (table.len() + self.encoded.len()) as u64;
        s.runs.push(RunInfo {
            order,
            table: table_at,
            grams,
            lists: table_at + table.len() as u64,
        });
        Ok(())
    }
}

/// The pairs of a run, sorted by trigram, written as the run holds them:
/// `table` gets an entry of [`RUN_ENTRY`] bytes a trigram, `lists` its
/// files as varint gaps (the first from 0). Each trigram's varints are
/// written into room made for the longest they can be, through a slice: a
/// byte pushed onto the vector made the loop load its length and pointer
/// again after every store.
fn encode_run(pairs: &[u64], table: &mut Vec<u8>, lists: &mut Vec<u8>) {
    table.clear();
    lists.clear();
    let mut i = 0;
    while i < pairs.len() {
        let g = pairs[i] >> 32;
        let n = pairs[i..]
            .iter()
            .position(|&p| p >> 32 != g)
            .unwrap_or(pairs.len() - i);
        let start = lists.len();
        lists.resize(start + 5 * n, 0);
        let (out, mut at, mut prev) = (&mut lists[start..], 0usize, 0u32);
        for &p in &pairs[i..i + n] {
            let file = p as u32;
            let mut v = file - prev;
            prev = file;
            while v >= 0x80 {
                out[at] = (v as u8) | 0x80;
                at += 1;
                v >>= 7;
            }
            out[at] = v as u8;
            at += 1;
        }
        lists.truncate(start + at);
        let mut entry = [0u8; RUN_ENTRY];
        entry[0..4].copy_from_slice(&(g as u32).to_le_bytes());
        entry[4..8].copy_from_slice(&(n as u32).to_le_bytes());
        entry[8..12].copy_from_slice(&(at as u32).to_le_bytes());
        entry[12..16].copy_from_slice(&prev.to_le_bytes());
        table.extend_from_slice(&entry);
        i += n;
    }
}

/// Whether a file read as `state` with these bytes gets a segment table:
/// text whose bytes are what grep matches, large enough, and with no NUL
/// byte (grep stops at one: a match past it is never shown, so its windows
/// would not say what a whole read says).
pub(crate) fn segmented(state: DocState, bytes: &[u8], budget: &Budget) -> bool {
    state == DocState::Text && bytes.len() as u64 >= budget.segment_from && !bytes.contains(&0)
}

/// How many trigrams have each value of the low and of the high twelve
/// bits: the radix sort's counts (u32: 32 KiB, within the first cache).
type Counts = [[u32; radix::DIGITS]; 2];

/// Count `grams`' digits into `counts`, as they are added to a run: they
/// were just found, so this reads them from the cache, where a pass over
/// the run's pairs before the sort read them from memory.
fn count_digits(counts: &mut Counts, grams: &[u32]) {
    for &g in grams {
        counts[0][(g & 0xFFF) as usize] += 1;
        counts[1][((g >> 12) & 0xFFF) as usize] += 1;
    }
}

/// Sort `(trigram << 32) | file` pairs by trigram, keeping the files' order
/// (two stable 12-bit passes over the 24 bits of a trigram), with their
/// digits' `counts` ([`count_digits`]), which are left at zero.
fn radix_sort_by_gram(pairs: &mut Vec<u64>, scratch: &mut Vec<u64>, counts: &mut Counts) {
    // Exactly as many (not doubled): the two swap places below. What the
    // scratch holds is overwritten, so only its new part is zeroed.
    scratch.truncate(pairs.len());
    scratch.reserve_exact(pairs.len() - scratch.len());
    scratch.resize(pairs.len(), 0);
    debug_assert_eq!(
        counts[0].iter().map(|&c| c as usize).sum::<usize>(),
        pairs.len()
    );
    for (counts, shift) in counts.iter_mut().zip([32u32, 44]) {
        radix::scatter(pairs, scratch, counts, |p| ((p >> shift) & 0xFFF) as usize);
        std::mem::swap(pairs, scratch);
    }
}

#[cfg(test)]
mod tests;
