//! ferret's content search: ripgrep's engine (`grep-searcher`, `grep-regex`) run
//! in-process over a list of candidate files.
//!
//! The candidates come from the live index ([`candidates`]); every file is opened
//! through its root's handle with [`ferret_fs::Roots::open_for_content`], so
//! confinement and the sensitive-file rules are the file layer's. A bounded pool
//! of std threads searches them, taken from a [`Budget`] that all greps of the
//! process share (one thread fewer than the cores: see [`budget`]); results
//! come back in candidate order (newest first), paged, within a byte budget. A cancellation flag and a deadline are
//! checked on every read of every file, so a stopped search ends within one
//! buffer's work. This crate knows nothing of MCP.

pub mod budget;
pub mod candidates;

use std::{
    io::{self, Read},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::Instant,
};

use ferret_fs::{ErrorCode, PartOf, Roots, Target, roots::OpenedFile, sniff};
use grep_matcher::Matcher;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{
    BinaryDetection, Encoding, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind,
    SinkMatch,
};

pub use budget::Budget;
pub use candidates::{Candidate, Narrowing, Scope, gather, narrow};
pub use grep_regex::RegexMatcher;

/// Compiled regexes larger than this are refused (the caller's mistake, not ours).
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Patterns longer than this are refused before compiling.
pub const MAX_PATTERN_CHARS: usize = 64 * 1024;

/// What to look for.
#[derive(Debug, Clone, Default)]
pub struct Pattern {
    pub text: String,
    /// A fixed string: regex metacharacters mean themselves.
    pub literal: bool,
    pub case_insensitive: bool,
    pub whole_word: bool,
    /// The pattern may match across lines (`\n` in the pattern; `^`/`$` at lines).
    pub multiline: bool,
}

/// Compile a pattern; the error names what is wrong (bad syntax, too large).
pub fn compile(pattern: &Pattern) -> Result<RegexMatcher, String> {
    if pattern.text.is_empty() {
        return Err("the pattern is empty".into());
    }
    if pattern.text.chars().count() > MAX_PATTERN_CHARS {
        return Err(format!(
            "the pattern is longer than {MAX_PATTERN_CHARS} characters"
        ));
    }
    let mut b = RegexMatcherBuilder::new();
    b.case_insensitive(pattern.case_insensitive)
        .word(pattern.whole_word)
        .fixed_strings(pattern.literal)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(4 * REGEX_SIZE_LIMIT);
    if pattern.multiline {
        b.multi_line(true);
    } else {
        b.line_terminator(Some(b'\n'));
    }
    b.build(&pattern.text).map_err(|e| {
        let msg = e.to_string();
        if msg.contains("size limit") || msg.contains("exceeds size") {
            format!(
                "the pattern compiles to more than the regex size limit ({} KiB); use a shorter pattern or `literal: true`",
                REGEX_SIZE_LIMIT / 1024
            )
        } else {
            msg
        }
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// Matching lines with their line numbers (and context lines).
    #[default]
    Content,
    /// Paths of matching files only.
    Files,
    /// Matching lines per file.
    Count,
}

/// How to search and how much to return.
#[derive(Debug, Clone)]
pub struct Options {
    pub before: usize,
    pub after: usize,
    pub output: Output,
    pub offset: usize,
    pub limit: usize,
    /// Files larger than this are skipped (and counted).
    pub max_file_bytes: u64,
    /// Lines longer than this many characters are clipped around the match.
    pub max_line_chars: usize,
    /// Byte budget of the returned items (paths and text).
    pub max_output_bytes: usize,
    /// Worker threads of this grep, at most.
    pub threads: usize,
    /// Where the threads come from: shared with the other greps of the process
    /// (the default, [`Budget::shared`]), or `None`: `threads` of its own.
    pub budget: Option<Arc<Budget>>,
    /// Stop with [`Stopped::Timeout`] at this instant.
    pub deadline: Option<Instant>,
    /// Search documents (PDF, Office, OpenDocument, EPUB) as their text;
    /// otherwise they are skipped and counted.
    pub documents: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            before: 0,
            after: 0,
            output: Output::Content,
            offset: 0,
            limit: 200,
            max_file_bytes: 10 * 1024 * 1024,
            max_line_chars: 2000,
            max_output_bytes: 128 * 1024,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
            budget: Some(Budget::shared()),
            deadline: None,
            documents: false,
        }
    }
}

