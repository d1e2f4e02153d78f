//! Searching one file: open it through its root, run ripgrep's searcher
//! over it (or over a document's text), keep the lines the page still needs,
//! and stop within one buffer's work when the search is stopped.

use std::{
    io::{self, Read},
    sync::atomic::{AtomicBool, AtomicUsize, Ordering},
    time::Instant,
};

use ferret_fs::{ErrorCode, Roots, Target, roots::OpenedFile, sniff};
use grep_matcher::Matcher;
use grep_searcher::{
    BinaryDetection, Encoding, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind,
    SinkMatch,
};

use crate::{Candidate, Line, Options, Output, RegexMatcher, Skipped, Stopped};

/// Why the workers stop early.
pub(crate) struct Control<'a> {
    pub(crate) cancel: &'a AtomicBool,
    pub(crate) deadline: Option<Instant>,
    pub(crate) stopped: AtomicUsize,
}

pub(crate) const RUNNING: usize = 0;
const TIMED_OUT: usize = 1;
const CANCELLED: usize = 2;

impl Control<'_> {
    pub(crate) fn should_stop(&self) -> bool {
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

    pub(crate) fn stopped(&self) -> Option<Stopped> {
        match self.stopped.load(Ordering::Relaxed) {
            TIMED_OUT => Some(Stopped::Timeout),
            CANCELLED => Some(Stopped::Cancelled),
            _ => None,
        }
    }
}

/// The result of one file.
#[derive(Default)]
pub(crate) struct FileResult {
    /// Matches and context lines kept (only while the page is not yet full).
    pub(crate) items: Vec<Line>,
    /// Matching lines (or multi-line matches).
    pub(crate) count: u64,
    pub(crate) bytes: u64,
    pub(crate) scanned: bool,
    pub(crate) skipped: Skipped,
}

fn build_searcher(options: &Options, multiline: bool) -> Searcher {
    let mut b = SearcherBuilder::new();
    // Only lines shown need their numbers: counting the lines of every
    // buffer read was a tenth of a `files` grep's time (issue 27).
    b.line_number(options.output == Output::Content)
        .multi_line(multiline)
        .memory_map(grep_searcher::MmapChoice::never())
        .binary_detection(BinaryDetection::quit(0));
    if options.output == Output::Content {
        b.before_context(options.before)
            .after_context(options.after);
    }
    b.build()
}

/// What a searcher is built with: a kept one serves a grep asking the same.
/// (`context` is `Some` for content output alone, which alone counts lines.)
#[derive(Clone, Copy, PartialEq, Eq)]
struct SearcherKey {
    multiline: bool,
    context: Option<(usize, usize)>,
}

/// Searchers kept from one grep to the next. A searcher's line buffer grows
/// to hold the longest line it has read and keeps that size; built afresh
/// for every grep, its growth (fresh pages from the kernel, zeroed and
/// faulted in, then unmapped) was a quarter of a narrowed grep's time on the
/// Rust docs, whose search indexes are single lines of up to 5.6 MB.
/// Bounded: at most [`KEPT_SEARCHERS`] (one per grep thread of this
/// machine's budget, as a rule), and only searchers that read no file over
/// [`KEPT_UP_TO_BYTES`]: a line, so the buffer, is never longer than its
/// file, and grows past it at most threefold, so what is kept idle is at
/// most 2 × 24 MiB, and only after greps through files with lines that long
/// (64 KiB each otherwise). Memory-mapping the files instead would spare the
/// buffer but not a server: a file truncated while mapped kills the process.
static KEPT: std::sync::Mutex<Vec<(SearcherKey, Searcher)>> = std::sync::Mutex::new(Vec::new());
const KEPT_SEARCHERS: usize = 2;
const KEPT_UP_TO_BYTES: u64 = 8 << 20;

/// A searcher for one worker of one grep, given back to [`KEPT`] when the
/// worker is done (unless it read a file too large to keep it).
pub(crate) struct PooledSearcher {
    key: SearcherKey,
    searcher: Option<Searcher>,
    largest: u64,
}

