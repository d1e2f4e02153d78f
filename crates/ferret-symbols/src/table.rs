//! Every served file's outline, kept by the file's modification time and size:
//! a caller lists the source files as its index sees them now
//! ([`Table::refresh`]), or names the ones that changed ([`Table::update`]);
//! the table reads again only those that changed (in parallel, each thread
//! with its own [`Extractor`]) and forgets those that are gone, then answers
//! names.
//!
//! Names are looked up in a dictionary of the distinct folded names, not by
//! a pass over every symbol: each name holds where it is defined, and a
//! trigram map of the names gives the few that can hold what is asked (a
//! name holds the query only if it holds each of its three-byte pieces).
//! Written here because no kept crate keeps a substring index of short
//! strings that is updated in place.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use crate::{
    extract::{Extractor, Kind, Limits, Skip, Symbol},
    find::{NameQuery, Tier, fold, matcher},
    lang::Lang,
};

/// A source file as the caller's index sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Its path, as shown to agents.
    pub path: String,
    /// Its modification time (Unix seconds).
    pub mtime: i64,
    /// Its size in bytes.
    pub size: u64,
}

/// A file's outline, each name as `N`: folded (as parsed) or its id in
/// [`Names`] (as held).
pub(crate) enum State<N> {
    /// Its definitions, and whether the parse met errors.
    Read(Vec<(Symbol, N)>, bool),
    Skipped(Skip),
    Unreadable,
}

impl<N> State<N> {
    /// What this file adds to [`Stats`] (its count of files aside).
    fn counts(&self) -> Stats {
        let mut st = Stats::default();
        match self {
            State::Read(symbols, errors) => {
                st.symbols = symbols.len();
                st.with_errors = usize::from(*errors);
            }
            State::Skipped(Skip::TooLarge) => st.too_large = 1,
            State::Skipped(Skip::TimedOut) => st.timed_out = 1,
            State::Unreadable => st.unreadable = 1,
        }
        st
    }
}

struct File {
    path: String,
    mtime: i64,
    size: u64,
    /// When it was read (Unix seconds).
    read_at: i64,
    state: State<u32>,
}

impl File {
    /// Read so soon after its modification that a write in the same second
    /// (same size) could have been missed: read again until settled.
    fn unsettled(&self) -> bool {
        self.read_at < self.mtime + SAME_SECOND_SLACK
    }
}

/// Modification times are whole seconds: a file read in the second it was
/// written may be written again in that second with the same size, so it
/// is read again until a read happens at least this long after its time.
const SAME_SECOND_SLACK: i64 = 2;

/// What one [`Table::refresh`] or [`Table::update`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refreshed {
    /// Files read and parsed (new or changed).
    pub read: usize,
    /// Files forgotten (no longer listed).
    pub removed: usize,
}

/// How many files and symbols the table holds, and why some have none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Files listed.
    pub files: usize,
    /// Symbols in them.
    pub symbols: usize,
    /// Files larger than the bound, not parsed.
    pub too_large: usize,
    /// Files whose parse ran out of time.
    pub timed_out: usize,
    /// Files the reader could not give (sensitive, binary, gone, refused).
    pub unreadable: usize,
    /// Files parsed with errors (what could be read is kept).
    pub with_errors: usize,
}

impl Stats {
    fn add(&mut self, o: Stats) {
        self.symbols += o.symbols;
        self.too_large += o.too_large;
        self.timed_out += o.timed_out;
        self.unreadable += o.unreadable;
        self.with_errors += o.with_errors;
    }

    fn subtract(&mut self, o: Stats) {
        self.symbols -= o.symbols;
        self.too_large -= o.too_large;
        self.timed_out -= o.timed_out;
        self.unreadable -= o.unreadable;
        self.with_errors -= o.with_errors;
    }
}

/// A symbol found by [`Table::search`].
#[derive(Debug, Clone, Copy)]
pub struct Hit<'a> {
    /// The file it is in.
    pub path: &'a str,
    /// The definition.
    pub symbol: &'a Symbol,
    /// How its name matched.
    pub tier: Tier,
}

/// What [`Table::search`] found.
#[derive(Debug, Clone)]
pub struct Found<'a> {
    /// The page asked for, best first.
    pub hits: Vec<Hit<'a>>,
    /// How many matched in all.
    pub total: usize,
}

