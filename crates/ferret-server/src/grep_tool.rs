//! `grep`: content search, candidates from the index, ripgrep's engine in-process
//! (`ferret-grep`). Cancellation (`notifications/cancelled`, a closed HTTP stream)
//! and `timeout_ms` stop the workers within one buffer's work.

use std::{
    collections::HashSet,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use ferret_content::ContentIndex;
use ferret_fs::{ErrorCode, FsError, Meter, Roots};
use ferret_grep::{Output, Pattern, RegexMatcher, Stopped, candidates::Globs};
use ferret_index::Index;
use ferret_query::{Clock, Options as QueryOptions, Query};
use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolResponse, CallToolResult, ContentBlock, JsonObject, Tool},
    service::RequestContext,
};
use serde_json::{Value, json};

use crate::{
    Ferret,
    args::{ArgResult, Args},
    render::{self, frame, human_size, index_block, without_zeros},
    schema::{one_of, output_schema, read_only, schema, string_or_list},
};

pub fn definition() -> Tool {
    let flag = json!({"type": "boolean"});
    let int = json!({"type": "integer"});
    Tool::new(
        "grep",
        "Regex search in files, newest first. `filter`: file query (`ext:rs !target/`). Skips binary, huge, secret.",
        schema(json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "literal": flag,
                "case_insensitive": flag,
                "whole_word": flag,
                "multiline": flag,
                "path": {"type": "string"},
                "filter": {"type": "string"},
                "glob": string_or_list(),
                "exclude": string_or_list(),
                "context": int,
                "before": int,
                "after": int,
                "output": one_of(&["content", "files", "count"]),
                "offset": int,
                "limit": int,
                "timeout_ms": int,
                "documents": flag,
            },
            "required": ["pattern"],
        })),
    )
    .with_title("Search file contents")
    .with_raw_output_schema(output_schema(&["total"]))
    .with_annotations(read_only())
}

/// A `grep` call, checked and compiled.
pub struct GrepCall {
    pattern: Pattern,
    matcher: Arc<RegexMatcher>,
    multiline: bool,
    path: Option<String>,
    query: Query,
    globs: Globs,
    options: ferret_grep::Options,
    timeout: Duration,
    /// Add `resource_link` items for the files that matched (`links::wanted`).
    pub links: bool,
}

/// Without `timeout_ms`, a grep stops after this long (with what it found).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

const EXAMPLE: &str = r#"{"pattern":"fn main","filter":"ext:rs"}"#;

pub fn parse(args: Option<&JsonObject>, roots: &Roots) -> ArgResult<GrepCall> {
    let a = Args::new(
        "grep",
        args,
        &[
            "pattern",
            "literal",
            "case_insensitive",
            "whole_word",
            "multiline",
            "path",
            "filter",
            "glob",
            "exclude",
            "context",
            "before",
            "after",
            "output",
            "offset",
            "limit",
            "timeout_ms",
            "documents",
        ],
        EXAMPLE,
    )?;
    let pattern = Pattern {
        text: a.required_string("pattern")?,
        literal: a.boolean("literal")?.unwrap_or(false),
        case_insensitive: a.boolean("case_insensitive")?.unwrap_or(false),
        whole_word: a.boolean("whole_word")?.unwrap_or(false),
        multiline: a.boolean("multiline")?.unwrap_or(false),
    };
    let matcher = ferret_grep::compile(&pattern).map_err(|e| a.conflict("pattern", &e))?;
    let clock = Clock::system();
    let compile = |key: &str, text: &str| -> ArgResult<Query> {
        Query::compile(text, &QueryOptions::default(), &clock)
            .map_err(|e| a.conflict(key, &e.render(text)))
    };
    let filter = a.string("filter")?.unwrap_or_default();
    let mut query = compile("filter", &filter)?;
    for term in a.strings("exclude")?.unwrap_or_default() {
        query = query.and(compile("exclude", &term)?.negate());
    }
    // Each part kept within the limits on its own; together they must too.
    query
        .check_limits()
        .map_err(|e| a.conflict("exclude", &e.to_string()))?;
    let glob_list = a.strings("glob")?.unwrap_or_default();
    let globs = Globs::new(&glob_list).map_err(|e| a.conflict("glob", &e))?;
    let path = a.string("path")?;
    let documents = match a.boolean("documents")? {
        Some(on) => on,
        None => ferret_grep::names_documents(&filter, &glob_list, path.as_deref()),
    };
    let context = a.integer("context", 0, 100)?.unwrap_or(0) as usize;
    let limits = &roots.policy.limits;
    let options = ferret_grep::Options {
        before: a.integer("before", 0, 100)?.map_or(context, |n| n as usize),
        after: a.integer("after", 0, 100)?.map_or(context, |n| n as usize),
        output: match a.choice("output", &["content", "files", "count"])? {
            Some("files") => Output::Files,
            Some("count") => Output::Count,
            _ => Output::Content,
        },
        offset: a.integer("offset", 0, u32::MAX as u64)?.unwrap_or(0) as usize,
        limit: a.integer("limit", 1, 2000)?.unwrap_or(200) as usize,
        max_file_bytes: limits.max_file_bytes,
        max_line_chars: limits.max_line_chars,
        max_output_bytes: limits.answer_bytes(),
        documents,
        ..ferret_grep::Options::default()
    };
    let timeout = a
        .integer("timeout_ms", 1, 3_600_000)?
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
    Ok(GrepCall {
        matcher: Arc::new(matcher),
        multiline: pattern.multiline,
        pattern,
        path,
        query,
        globs,
        options,
        timeout,
        links: false,
    })
}