impl PooledSearcher {
    pub(crate) fn take(options: &Options, multiline: bool) -> PooledSearcher {
        let key = SearcherKey {
            multiline,
            context: (options.output == Output::Content).then_some((options.before, options.after)),
        };
        let kept = {
            let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
            kept.iter()
                .position(|(k, _)| *k == key)
                .map(|i| kept.swap_remove(i).1)
        };
        PooledSearcher {
            key,
            searcher: Some(kept.unwrap_or_else(|| build_searcher(options, multiline))),
            largest: 0,
        }
    }

    /// The searcher, for a file of `size` bytes.
    pub(crate) fn for_file(&mut self, size: u64) -> &mut Searcher {
        self.largest = self.largest.max(size);
        self.searcher.as_mut().expect("taken only on drop")
    }
}

impl Drop for PooledSearcher {
    fn drop(&mut self) {
        if self.largest > KEPT_UP_TO_BYTES {
            return;
        }
        if let Some(searcher) = self.searcher.take() {
            let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
            if kept.len() < KEPT_SEARCHERS {
                kept.push((self.key, searcher));
            }
        }
    }
}

/// A reader that counts bytes and gives up when the search is stopped.
pub(crate) struct Guarded<'a, R> {
    pub(crate) inner: R,
    pub(crate) control: &'a Control<'a>,
    pub(crate) bytes: u64,
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

pub(crate) fn search_one(
    roots: &Roots,
    matcher: &RegexMatcher,
    searcher: &mut PooledSearcher,
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
    // A large file the content index placed: where a match can be is read
    // first, and when none is there, nothing more (for the version it
    // placed: the size it knew, and within the size bound).
    if !cand.windows.is_empty() && size == cand.size && size <= options.max_file_bytes {
        // A match there (or a read that failed): the whole file, unless
        // only whether it holds one is asked and a whole line showed it.
        match in_windows(&opened.file, matcher, &cand.windows, size, control) {
            Some((Windowed::Nothing, bytes)) => {
                result.scanned = true;
                result.bytes = bytes;
                return result;
            }
            Some((Windowed::Held, bytes)) if options.output == Output::Files => {
                result.scanned = true;
                result.bytes = bytes;
                result.count = 1;
                return result;
            }
            _ => {}
        }
    }
    let searcher = searcher.for_file(size);
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
        b.line_number(options.output == Output::Content)
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
/// Whether any of `windows` (byte ranges of `file`) holds a match, and
/// the bytes read; `None` when a read failed or the search was stopped.
/// Read with `pread`: the file's position stays at its start. Each window is
/// searched as the file is, line by line, so `^`, `$` and boundaries inside
/// it are judged as in the whole file (it holds the character on each side
/// of any match inside it); its first and last lines, cut, may show a match
/// the whole file has not, never hide one: a match on such a line counts
/// only when it lies [`MARGIN`] bytes from the cut (otherwise, when no
/// window shows a sure match, the file is read whole, which decides). The
/// searcher looks for no byte-order mark (a window starts anywhere) and no
/// binary data (the file has no NUL byte).
fn in_windows(
    file: &impl std::os::fd::AsFd,
    matcher: &RegexMatcher,
    windows: &[(u64, u64)],
    size: u64,
    control: &Control,
) -> Option<(Windowed, u64)> {
    let mut searcher = SearcherBuilder::new()
        .line_number(false)
        .bom_sniffing(false)
        .binary_detection(BinaryDetection::none())
        .build();
    let mut buf = Vec::new();
    let mut read = 0u64;
    let mut seen = Windowed::Nothing;
    for &(start, end) in windows {
        if control.should_stop() {
            return None;
        }
        buf.clear();
        buf.resize(end.saturating_sub(start) as usize, 0);
        let mut filled = 0;
        while filled < buf.len() {
            match rustix::io::pread(file, &mut buf[filled..], start + filled as u64) {
                Ok(0) => return None,
                Ok(n) => filled += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => return None,
            }
        }
        read += filled as u64;
        let mut found = Found {
            matcher,
            // (A file's UTF-8 mark is not searched: its first line is not
            // the line the window shows.)
            at_start: start == 0 && !buf.starts_with(b"\xEF\xBB\xBF"),
            at_end: end == size,
            len: buf.len() as u64,
            found: None,
        };
        searcher.search_slice(matcher, &buf, &mut found).ok()?;
        match found.found {
            Some(Windowed::Held) => return Some((Windowed::Held, read)),
            // Another window may hold a sure match.
            Some(_) => seen = Windowed::Unsure,
            None => {}
        }
    }
    Some((seen, read))
}

/// What the windows of a file showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Windowed {
    /// No match: the file holds none.
    Nothing,
    /// A match the file holds: on a line wholly inside a window, or
    /// [`MARGIN`] bytes from where a window cuts its line.
    Held,
    /// A match only where a window cuts a line: the whole file decides.
    Unsure,
}

