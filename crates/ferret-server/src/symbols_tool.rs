//! `symbols` (definitions by name across the roots), and `read`'s `outline`
//! and `symbol` modes: source files read through the file layer (confined,
//! sensitive and binary files refused), their definitions from
//! `ferret-symbols`.
//!
//! The table of every file's definitions lives here, one per served stack.
//! It is built in the background once the index is ready ([`build`], a
//! chunk of files at a time at `nice` +10, so that calls go between the
//! chunks), or by the first call that needs it, and saved in the state
//! directory ([`Symbols::save`]: after the build and at exit), so that a
//! restart reads it back and parses only the files that moved meanwhile.
//! A call lists the source files as the live index knows them (with the
//! folders it has not caught up with listed again, as `grep` does) until
//! the table holds every one of a caught-up index; later calls look up only
//! the paths the index's change feed named since (a folder created or
//! moved in, an index not caught up or a feed that lost paths: listed
//! again). Either way only files whose modification time or size moved are
//! parsed again, so an answer never names a definition that is gone.

use std::{
    collections::HashSet,
    io::{Read, Write},
    path::PathBuf,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use ferret_fs::{ErrorCode, FsError, Meter, ReadRequest, Roots, Target, sniff};
use ferret_index::{Index, Stop};
use ferret_query::{Clock, Options as QueryOptions, Query};
use ferret_symbols::{Extractor, KINDS, Kind, Lang, Limits, NameQuery, Source, Symbol, Table};
use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde_json::{Value, json};

use crate::{
    Stack,
    args::{ArgResult, Args},
    render,
    schema::{output_schema, read_only, schema},
};

/// Files larger than this are not parsed for symbols.
pub(crate) const MAX_SOURCE_BYTES: usize = 8 << 20;

fn limits() -> Limits {
    Limits {
        max_bytes: MAX_SOURCE_BYTES,
        ..Limits::default()
    }
}

/// `symbols`' definition: compact (the `tools/list` answer is budgeted), so
/// `kind` is a described string, checked by [`parse`] against [`KINDS`].
pub fn definition() -> Tool {
    Tool::new(
        "symbols",
        "Definitions by name (case/separator-insensitive, fuzzy; `Type::method` qualifies), then read {path, symbol}.",
        schema(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "path": {"type": "string"},
                "kind": {"type": "string", "description": "function, method, class, struct, type…"},
                "offset": {"type": "integer"},
                "limit": {"type": "integer", "maximum": 500},
            },
            "required": ["query"],
        })),
    )
    .with_title("Find definitions")
    .with_raw_output_schema(output_schema(&["results"]))
    .with_annotations(read_only())
}

/// A `symbols` call.
pub struct SymbolsCall {
    pub query: String,
    pub path: Option<String>,
    pub kind: Option<Kind>,
    pub offset: usize,
    pub limit: usize,
}

pub fn parse(args: Option<&JsonObject>) -> ArgResult<SymbolsCall> {
    let a = Args::new(
        "symbols",
        args,
        &["query", "path", "kind", "offset", "limit"],
        r#"{"query":"parse_query","kind":"function"}"#,
    )?;
    let query = a.required_string("query")?;
    let kind = match a.string("kind")? {
        None => None,
        Some(k) => Some(Kind::parse(&k).ok_or_else(|| {
            let names: Vec<&str> = KINDS.iter().map(|k| k.name()).collect();
            a.conflict(
                "kind",
                &format!("`kind` `{k}` is not one of {}", names.join(", ")),
            )
        })?),
    };
    Ok(SymbolsCall {
        query,
        path: a.string("path")?,
        kind,
        offset: a.integer("offset", 0, 1 << 31)?.unwrap_or(0) as usize,
        limit: a.integer("limit", 1, 500)?.unwrap_or(20) as usize,
    })
}

/// The table of one served stack (a new stack, after the client's roots
/// changed, starts a new table).
#[derive(Default)]
pub struct Symbols {
    held: Mutex<Option<Held>>,
    /// What the background build has done, read by `diagnostics` without
    /// waiting for `held`.
    build: Mutex<Build>,
    /// The server is stopping: the background build stops at its next chunk.
    stopping: AtomicBool,
    /// A background build runs (one at a time: started at start with
    /// `--symbols-early on`, else by a call that found too much to parse).
    running: AtomicBool,
}

/// The background build's progress.
#[derive(Debug, Clone, Default)]
struct Build {
    /// `None`: not started (off, or not yet).
    state: Option<&'static str>,
    files_done: usize,
    files_total: usize,
    ms: Option<u64>,
}

/// Where a stack's table is saved, and what it must have been saved for.
struct SavedAt {
    path: PathBuf,
    key: Vec<u8>,
}

struct Held {
    stack: Weak<Stack>,
    table: Table,
    saved_at: Option<SavedAt>,
    /// Changed since it was read back or saved.
    dirty: bool,
    /// Files read back from the state directory when it was opened.
    loaded: Option<usize>,
    /// The index's feed of changed paths and what it named since the last
    /// call: once the table holds every source file of an index that was
    /// caught up, a call reads only these.
    pending: Arc<Mutex<Pending>>,
    /// The table holds every source file as of a listing of a caught-up
    /// index, and no path named since was lost.
    whole: bool,
}

struct Pending {
    feed: std::sync::mpsc::Receiver<Vec<String>>,
    paths: HashSet<String>,
    /// More than [`MAX_PENDING`] paths, or the feed ended: list everything.
    lost: bool,
}

impl Pending {
    /// Move what the feed holds into `paths`.
    fn pull(&mut self) {
        loop {
            match self.feed.try_recv() {
                Ok(batch) => {
                    if self.lost {
                        continue;
                    }
                    self.paths.extend(batch);
                    if self.paths.len() > MAX_PENDING {
                        self.paths = HashSet::new();
                        self.lost = true;
                    }
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => return,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    self.lost = true;
                    return;
                }
            }
        }
    }
}