/// One line of output: a match, or a context line around one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub path: String,
    pub line: u64,
    pub text: String,
    /// A context line (not a match).
    pub context: bool,
    /// The line was longer than the limit and is shown clipped around the match.
    pub clipped: bool,
    /// In a document: the page, slide, sheet (and row) or chapter of the line.
    pub part: Option<PartOf>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCount {
    pub path: String,
    pub count: u64,
}

/// Files that were not searched, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    pub binary: u64,
    pub too_large: u64,
    pub sensitive: u64,
    /// Deleted, truncated or replaced while the search ran.
    pub changed: u64,
    /// Anything else the OS refused (permissions, a symlink leading out), and
    /// documents whose text could not be extracted (encrypted, damaged).
    pub unreadable: u64,
    /// Documents, not searched because `documents` was off.
    pub documents: u64,
}

impl Skipped {
    fn add(&mut self, o: &Skipped) {
        self.binary += o.binary;
        self.too_large += o.too_large;
        self.sensitive += o.sensitive;
        self.changed += o.changed;
        self.unreadable += o.unreadable;
        self.documents += o.documents;
    }

    pub fn total(&self) -> u64 {
        self.binary
            + self.too_large
            + self.sensitive
            + self.changed
            + self.unreadable
            + self.documents
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    Timeout,
    Cancelled,
}

/// What a search found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// `content`: matches and context lines of the page, in order.
    pub lines: Vec<Line>,
    /// `files`: paths of the page.
    pub files: Vec<String>,
    /// `count`: per-file counts of the page.
    pub counts: Vec<FileCount>,
    /// Items returned (matches for `content`, files otherwise).
    pub count: usize,
    /// All items found (matching lines for `content`, matching files otherwise).
    pub total: u64,
    pub truncated: bool,
    pub next_offset: Option<usize>,
    pub candidates: u64,
    pub files_scanned: u64,
    pub files_matched: u64,
    pub bytes_scanned: u64,
    pub skipped: Skipped,
    /// Returned lines that were clipped.
    pub clipped_lines: u64,
    pub stopped: Option<Stopped>,
}

/// Why the workers stop early.
struct Control<'a> {
    cancel: &'a AtomicBool,
    deadline: Option<Instant>,
    stopped: AtomicUsize,
}

const RUNNING: usize = 0;
const TIMED_OUT: usize = 1;
const CANCELLED: usize = 2;

impl Control<'_> {
    fn should_stop(&self) -> bool {
        if self.stopped.load(Ordering::Relaxed) != RUNNING {
            return true;
        }
        if self.cancel.load(Ordering::Relaxed) {
            self.stopped.store(CANCELLED, Ordering::Relaxed);
            return true;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.stopped.store(TIMED_OUT, Ordering::Relaxed);
            return true;
        }
        false
    }

    fn stopped(&self) -> Option<Stopped> {
        match self.stopped.load(Ordering::Relaxed) {
            TIMED_OUT => Some(Stopped::Timeout),
            CANCELLED => Some(Stopped::Cancelled),
            _ => None,
        }
    }
}

/// The result of one file.
#[derive(Default)]
struct FileResult {
    /// Matches and context lines kept (only while the page is not yet full).
    items: Vec<Line>,
    /// Matching lines (or multi-line matches).
    count: u64,
    bytes: u64,
    scanned: bool,
    skipped: Skipped,
}

/// Results folded in candidate order, so that lines past the page are dropped early.
struct Fold {
    slots: Vec<Option<FileResult>>,
    next: usize,
    /// Items (matches, or matching files) in the folded prefix.
    items: u64,
}