/// Bytes between a match and the place a window cuts its line for the
/// match to count. The matcher judges a match by the character on each side
/// of it (a word boundary, whole-word search's `\W`); a cut leaves at most
/// three bytes of a character, so from four bytes on those characters are
/// whole and the file's own (eight leave room to spare). A line anchor (`^`,
/// `$`) matches a cut line only at the cut. Minified files and long HTML
/// lines are often cut: without this a files grep read them whole.
const MARGIN: usize = 8;

/// A sink that notes whether a window shows a match, and whether the file
/// surely holds it (see [`Windowed`]): it stops at the first sure one.
struct Found<'m> {
    matcher: &'m RegexMatcher,
    /// The window starts at the file's start, ends at its end.
    at_start: bool,
    at_end: bool,
    len: u64,
    found: Option<Windowed>,
}

impl Sink for Found<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let line = mat.bytes();
        let start = mat.absolute_byte_offset();
        let end = start + line.len() as u64;
        // A line starting past the window's first byte follows a line end
        // inside it; one ending in a line end, or at the file's end, ends.
        let cut_start = start == 0 && !self.at_start;
        let cut_end = !(line.ends_with(b"\n") || (end == self.len && self.at_end));
        let mut held = !cut_start && !cut_end;
        if !held {
            // Some match of the line far enough from its cuts.
            let _ = self.matcher.find_iter(line, |m| {
                held = (!cut_start || m.start() >= MARGIN)
                    && (!cut_end || m.end() + MARGIN <= line.len());
                !held
            });
        }
        self.found = Some(if held {
            Windowed::Held
        } else {
            Windowed::Unsure
        });
        // An unsure match: the next line of the window may hold a sure one.
        Ok(!held)
    }
}

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
        item.part = ferret_fs::part_of(&doc, item.line);
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
    /// The last line of the last match kept, and how many lines after it
    /// are its context: a line within them is kept though no more matches
    /// are (a match among them as context, as `rg -m` shows it).
    kept_end: Option<u64>,
    after: u64,
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
            kept_end: None,
            after: options.after as u64,
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

    /// Whether line `number` is context after the last match kept.
    fn within_kept_context(&self, number: u64) -> bool {
        self.keep.is_some() && self.kept_end.is_some_and(|end| number <= end + self.after)
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
        let number = mat.line_number().unwrap_or(0);
        if self.keeping() {
            let item = self.line(number, mat.bytes(), false);
            self.kept_end = Some(number + item.text.matches('\n').count() as u64);
            self.items.push(item);
            self.kept += 1;
        } else if self.within_kept_context(number) {
            let item = self.line(number, mat.bytes(), true);
            self.items.push(item);
        }
        Ok(!self.first_only && !self.control.should_stop())
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        let number = ctx.line_number().unwrap_or(0);
        let after_kept =
            matches!(ctx.kind(), SinkContextKind::After) && self.within_kept_context(number);
        if self.keeping() || after_kept {
            let item = self.line(number, ctx.bytes(), true);
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