/// Past this many changed paths between two calls, a full listing is as
/// cheap as looking each up.
const MAX_PENDING: usize = 100_000;

/// How often the feed is emptied between calls.
const PULL_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

impl Held {
    /// `stack`'s table: read back from the state directory, else empty.
    fn new(stack: &Arc<Stack>) -> Held {
        let table = saved_at(stack).as_ref().and_then(read_back);
        let loaded = table.as_ref().map(|t| t.stats().files);
        let mut held = Held::with_table(stack, table.unwrap_or_else(|| Table::new(limits())));
        held.loaded = loaded;
        held
    }

    /// `stack`'s table, starting from `table`.
    fn with_table(stack: &Arc<Stack>, table: Table) -> Held {
        let pending = Arc::new(Mutex::new(Pending {
            feed: stack.index.touches(),
            paths: HashSet::new(),
            lost: false,
        }));
        let theirs = Arc::downgrade(&pending);
        // Empties the feed every PULL_EVERY (so a quiet spell between calls
        // holds at most MAX_PENDING paths); ends when the table is gone.
        // A call empties it too, under the same lock, after the index's
        // barrier: nothing published before the call can be missed.
        let _ = std::thread::Builder::new()
            .name("ferret-symbols-feed".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(PULL_EVERY);
                    let Some(pending) = theirs.upgrade() else {
                        return;
                    };
                    pending.lock().unwrap_or_else(|p| p.into_inner()).pull();
                }
            });
        Held {
            stack: Arc::downgrade(stack),
            loaded: None,
            table,
            saved_at: saved_at(stack),
            dirty: false,
            pending,
            whole: false,
        }
    }

    /// Write the table where it is kept, when it changed since.
    fn save(&mut self) {
        let Some(at) = self.saved_at.as_ref().filter(|_| self.dirty) else {
            return;
        };
        let started = Instant::now();
        let bytes = self.table.to_bytes(&at.key);
        match write_atomically(&at.path, &bytes) {
            Ok(()) => {
                self.dirty = false;
                tracing::info!(
                    files = self.table.stats().files,
                    bytes = bytes.len(),
                    ms = started.elapsed().as_millis() as u64,
                    "symbols table saved"
                );
            }
            Err(e) => tracing::warn!(
                "symbols table not saved to {}: {e}; the next start parses the files again",
                at.path.display()
            ),
        }
    }

    /// Whether this is `stack`'s table (a new stack, after the client's
    /// roots changed, starts a new one).
    fn serves(&self, stack: &Arc<Stack>) -> bool {
        std::ptr::eq(self.stack.as_ptr(), Arc::as_ptr(stack))
    }

    /// The paths named since the last call (`None`: some were lost).
    fn drain(&mut self) -> Option<HashSet<String>> {
        let mut p = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        p.pull();
        let paths = std::mem::take(&mut p.paths);
        if std::mem::take(&mut p.lost) {
            return None;
        }
        Some(paths)
    }
}

/// Where `stack`'s table is kept (`None`: no state directory, as with
/// `--no-persist`), and the key it is saved under: the roots, the walk's
/// rules, the extra sensitive patterns and the size bound, since each
/// changes what the table may hold.
fn saved_at(stack: &Stack) -> Option<SavedAt> {
    let config = stack.index.config();
    let dir = config.state_dir.as_ref()?;
    let mut key = format!(
        "symbols v1 hidden={} no_ignore={} max_source={MAX_SOURCE_BYTES}",
        config.rules.hidden, config.rules.no_ignore
    );
    for r in &config.roots {
        key.push_str(&format!("\n{}={}", r.name, r.path.display()));
    }
    let mut deny: Vec<&String> = stack.roots.policy.deny.extra_patterns().iter().collect();
    deny.sort_unstable();
    deny.dedup();
    for pattern in deny {
        key.push_str("\ndeny\0");
        key.push_str(pattern);
    }
    let hash = ferret_index::snapshot::hash64(key.as_bytes());
    Some(SavedAt {
        path: dir.join(format!("symbols-{hash:016x}.table")),
        key: key.into_bytes(),
    })
}

/// The table saved at `at`, when there is a usable one (why not is logged).
fn read_back(at: &SavedAt) -> Option<Table> {
    let started = Instant::now();
    let bytes = match std::fs::read(&at.path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(
                "symbols table {} unreadable: {e}; built again",
                at.path.display()
            );
            return None;
        }
    };
    match Table::from_bytes(&bytes, limits(), &at.key) {
        Ok(t) => {
            tracing::info!(
                files = t.stats().files,
                symbols = t.stats().symbols,
                ms = started.elapsed().as_millis() as u64,
                "symbols table read back"
            );
            Some(t)
        }
        Err(why) => {
            tracing::warn!(
                "symbols table {} discarded ({why}); built again",
                at.path.display()
            );
            None
        }
    }
}

/// Write `bytes` to `path` whole or not at all: a private temporary file in
/// the same folder, synced, then renamed over it.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("symbols"),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Where `read`'s outlines come from: the served stack (its roots) and the
/// symbols table it has.
pub struct Outlines<'a> {
    pub symbols: &'a Symbols,
    pub stack: &'a Arc<Stack>,
}

/// Extractors (each with its parsers and compiled queries) for `read`'s
/// outlines, shared by every thread: compiling a language's queries costs
/// a few milliseconds, and calls land on whichever of tokio's blocking
/// threads is free, so one extractor per thread would compile them again
/// on each new thread.
static EXTRACTORS: Mutex<Vec<Extractor>> = Mutex::new(Vec::new());