/// The distinct folded names, where each is defined, and their trigrams.
#[derive(Default)]
struct Names {
    ids: HashMap<Box<str>, u32>,
    folded: Vec<Box<str>>,
    /// Which of a few character classes each name holds (see [`mask`]): a
    /// name lacking one the query has cannot hold the query's letters.
    masks: Vec<u64>,
    /// Where each name is defined: (file slot, index in its symbols).
    postings: Vec<Vec<(u32, u32)>>,
    /// The names holding each three-byte piece, in ascending id order (ids
    /// only grow; a name that is no longer defined keeps its place, with no
    /// postings).
    grams: HashMap<[u8; 3], Vec<u32>>,
}

/// A bit per character class: letters and digits by their ASCII value
/// modulo 63, anything else in the last bit.
fn mask(folded: &str) -> u64 {
    folded.bytes().fold(0, |m, b| {
        m | if b.is_ascii() { 1 << (b % 63) } else { 1 << 63 }
    })
}

impl Names {
    fn intern(&mut self, folded: &str) -> u32 {
        if let Some(&id) = self.ids.get(folded) {
            return id;
        }
        let id = self.folded.len() as u32;
        let mut seen = HashSet::new();
        for w in folded.as_bytes().windows(3) {
            let g = [w[0], w[1], w[2]];
            if seen.insert(g) {
                self.grams.entry(g).or_default().push(id);
            }
        }
        self.ids.insert(folded.into(), id);
        self.folded.push(folded.into());
        self.masks.push(mask(folded));
        self.postings.push(Vec::new());
        id
    }

    /// The ids of names that hold `q` (folded), in no order.
    fn holding(&self, q: &str) -> Vec<u32> {
        let live = |id: &u32| !self.postings[*id as usize].is_empty();
        if q.is_empty() {
            return (0..self.folded.len() as u32).filter(live).collect();
        }
        let qm = mask(q);
        let check = |id: &u32| {
            let i = *id as usize;
            self.masks[i] & qm == qm && !self.postings[i].is_empty() && self.folded[i].contains(q)
        };
        if q.len() < 3 {
            return (0..self.folded.len() as u32).filter(check).collect();
        }
        // The rarest piece's names, checked whole.
        let mut rarest: Option<&Vec<u32>> = None;
        for w in q.as_bytes().windows(3) {
            match self.grams.get(&[w[0], w[1], w[2]]) {
                None => return Vec::new(),
                Some(list) => {
                    if rarest.is_none_or(|r| list.len() < r.len()) {
                        rarest = Some(list);
                    }
                }
            }
        }
        rarest.map_or_else(Vec::new, |list| {
            list.iter().copied().filter(|id| check(id)).collect()
        })
    }
}

/// Outlines of many files.
pub struct Table {
    limits: Limits,
    /// For the few files a call finds changed.
    extractor: Extractor,
    slots: HashMap<String, u32>,
    files: Vec<Option<File>>,
    free: Vec<u32>,
    names: Names,
    /// The slots of files read too soon after their modification (see
    /// [`File::unsettled`]), checked again on every update.
    unsettled: HashSet<u32>,
    /// What the held files add up to, kept as they come and go.
    totals: Stats,
}

impl Table {
    /// An empty table whose files are extracted within `limits`.
    pub fn new(limits: Limits) -> Table {
        Table {
            limits,
            extractor: Extractor::new(limits),
            slots: HashMap::new(),
            files: Vec::new(),
            free: Vec::new(),
            names: Names::default(),
            unsettled: HashSet::new(),
            totals: Stats::default(),
        }
    }

    /// Make the table hold exactly `sources`: files not listed are forgotten,
    /// files new or changed (another modification time or size) are given by
    /// `read` (its `None`: not to be read, e.g. sensitive or binary) and
    /// parsed on up to `threads` threads. `now` is the time (Unix seconds).
    pub fn refresh<R>(&mut self, sources: &[Source], now: i64, threads: usize, read: R) -> Refreshed
    where
        R: Fn(&str) -> Option<Vec<u8>> + Sync,
    {
        let listed: HashSet<&str> = sources.iter().map(|s| s.path.as_str()).collect();
        let gone: Vec<String> = self
            .slots
            .keys()
            .filter(|p| !listed.contains(p.as_str()))
            .cloned()
            .collect();
        self.update(sources, &gone, now, threads, read)
    }