/// Search `candidates` (already in the order results should come in) with
/// `matcher`. `cancel` stops the search (the outcome says [`Stopped::Cancelled`]);
/// `progress` counts files done.
pub fn grep(
    roots: &Roots,
    matcher: &RegexMatcher,
    multiline: bool,
    candidates: &[Candidate],
    options: &Options,
    cancel: &AtomicBool,
    progress: Option<&AtomicU64>,
) -> Outcome {
    let n = candidates.len();
    let control = Control {
        cancel,
        deadline: options.deadline,
        stopped: AtomicUsize::new(RUNNING),
    };
    let wanted = options.offset.saturating_add(options.limit) as u64;
    let page_full = AtomicBool::new(false);
    let fold = Mutex::new(Fold {
        slots: (0..n).map(|_| None).collect(),
        next: 0,
        items: 0,
    });
    let next = AtomicUsize::new(0);
    let want = options.threads.clamp(1, 64).min(n.max(1));
    let slots = match &options.budget {
        None => None,
        Some(budget) => match budget.take(want, cancel, options.deadline) {
            Some(slots) => Some(slots),
            // Stopped while waiting for a thread: nothing was searched.
            None => {
                control.should_stop();
                return assemble(
                    (0..n).map(|_| None).collect(),
                    candidates,
                    options,
                    control.stopped().or(Some(Stopped::Timeout)),
                );
            }
        },
    };
    let threads = slots.as_ref().map_or(want, |s| s.count);
    let work = || {
        if slots.is_some() {
            budget::lower_priority();
        }
        let mut searcher = build_searcher(options, multiline);
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n || control.should_stop() {
                break;
            }
            let keep = options.output == Output::Content && !page_full.load(Ordering::Relaxed);
            let result = search_one(
                roots,
                matcher,
                &mut searcher,
                &candidates[i],
                options,
                &control,
                keep.then_some(wanted as usize),
            );
            if let Some(p) = progress {
                p.fetch_add(1, Ordering::Relaxed);
            }
            let mut f = fold.lock().unwrap_or_else(|p| p.into_inner());
            f.slots[i] = Some(result);
            while f.next < n {
                let items = f.items;
                let idx = f.next;
                let Some(r) = f.slots[idx].as_mut() else {
                    break;
                };
                let add = match options.output {
                    Output::Content => r.count,
                    _ => u64::from(r.count > 0),
                };
                if items >= wanted {
                    r.items = Vec::new();
                }
                f.items = items + add;
                f.next += 1;
            }
            if f.items >= wanted {
                page_full.store(true, Ordering::Relaxed);
            }
        }
    };
    // The caller's own thread searches only without a budget: a thread whose
    // priority was lowered must be one that ends with this grep.
    if threads <= 1 && slots.is_none() {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(work);
            }
        });
    }
    drop(slots);
    let fold = fold.into_inner().unwrap_or_else(|p| p.into_inner());
    assemble(fold.slots, candidates, options, control.stopped())
}

fn build_searcher(options: &Options, multiline: bool) -> Searcher {
    let mut b = SearcherBuilder::new();
    b.line_number(true)
        .multi_line(multiline)
        .memory_map(grep_searcher::MmapChoice::never())
        .binary_detection(BinaryDetection::quit(0));
    if options.output == Output::Content {
        b.before_context(options.before)
            .after_context(options.after);
    }
    b.build()
}