/// Extract `bytes` with an extractor of the pool (a new one when every one
/// is busy), and give it back.
fn extract(lang: Lang, bytes: &[u8]) -> Result<ferret_symbols::Outline, ferret_symbols::Skip> {
    let taken = EXTRACTORS.lock().unwrap_or_else(|p| p.into_inner()).pop();
    let mut x = taken.unwrap_or_else(|| Extractor::new(limits()));
    let outline = x.extract(lang, bytes);
    EXTRACTORS.lock().unwrap_or_else(|p| p.into_inner()).push(x);
    outline
}

/// A source file as read now: its bytes, the path, modification time and
/// size the symbols table would hold it under, and when its status last
/// changed.
struct SourceFile {
    bytes: Vec<u8>,
    held_as: String,
    mtime: i64,
    size: u64,
    changed: i64,
}

/// A source file's bytes, read through the roots: the same refusals as
/// `read` (outside a root, sensitive, a folder, binary), and `TOO_LARGE`
/// past [`MAX_SOURCE_BYTES`].
fn read_source(roots: &Roots, shown: &str) -> Result<SourceFile, FsError> {
    let (root, rel) = match roots.resolve(shown)? {
        Target::In(root, rel) => (root, rel),
        Target::AllRoots => {
            return Err(FsError::new(
                ErrorCode::IsDirectory,
                format!("`{shown}` is the folder of every root, not a file"),
            ));
        }
    };
    let opened = roots.open_for_content(root, &rel, shown)?;
    if opened.metadata.len() > MAX_SOURCE_BYTES as u64 {
        return Err(FsError::new(
            ErrorCode::TooLarge,
            format!(
                "`{shown}` is {} bytes; symbols are read from files of at most {MAX_SOURCE_BYTES}",
                opened.metadata.len()
            ),
        )
        .hint("read it by lines, or grep it for the definition"));
    }
    let mut bytes = Vec::with_capacity(opened.metadata.len() as usize);
    (&opened.file)
        .take(MAX_SOURCE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FsError::from_io(&e, shown))?;
    if let sniff::Content::Binary(_) | sniff::Content::Image(_) = sniff::classify(&bytes) {
        return Err(FsError::new(
            ErrorCode::BinaryContent,
            format!("`{shown}` is binary, not source"),
        ));
    }
    // The grammars read UTF-8: a file in UTF-16 or a legacy encoding
    // (Latin-1 `café_fn`, which parsed as `caf`) is parsed as `read`
    // decodes it; its lines are the same lines.
    if let std::borrow::Cow::Owned(text) = sniff::decoded(&bytes) {
        bytes = text.into_bytes();
    }
    let (mtime, changed) = opened.modified_and_changed();
    Ok(SourceFile {
        // The real path (symlinks inside the root followed): the file
        // whose stamps these are.
        held_as: roots.display(root, &opened.real),
        mtime,
        size: opened.metadata.len(),
        changed,
        bytes,
    })
}

fn language_of(shown: &str) -> Result<Lang, FsError> {
    Lang::of_path(shown).ok_or_else(|| {
        FsError::new(
            ErrorCode::NoMatch,
            format!("`{shown}` is not a language ferret reads symbols from"),
        )
        .hint("symbols come from Rust, Python, JavaScript, TypeScript, Go, Java, C and C++ files (by extension); read the file by lines instead")
    })
}

/// A file's definitions as it is now: held by the symbols table when it
/// holds them for the file's present stamps, else parsed.
fn outline_of(at: &Outlines, shown: &str) -> Result<ferret_symbols::Outline, FsError> {
    let lang = language_of(shown)?;
    let file = read_source(&at.stack.roots, shown)?;
    if let Some(held) = at.symbols.held_outline(at.stack, &file) {
        return Ok(held);
    }
    extract(lang, &file.bytes).map_err(|skip| {
        FsError::new(
            ErrorCode::Timeout,
            format!(
                "`{shown}` could not be parsed within its bounds ({})",
                skip.name()
            ),
        )
        .hint("read it by lines, or grep it for the definition")
    })
}

fn symbol_json(s: &Symbol) -> Value {
    render::compact(json!({
        "name": s.name,
        "kind": s.kind.name(),
        "line": s.line,
        "end_line": s.end_line,
        "container": s.container,
    }))
}

fn symbol_text(s: &Symbol) -> String {
    let container = s
        .container
        .as_deref()
        .map(|c| format!(" (in {c})"))
        .unwrap_or_default();
    format!(
        "{}-{} {} {}{container}",
        s.line,
        s.end_line,
        s.kind.name(),
        s.name
    )
}

/// `read` with `outline: true`: the file's definitions from `start_line` on,
/// at most `max_symbols` of them.
pub fn outline(at: &Outlines, shown: &str, start_line: u64, max_symbols: usize) -> CallToolResult {
    let outline = match outline_of(at, shown) {
        Ok(o) => o,
        Err(e) => return render::tool_error(&e),
    };
    let from: Vec<&Symbol> = outline
        .symbols
        .iter()
        .filter(|s| u64::from(s.line) >= start_line)
        .collect();
    let shown_now = &from[..from.len().min(max_symbols)];
    let mut next = from.get(shown_now.len()).map(|s| s.line);
    // Pages continue by line: a page cut among the definitions of one line
    // (a minified file's) continues after that line, and says how many of
    // the line's were left out, instead of asking for the same page again.
    let mut left_out = None;
    if let (Some(n), Some(last)) = (next, shown_now.last())
        && n == last.line
    {
        let rest = &from[shown_now.len()..];
        let on_line = rest.iter().take_while(|s| s.line == n).count();
        left_out = Some((n, on_line));
        next = rest.get(on_line).map(|s| s.line);
    }
    let mut text = format!(
        "{shown} · {} definitions{}",
        outline.symbols.len(),
        if start_line > 1 {
            format!(" · from line {start_line}")
        } else {
            String::new()
        }
    );
    if outline.had_errors {
        text.push_str(" · parsed with errors (some definitions may be missing)");
    }
    let body: Vec<String> = shown_now.iter().map(|s| symbol_text(s)).collect();
    text.push('\n');
    text.push_str(&render::frame(&body.join("\n")));
    if let Some((line, count)) = left_out {
        text.push_str(&format!(
            "\n{count} more definitions on line {line} are left out (more than a page on one line): find them by name with `symbols` and this file as `path`"
        ));
    }
    if let Some(n) = next {
        text.push_str(&format!("\nmore: read with outline and start_line {n}"));
    }
    let structured = render::compact(json!({
        "path": shown,
        "symbols": shown_now.iter().map(|s| symbol_json(s)).collect::<Vec<_>>(),
        "count": shown_now.len(),
        "total": outline.symbols.len(),
        "next_start_line": next,
        "left_out_on_line": left_out.map(|(line, count)| json!({"line": line, "count": count})),
        "had_errors": outline.had_errors.then_some(true),
        "truncated": outline.truncated.then_some(true),
    }));
    render::ok(structured, text)
}