    /// Change only what the caller names: `changed` are files new or changed
    /// as its index sees them now, `gone` paths no longer there (files, or
    /// folders: what the table holds below one is forgotten too). Files
    /// read in the second they were written are checked again, as with
    /// [`Table::refresh`].
    pub fn update<R>(
        &mut self,
        changed: &[Source],
        gone: &[String],
        now: i64,
        threads: usize,
        read: R,
    ) -> Refreshed
    where
        R: Fn(&str) -> Option<Vec<u8>> + Sync,
    {
        let mut removed = 0;
        let mut folders: HashSet<&str> = HashSet::new();
        for p in gone {
            if self.slots.contains_key(p.as_str()) {
                self.remove(p);
                removed += 1;
            } else {
                folders.insert(p.as_str());
            }
        }
        if !folders.is_empty() {
            // One pass over the held paths, each looking up its folders.
            let under: Vec<String> = self
                .slots
                .keys()
                .filter(|k| k.match_indices('/').any(|(i, _)| folders.contains(&k[..i])))
                .cloned()
                .collect();
            for k in &under {
                self.remove(k);
            }
            removed += under.len();
        }
        // An empty file defines nothing: never read, nor held (a tree of
        // empty files, as a synthetic one is, costs nothing).
        for s in changed.iter().filter(|s| s.size == 0) {
            if self.slots.contains_key(s.path.as_str()) {
                self.remove(&s.path);
                removed += 1;
            }
        }
        let mut stale: Vec<Source> = changed
            .iter()
            .filter(|s| s.size > 0 && Lang::of_path(&s.path).is_some())
            .filter(|s| {
                self.file(&s.path)
                    .is_none_or(|f| f.mtime != s.mtime || f.size != s.size || f.unsettled())
            })
            .cloned()
            .collect();
        let named: HashSet<&str> = changed.iter().map(|s| s.path.as_str()).collect();
        let again: Vec<Source> = self
            .unsettled
            .iter()
            .filter_map(|&slot| self.files[slot as usize].as_ref())
            .filter(|f| !named.contains(f.path.as_str()))
            .map(|f| Source {
                path: f.path.clone(),
                mtime: f.mtime,
                size: f.size,
            })
            .collect();
        stale.extend(again);
        if stale.is_empty() {
            return Refreshed { read: 0, removed };
        }
        let states = self.read_all(&stale, threads, &read);
        let read = states.len();
        for (i, state) in states {
            let s = &stale[i];
            self.insert(s, now, state);
        }
        Refreshed { read, removed }
    }

    fn file(&self, path: &str) -> Option<&File> {
        let slot = *self.slots.get(path)?;
        self.files[slot as usize].as_ref()
    }