/// Gather the page from the per-file results, in candidate order.
fn assemble(
    slots: Vec<Option<FileResult>>,
    candidates: &[Candidate],
    options: &Options,
    stopped: Option<Stopped>,
) -> Outcome {
    let mut out = Outcome {
        candidates: candidates.len() as u64,
        stopped,
        ..Outcome::default()
    };
    let end = options.offset.saturating_add(options.limit) as u64;
    let mut seen: u64 = 0; // items before the current one
    let mut used = 0usize;
    let mut budget_hit = false;
    for (slot, cand) in slots.into_iter().zip(candidates) {
        let Some(r) = slot else { continue };
        out.skipped.add(&r.skipped);
        out.bytes_scanned += r.bytes;
        if r.scanned {
            out.files_scanned += 1;
        }
        if r.count == 0 {
            continue;
        }
        out.files_matched += 1;
        match options.output {
            Output::Content => {
                let first = seen;
                out.total += r.count;
                seen += r.count;
                if budget_hit || first + r.count <= options.offset as u64 || first >= end {
                    continue;
                }
                // Global match index of the previous and next match of every item.
                let mut idx = first;
                let mut prev: Vec<Option<u64>> = Vec::with_capacity(r.items.len());
                for item in &r.items {
                    if item.context {
                        prev.push((idx > first).then(|| idx - 1));
                    } else {
                        prev.push(Some(idx));
                        idx += 1;
                    }
                }
                let in_page = |m: u64| m >= options.offset as u64 && m < end;
                let mut next_match: Option<u64> = None;
                let mut include = vec![false; r.items.len()];
                let mut m = idx;
                for (k, item) in r.items.iter().enumerate().rev() {
                    if !item.context {
                        m -= 1;
                        next_match = Some(m);
                        include[k] = in_page(m);
                    } else {
                        include[k] =
                            prev[k].is_some_and(in_page) || next_match.is_some_and(in_page);
                    }
                }
                for (k, item) in r.items.into_iter().enumerate() {
                    if !include[k] || budget_hit {
                        continue;
                    }
                    let size = item.path.len() + item.text.len() + 40;
                    if used + size > options.max_output_bytes && out.count > 0 {
                        budget_hit = true;
                        continue;
                    }
                    used += size;
                    if !item.context {
                        out.count += 1;
                    }
                    if item.clipped {
                        out.clipped_lines += 1;
                    }
                    out.lines.push(item);
                }
            }
            Output::Files | Output::Count => {
                out.total += 1;
                seen += 1;
                if budget_hit || seen <= options.offset as u64 || seen > end {
                    continue;
                }
                let size = cand.path.len() + 32;
                if used + size > options.max_output_bytes && out.count > 0 {
                    budget_hit = true;
                    continue;
                }
                used += size;
                out.count += 1;
                if options.output == Output::Files {
                    out.files.push(cand.path.clone());
                } else {
                    out.counts.push(FileCount {
                        path: cand.path.clone(),
                        count: r.count,
                    });
                }
            }
        }
    }
    let next = options.offset + out.count;
    out.truncated = (next as u64) < out.total;
    out.next_offset = out.truncated.then_some(next);
    out
}

/// A reader that counts bytes and gives up when the search is stopped.
struct Guarded<'a, R> {
    inner: R,
    control: &'a Control<'a>,
    bytes: u64,
}

impl<R: Read> Read for Guarded<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.control.should_stop() {
            // Not `Interrupted`: readers retry those.
            return Err(io::Error::other(STOPPED));
        }
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

const STOPPED: &str = "ferret-grep: stopped";