/// The definitions in a file's outline that `name` names: exact names,
/// else the same name but for case and separators; `Type::method` asks for
/// the container too.
fn named<'o>(outline: &'o ferret_symbols::Outline, name: &str) -> Vec<&'o Symbol> {
    let q = NameQuery::new(name);
    let fits: Vec<&Symbol> = outline
        .symbols
        .iter()
        .filter(|s| q.container_fits(s.container.as_deref()))
        .collect();
    let plain = name.rsplit(['.', ':']).next().unwrap_or(name);
    let exact: Vec<&Symbol> = fits.iter().copied().filter(|s| s.name == plain).collect();
    if !exact.is_empty() {
        return exact;
    }
    fits.into_iter()
        .filter(|s| ferret_symbols::fold(&s.name) == q.folded())
        .collect()
}

/// `read` with `symbol`: the definition's lines (with the comments,
/// attributes or decorators above it), read as any window is.
pub fn read_symbol(
    at: &Outlines,
    shown: &str,
    name: &str,
    line: Option<u64>,
    request: &ReadRequest,
) -> CallToolResult {
    let roots = &*at.stack.roots;
    let outline = match outline_of(at, shown) {
        Ok(o) => o,
        Err(e) => return render::tool_error(&e),
    };
    let mut found = named(&outline, name);
    if let Some(line) = line
        && !found.is_empty()
    {
        // The one whose lines hold `line`; of nested ones, the innermost.
        let holding = found
            .iter()
            .copied()
            .filter(|s| u64::from(s.doc_line) <= line && line <= u64::from(s.end_line))
            .max_by_key(|s| (s.line, std::cmp::Reverse(s.end_line)));
        match holding {
            Some(one) => found = vec![one],
            None => {
                let err = FsError::new(
                    ErrorCode::NotFound,
                    format!("`{shown}` defines `{name}`, but not on line {line}"),
                )
                .hint("give the `line` of one of `candidates` as `start_line`");
                return with_candidates(render::tool_error(&err), &found);
            }
        }
    }
    match found.as_slice() {
        [] => {
            let q = NameQuery::new(name);
            let mut m = ferret_symbols::matcher();
            let mut buf = Vec::new();
            let mut near: Vec<(u16, &Symbol)> = outline
                .symbols
                .iter()
                .filter_map(|s| {
                    let f = ferret_symbols::fold(&s.name);
                    // Typos first (the likeliest slip), then fuzzy letters.
                    let score = q
                        .typo(&f)
                        .map(|d| u16::MAX - d as u16)
                        .or_else(|| q.plain_tier(&s.name, &f).map(|_| u16::MAX - 3))
                        .or_else(|| q.fuzzy(&f, &mut m, &mut buf));
                    score.map(|sc| (sc, s))
                })
                .collect();
            near.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.line.cmp(&b.1.line)));
            let names: Vec<String> = near.iter().take(5).map(|(_, s)| symbol_text(s)).collect();
            let mut err = FsError::new(
                ErrorCode::NotFound,
                format!("`{shown}` defines no `{name}`"),
            );
            err = if names.is_empty() {
                err.hint("read it with `outline: true` to see what it defines, or find the name with `symbols`")
            } else {
                err.hint(format!(
                    "near names: {}; or read with `outline: true`",
                    names.join("; ")
                ))
            };
            let mut result = render::tool_error(&err);
            if let Some(s) = result.structured_content.as_mut() {
                s["near_symbols"] = json!(
                    near.iter()
                        .take(5)
                        .map(|(_, s)| symbol_json(s))
                        .collect::<Vec<_>>()
                );
            }
            result
        }
        [one] => {
            let mut req = request.clone();
            req.start_line = u64::from(one.doc_line);
            req.end_line = Some(u64::from(one.end_line));
            req.from_end = None;
            req.max_lines = req
                .max_lines
                .max(u64::from(one.end_line - one.doc_line + 1));
            let mut result = crate::read_tool::read(roots, shown, &req);
            if result.is_error != Some(true)
                && let Some(s) = result.structured_content.as_mut()
            {
                s["symbol"] = symbol_json(one);
            }
            result
        }
        many => {
            let err = FsError::new(
                ErrorCode::NotUnique,
                format!("`{shown}` defines `{name}` {} times", many.len()),
            )
            .hint("qualify it (`Type::name`), or give one candidate's `line` as `start_line`");
            let mut result = with_candidates(render::tool_error(&err), many);
            if let Some(rmcp::model::ContentBlock::Text(t)) = result.content.first_mut() {
                for s in many {
                    t.text.push_str(&format!("\n{}", symbol_text(s)));
                }
            }
            result
        }
    }
}

/// An error answer with the definitions it is about as `candidates`.
fn with_candidates(mut result: CallToolResult, candidates: &[&Symbol]) -> CallToolResult {
    if let Some(s) = result.structured_content.as_mut() {
        s["candidates"] = json!(
            candidates
                .iter()
                .map(|s| symbol_json(s))
                .collect::<Vec<_>>()
        );
    }
    result
}