pub async fn run(
    server: Ferret,
    call: GrepCall,
    context: &RequestContext<RoleServer>,
    offer: Option<crate::work::TaskOffer>,
) -> Result<CallToolResponse, ErrorData> {
    let deadline = Instant::now() + call.timeout;
    // One stack for the whole call, whatever the client's roots do meanwhile.
    let stack = server.stack();
    let content = stack.content.clone();
    // Set while the call waits for the content index's first build.
    let waiting = Arc::new(AtomicBool::new(false));
    let describe = {
        let waiting = waiting.clone();
        move |done: u64, total: Option<u64>| {
            if waiting.load(Ordering::Relaxed) {
                format!(
                    "building the content index: {done} of {} files read",
                    total.unwrap_or(0)
                )
            } else {
                crate::work::counted("files scanned")(done, total)
            }
        }
    };
    // Waiting for the index helps only a pattern it can narrow (asked only
    // when there is an index to wait for).
    let narrowable = content.is_some()
        && ferret_content::pattern::query(&ferret_content::PatternSpec {
            text: &call.pattern.text,
            literal: call.pattern.literal,
            case_insensitive: call.pattern.case_insensitive,
            multiline: call.pattern.multiline,
        }) != ferret_content::Grams::All;
    let mut call = call;
    crate::work::run_call(context, describe, offer, move |meter| {
        if let Some(c) = content.as_ref().filter(|_| narrowable) {
            waiting.store(true, Ordering::Relaxed);
            wait_for_content_index(c, deadline, &meter);
            waiting.store(false, Ordering::Relaxed);
        }
        // The output budget counts matched text, not the JSON around it:
        // an answer still over what the client shows runs again smaller
        // (rare: the text is about 0.7 of the budget it is cut at).
        let budget = stack.roots.policy.limits.max_response_chars;
        crate::fit::within(budget, "grep", |over| {
            if let Some(o) = over {
                let bytes = &mut call.options.max_output_bytes;
                *bytes = ((*bytes as f64 * o.keep) as usize).max(1);
                if let Some(n) = o.scaled_count("count") {
                    call.options.limit = call.options.limit.min(n);
                }
            }
            execute(
                &stack.index,
                &stack.roots,
                content.as_ref(),
                &call,
                deadline,
                &meter,
            )
        })
    })
    .await
}