fn search_one(
    roots: &Roots,
    matcher: &RegexMatcher,
    searcher: &mut Searcher,
    cand: &Candidate,
    options: &Options,
    control: &Control,
    keep: Option<usize>,
) -> FileResult {
    let mut result = FileResult::default();
    let skip = |r: &mut FileResult, f: fn(&mut Skipped)| f(&mut r.skipped);
    let opened = match roots.resolve(&cand.path) {
        Ok(Target::In(root, rel)) => roots.open_for_content(root, &rel, &cand.path),
        Ok(Target::AllRoots) => {
            skip(&mut result, |s| s.unreadable += 1);
            return result;
        }
        Err(e) => Err(e),
    };
    let opened = match opened {
        Ok(o) => o,
        Err(e) => {
            match e.code {
                ErrorCode::PathDenied => skip(&mut result, |s| s.sensitive += 1),
                ErrorCode::NotFound | ErrorCode::IsDirectory => {
                    skip(&mut result, |s| s.changed += 1)
                }
                _ => skip(&mut result, |s| s.unreadable += 1),
            }
            return result;
        }
    };
    let size = opened.metadata.len();
    let mut opened = opened;
    // The head decides document, binary or text, and the encoding.
    let mut head = vec![0u8; sniff::BINARY_SNIFF_BYTES];
    let mut filled = 0;
    loop {
        match opened.file.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(k) => {
                filled += k;
                if filled == head.len() {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                skip(&mut result, |s| s.unreadable += 1);
                return result;
            }
        }
    }
    head.truncate(filled);
    if let Some(format) = roots.document_format(&cand.path, &head) {
        if !options.documents {
            skip(&mut result, |s| s.documents += 1);
            return result;
        }
        return search_document(
            roots, matcher, searcher, cand, opened, format, control, keep, options,
        );
    }
    if size > options.max_file_bytes {
        skip(&mut result, |s| s.too_large += 1);
        return result;
    }
    let file = opened.file;
    let complete = (filled as u64) >= size;
    if !matches!(sniff::classify(&head), sniff::Content::Text) {
        skip(&mut result, |s| s.binary += 1);
        return result;
    }
    let detected = sniff::detect_encoding(&head, complete);
    let legacy = sniff::bom(&head).is_none() && detected.encoding != encoding_rs::UTF_8;
    let encoding = if legacy {
        Encoding::new(detected.encoding.name()).ok()
    } else {
        None
    };
    searcher.set_binary_detection(if legacy || sniff::bom(&head).is_some() {
        BinaryDetection::none()
    } else {
        BinaryDetection::quit(0)
    });
    // The encoding is a builder setting: rebuild only for the rare legacy file.
    let mut legacy_searcher;
    let searcher: &mut Searcher = if let Some(enc) = encoding {
        let mut b = SearcherBuilder::new();
        b.line_number(true)
            .multi_line(searcher.multi_line())
            .memory_map(grep_searcher::MmapChoice::never())
            .binary_detection(BinaryDetection::none())
            .encoding(Some(enc));
        if options.output == Output::Content {
            b.before_context(options.before)
                .after_context(options.after);
        }
        legacy_searcher = b.build();
        &mut legacy_searcher
    } else {
        searcher
    };
    let mut reader = Guarded {
        inner: io::Cursor::new(head).chain(file),
        control,
        bytes: 0,
    };
    let mut sink = Collect::new(matcher, &cand.path, keep, options, control);
    let searched = searcher.search_reader(matcher, &mut reader, &mut sink);
    result.bytes = reader.bytes;
    match searched {
        Err(e) if e.to_string().contains(STOPPED) => {
            // Stopped mid-file: what it found so far is partial; keep the count.
            result.scanned = false;
            result.count = sink.count;
            result.items = sink.items;
            return result;
        }
        Err(_) => {
            skip(&mut result, |s| s.changed += 1);
            return result;
        }
        Ok(()) => {}
    }
    if sink.binary {
        skip(&mut result, |s| s.binary += 1);
        return result;
    }
    if control.stopped().is_some() {
        result.count = sink.count;
        result.items = sink.items;
        return result;
    }
    // Shorter than when it was opened: truncated while searched.
    if reader.bytes < size && !sink.first_only_done() {
        skip(&mut result, |s| s.changed += 1);
        return result;
    }
    result.scanned = true;
    result.count = sink.count;
    result.items = sink.items;
    result
}