/// The source files of every root as the index knows them, with folders it
/// has not caught up with listed again, and whether it was caught up.
fn sources(index: &Index, roots: &Roots, stop: Stop) -> Result<(Vec<Source>, bool), FsError> {
    let exts = Lang::extensions().join(";");
    let query = Query::compile(
        &format!("ext:{exts}"),
        &QueryOptions::default(),
        &Clock::system(),
    )
    .expect("a constant query");
    let scope = ferret_grep::Scope {
        path: None,
        query,
        globs: ferret_grep::candidates::Globs::default(),
        stop,
    };
    let gathered = ferret_grep::gather(index, roots, &scope)?;
    let caught_up = gathered.caught_up;
    Ok((
        gathered
            .candidates
            .into_iter()
            .map(|c| Source {
                path: c.path,
                mtime: c.mtime,
                size: c.size,
            })
            .collect(),
        caught_up,
    ))
}

/// What changed since the table was whole, from the feed's paths: the
/// source files the index now has at them, and the paths it no longer has.
/// `None` when a full listing is needed: a path that is a folder now (one
/// created or moved in: its files may not each be named).
fn changes(index: &Index, touched: HashSet<String>) -> Option<(Vec<Source>, Vec<String>)> {
    let mut changed = Vec::new();
    let mut gone = Vec::new();
    for path in touched {
        match index.file(&path) {
            Some((size, mtime)) => {
                if Lang::of_path(&path).is_some() {
                    changed.push(Source { path, mtime, size });
                }
            }
            None if index.folder(&path).is_some() => return None,
            // Gone: a file, or a folder whose files the table forgets.
            None => gone.push(path),
        }
    }
    Some((changed, gone))
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// What [`fresh`] did to the table.
enum Freshened {
    /// Brought up to date: what was read and forgotten, and whether every
    /// file was listed.
    Fresh(ferret_symbols::Refreshed, bool),
    /// Too much to parse in the call: only the files holding the name.
    Narrowed(Narrowed),
}

/// What a call that may be answered [`narrowed`] looks for.
struct NarrowBy<'a> {
    name: &'a str,
    scope: Option<&'a str>,
    meter: &'a Meter,
}

/// The stack's table in `slot`, brought up to date with the disk: built by
/// a listing when `slot` holds another stack's (or none), then kept by the
/// index's change feed (see the module's documentation). With `narrow`,
/// a listing that finds more than [`PARSE_IN_CALL`] files to parse reads
/// only those holding the name instead ([`narrowed`]), and the next call
/// lists again.
fn fresh(
    slot: &mut Option<Held>,
    stack: &Arc<Stack>,
    cancel: &std::sync::atomic::AtomicBool,
    narrow: Option<NarrowBy<'_>>,
) -> Result<Freshened, FsError> {
    let roots = &stack.roots;
    let index = &stack.index;
    let h = held_for(slot, stack);
    let threads = ferret_index::cores();
    let read = |p: &str| read_source(roots, p).ok().map(|f| f.bytes);
    // The barrier first: every change completed before this call is then
    // on the feed.
    let caught_up = h.whole && index.caught_up(ferret_index::CATCH_UP_WAIT);
    let touched = h.drain();
    let update = match touched {
        Some(t) if caught_up => changes(index, t),
        // Not caught up, not whole yet, or paths lost: listed, as grep lists.
        _ => None,
    };
    let listed = update.is_none();
    let refreshed = match update {
        Some((changed, gone)) => h.table.update(&changed, &gone, now_s(), threads, read),
        None => {
            // What the feed names from here on is what this listing may
            // not have seen.
            let _ = h.drain();
            let (all, caught_up) = sources(index, roots, Stop::on(cancel))?;
            if let Some(by) = narrow
                && h.table.to_read(&all) > PARSE_IN_CALL
            {
                // The feed was emptied for a listing the table does not
                // take whole: listed again by the next call.
                h.whole = false;
                return narrowed(h, stack, all, caught_up, &by).map(Freshened::Narrowed);
            }
            h.whole = caught_up;
            h.table.refresh(&all, now_s(), threads, read)
        }
    };
    if refreshed != ferret_symbols::Refreshed::default() {
        h.dirty = true;
    }
    if refreshed.read >= MANY_READ {
        settle(&mut h.table);
    }
    Ok(Freshened::Fresh(refreshed, listed))
}

/// Past this many files read by one call, the table is settled (see
/// [`settle`]): a first call that built it.
const MANY_READ: usize = 1024;

/// After a build: the table's arrays cut to what they hold, and what the
/// build's temporaries freed (the listing, the parsers' trees and the
/// files' bytes, hundreds of megabytes on a big tree) handed back to the
/// system, which glibc otherwise keeps in its arenas.
fn settle(table: &mut Table) {
    table.shrink_to_fit();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it takes no pointer and
    // is thread-safe (it locks each arena it trims).
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `stack`'s table in `slot`: the one there, or (another stack's, or none)
/// the one saved for `stack`, else an empty one; another stack's is saved
/// first.
fn held_for<'s>(slot: &'s mut Option<Held>, stack: &Arc<Stack>) -> &'s mut Held {
    if !slot.as_ref().is_some_and(|h| h.serves(stack)) {
        if let Some(mut old) = slot.take() {
            old.save();
        }
        *slot = Some(Held::new(stack));
    }
    slot.as_mut().expect("set above")
}

/// Files parsed per turn of the background build: a call waits at most
/// about one chunk's parsing for the table.
const CHUNK: usize = 256;