    fn read_all<R>(
        &mut self,
        stale: &[Source],
        threads: usize,
        read: &R,
    ) -> Vec<(usize, State<String>)>
    where
        R: Fn(&str) -> Option<Vec<u8>> + Sync,
    {
        if stale.len() <= FEW || threads <= 1 {
            // A few files (what changed since the last call): here, with
            // the table's own extractor, whose compiled queries are kept.
            let x = &mut self.extractor;
            return stale
                .iter()
                .enumerate()
                .map(|(i, source)| (i, parse(x, source, read)))
                .collect();
        }
        let next = AtomicUsize::new(0);
        let done = Mutex::new(Vec::with_capacity(stale.len()));
        let limits = self.limits;
        let threads = threads.clamp(1, 16).min(stale.len());
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    let mut extractor = Extractor::new(limits);
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(source) = stale.get(i) else { break };
                        mine.push((i, parse(&mut extractor, source, read)));
                    }
                    done.lock().expect("no panics hold it").extend(mine);
                });
            }
        });
        done.into_inner().expect("no panics hold it")
    }

    fn remove(&mut self, path: &str) {
        let Some(slot) = self.slots.remove(path) else {
            return;
        };
        self.unsettled.remove(&slot);
        if let Some(file) = self.files[slot as usize].take() {
            self.totals.subtract(file.state.counts());
            if let State::Read(symbols, _) = file.state {
                let ids: HashSet<u32> = symbols.iter().map(|(_, id)| *id).collect();
                for id in ids {
                    self.names.postings[id as usize].retain(|&(f, _)| f != slot);
                }
            }
        }
        self.free.push(slot);
    }

    fn insert(&mut self, source: &Source, now: i64, parsed: State<String>) {
        self.remove(&source.path);
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.files.push(None);
                (self.files.len() - 1) as u32
            }
        };
        let state = match parsed {
            State::Read(symbols, errors) => State::Read(
                symbols
                    .into_iter()
                    .enumerate()
                    .map(|(i, (symbol, folded))| {
                        let id = self.names.intern(&folded);
                        self.names.postings[id as usize].push((slot, i as u32));
                        (symbol, id)
                    })
                    .collect(),
                errors,
            ),
            State::Skipped(skip) => State::Skipped(skip),
            State::Unreadable => State::Unreadable,
        };
        self.totals.add(state.counts());
        self.slots.insert(source.path.clone(), slot);
        let file = File {
            path: source.path.clone(),
            mtime: source.mtime,
            size: source.size,
            read_at: now,
            state,
        };
        if file.unsettled() {
            self.unsettled.insert(slot);
        }
        self.files[slot as usize] = Some(file);
    }

    /// The bounds each file is extracted within.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// Every held file: its path, modification time, size, when it was
    /// read and its outline, for [`Table::to_bytes`].
    pub(crate) fn held(&self) -> impl ExactSizeIterator<Item = (&str, i64, u64, i64, &State<u32>)> {
        let files: Vec<&File> = self.files.iter().flatten().collect();
        files
            .into_iter()
            .map(|f| (f.path.as_str(), f.mtime, f.size, f.read_at, &f.state))
    }

    /// A table holding `files` as they were saved (see `saved.rs`), but
    /// for those that could not be read: the next refresh tries them again,
    /// as permissions or the caller's policy may have changed meanwhile
    /// without their modification time moving.
    /// Each file is its source, when it was read and what it held.
    pub(crate) fn from_saved(limits: Limits, files: Vec<(Source, i64, State<String>)>) -> Table {
        let mut table = Table::new(limits);
        for (source, read_at, state) in files {
            if !matches!(state, State::Unreadable) {
                table.insert(&source, read_at, state);
            }
        }
        table
    }

    /// What the table holds.
    pub fn stats(&self) -> Stats {
        Stats {
            files: self.slots.len(),
            ..self.totals
        }
    }

    /// The symbols whose name matches `query` (and its container, when it
    /// names one) among those `keep` accepts, best first: by how the name
    /// matched (exact, then folded, a start, a part, fuzzy, a typo), then
    /// code before tests, types before functions before the rest, the file
    /// named after it first, then shallower paths, then by path and line.
    /// Fuzzy and typo matching run only when the plainer tiers do not fill
    /// the page.
    pub fn search<'a>(
        &'a self,
        query: &NameQuery,
        keep: impl Fn(&str, &Symbol) -> bool,
        offset: usize,
        limit: usize,
    ) -> Found<'a> {
        let mut all: Vec<(Tier, u16, &str, &Symbol)> = Vec::new();
        let plain = self.names.holding(query.folded());
        type Row<'r> = (Tier, u16, &'r str, &'r Symbol);
        let each = |all: &mut Vec<Row<'a>>, id: u32, tier: &mut Rate| {
            let folded = &self.names.folded[id as usize];
            for &(slot, i) in &self.names.postings[id as usize] {
                let Some(file) = self.files[slot as usize].as_ref() else {
                    continue;
                };
                let State::Read(symbols, _) = &file.state else {
                    continue;
                };
                let symbol = &symbols[i as usize].0;
                if !query.container_fits(symbol.container.as_deref()) {
                    continue;
                }
                if let Some((t, score)) = tier(&symbol.name, folded)
                    && keep(&file.path, symbol)
                {
                    all.push((t, score, file.path.as_str(), symbol));
                }
            }
        };
        for &id in &plain {
            each(&mut all, id, &mut |name, folded| {
                query.plain_tier(name, folded).map(|t| (t, 0))
            });
        }
        if all.len() < offset + limit {
            let held: HashSet<u32> = plain.into_iter().collect();
            let mut m = matcher();
            let mut buf = Vec::new();
            let qm = mask(query.folded());
            for id in 0..self.names.folded.len() as u32 {
                if held.contains(&id) || self.names.postings[id as usize].is_empty() {
                    continue;
                }
                let folded = &self.names.folded[id as usize];
                // Fuzzy needs every letter asked; a typo may lack some.
                let score = if self.names.masks[id as usize] & qm == qm {
                    query.fuzzy(folded, &mut m, &mut buf)
                } else {
                    None
                };
                let tier = match score {
                    Some(s) => Some((Tier::Fuzzy, s)),
                    None => query
                        .typo(folded)
                        .map(|d| (Tier::Typo, u16::MAX - d as u16)),
                };
                if let Some(tier) = tier {
                    each(&mut all, id, &mut |_, _| Some(tier));
                }
            }
        }
        let total = all.len();
        // By tier and score first (cheap); the full order only for the
        // classes the page reaches (a common name matches by the thousand).
        all.sort_unstable_by_key(|&(tier, score, _, _)| (tier, std::cmp::Reverse(score)));
        let reach = (offset.saturating_add(limit)).min(all.len());
        let end = match reach.checked_sub(1).map(|i| (all[i].0, all[i].1)) {
            Some(last) => all.partition_point(|r| {
                (r.0, std::cmp::Reverse(r.1)) <= (last.0, std::cmp::Reverse(last.1))
            }),
            None => 0,
        };
        all.truncate(end);
        all.sort_by_cached_key(|&(tier, score, path, symbol)| {
            (
                tier,
                std::cmp::Reverse(score),
                is_test(path, symbol),
                kind_rank(symbol.kind),
                !is_home(path, &symbol.name),
                path.matches('/').count(),
                path,
                symbol.line,
            )
        });
        let hits = all
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(tier, _, path, symbol)| Hit { path, symbol, tier })
            .collect();
        Found { hits, total }
    }
}