/// A document: its text (cached, or extracted now) searched as UTF-8 lines,
/// each line found given its page, slide, sheet or chapter.
#[allow(clippy::too_many_arguments)]
fn search_document(
    roots: &Roots,
    matcher: &RegexMatcher,
    searcher: &mut Searcher,
    cand: &Candidate,
    opened: OpenedFile,
    format: ferret_fs::ferret_docs::Format,
    control: &Control,
    keep: Option<usize>,
    options: &Options,
) -> FileResult {
    let mut result = FileResult::default();
    let doc = match roots.document_text(opened, format, &cand.path, &|| control.should_stop()) {
        Ok(doc) => doc,
        Err(e) => {
            match e.code {
                _ if control.stopped().is_some() => {}
                ErrorCode::TooLarge => result.skipped.too_large += 1,
                _ => result.skipped.unreadable += 1,
            }
            return result;
        }
    };
    let mut sink = Collect::new(matcher, &cand.path, keep, options, control);
    searcher.set_binary_detection(BinaryDetection::none());
    let searched = searcher.search_slice(matcher, doc.text.as_bytes(), &mut sink);
    searcher.set_binary_detection(BinaryDetection::quit(0));
    result.bytes = doc.text.len() as u64;
    result.count = sink.count;
    result.items = sink.items;
    for item in &mut result.items {
        item.part = ferret_fs::document::part_of(&doc, item.line);
    }
    result.scanned = searched.is_ok() && control.stopped().is_none();
    result
}

struct Collect<'a> {
    matcher: &'a RegexMatcher,
    path: &'a str,
    /// Keep at most this many matches' lines (`None`: count only).
    keep: Option<usize>,
    kept: usize,
    items: Vec<Line>,
    count: u64,
    binary: bool,
    first_only: bool,
    max_line_chars: usize,
    control: &'a Control<'a>,
}

impl<'a> Collect<'a> {
    fn new(
        matcher: &'a RegexMatcher,
        path: &'a str,
        keep: Option<usize>,
        options: &Options,
        control: &'a Control<'a>,
    ) -> Collect<'a> {
        Collect {
            matcher,
            path,
            keep,
            kept: 0,
            items: Vec::new(),
            count: 0,
            binary: false,
            first_only: options.output == Output::Files,
            max_line_chars: options.max_line_chars,
            control,
        }
    }

    fn first_only_done(&self) -> bool {
        self.first_only && self.count > 0
    }

    fn keeping(&self) -> bool {
        self.keep.is_some_and(|k| self.kept < k)
    }

    fn line(&self, number: u64, bytes: &[u8], context: bool) -> Line {
        let (text, clipped) = clip(self.matcher, bytes, self.max_line_chars);
        Line {
            path: self.path.to_string(),
            line: number,
            text,
            context,
            clipped,
            part: None,
        }
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.count += 1;
        if self.keeping() {
            let number = mat.line_number().unwrap_or(0);
            let item = self.line(number, mat.bytes(), false);
            self.items.push(item);
            self.kept += 1;
        }
        Ok(!self.first_only && !self.control.should_stop())
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        let after_kept =
            matches!(ctx.kind(), SinkContextKind::After) && self.items.last().is_some();
        if self.keeping() || (after_kept && self.keep.is_some()) {
            let item = self.line(ctx.line_number().unwrap_or(0), ctx.bytes(), true);
            self.items.push(item);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// The line as text without its terminator, clipped around the first match when
/// longer than `max_chars`.
fn clip(matcher: &RegexMatcher, bytes: &[u8], max_chars: usize) -> (String, bool) {
    let mut end = bytes.len();
    while end > 0 && (bytes[end - 1] == b'\n' || bytes[end - 1] == b'\r') {
        end -= 1;
    }
    let bytes = &bytes[..end];
    let text = String::from_utf8_lossy(bytes);
    if max_chars == 0 || text.len() <= max_chars || text.chars().count() <= max_chars {
        return (text.into_owned(), false);
    }
    let at = matcher.find(bytes).ok().flatten().map_or(0, |m| {
        String::from_utf8_lossy(&bytes[..m.start()]).chars().count()
    });
    let total = text.chars().count();
    let start = at.saturating_sub(max_chars / 4).min(total - max_chars);
    let clipped: String = text.chars().skip(start).take(max_chars).collect();
    (clipped, true)
}

#[cfg(test)]
mod tests;