/// Build `stack`'s table in this thread (the caller's background thread),
/// once its index is ready: every source file the index lists, [`CHUNK`]
/// at a time at `nice` +10 on every core, then saved. Stops between chunks
/// when `serving` says the stack is no longer served or the server stops
/// (what was parsed is kept, and saved at exit).
pub fn build(held: &Symbols, stack: &Arc<Stack>, serving: &dyn Fn() -> bool) {
    if held.running.swap(true, Ordering::AcqRel) {
        return;
    }
    struct Ran<'a>(&'a AtomicBool);
    impl Drop for Ran<'_> {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Release);
        }
    }
    let _ran = Ran(&held.running);
    let set = |f: &dyn Fn(&mut Build)| f(&mut held.build.lock().unwrap_or_else(|p| p.into_inner()));
    let going = || serving() && !held.stopping.load(Ordering::Relaxed);
    set(&|b| {
        *b = Build {
            state: Some("waiting for the index"),
            ..Build::default()
        }
    });
    while !stack.index.wait_ready(Duration::from_millis(200)) {
        if !going() {
            set(&|b| b.state = Some("stopped"));
            return;
        }
    }
    let started = Instant::now();
    // This thread and the parsing threads it starts (they inherit it).
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 10);
    let never = AtomicBool::new(false);
    let all = match sources(&stack.index, &stack.roots, Stop::on(&never)) {
        Ok((all, _)) => all,
        Err(e) => {
            tracing::warn!("symbols table not built: {}", e.message);
            set(&|b| b.state = Some("failed"));
            return;
        }
    };
    let total = all.len();
    set(&|b| {
        b.state = Some("building");
        b.files_total = total;
    });
    let threads = ferret_index::cores();
    let read = |p: &str| read_source(&stack.roots, p).ok().map(|f| f.bytes);
    // Taken from the listing's end, so that what is done is freed as the
    // build goes.
    let mut all = all;
    while !all.is_empty() {
        if !going() {
            set(&|b| b.state = Some("stopped"));
            return;
        }
        let chunk = all.split_off(all.len().saturating_sub(CHUNK));
        let mut slot = held.held.lock().unwrap_or_else(|p| p.into_inner());
        // Asked again under the lock: a stack replaced meanwhile may have
        // handed its table to the new one (`carry_over`).
        if !going() {
            set(&|b| b.state = Some("stopped"));
            return;
        }
        let h = held_for(&mut slot, stack);
        let r = h.table.update(&chunk, &[], now_s(), threads, read);
        if r.read > 0 {
            h.dirty = true;
        }
        drop(slot);
        let done = total - all.len();
        set(&|b| b.files_done = done);
    }
    drop(all);
    // Whole: listed again under the lock, what went meanwhile forgotten,
    // the change feed taken from here on.
    let mut slot = held.held.lock().unwrap_or_else(|p| p.into_inner());
    if !going() {
        set(&|b| b.state = Some("stopped"));
        return;
    }
    if let Err(e) = fresh(&mut slot, stack, &never, None) {
        tracing::warn!("symbols table not caught up: {}", e.message);
    }
    let ms = started.elapsed().as_millis() as u64;
    let h = held_for(&mut slot, stack);
    settle(&mut h.table);
    let st = h.table.stats();
    tracing::info!(
        files = st.files,
        symbols = st.symbols,
        ms,
        "symbols table built"
    );
    h.save();
    set(&|b| {
        b.state = Some("done");
        b.ms = Some(ms);
    });
}

/// The table of `from` goes over to `to` (the settings changed while
/// ferret ran) when `to` would hold the same files alike: the same walk
/// rules and sensitive patterns, and paths shown alike (one root shows
/// `src/a.rs`, several `name/src/a.rs`). Its files are then not parsed
/// again: the next listing parses only those it does not hold (a new
/// root's) and forgets those no longer listed. Whether it went over.
pub fn carry_over(held: &Symbols, from: &Arc<Stack>, to: &Arc<Stack>) -> bool {
    let mut slot = held.held.lock().unwrap_or_else(|p| p.into_inner());
    if !slot.as_ref().is_some_and(|h| h.serves(from)) {
        return false;
    }
    let same = |s: &Stack| {
        let c = s.index.config();
        let mut deny: Vec<String> = s.roots.policy.deny.extra_patterns().to_vec();
        deny.sort_unstable();
        deny.dedup();
        (c.rules.hidden, c.rules.no_ignore, deny)
    };
    let shown_alike = match (
        from.index.config().roots.as_slice(),
        to.index.config().roots.as_slice(),
    ) {
        ([x], [y]) => x.name == y.name && x.path == y.path,
        (x, y) => x.len() > 1 && y.len() > 1,
    };
    if !shown_alike || same(from) != same(to) {
        return false;
    }
    let old = slot.take().expect("checked above");
    let mut new = Held::with_table(to, old.table);
    new.dirty = true;
    *slot = Some(new);
    tracing::info!("symbols table carried over to the new settings");
    true
}

impl Symbols {
    /// Stop the background build and save the table (when it changed): at
    /// exit, or when the stack it belongs to is replaced.
    pub fn save(&self, stopping: bool) {
        if stopping {
            self.stopping.store(true, Ordering::Relaxed);
        }
        let mut slot = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(h) = slot.as_mut() {
            h.save();
        }
    }

    /// The outline `stack`'s table holds for `file` as it is now (see
    /// [`Table::outline`]). Never waits: while a call or the
    /// background build holds the table, `None`, and the file is parsed.
    fn held_outline(
        &self,
        stack: &Arc<Stack>,
        file: &SourceFile,
    ) -> Option<ferret_symbols::Outline> {
        let slot = self.held.try_lock().ok()?;
        let held = slot.as_ref().filter(|h| h.serves(stack))?;
        held.table
            .outline(&file.held_as, file.mtime, file.size, file.changed)
    }
}

