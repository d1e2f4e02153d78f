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
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use ferret_fs::{Policy, Roots};
//! use ferret_index::{Index, IndexConfig, IndexRoot};
//! use ferret_query::{Clock, Options, Query};
//!
//! let roots = Roots::open(&["/srv/docs".parse().unwrap()], Policy::default()).unwrap();
//! let index = Index::open(IndexConfig::new(vec![IndexRoot::new("docs", "/srv/docs")])).unwrap();
//! // The files to search: every `.md` file, newest first.
//! let query = Query::compile("ext:md", &Options::default(), &Clock::system()).unwrap();
//! let scope = ferret_grep::Scope { path: None, query, globs: Default::default(), stop: Default::default() };
//! let gathered = ferret_grep::gather(&index, &roots, &scope).unwrap();
//! let pattern = ferret_grep::Pattern { text: "TODO".into(), literal: true, ..Default::default() };
//! let matcher = ferret_grep::compile(&pattern).unwrap();
//! let stop = AtomicBool::new(false);
//! let outcome = ferret_grep::grep(&roots, &matcher, false, &gathered.candidates,
//!     &ferret_grep::Options::default(), &stop, None);
//! for line in &outcome.lines {
//!     println!("{}:{}: {}", line.path, line.line, line.text);
//! }
//! ```

pub mod budget;
pub mod candidates;
mod file;

use file::{Control, FileResult, PooledSearcher, RUNNING, search_one};

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::Instant,
};

use ferret_fs::{PartOf, Roots};
use grep_regex::RegexMatcherBuilder;

pub use budget::Budget;
pub use candidates::{Candidate, Narrowing, Scope, gather, gather_narrowed, narrow};
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
    // `^` and `$` match at every line's edges, as in ripgrep, and see a
    // line's end in `\r\n` as in `\n` (ripgrep's `--crlf`): files written
    // on Windows answer `^b$` as others do. `crlf` sets the line terminator
    // as well, so it is set again after.
    b.crlf(true).multi_line(true);
    if pattern.multiline {
        b.line_terminator(None);
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
        } else if !pattern.multiline && msg.contains(r#""\n""#) {
            format!("{msg}: a match within one line cannot hold a line end; search with multiline on to match across lines")
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
            threads: ferret_index::cores().min(8),
            budget: Some(Budget::shared()),
            deadline: None,
            documents: false,
        }
    }
}

/// Whether a search that does not say whether to read documents should
/// ([`Options::documents`]; the grep tool, `search`'s `content:`, the page
/// and `ferret grep` all ask this): when what
/// picks the files names a document extension (`ext:pdf`, `*.docx`, a path
/// to one document), the caller plainly wants their text. Otherwise not:
/// a code search should not start extracting every PDF in a home folder.
pub fn names_documents(filter: &str, globs: &[String], path: Option<&str>) -> bool {
    let is_doc_ext =
        |e: &str| ferret_docs_ext(e.trim_matches(|c: char| !c.is_ascii_alphanumeric()));
    let in_filter = filter
        .split_whitespace()
        .filter(|term| !term.starts_with('!'))
        .any(|term| {
            let term = term.to_ascii_lowercase();
            match term.strip_prefix("ext:") {
                Some(list) => list.split([';', ',', '|']).any(is_doc_ext),
                None => term.rsplit_once('.').is_some_and(|(_, e)| is_doc_ext(e)),
            }
        });
    let in_globs = globs
        .iter()
        .flat_map(|g| candidates::split_at_commas(g))
        .filter(|g| !g.trim_start().starts_with('!'))
        .any(|g| g.rsplit_once('.').is_some_and(|(_, e)| is_doc_ext(e)));
    let is_document = path
        .and_then(|p| p.rsplit('/').next())
        .and_then(|name| name.rsplit_once('.'))
        .is_some_and(|(_, e)| is_doc_ext(e));
    in_filter || in_globs || is_document
}

fn ferret_docs_ext(e: &str) -> bool {
    ferret_fs::ferret_docs::Format::from_extension(e).is_some()
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
        let mut searcher = PooledSearcher::take(options, multiline);
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
                // A context line is shown only beside a match of the page:
                // within `after` lines below one (counted from its last
                // line: a multiline match spans several) or `before` lines
                // above one. A match off the page within them is shown as
                // context, as `rg -m` shows it; the searcher's context of
                // matches off the page is not shown.
                let in_page = |m: u64| m >= options.offset as u64 && m < end;
                let mut include = vec![false; r.items.len()];
                let mut shown_as_context = vec![false; r.items.len()];
                let mut page_end: Option<u64> = None; // the last line of the page's last match so far
                let mut idx = first;
                for (k, item) in r.items.iter().enumerate() {
                    if !item.context && in_page(idx) {
                        include[k] = true;
                        page_end = Some(item.line + item.text.matches('\n').count() as u64);
                    } else {
                        include[k] =
                            page_end.is_some_and(|e| item.line <= e + options.after as u64);
                        shown_as_context[k] = !item.context;
                    }
                    if !item.context {
                        idx += 1;
                    }
                }
                let mut page_start: Option<u64> = None; // the first line of the page's next match
                for (k, item) in r.items.iter().enumerate().rev() {
                    if !item.context {
                        idx -= 1;
                        if in_page(idx) {
                            page_start = Some(item.line);
                            continue;
                        }
                    }
                    if !include[k] {
                        include[k] =
                            page_start.is_some_and(|s| item.line + options.before as u64 >= s);
                    }
                }
                for (k, mut item) in r.items.into_iter().enumerate() {
                    if !include[k] || budget_hit {
                        continue;
                    }
                    item.context |= shown_as_context[k];
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

#[cfg(test)]
mod tests;