/// A grep that comes while the content index is first built waits for it
/// (showing its progress) when the build has read more than half of its
/// text: what is left to index is then less than a full scan would read.
/// Otherwise it scans now.
fn wait_for_content_index(content: &ContentIndex, deadline: Instant, meter: &Meter) {
    let Some(p) = content.progress() else { return };
    if p.bytes_done * 2 < p.bytes_total {
        return;
    }
    // At most half the time the call has: the scan needs the rest.
    let deadline = Instant::now() + deadline.saturating_duration_since(Instant::now()) / 2;
    while let Some(p) = content.progress() {
        meter.set_total(p.files_total);
        meter.done.store(p.files_done, Ordering::Relaxed);
        if meter.cancelled() || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Greps over this many candidates give their freed memory back when done.
const TRIM_FROM: usize = 10_000;

fn execute(
    index: &Index,
    roots: &Roots,
    content: Option<&ContentIndex>,
    call: &GrepCall,
    deadline: Instant,
    meter: &Meter,
) -> CallToolResult {
    let scope = ferret_grep::Scope {
        path: call.path.as_deref(),
        query: call.query.clone(),
        globs: call.globs.clone(),
        // `timeout_ms` covers choosing the files too.
        stop: ferret_index::Stop::on(&meter.cancel).until(Some(deadline)),
    };
    // The content index names the files when it can (in proportion to
    // what it finds); otherwise every file of the scope is looked up.
    let (gathered, narrowing) =
        match ferret_grep::gather_narrowed(index, roots, content, &scope, &call.pattern) {
            Ok(g) => g,
            Err(e) => return render::tool_error(&e),
        };
    let walk_limit = gathered
        .walk_capped
        .then_some(roots.policy.limits.max_walk_entries);
    meter.done.store(0, Ordering::Relaxed);
    meter.set_total(gathered.candidates.len() as u64);
    let mut options = ferret_grep::Options {
        deadline: Some(deadline),
        ..call.options.clone()
    };
    // A file named by `path` is searched whatever its size (a log of
    // gigabytes): the searcher streams it and the call's time bounds it.
    // Across lines, a match needs the whole file in memory: the bound holds.
    if gathered.named_file && !call.multiline {
        options.max_file_bytes = u64::MAX;
    }
    let mut outcome = ferret_grep::grep(
        roots,
        &call.matcher,
        call.multiline,
        &gathered.candidates,
        &options,
        &meter.cancel,
        Some(&meter.done),
    );
    // A grep over many files allocated and freed a string (and a search
    // buffer) per file on this thread; glibc keeps what was freed in the
    // thread's arena, and the arenas of the blocking pool's threads add up:
    // hand it back (the soak in docs/benchmarks.md grew 32 MiB a minute
    // without this).
    if gathered.candidates.len() >= TRIM_FROM {
        drop(gathered);
        Index::give_back_memory();
    }
    // Binary files the index knew, not opened: still skipped as binary.
    outcome.skipped.binary += narrowing.binary;
    let narrowing = content.is_some().then_some(narrowing);
    let mut result = render_outcome(index, &outcome, &options, narrowing.as_ref(), walk_limit);
    let matched = matched_paths(&outcome);
    // Files a grep matched count as used (less than a read) for relevance.
    for path in matched.iter().take(20) {
        index.record_use(path, 0.2);
    }
    if call.links && outcome.stopped.is_none() {
        let named = matched
            .into_iter()
            .map(|shown| crate::links::Named { shown, facts: None });
        result.content.extend(crate::links::links(roots, named));
    }
    result
}

/// What the content index did: the candidates it left to read (of which
/// `not_indexed` it could not answer for: read whatever they hold), or why it
/// was not used.
fn content_index_block(n: &ferret_grep::Narrowing) -> Value {
    match &n.unused {
        None => {
            let mut block = json!({"used": true, "candidates": n.after});
            if n.not_indexed > 0 {
                block["not_indexed"] = json!(n.not_indexed);
            }
            block
        }
        Some(why) => json!({"not_used": why}),
    }
}

/// The files a grep answer names, in its order, once each (whatever the
/// output: lines, files or counts).
fn matched_paths(o: &ferret_grep::Outcome) -> Vec<&str> {
    let mut seen = HashSet::new();
    o.lines
        .iter()
        .map(|l| l.path.as_str())
        .chain(o.files.iter().map(String::as_str))
        .chain(o.counts.iter().map(|c| c.path.as_str()))
        .filter(|p| seen.insert(*p))
        .collect()
}

/// What a grep says when a folder the index does not hold was listed and
/// the listing stopped at `limit` files.
fn walk_capped_warning(limit: usize) -> String {
    format!(
        "a folder the index does not hold (hidden or ignored) was listed to find its files, and the listing stopped at {limit} files: the files past them were not searched; grep its subfolders one `path` at a time, or start ferret with --hidden/--no-ignore so that the index holds it"
    )
}

fn render_outcome(
    index: &Index,
    o: &ferret_grep::Outcome,
    options: &ferret_grep::Options,
    narrowing: Option<&ferret_grep::Narrowing>,
    walk_limit: Option<usize>,
) -> CallToolResult {
    let skipped = json!({
        "binary": o.skipped.binary,
        "too_large": o.skipped.too_large,
        "sensitive": o.skipped.sensitive,
        "changed": o.skipped.changed,
        "unreadable": o.skipped.unreadable,
        "documents": o.skipped.documents,
    });
    let mut structured = json!({
        "count": o.count,
        "total": o.total,
        "truncated": o.truncated || o.stopped.is_some(),
        "next_offset": o.next_offset,
        "files_matched": o.files_matched,
        "files_scanned": o.files_scanned,
        "bytes_scanned": o.bytes_scanned,
        "skipped": without_zeros(skipped),
        "index": index_block(index),
        "content_index": narrowing.map(content_index_block),
        "walk_capped": walk_limit.is_some(),
        "warning": walk_limit.map(walk_capped_warning),
    });
    let mut body = String::new();
    match options.output {
        Output::Content => {
            // One object per file, its lines as `[number, text]` pairs in file
            // order: the path is not repeated for every line. Context lines go
            // apart from matching ones.
            let mut items: Vec<Value> = Vec::new();
            let mut last: Option<(&str, u64)> = None;
            for l in &o.lines {
                if let Some((p, n)) = last
                    && (p != l.path || l.line > n + 1)
                    && (options.before > 0 || options.after > 0)
                {
                    body.push_str("--\n");
                }
                last = Some((&l.path, l.line + l.text.matches('\n').count() as u64));
                let sep = if l.context { '-' } else { ':' };
                let part = l
                    .part
                    .as_ref()
                    .map(|p| format!(" ({})", p.describe()))
                    .unwrap_or_default();
                body.push_str(&format!("{}{sep}{}{part}{sep}{}\n", l.path, l.line, l.text));
                if items.last().is_none_or(|f| f["path"] != l.path.as_str()) {
                    items.push(json!({"path": l.path}));
                }
                let file = items.last_mut().expect("pushed above");
                let key = if l.context { "context" } else { "lines" };
                if file.get(key).is_none() {
                    file[key] = json!([]);
                }
                // In a document, the page (sheet and row, slide, chapter) comes third.
                let entry = match &l.part {
                    Some(p) => json!([l.line, l.text, render::part_json(p)]),
                    None => json!([l.line, l.text]),
                };
                file[key]
                    .as_array_mut()
                    .expect("made a list above")
                    .push(entry);
                if l.clipped {
                    if file.get("clipped").is_none() {
                        file["clipped"] = json!([]);
                    }
                    file["clipped"]
                        .as_array_mut()
                        .expect("made a list above")
                        .push(json!(l.line));
                }
            }
            structured["matches"] = json!(items);
            structured["data_note"] = render::data_note("matches");
            if o.clipped_lines > 0 {
                structured["clipped_lines"] = json!(o.clipped_lines);
                structured["note"] = json!(format!(
                    "{} long line(s) clipped to {} characters around the match; `read` the file for the whole line",
                    o.clipped_lines, options.max_line_chars
                ));
            }
        }
        Output::Files => {
            for f in &o.files {
                body.push_str(f);
                body.push('\n');
            }
            structured["files"] = json!(o.files);
        }
        Output::Count => {
            let items: Vec<Value> = o
                .counts
                .iter()
                .map(|c| {
                    body.push_str(&format!("{}:{}\n", c.path, c.count));
                    json!({"path": c.path, "count": c.count})
                })
                .collect();
            structured["counts"] = json!(items);
        }
    }
    let what = match options.output {
        Output::Content => "matching lines",
        _ => "files",
    };
    let of = match narrowing {
        Some(n) if n.used && n.listed => format!(
            "{} files ({} picked by the content index)",
            n.before, n.after
        ),
        Some(n) if n.used => format!("{} files picked by the content index", n.after),
        Some(ferret_grep::Narrowing {
            unused: Some(why), ..
        }) => format!("{} files (content index not used: {why})", o.candidates),
        _ => format!("{} files", o.candidates),
    };
    let mut header = format!(
        "{} of {} {what} ({} files matched; scanned {} of {of}, {})",
        o.count,
        o.total,
        o.files_matched,
        o.files_scanned,
        human_size(o.bytes_scanned),
    );
    let s = &o.skipped;
    if s.total() > 0 {
        header.push_str(&format!(
            "; skipped {} binary, {} too large, {} sensitive, {} changed, {} unreadable",
            s.binary, s.too_large, s.sensitive, s.changed, s.unreadable
        ));
    }
    if s.documents > 0 {
        header.push_str(&format!(
            "; {} documents (PDF, Office…) not searched: pass documents: true",
            s.documents
        ));
        let note = format!(
            "{} documents (PDF, Office, OpenDocument, EPUB) were not searched; pass `documents: true` to search their text",
            s.documents
        );
        structured["note"] = match structured.get("note").and_then(Value::as_str) {
            Some(before) => json!(format!("{before}; {note}")),
            None => json!(note),
        };
    }
    if let Some(limit) = walk_limit {
        header.push_str(&format!("\nwarning: {}", walk_capped_warning(limit)));
    }
    header.push('\n');
    let mut text = header + &frame(&body);
    if let Some(next) = o.next_offset {
        text.push_str(&format!("\nmore: grep with offset {next}"));
    }
    let mut structured = render::compact(structured);
    match o.stopped {
        None => render::ok(structured, text),
        Some(stopped) => {
            let (code, message, hint) = match stopped {
                Stopped::Timeout => (
                    "TIMEOUT",
                    "timeout_ms ran out; partial results",
                    "narrow the search (`path`, `filter`, `glob`) or raise `timeout_ms`",
                ),
                Stopped::Cancelled => (
                    "CANCELLED",
                    "the request was cancelled; partial results",
                    "run it again if you still need it",
                ),
            };
            structured["error"] = json!({"code": code, "message": message, "hint": hint});
            let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
                "{code}: {message}\n{text}"
            ))]);
            result.structured_content = Some(structured);
            result
        }
    }
}