/// How a name (as defined, and folded) matches: its tier and fuzzy score.
type Rate<'f> = dyn FnMut(&str, &str) -> Option<(Tier, u16)> + 'f;

/// Up to this many files are parsed on the caller's thread.
const FEW: usize = 8;

fn parse<R>(x: &mut Extractor, source: &Source, read: &R) -> State<String>
where
    R: Fn(&str) -> Option<Vec<u8>>,
{
    let lang = Lang::of_path(&source.path).expect("only source files are read");
    match read(&source.path) {
        None => State::Unreadable,
        Some(bytes) => match x.extract(lang, &bytes) {
            Ok(outline) => State::Read(
                outline
                    .symbols
                    .into_iter()
                    .map(|s| {
                        let f = fold(&s.name);
                        (s, f)
                    })
                    .collect(),
                outline.had_errors,
            ),
            Err(skip) => State::Skipped(skip),
        },
    }
}

/// Test code (a test folder or file, or a `tests` module) ranks after the
/// code it tests: a name defined in both is most often wanted where it lives.
fn is_test(path: &str, symbol: &Symbol) -> bool {
    const FOLDERS: [&str; 7] = [
        "test",
        "tests",
        "__tests__",
        "testing",
        "spec",
        "benches",
        "examples",
    ];
    let mut parts = path.rsplit('/');
    let name = parts.next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    parts.any(|p| FOLDERS.contains(&p))
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || name.contains(".test.")
        || name.contains(".spec.")
        || symbol
            .container
            .as_deref()
            .is_some_and(|c| c == "tests" || c == "test")
}

/// A definition in the file named after it (`State` in `state.rs`,
/// `ZodString` in `ZodString.ts`) ranks first among its equals.
fn is_home(path: &str, name: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file);
    !stem.is_empty() && crate::fold(stem) == crate::fold(name)
}