/// The shown path of the file or folder `path` names, for [`within`]
/// (`None`: every root), and whether it is a file; refused as `grep`
/// refuses it (outside a root, not there).
fn scope_of(roots: &Roots, path: Option<&str>) -> Result<Option<(String, bool)>, FsError> {
    let Some(p) = path.filter(|p| !p.trim().is_empty()) else {
        return Ok(None);
    };
    match roots.resolve(p)? {
        Target::AllRoots => Ok(None),
        Target::In(root, rel) => {
            let real = roots.real_path(root, &rel, p)?;
            let Some(kind) = roots.entry_kind(p) else {
                return Err(
                    FsError::new(ErrorCode::NotFound, format!("`{p}` is not there"))
                        .hint("give a folder or file that exists, or no `path` for every root"),
                );
            };
            let shown = roots.display(root, &real);
            Ok((shown != ".").then_some((shown, kind == ferret_query::Kind::File)))
        }
    }
}

/// Whether the held path `path` is `scope` or below it.
fn within(scope: Option<&str>, path: &str) -> bool {
    scope.is_none_or(|s| {
        path.strip_prefix(s)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// Where `name` is defined (the name itself, or the same but for case and
/// separators; `Type::name` qualifies it), under `path` when given: shown
/// path and definition, at most `limit`, best first. For `find_symbol`,
/// which has seconds, not the minutes a first build of a big tree takes:
/// `None` when the table is not built yet (no `symbols` call so far) or is
/// being built now.
pub fn definitions(
    held: &Symbols,
    stack: &Arc<Stack>,
    name: &str,
    path: Option<&str>,
    limit: usize,
    cancel: &std::sync::atomic::AtomicBool,
) -> Option<Vec<(String, Symbol)>> {
    let scope = scope_of(&stack.roots, path).ok()?.map(|(shown, _)| shown);
    let mut slot = held.held.try_lock().ok()?;
    if !slot.as_ref().is_some_and(|h| h.serves(stack) && h.whole) {
        return None;
    }
    fresh(&mut slot, stack, cancel, None).ok()?;
    let table = &slot.as_ref().expect("fresh keeps it").table;
    let found = table.search(
        &NameQuery::new(name),
        |p, _| within(scope.as_deref(), p),
        0,
        limit,
    );
    Some(
        found
            .hits
            .into_iter()
            .filter(|h| {
                matches!(
                    h.tier,
                    ferret_symbols::Tier::Exact | ferret_symbols::Tier::Folded
                )
            })
            .map(|h| (h.path, h.symbol))
            .collect(),
    )
}

/// Past this many source files to parse (no table yet, none saved, or one
/// far behind), a call does not parse them all itself: the cargo registry's
/// 7,652 files took a first call 37 s. It answers from the files that hold
/// the name instead ([`narrowed`]) and the background build parses the rest.
const PARSE_IN_CALL: usize = 2_000;

/// How long such a call may parse the files that hold the name; those left
/// are the background build's.
const NARROW_PARSE_BUDGET: Duration = Duration::from_secs(5);

/// How long finding the files that hold the name may take.
const NARROW_FIND_TIMEOUT: Duration = Duration::from_secs(20);

/// A call answered before the table holds every source file.
struct Narrowed {
    /// The files that hold the name as typed (any case), parsed now.
    parsed: HashSet<String>,
    /// Files that hold it, left to the background build (out of time).
    left: usize,
    /// Source files listed.
    listed: usize,
}

/// The part of a query a definition's source spells out: its name, without
/// the container that qualifies it (`Runtime::block_on`, `Widget.render`).
fn spelled_name(query: &str) -> &str {
    let name = query.rsplit("::").next().unwrap_or(query);
    name.rsplit('.').next().unwrap_or(name).trim()
}

/// For a call whose listing `all` holds more than [`PARSE_IN_CALL`] files
/// the table would have to parse: the files under the call's scope whose
/// text holds its name (case aside; read through the content index where
/// it can tell), parsed into the table within [`NARROW_PARSE_BUDGET`].
/// Every definition spelled so in any case lies in one of them, so the
/// exact matches are all there when none is left; names spelled with other
/// separators and fuzzy matches elsewhere wait for the build.
fn narrowed(
    h: &mut Held,
    stack: &Stack,
    all: Vec<Source>,
    caught_up: bool,
    by: &NarrowBy<'_>,
) -> Result<Narrowed, FsError> {
    let listed = all.len();
    if by.name.is_empty() {
        // Nothing a file must hold (`Type::`): nothing parsed for it.
        return Ok(Narrowed {
            parsed: HashSet::new(),
            left: 0,
            listed,
        });
    }
    // Only where the call looks (its `path`): the rest waits for the build.
    let scoped: Vec<Source> = all
        .into_iter()
        .filter(|s| within(by.scope, &s.path))
        .collect();
    let gathered = ferret_grep::candidates::Gathered {
        candidates: scoped
            .iter()
            .map(|s| ferret_grep::Candidate::new(s.path.clone(), s.mtime, s.size))
            .collect(),
        caught_up,
        ..Default::default()
    };
    let holding = crate::grep_tool::content_filter(
        &stack.roots,
        stack.content.as_ref(),
        gathered,
        &[by.name.to_string()],
        false,
        NARROW_FIND_TIMEOUT,
        by.meter,
    )?
    .files;
    let holding: Vec<Source> = scoped
        .into_iter()
        .filter(|s| holding.contains(&s.path))
        .collect();
    let started = Instant::now();
    let threads = ferret_index::cores();
    let read = |p: &str| read_source(&stack.roots, p).ok().map(|f| f.bytes);
    let mut parsed = HashSet::new();
    let mut left = 0;
    for chunk in holding.chunks(CHUNK) {
        if started.elapsed() >= NARROW_PARSE_BUDGET || by.meter.cancel.load(Ordering::Relaxed) {
            left += chunk.len();
            continue;
        }
        if h.table.update(chunk, &[], now_s(), threads, read).read > 0 {
            h.dirty = true;
        }
        parsed.extend(chunk.iter().map(|s| s.path.clone()));
    }
    Ok(Narrowed {
        parsed,
        left,
        listed,
    })
}

/// `symbols`. `start_build` starts the table's background build (when a
/// call finds too much to parse itself).
pub fn symbols(
    held: &Symbols,
    stack: &Arc<Stack>,
    call: &SymbolsCall,
    meter: &Meter,
    start_build: &dyn Fn(),
) -> CallToolResult {
    let cancel = &meter.cancel;
    let scope = match scope_of(&stack.roots, call.path.as_deref()) {
        Ok(s) => s,
        Err(e) => return render::tool_error(&e),
    };
    // A file of no language symbols reads (`README.md`) holds none: said,
    // as `read outline` says it, not answered with an empty list.
    if let Some((shown, true)) = &scope
        && let Err(e) = language_of(shown)
    {
        return render::tool_error(&e);
    }
    let scope = scope.map(|(shown, _)| shown);
    let name = spelled_name(&call.query);
    let mut slot = held.held.lock().unwrap_or_else(|p| p.into_inner());
    let by = NarrowBy {
        name,
        scope: scope.as_deref(),
        meter,
    };
    let (refreshed, listed, narrow) = match fresh(&mut slot, stack, cancel, Some(by)) {
        Ok(Freshened::Fresh(refreshed, listed)) => (refreshed, listed, None),
        Ok(Freshened::Narrowed(n)) => {
            start_build();
            (ferret_symbols::Refreshed::default(), true, Some(n))
        }
        Err(e) => return render::tool_error(&e),
    };
    let table = &slot.as_ref().expect("fresh keeps it").table;
    let query = NameQuery::new(&call.query);
    let found = table.search(
        &query,
        |path, kind| {
            call.kind.is_none_or(|k| k == kind)
                && within(scope.as_deref(), path)
                && narrow.as_ref().is_none_or(|n| n.parsed.contains(path))
        },
        call.offset,
        call.limit,
    );
    let stats = table.stats();
    let results: Vec<Value> = found
        .hits
        .iter()
        .map(|h| {
            let mut v = symbol_json(&h.symbol);
            v["path"] = json!(h.path);
            v["match"] = json!(h.tier.name());
            v
        })
        .collect();
    let next =
        (call.offset + found.hits.len() < found.total).then_some(call.offset + found.hits.len());
    let mut text = format!(
        "{} of {} definitions named like `{}` ({} files, {} definitions held)",
        found.hits.len(),
        found.total,
        call.query,
        stats.files,
        stats.symbols
    );
    let lines: Vec<String> = found
        .hits
        .iter()
        .map(|h| format!("{}:{}", h.path, symbol_text(&h.symbol)))
        .collect();
    text.push('\n');
    text.push_str(&render::frame(&lines.join("\n")));
    if let Some(n) = next {
        text.push_str(&format!("\nmore: offset {n}"));
    }
    if let Some(n) = &narrow {
        let left = if n.left > 0 {
            format!(" ({} more hold it, left to the build)", n.left)
        } else {
            String::new()
        };
        let covers = if name.is_empty() {
            "there is no name to look for in the files' text, so nothing was parsed for it"
                .to_string()
        } else {
            format!(
                "this answer covers the {} files that hold `{name}` as typed (any case){left}. Names spelled with other separators, and fuzzy matches in other files, come once it is built",
                n.parsed.len()
            )
        };
        text.push_str(&format!(
            "\npartial: the symbols table is being built in the background ({} of {} source files so far); {covers}: ask again then",
            stats.files, n.listed,
        ));
    } else if found.hits.is_empty() {
        text.push_str("\nnothing defines that name; try a part of it, or grep for it");
    }
    tracing::debug!(
        listed,
        read = refreshed.read,
        removed = refreshed.removed,
        files = stats.files,
        "symbols table refreshed"
    );
    let partial = narrow.as_ref().map(|n| {
        json!({
            "files_holding_name": n.parsed.len() + n.left,
            "files_parsed": n.parsed.len(),
            "source_files": n.listed,
        })
    });
    render::ok(
        render::compact(json!({
            "results": results,
            "count": found.hits.len(),
            "total": found.total,
            "next_offset": next,
            "files": stats.files,
            "partial": partial,
        })),
        text,
    )
}

/// What `diagnostics` says of the table (never waiting for it: while a
/// call or a chunk of the build holds it, what the build last said).
pub fn diagnostics(held: &Symbols) -> Value {
    let build = held.build.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let background = build.state.map(|state| {
        json!({
            "state": state,
            "files_done": build.files_done,
            "files_total": build.files_total,
            "ms": build.ms,
        })
    });
    let mut v = match held.held.try_lock() {
        Err(_) => json!({"state": "busy (being built or brought up to date)"}),
        Ok(guard) => match guard.as_ref() {
            None if background.is_some() => json!({"state": "building"}),
            None => json!({"state": "not built (the first `symbols` call builds it)"}),
            Some(h) => {
                let s = h.table.stats();
                let building = build.state.is_some_and(|s| s != "done" && s != "stopped");
                json!({
                    "state": if building { "building" } else { "ready" },
                    "files": s.files,
                    "symbols": s.symbols,
                    "skipped_too_large": s.too_large,
                    "skipped_timed_out": s.timed_out,
                    "unreadable": s.unreadable,
                    "parsed_with_errors": s.with_errors,
                    "read_back_files": h.loaded,
                    "saved_to": h.saved_at.as_ref().map(|a| a.path.display().to_string()),
                    "unsaved_changes": h.saved_at.is_some().then_some(h.dirty),
                })
            }
        },
    };
    if let Some(b) = background {
        v["background"] = b;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::spelled_name;

    #[test]
    fn the_name_a_source_spells_is_the_querys_last_part() {
        assert_eq!(spelled_name("Runtime::block_on"), "block_on");
        assert_eq!(spelled_name("Widget.render"), "render");
        assert_eq!(spelled_name("a::B.c"), "c");
        assert_eq!(spelled_name(" parse_query "), "parse_query");
        assert_eq!(spelled_name("Type::"), "");
    }
}