/// What `content:` found.
#[derive(Debug, Default)]
pub struct ContentFound {
    /// The files whose text holds every pattern.
    pub files: HashSet<String>,
    /// Documents not read (documents off): they match nothing.
    pub documents_skipped: u64,
}

/// `content:` of `search`: the files among `files` whose text holds every pattern
/// (literal, case-insensitive), each pattern narrowed by the content index
/// first (`files.caught_up`: the watcher's barrier was passed before the
/// files were named, so no pattern waits for it again). Documents are searched as their text when `documents` is on, as
/// grep searches them, and counted otherwise. Files that cannot be searched
/// do not match.
pub fn content_filter(
    roots: &Roots,
    content: Option<&ContentIndex>,
    files: ferret_grep::candidates::Gathered,
    patterns: &[String],
    documents: bool,
    timeout: Duration,
    meter: &Meter,
) -> Result<ContentFound, FsError> {
    let deadline = Instant::now() + timeout;
    meter.set_total((files.candidates.len() * patterns.len()) as u64);
    let caught_up = files.caught_up;
    let unheard = files.unheard;
    let mut remaining = files.candidates;
    let mut documents_skipped = 0;
    for p in patterns {
        let pattern = Pattern {
            text: p.clone(),
            literal: true,
            case_insensitive: true,
            ..Pattern::default()
        };
        let matcher = ferret_grep::compile(&pattern)
            .map_err(|e| FsError::new(ErrorCode::TooLarge, format!("`content:{p}`: {e}")))?;
        let mut gathered = ferret_grep::candidates::Gathered {
            candidates: std::mem::take(&mut remaining),
            caught_up,
            unheard: unheard.clone(),
            ..Default::default()
        };
        let before = gathered.candidates.len();
        ferret_grep::narrow(content, &pattern, &mut gathered);
        // The files the index ruled out count as searched.
        meter.done.fetch_add(
            (before - gathered.candidates.len()) as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        remaining = gathered.candidates;
        let options = ferret_grep::Options {
            output: Output::Files,
            limit: usize::MAX / 4,
            max_file_bytes: roots.policy.limits.max_file_bytes,
            max_output_bytes: usize::MAX,
            deadline: Some(deadline),
            documents,
            ..ferret_grep::Options::default()
        };
        let outcome = ferret_grep::grep(
            roots,
            &matcher,
            false,
            &remaining,
            &options,
            &meter.cancel,
            Some(&meter.done),
        );
        // Each is left out of what the next pattern reads: counted once.
        documents_skipped += outcome.skipped.documents;
        match outcome.stopped {
            None => {}
            Some(Stopped::Cancelled) => {
                return Err(
                    FsError::new(ErrorCode::Cancelled, "the search was cancelled")
                        .hint("run it again if you still need it"),
                );
            }
            Some(Stopped::Timeout) => {
                return Err(FsError::new(
                    ErrorCode::Timeout,
                    format!(
                        "`content:` took longer than {} s, so which files hold the text is not known",
                        timeout.as_secs()
                    ),
                )
                .hint("narrow the query first (ext:, in:, size:, a path), or use grep with timeout_ms"));
            }
        }
        let found: HashSet<String> = outcome.files.into_iter().collect();
        remaining.retain(|c| found.contains(&c.path));
    }
    Ok(ContentFound {
        files: remaining.into_iter().map(|c| c.path).collect(),
        documents_skipped,
    })
}

/// How long `content:` in `search` may grep before giving up.
const CONTENT_TIMEOUT: Duration = Duration::from_secs(30);

/// `search` with `content:` terms: the index's matching files (in the order asked
/// for), kept when their text holds every term, then paged. `group_by` counts the
/// files that hold the terms. With it, the number of documents not read
/// (`documents` off).
pub fn content_search(
    index: &Index,
    roots: &Roots,
    content: Option<&ContentIndex>,
    request: &ferret_index::SearchRequest,
    patterns: &[String],
    documents: bool,
    meter: &Meter,
) -> Result<(ferret_index::SearchOutcome, u64), FsError> {
    // The watcher's barrier first: a file created before the call is then
    // among the names searched (when the index cannot confirm it, the
    // search answers from what it holds, as a plain search does). In
    // folders the watcher cannot hear, files are read whatever the content
    // index holds.
    let heard = index.caught_up_but(ferret_index::CATCH_UP_WAIT);
    let caught_up = heard.as_ref().is_some_and(Vec::is_empty);
    let all = index
        .search_until(
            &ferret_index::SearchRequest {
                offset: 0,
                limit: usize::MAX / 4,
                group_by: None,
                ..*request
            },
            // The name part is a name search: within the same CPU budget.
            ferret_index::Stop::on(&meter.cancel).within_cpu(ferret_index::SEARCH_CPU_BUDGET),
        )
        .map_err(render::search_stopped)?;
    let files: Vec<ferret_grep::Candidate> = all
        .hits
        .iter()
        .filter(|h| h.kind == ferret_query::Kind::File)
        .map(|h| {
            ferret_grep::Candidate::new(
                h.path.clone(),
                h.modified
                    .as_deref()
                    .and_then(|m| chrono::DateTime::parse_from_rfc3339(m).ok())
                    .map_or(0, |t| t.timestamp()),
                h.size.unwrap_or(0),
            )
        })
        .collect();
    let files = ferret_grep::candidates::Gathered {
        candidates: files,
        caught_up,
        unheard: heard.unwrap_or_default(),
        ..Default::default()
    };
    let found = content_filter(
        roots,
        content,
        files,
        patterns,
        documents,
        CONTENT_TIMEOUT,
        meter,
    )?;
    let hits: Vec<ferret_index::Hit> = all
        .hits
        .into_iter()
        .filter(|h| found.files.contains(&h.path))
        .collect();
    let total = hits.len() as u64;
    if let Some(by) = request.group_by {
        let groups = ferret_index::search::group_hits(&hits, by, request.offset, request.limit);
        return Ok((groups, found.documents_skipped));
    }
    let page = ferret_index::SearchOutcome {
        hits: hits
            .into_iter()
            .skip(request.offset)
            .take(request.limit)
            .collect(),
        groups: None,
        total,
        scattered: false,
    };
    Ok((page, found.documents_skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grep_of_a_folder_listed_past_the_limit_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join(".gitignore"), "ignored/\n").unwrap();
        std::fs::create_dir(d.join("ignored")).unwrap();
        for i in 0..30 {
            std::fs::write(d.join(format!("ignored/f{i:02}.txt")), "needle\n").unwrap();
        }
        let mut policy = ferret_fs::Policy::default();
        policy.limits.max_walk_entries = 10;
        let roots = Roots::open(&[d.display().to_string().parse().unwrap()], policy).unwrap();
        let index = Index::open(ferret_index::IndexConfig::new(vec![
            ferret_index::IndexRoot::new(
                roots.roots()[0].name.clone(),
                roots.roots()[0].path.clone(),
            ),
        ]))
        .unwrap();
        index.build_now(None);
        let grep = |path: &str| {
            let args = serde_json::json!({"pattern": "needle", "path": path, "output": "files"});
            let call = parse(args.as_object(), &roots).unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            execute(&index, &roots, None, &call, deadline, &Meter::new())
        };
        let capped = grep("ignored");
        let s = capped.structured_content.as_ref().unwrap();
        assert_eq!(s["files"].as_array().unwrap().len(), 10, "{s}");
        assert_eq!(s["walk_capped"], true, "{s}");
        let warning = s["warning"].as_str().unwrap();
        assert!(
            warning.contains("stopped at 10 files") && warning.contains("--no-ignore"),
            "{warning}"
        );
        let text = render::first_text(&capped);
        assert!(
            text.contains("\nwarning: a folder the index does not hold"),
            "{text}"
        );
        // The index's own folders: nothing listed, nothing to say.
        let whole = grep(".");
        let s = whole.structured_content.as_ref().unwrap();
        assert!(
            s.get("walk_capped").is_none() && s.get("warning").is_none(),
            "{s}"
        );
    }

    #[test]
    fn a_content_filter_out_of_time_or_cancelled_is_an_error_not_an_empty_answer() {
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..50 {
            std::fs::write(
                tmp.path().join(format!("f{i}.txt")),
                "needle\n".repeat(1000),
            )
            .unwrap();
        }
        let spec: ferret_fs::RootSpec = tmp.path().display().to_string().parse().unwrap();
        let roots = Roots::open(&[spec], ferret_fs::Policy::default()).unwrap();
        let files = || ferret_grep::candidates::Gathered {
            candidates: (0..50)
                .map(|i| ferret_grep::Candidate::new(format!("f{i}.txt"), 0, 7000))
                .collect(),
            ..Default::default()
        };
        let words = ["needle".to_string()];
        let found = content_filter(
            &roots,
            None,
            files(),
            &words,
            false,
            Duration::from_secs(30),
            &Meter::new(),
        );
        assert_eq!(found.unwrap().files.len(), 50);
        let late = content_filter(
            &roots,
            None,
            files(),
            &words,
            false,
            Duration::ZERO,
            &Meter::new(),
        );
        assert_eq!(late.unwrap_err().code, ErrorCode::Timeout);
        let meter = Meter::new();
        meter.stop();
        let stopped = content_filter(
            &roots,
            None,
            files(),
            &words,
            false,
            Duration::from_secs(30),
            &meter,
        );
        assert_eq!(stopped.unwrap_err().code, ErrorCode::Cancelled);
    }
}