fn kind_rank(kind: Kind) -> u8 {
    match kind {
        Kind::Class | Kind::Struct | Kind::Enum | Kind::Interface | Kind::Trait | Kind::Type => 0,
        Kind::Function | Kind::Method => 1,
        Kind::Module => 2,
        Kind::Macro | Kind::Constant => 3,
        Kind::Variable => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(path: &str, mtime: i64) -> Source {
        Source {
            path: path.into(),
            mtime,
            size: 1,
        }
    }

    #[test]
    fn only_changed_files_are_read_again_and_gone_ones_are_forgotten() {
        let mut table = Table::new(Limits::default());
        let reads = Mutex::new(Vec::new());
        let read = |p: &str| {
            reads.lock().unwrap().push(p.to_string());
            Some(match p {
                "a.rs" => b"fn alpha() {}\nstruct Beta;\n".to_vec(),
                "b.py" => b"def gamma():\n    pass\n".to_vec(),
                _ => b"fn other() {}".to_vec(),
            })
        };
        let r = table.refresh(
            &[src("a.rs", 1), src("b.py", 1), src("c.txt", 1)],
            100,
            2,
            read,
        );
        assert_eq!(
            r,
            Refreshed {
                read: 2,
                removed: 0
            }
        );
        assert_eq!(table.stats().symbols, 3);
        reads.lock().unwrap().clear();
        let r = table.refresh(&[src("a.rs", 1), src("b.py", 2)], 100, 2, read);
        assert_eq!(
            r,
            Refreshed {
                read: 1,
                removed: 0
            }
        );
        assert_eq!(*reads.lock().unwrap(), vec!["b.py".to_string()]);
        let r = table.refresh(&[src("a.rs", 1)], 100, 2, read);
        assert_eq!(r.removed, 1);
        let q = NameQuery::new("gamma");
        assert_eq!(table.search(&q, |_, _| true, 0, 10).total, 0);
    }

    #[test]
    fn exact_names_come_first_then_folded_then_parts_then_fuzzy() {
        let mut table = Table::new(Limits::default());
        let files: HashMap<&str, &str> = [
            (
                "deep/er/x.rs",
                "fn parse_query() {}\nfn parse_query_fast() {}\n",
            ),
            ("y.rs", "fn ParseQuery() {}\nfn reparse_query() {}\n"),
            (
                "z.rs",
                "fn pars_e_quxery() {}\nfn unrelated() {}\nfn prase_query() {}\n",
            ),
        ]
        .into_iter()
        .collect();
        let sources: Vec<Source> = files.keys().map(|p| src(p, 1)).collect();
        table.refresh(&sources, 100, 1, |p| Some(files[p].as_bytes().to_vec()));
        let q = NameQuery::new("parse_query");
        let found = table.search(&q, |_, _| true, 0, 10);
        let names: Vec<(&str, Tier)> = found
            .hits
            .iter()
            .map(|h| (h.symbol.name.as_str(), h.tier))
            .collect();
        assert_eq!(
            names,
            vec![
                ("parse_query", Tier::Exact),
                ("ParseQuery", Tier::Folded),
                ("parse_query_fast", Tier::Prefix),
                ("reparse_query", Tier::Part),
                ("pars_e_quxery", Tier::Fuzzy),
                ("prase_query", Tier::Typo),
            ]
        );
        // A page past the plain matches.
        let page = table.search(&q, |_, _| true, 4, 10);
        assert_eq!(page.hits.len(), 2);
        // The caller's filter is applied.
        let only_y = table.search(&q, |p, _| p == "y.rs", 0, 10);
        assert!(only_y.hits.iter().all(|h| h.path == "y.rs"));
    }

    #[test]
    fn among_equal_names_code_comes_before_its_tests_and_its_own_file_first() {
        let mut table = Table::new(Limits::default());
        let files: HashMap<&str, &str> = [
            ("a/tests/io.rs", "struct State;\n"),
            (
                "a/src/fs/file.rs",
                "enum State { A }\nmod tests { struct State; }\n",
            ),
            ("a/src/runtime/task/state.rs", "struct State;\n"),
            ("a/web/state.test.ts", "class State {}\n"),
        ]
        .into_iter()
        .collect();
        let sources: Vec<Source> = files.keys().map(|p| src(p, 1)).collect();
        table.refresh(&sources, 100, 1, |p| Some(files[p].as_bytes().to_vec()));
        let found = table.search(&NameQuery::new("State"), |_, _| true, 0, 10);
        let order: Vec<(&str, Option<&str>)> = found
            .hits
            .iter()
            .map(|h| (h.path, h.symbol.container.as_deref()))
            .collect();
        assert_eq!(
            order,
            vec![
                ("a/src/runtime/task/state.rs", None),
                ("a/src/fs/file.rs", None),
                // Among tests, the same rules: its own file first.
                ("a/web/state.test.ts", None),
                ("a/tests/io.rs", None),
                ("a/src/fs/file.rs", Some("tests")),
            ]
        );
    }

    #[test]
    fn an_update_reads_what_it_is_told_and_forgets_a_folder_gone() {
        let mut table = Table::new(Limits::default());
        let body =
            |p: &str| Some(format!("fn {}() {{}}\n", p.replace(['/', '.'], "_")).into_bytes());
        table.refresh(
            &[src("a/x.rs", 1), src("a/y.rs", 1), src("b/z.rs", 1)],
            100,
            1,
            body,
        );
        let names = |t: &Table, q: &str| -> Vec<String> {
            t.search(&NameQuery::new(q), |_, _| true, 0, 50)
                .hits
                .iter()
                .map(|h| h.path.to_string())
                .collect()
        };
        // (a_y_rs is a typo away: it comes second)
        assert_eq!(names(&table, "a_x_rs"), vec!["a/x.rs", "a/y.rs"]);
        // A changed file is read again; the others are not touched.
        let r = table.update(&[src("b/z.rs", 2)], &[], 100, 1, |p| {
            assert_eq!(p, "b/z.rs");
            Some(b"fn renamed() {}\n".to_vec())
        });
        assert_eq!(
            r,
            Refreshed {
                read: 1,
                removed: 0
            }
        );
        assert!(!names(&table, "b_z_rs").contains(&"b/z.rs".to_string()));
        assert_eq!(names(&table, "renamed"), vec!["b/z.rs"]);
        // A folder gone takes its files with it.
        let r = table.update(&[], &["a".to_string()], 100, 1, |_| {
            panic!("nothing to read")
        });
        assert_eq!(
            r,
            Refreshed {
                read: 0,
                removed: 2
            }
        );
        assert!(names(&table, "a_x_rs").iter().all(|p| !p.starts_with("a/")));
        assert_eq!(table.stats().files, 1);
    }

    /// The dictionary answers as a pass over every symbol would, through
    /// changes and removals (a seeded random walk; the oracle is that pass).
    #[test]
    fn the_name_dictionary_answers_as_a_pass_over_every_symbol() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let parts = [
            "get",
            "set",
            "parse",
            "query",
            "new",
            "Ab",
            "x",
            "read_file",
            "éte",
        ];
        let word = |rnd: &mut dyn FnMut(u64) -> u64| {
            let n = 1 + rnd(3);
            (0..n)
                .map(|_| parts[rnd(parts.len() as u64) as usize])
                .collect::<Vec<_>>()
                .join("_")
        };
        let mut table = Table::new(Limits::default());
        let mut bodies: HashMap<String, String> = HashMap::new();
        for round in 0..25 {
            let mut changed = Vec::new();
            let mut gone = Vec::new();
            for _ in 0..6 {
                let path = format!("d{}/f{}.rs", rnd(3), rnd(8));
                if rnd(4) == 0 {
                    bodies.remove(&path);
                    gone.push(path);
                } else {
                    let body: String = (0..1 + rnd(4))
                        .map(|_| {
                            format!("fn {}() {{}}\nstruct {};\n", word(&mut rnd), word(&mut rnd))
                        })
                        .collect();
                    bodies.insert(path.clone(), body);
                    changed.push(Source {
                        path,
                        mtime: round,
                        size: 1,
                    });
                }
            }
            if rnd(5) == 0 {
                let folder = format!("d{}", rnd(3));
                bodies.retain(|p, _| !p.starts_with(&format!("{folder}/")));
                gone.push(folder);
            }
            let changed: Vec<Source> = changed
                .into_iter()
                .filter(|s| bodies.contains_key(&s.path))
                .collect();
            let now = 1000;
            table.update(&changed, &gone, now, 2, |p| {
                bodies.get(p).map(|b| b.clone().into_bytes())
            });
            // The kept totals are a recount of what is held.
            let mut x = Extractor::new(Limits::default());
            let symbols: usize = bodies
                .values()
                .map(|b| x.extract(Lang::Rust, b.as_bytes()).unwrap().symbols.len())
                .sum();
            let st = table.stats();
            assert_eq!(
                (st.files, st.symbols),
                (bodies.len(), symbols),
                "round {round}"
            );
            for q in [
                "get",
                "ge",
                "g",
                "parsequery",
                "Parse_Query",
                "qury",
                "nw",
                "x",
                "",
                "éte",
                "set::x",
                "zzz",
            ] {
                let query = NameQuery::new(q);
                let found = table.search(&query, |_, _| true, 0, usize::MAX);
                // A page is that slice of the whole order.
                let key = |h: &Hit| (h.path.to_string(), h.symbol.line, h.symbol.name.clone());
                for (offset, limit) in [(0, 3), (2, 4)] {
                    let page = table.search(&query, |_, _| true, offset, limit);
                    let want: Vec<_> = found
                        .hits
                        .iter()
                        .skip(offset)
                        .take(limit)
                        .map(key)
                        .collect();
                    assert_eq!(
                        page.hits.iter().map(key).collect::<Vec<_>>(),
                        want,
                        "{q:?} page"
                    );
                    // (`total` counts fuzzy matches only when they were looked for.)
                    assert!(page.total <= found.total);
                }
                let mut got: Vec<(Tier, String, u32, String)> = found
                    .hits
                    .iter()
                    .map(|h| {
                        (
                            h.tier,
                            h.path.to_string(),
                            h.symbol.line,
                            h.symbol.name.clone(),
                        )
                    })
                    .collect();
                let mut want = Vec::new();
                let mut m = matcher();
                let mut buf = Vec::new();
                let mut x = Extractor::new(Limits::default());
                for (path, body) in &bodies {
                    for sym in x.extract(Lang::Rust, body.as_bytes()).unwrap().symbols {
                        if !query.container_fits(sym.container.as_deref()) {
                            continue;
                        }
                        let f = fold(&sym.name);
                        let tier = query.plain_tier(&sym.name, &f).or_else(|| {
                            query
                                .fuzzy(&f, &mut m, &mut buf)
                                .map(|_| Tier::Fuzzy)
                                .or_else(|| query.typo(&f).map(|_| Tier::Typo))
                        });
                        if let Some(t) = tier {
                            want.push((t, path.clone(), sym.line, sym.name.clone()));
                        }
                    }
                }
                got.sort();
                want.sort();
                assert_eq!(got, want, "round {round}, query {q:?}");
                assert_eq!(found.total, want.len());
            }
        }
    }

    #[test]
    fn unreadable_files_are_counted_and_not_read_again_until_they_change() {
        let mut table = Table::new(Limits::default());
        table.refresh(&[src("secret.rs", 1)], 100, 1, |_| None);
        assert_eq!(table.stats().unreadable, 1);
        let r = table.refresh(&[src("secret.rs", 1)], 100, 1, |_| panic!("not read again"));
        assert_eq!(r.read, 0);
    }

    #[test]
    fn a_file_read_in_the_second_it_was_written_is_read_again() {
        let mut table = Table::new(Limits::default());
        let r = table.refresh(&[src("a.rs", 50)], 50, 1, |_| Some(b"fn a() {}".to_vec()));
        assert_eq!(r.read, 1);
        // Same time and size, but it may have changed within that second.
        let r = table.refresh(&[src("a.rs", 50)], 51, 1, |_| Some(b"fn b() {}".to_vec()));
        assert_eq!(r.read, 1);
        let r = table.refresh(&[src("a.rs", 50)], 53, 1, |_| Some(b"fn c() {}".to_vec()));
        assert_eq!(r.read, 1);
        let r = table.refresh(&[src("a.rs", 50)], 54, 1, |_| panic!("settled"));
        assert_eq!(r.read, 0);
        let q = NameQuery::new("c");
        assert_eq!(table.search(&q, |_, _| true, 0, 10).total, 1);
    }

    #[test]
    fn empty_files_are_never_read_nor_held() {
        let mut table = Table::new(Limits::default());
        let empty = Source {
            path: "e.rs".into(),
            mtime: 1,
            size: 0,
        };
        let r = table.refresh(std::slice::from_ref(&empty), 100, 1, |_| panic!("not read"));
        assert_eq!((r.read, table.stats().files), (0, 0));
        // Written: read and held; emptied again: forgotten.
        table.refresh(&[src("e.rs", 2)], 100, 1, |_| Some(b"fn e() {}\n".to_vec()));
        assert_eq!(table.stats().symbols, 1);
        let r = table.update(&[empty], &[], 100, 1, |_| panic!("not read"));
        assert_eq!((r.removed, table.stats().files), (1, 0));
    }
}
