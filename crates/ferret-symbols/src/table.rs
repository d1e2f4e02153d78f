//! Every served file's outline, kept by the file's modification time and size:
//! a caller lists the source files as its index sees them now
//! ([`Table::refresh`]), or names the ones that changed ([`Table::update`]);
//! the table reads again only those that changed (in parallel, each thread
//! with its own [`Extractor`], the table taking in each outline as it comes)
//! and forgets those that are gone, then answers names.
//!
//! Names are looked up in a dictionary of the distinct folded names
//! (`names.rs`), not by a pass over every symbol.
//!
//! Held compactly, since a served tree may hold millions of definitions: a
//! file is its folder (a tree of folders, `paths.rs`), its name, its time,
//! size and state, and its definitions as fixed records of 24 bytes whose
//! names and containers are ids of strings held once (`strings.rs`); a path
//! is written out only when an answer or a lookup needs it. A file with no
//! definitions holds no more than what tells that it is unchanged.

use std::{
    cmp::Reverse,
    collections::HashSet,
    hash::BuildHasher,
    sync::{
        atomic::{AtomicUsize, Ordering},
        mpsc,
    },
};

use hashbrown::HashTable;

use crate::{
    extract::{Extractor, Kind, Limits, Outline, Skip, Symbol},
    find::{NameQuery, Tier, fold, matcher},
    lang::Lang,
    names::{Names, mask},
    paths::{Folders, split},
    strings::{Seed, Strings},
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

/// A file's outline as parsed (each name with its folded form), or why it
/// has none: what a table takes in.
pub(crate) enum State {
    /// Its definitions, whether the parse met errors, and whether more
    /// than [`Limits::max_symbols`] were found.
    Read(Vec<(Symbol, String)>, bool, bool),
    Skipped(Skip),
    Unreadable,
}

/// What reading a held file gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Parsed (with errors or not): its definitions are held.
    Read {
        errors: bool,
        /// More than [`Limits::max_symbols`] were found (see
        /// [`Outline::truncated`]).
        truncated: bool,
    },
    Skipped(Skip),
    Unreadable,
}

/// A definition as held: its name and container are ids in the table's
/// strings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Def {
    name: u32,
    /// [`NO_CONTAINER`] for none.
    container: u32,
    line: u32,
    end_line: u32,
    doc_line: u32,
    kind: Kind,
}

const NO_CONTAINER: u32 = u32::MAX;

const _: () = assert!(std::mem::size_of::<Def>() == 24);

struct File {
    folder: u32,
    name: u32,
    status: Status,
    mtime: i64,
    size: u64,
    /// When it was read (Unix seconds).
    read_at: i64,
    defs: Box<[Def]>,
}

impl File {
    /// Read so soon after its modification that a write in the same second
    /// (same size) could have been missed: read again until settled.
    fn unsettled(&self) -> bool {
        self.read_at < self.mtime + SAME_SECOND_SLACK
    }

    /// What this file adds to [`Stats`] (its count of files aside).
    fn counts(&self) -> Stats {
        let mut st = Stats::default();
        match self.status {
            Status::Read { errors, .. } => {
                st.symbols = self.defs.len();
                st.with_errors = usize::from(errors);
            }
            Status::Skipped(Skip::TooLarge) => st.too_large = 1,
            Status::Skipped(Skip::TimedOut) => st.timed_out = 1,
            Status::Unreadable => st.unreadable = 1,
        }
        st
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
#[derive(Debug, Clone)]
pub struct Hit {
    /// The file it is in.
    pub path: String,
    /// The definition.
    pub symbol: Symbol,
    /// How its name matched.
    pub tier: Tier,
}

/// What [`Table::search`] found.
#[derive(Debug, Clone)]
pub struct Found {
    /// The page asked for, best first.
    pub hits: Vec<Hit>,
    /// How many matched in all.
    pub total: usize,
}

/// A held file as [`Table::to_bytes`] writes it: its path, modification
/// time, size, when it was read, what that gave, and its definitions.
pub(crate) type HeldFile<'t> = (String, i64, u64, i64, Status, Vec<SymbolRef<'t>>);

/// A held definition, its strings borrowed from the table.
pub(crate) struct SymbolRef<'t> {
    pub(crate) name: &'t str,
    pub(crate) kind: Kind,
    pub(crate) container: Option<&'t str>,
    pub(crate) line: u32,
    pub(crate) end_line: u32,
    pub(crate) doc_line: u32,
}

/// Outlines of many files.
pub struct Table {
    limits: Limits,
    /// Extractors kept from one read to the next (a background build reads
    /// a chunk at a time, a call the few files that changed): compiling a
    /// language's queries costs milliseconds.
    spare: Vec<Extractor>,
    strings: Strings,
    folders: Folders,
    names: Names,
    /// File slots by the hash of their path.
    slots: HashTable<u32>,
    seed: Seed,
    files: Vec<Option<File>>,
    free: Vec<u32>,
    /// The slots of files read too soon after their modification (see
    /// [`File::unsettled`]), checked again on every update.
    unsettled: HashSet<u32>,
    /// What the held files add up to, kept as they come and go.
    totals: Stats,
}

/// The hash of the path of the file in `slot` (for the slots' table).
fn slot_hash(
    files: &[Option<File>],
    folders: &Folders,
    strings: &Strings,
    seed: &Seed,
    slot: u32,
) -> u64 {
    let f = files[slot as usize]
        .as_ref()
        .expect("a slot in the table holds a file");
    let mut path = String::new();
    folders.write(strings, f.folder, f.name, &mut path);
    seed.hash_one(path.as_str())
}

impl Table {
    /// An empty table whose files are extracted within `limits`.
    pub fn new(limits: Limits) -> Table {
        let seed = Seed::default();
        Table {
            limits,
            spare: Vec::new(),
            strings: Strings::new(seed.clone()),
            folders: Folders::new(seed.clone()),
            names: Names::new(seed.clone()),
            slots: HashTable::new(),
            seed,
            files: Vec::new(),
            free: Vec::new(),
            unsettled: HashSet::new(),
            totals: Stats::default(),
        }
    }

    /// The slot of the file held at `path`.
    fn slot_of(&self, path: &str) -> Option<u32> {
        let hash = self.seed.hash_one(path);
        self.slots
            .find(hash, |&slot| {
                let f = self.files[slot as usize].as_ref().expect("held");
                self.folders.holds(&self.strings, f.folder, f.name, path)
            })
            .copied()
    }

    /// Write the path of the file in `slot` into `out`.
    fn path_into(&self, slot: u32, out: &mut String) {
        let f = self.files[slot as usize].as_ref().expect("held");
        self.folders.write(&self.strings, f.folder, f.name, out);
    }

    fn container(&self, def: &Def) -> Option<&str> {
        (def.container != NO_CONTAINER).then(|| self.strings.get(def.container))
    }

    fn symbol(&self, def: &Def) -> Symbol {
        Symbol {
            name: self.strings.get(def.name).to_string(),
            kind: def.kind,
            container: self.container(def).map(str::to_string),
            line: def.line,
            end_line: def.end_line,
            doc_line: def.doc_line,
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
        let slots: Vec<Option<u32>> = sources.iter().map(|s| self.slot_of(&s.path)).collect();
        let mut listed = vec![false; self.files.len()];
        for &slot in slots.iter().flatten() {
            listed[slot as usize] = true;
        }
        let gone: Vec<u32> = (0..self.files.len() as u32)
            .filter(|&s| self.files[s as usize].is_some() && !listed[s as usize])
            .collect();
        for &slot in &gone {
            self.remove(slot);
        }
        self.apply(sources, &slots, gone.len(), now, threads, &read)
    }

    /// How many of `sources` a [`Table::refresh`] would read: the files
    /// the table does not hold, holds with another modification time or
    /// size, or read too soon after their modification (empty files are
    /// never read).
    pub fn to_read(&self, sources: &[Source]) -> usize {
        sources
            .iter()
            .filter(|s| s.size > 0 && Lang::of_path(&s.path).is_some())
            .filter(|s| {
                self.slot_of(&s.path)
                    .and_then(|slot| self.files[slot as usize].as_ref())
                    .is_none_or(|f| f.mtime != s.mtime || f.size != s.size || f.unsettled())
            })
            .count()
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
        let mut folders: HashSet<u32> = HashSet::new();
        for p in gone {
            if let Some(slot) = self.slot_of(p) {
                self.remove(slot);
                removed += 1;
            } else if let Some(folder) = self.folders.get(&self.strings, p) {
                folders.insert(folder);
            }
        }
        if !folders.is_empty() {
            // One pass over the held files, each looking up its folders.
            let under: Vec<u32> = (0..self.files.len() as u32)
                .filter(|&s| {
                    self.files[s as usize]
                        .as_ref()
                        .is_some_and(|f| self.folders.under(f.folder, &folders))
                })
                .collect();
            for &slot in &under {
                self.remove(slot);
            }
            removed += under.len();
        }
        let slots: Vec<Option<u32>> = changed.iter().map(|s| self.slot_of(&s.path)).collect();
        self.apply(changed, &slots, removed, now, threads, &read)
    }

    /// Read what in `changed` (held at `slots`) is new or changed, and
    /// what is still unsettled.
    fn apply<R>(
        &mut self,
        changed: &[Source],
        slots: &[Option<u32>],
        mut removed: usize,
        now: i64,
        threads: usize,
        read: &R,
    ) -> Refreshed
    where
        R: Fn(&str) -> Option<Vec<u8>> + Sync,
    {
        // An empty file defines nothing: never read, nor held (a tree of
        // empty files, as a synthetic one is, costs nothing).
        for (s, slot) in changed.iter().zip(slots) {
            if s.size == 0
                && let Some(slot) = slot
                && self.files[*slot as usize].is_some()
            {
                self.remove(*slot);
                removed += 1;
            }
        }
        let stale = changed
            .iter()
            .zip(slots)
            .filter(|(s, _)| s.size > 0 && Lang::of_path(&s.path).is_some())
            .filter(|(s, slot)| {
                slot.and_then(|slot| self.files[slot as usize].as_ref())
                    .is_none_or(|f| f.mtime != s.mtime || f.size != s.size || f.unsettled())
            })
            .map(|(s, _)| s);
        let named: HashSet<u32> = slots.iter().flatten().copied().collect();
        let mut unsettled: Vec<u32> = self
            .unsettled
            .iter()
            .copied()
            .filter(|slot| !named.contains(slot))
            .collect();
        unsettled.sort_unstable();
        let again: Vec<Source> = unsettled
            .into_iter()
            .map(|slot| {
                let f = self.files[slot as usize]
                    .as_ref()
                    .expect("unsettled files are held");
                let mut path = String::new();
                self.path_into(slot, &mut path);
                Source {
                    path,
                    mtime: f.mtime,
                    size: f.size,
                }
            })
            .collect();
        // Borrowed, not copied: on a first build this is every file.
        let stale: Vec<&Source> = stale.chain(&again).collect();
        if stale.is_empty() {
            return Refreshed { read: 0, removed };
        }
        let read = self.read_all(&stale, now, threads, read);
        Refreshed { read, removed }
    }

    /// Parse `stale` and take each outline in as it comes; gives how many
    /// were read.
    fn read_all<R>(&mut self, stale: &[&Source], now: i64, threads: usize, read: &R) -> usize
    where
        R: Fn(&str) -> Option<Vec<u8>> + Sync,
    {
        if stale.len() <= FEW || threads <= 1 {
            // A few files (what changed since the last call): here, with
            // a kept extractor.
            let mut x = self
                .spare
                .pop()
                .unwrap_or_else(|| Extractor::new(self.limits));
            for source in stale {
                let state = parse(&mut x, source, read);
                self.insert(source, now, state);
            }
            self.spare.push(x);
            return stale.len();
        }
        let next = AtomicUsize::new(0);
        let limits = self.limits;
        let threads = threads.clamp(1, 16).min(stale.len());
        // Outlines come back as they are parsed and are taken in on this
        // thread, so that what the table keeps is allocated here and the
        // parsers' temporaries stay in their own threads.
        let (tx, rx) = mpsc::sync_channel::<(usize, State)>(threads * 4);
        std::thread::scope(|scope| {
            let mut workers = Vec::with_capacity(threads);
            for _ in 0..threads {
                let tx = tx.clone();
                let next = &next;
                let mut extractor = self.spare.pop().unwrap_or_else(|| Extractor::new(limits));
                workers.push(scope.spawn(move || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(source) = stale.get(i) else { break };
                        if tx.send((i, parse(&mut extractor, source, read))).is_err() {
                            break;
                        }
                    }
                    extractor
                }));
            }
            drop(tx);
            for (i, state) in rx {
                self.insert(stale[i], now, state);
            }
            for worker in workers {
                match worker.join() {
                    Ok(extractor) => self.spare.push(extractor),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        });
        stale.len()
    }

    fn remove(&mut self, slot: u32) {
        let Some(file) = self.files[slot as usize].take() else {
            return;
        };
        // Its path, for its place in the slots' table, before its folder
        // and name may be forgotten.
        let mut path = String::new();
        self.folders
            .write(&self.strings, file.folder, file.name, &mut path);
        let hash = self.seed.hash_one(path.as_str());
        if let Ok(entry) = self.slots.find_entry(hash, |&s| s == slot) {
            entry.remove();
        }
        self.unsettled.remove(&slot);
        self.totals.subtract(file.counts());
        let mut names: HashSet<u32> = HashSet::new();
        for def in &file.defs {
            if names.insert(def.name) {
                self.names.remove(&fold(self.strings.get(def.name)), slot);
            }
        }
        for def in &file.defs {
            self.strings.release(def.name);
            if def.container != NO_CONTAINER {
                self.strings.release(def.container);
            }
        }
        self.strings.release(file.name);
        self.folders.leave(&mut self.strings, file.folder);
        self.free.push(slot);
    }

    fn insert(&mut self, source: &Source, now: i64, parsed: State) {
        if let Some(old) = self.slot_of(&source.path) {
            self.remove(old);
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.files.push(None);
                (self.files.len() - 1) as u32
            }
        };
        let (dir, name) = split(&source.path);
        let folder = self.folders.enter(&mut self.strings, dir);
        let name = self.strings.intern(name);
        let (status, defs) = match parsed {
            State::Read(symbols, errors, truncated) => {
                let defs: Box<[Def]> = symbols
                    .into_iter()
                    .enumerate()
                    .map(|(i, (s, folded))| {
                        self.names.add(&folded, (slot, i as u32));
                        Def {
                            name: self.strings.intern(&s.name),
                            container: s
                                .container
                                .as_deref()
                                .map_or(NO_CONTAINER, |c| self.strings.intern(c)),
                            line: s.line,
                            end_line: s.end_line,
                            doc_line: s.doc_line,
                            kind: s.kind,
                        }
                    })
                    .collect();
                (Status::Read { errors, truncated }, defs)
            }
            State::Skipped(skip) => (Status::Skipped(skip), Box::default()),
            State::Unreadable => (Status::Unreadable, Box::default()),
        };
        let file = File {
            folder,
            name,
            status,
            mtime: source.mtime,
            size: source.size,
            read_at: now,
            defs,
        };
        self.totals.add(file.counts());
        if file.unsettled() {
            self.unsettled.insert(slot);
        }
        self.files[slot as usize] = Some(file);
        let hash = self.seed.hash_one(source.path.as_str());
        let Table {
            files,
            folders,
            strings,
            seed,
            slots,
            ..
        } = self;
        slots.insert_unique(hash, slot, |&s| slot_hash(files, folders, strings, seed, s));
    }

    /// The bounds each file is extracted within.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// Every held file, for [`Table::to_bytes`].
    pub(crate) fn held(&self) -> impl Iterator<Item = HeldFile<'_>> {
        self.files.iter().flatten().map(|f| {
            let mut path = String::new();
            self.folders
                .write(&self.strings, f.folder, f.name, &mut path);
            let symbols = f
                .defs
                .iter()
                .map(|d| SymbolRef {
                    name: self.strings.get(d.name),
                    kind: d.kind,
                    container: self.container(d),
                    line: d.line,
                    end_line: d.end_line,
                    doc_line: d.doc_line,
                })
                .collect();
            (path, f.mtime, f.size, f.read_at, f.status, symbols)
        })
    }

    /// Take in a file as it was saved (see `saved.rs`), but for one that
    /// could not be read: the next refresh tries it again, as permissions
    /// or the caller's policy may have changed meanwhile without its
    /// modification time moving. `read_at` is when it was read.
    pub(crate) fn insert_saved(&mut self, source: &Source, read_at: i64, state: State) {
        if !matches!(state, State::Unreadable) {
            self.insert(source, read_at, state);
        }
    }

    /// Give back the room its arrays grew into beyond what they hold (up to
    /// a third of the table after a build); for when many files were just
    /// read, as the next changes grow them again.
    pub fn shrink_to_fit(&mut self) {
        self.strings.shrink_to_fit();
        self.names.shrink_to_fit();
        self.folders.shrink_to_fit();
        self.files.shrink_to_fit();
        self.free.shrink_to_fit();
    }

    /// The outline held for the file at `path`, when it was parsed from
    /// the bytes the caller sees now: held with this modification time and
    /// size, and read at least [`SAME_SECOND_SLACK`] seconds after `changed`,
    /// the file's status change time (`ctime`), which every write and every
    /// `utime` moves and no caller can set back. So neither a write in the
    /// second of the read nor one whose modification time was put back to
    /// the held one can hide behind equal stamps. `None` otherwise: the
    /// caller parses the file.
    pub fn outline(&self, path: &str, mtime: i64, size: u64, changed: i64) -> Option<Outline> {
        let f = self.files[self.slot_of(path)? as usize].as_ref()?;
        let Status::Read { errors, truncated } = f.status else {
            return None;
        };
        if f.mtime != mtime
            || f.size != size
            || f.read_at < changed.saturating_add(SAME_SECOND_SLACK)
        {
            return None;
        }
        Some(Outline {
            symbols: f.defs.iter().map(|d| self.symbol(d)).collect(),
            had_errors: errors,
            truncated,
        })
    }

    /// What the table holds.
    pub fn stats(&self) -> Stats {
        Stats {
            files: self.slots.len(),
            ..self.totals
        }
    }

    /// The symbols whose name matches `query` (and its container, when it
    /// names one) among those `keep` accepts (given the file's path and the
    /// symbol's kind), best first: by how the name matched (exact, then
    /// folded, a start, a part, fuzzy, a typo), then code before tests,
    /// types before functions before the rest, the file named after it
    /// first, then shallower paths, then by path and line. Fuzzy and typo
    /// matching run only when the plainer tiers do not fill the page.
    pub fn search(
        &self,
        query: &NameQuery,
        keep: impl Fn(&str, Kind) -> bool,
        offset: usize,
        limit: usize,
    ) -> Found {
        // (tier, fuzzy score, file slot, index in its definitions)
        type Row = (Tier, u16, u32, u32);
        let mut all: Vec<Row> = Vec::new();
        let plain = self.names.holding(query.folded());
        let mut path = String::new();
        let mut each = |all: &mut Vec<Row>, id: u32, tier: &mut Rate| {
            let folded = self.names.name(id);
            for &(slot, i) in self.names.postings(id) {
                let Some(file) = self.files[slot as usize].as_ref() else {
                    continue;
                };
                let def = &file.defs[i as usize];
                if !query.container_fits(self.container(def)) {
                    continue;
                }
                if let Some((t, score)) = tier(self.strings.get(def.name), folded) {
                    self.folders
                        .write(&self.strings, file.folder, file.name, &mut path);
                    if keep(&path, def.kind) {
                        all.push((t, score, slot, i));
                    }
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
            let mut abbrev = ferret_abbrev::Abbrev::default();
            for id in 0..self.names.len() {
                if held.contains(&id) || !self.names.is_live(id) {
                    continue;
                }
                let folded = self.names.name(id);
                // Fuzzy needs every letter asked; a typo may lack some.
                let letters = self.names.mask_of(id) & qm == qm
                    && query.fuzzy(folded, &mut m, &mut buf).is_some();
                let typo = if letters {
                    None
                } else {
                    match query.typo(folded) {
                        Some(d) => Some((Tier::Typo, u16::MAX - d as u16)),
                        None => continue,
                    }
                };
                // Each definition is scored as it spells its name: its case
                // and separators are where its words start (`gsn` is
                // `get_symbol_name` more than `gasnet`), and a name the
                // query abbreviates leads. Once a spelling.
                let mut spellings: Vec<(String, Option<(Tier, u16)>)> = Vec::new();
                each(&mut all, id, &mut |name, _| {
                    if !letters {
                        return typo;
                    }
                    if let Some((_, t)) = spellings.iter().find(|(s, _)| s == name) {
                        return *t;
                    }
                    let t = query
                        .fuzzy(name, &mut m, &mut buf)
                        .map(|s| {
                            let lead = query.abbreviation_lead(name, &mut abbrev);
                            (Tier::Fuzzy, s.saturating_add(lead))
                        })
                        .or_else(|| {
                            query
                                .typo(folded)
                                .map(|d| (Tier::Typo, u16::MAX - d as u16))
                        });
                    spellings.push((name.to_string(), t));
                    t
                });
            }
        }
        let total = all.len();
        // By tier and score first (cheap); the full order only for the
        // classes the page reaches (a common name matches by the thousand).
        all.sort_unstable_by_key(|&(tier, score, _, _)| (tier, Reverse(score)));
        let reach = (offset.saturating_add(limit)).min(all.len());
        let end = match reach.checked_sub(1).map(|i| (all[i].0, all[i].1)) {
            Some(last) => all.partition_point(|r| (r.0, Reverse(r.1)) <= (last.0, Reverse(last.1))),
            None => 0,
        };
        all.truncate(end);
        let def = |slot: u32, i: u32| {
            let file = self.files[slot as usize].as_ref().expect("held");
            &file.defs[i as usize]
        };
        all.sort_by_cached_key(|&(tier, score, slot, i)| {
            let d = def(slot, i);
            let mut path = String::new();
            self.path_into(slot, &mut path);
            (
                tier,
                Reverse(score),
                is_test(&path, self.container(d)),
                kind_rank(d.kind),
                !is_home(&path, self.strings.get(d.name)),
                path.matches('/').count(),
                path,
                d.line,
            )
        });
        let hits = all
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(tier, _, slot, i)| {
                let mut path = String::new();
                self.path_into(slot, &mut path);
                Hit {
                    path,
                    symbol: self.symbol(def(slot, i)),
                    tier,
                }
            })
            .collect();
        Found { hits, total }
    }
}

/// How a name (as defined, and folded) matches: its tier and fuzzy score.
type Rate<'f> = dyn FnMut(&str, &str) -> Option<(Tier, u16)> + 'f;

/// Up to this many files are parsed on the caller's thread.
const FEW: usize = 8;

fn parse<R>(x: &mut Extractor, source: &Source, read: &R) -> State
where
    R: Fn(&str) -> Option<Vec<u8>>,
{
    let lang = Lang::of_path(&source.path).expect("only source files are read");
    // Too large to parse, as the index knows it: counted as such, and not
    // read (the reader refuses it too, which would count it unreadable).
    if source.size > x.limits().max_bytes as u64 {
        return State::Skipped(Skip::TooLarge);
    }
    let Some(bytes) = read(&source.path) else {
        return State::Unreadable;
    };
    let extracted = x.extract(lang, &bytes);
    give_back_if_large(bytes.len());
    match extracted {
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
            outline.truncated,
        ),
        Err(skip) => State::Skipped(skip),
    }
}

/// Files of this size or more give their memory back once parsed.
const LARGE: usize = 1 << 20;

/// After a parse of `len` bytes: hand back to the system what a large
/// file's parse freed. A syntax tree takes 30 to 70 times its source (a
/// 6.5 MB generated `parser.c`: 180 MB), and glibc keeps what is freed in
/// the parsing thread's arena, so that every parsing thread would hold its
/// largest tree's memory until the build ends. (As `ferret-index` does
/// after its builds; this crate does not depend on it.)
fn give_back_if_large(len: usize) {
    if len >= LARGE {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only releases free memory; it takes no
        // pointer and is thread-safe (it locks each arena it trims).
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

/// Test code (a test folder or file, or a `tests` module) ranks after the
/// code it tests: a name defined in both is most often wanted where it lives.
fn is_test(path: &str, container: Option<&str>) -> bool {
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
        || container.is_some_and(|c| c == "tests" || c == "test")
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
    use std::{collections::HashMap, sync::Mutex};

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
        let first = [src("a.rs", 1), src("b.py", 1), src("c.txt", 1)];
        // What a refresh reads, told before it reads it.
        assert_eq!(table.to_read(&first), 2);
        let r = table.refresh(&first, 100, 2, read);
        assert_eq!(
            r,
            Refreshed {
                read: 2,
                removed: 0
            }
        );
        assert_eq!(table.stats().symbols, 3);
        reads.lock().unwrap().clear();
        assert_eq!(table.to_read(&[src("a.rs", 1), src("b.py", 1)]), 0);
        assert_eq!(table.to_read(&[src("a.rs", 1), src("b.py", 2)]), 1);
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

    /// Initials and word starts find the name whose words they start, as
    /// its definition spells it, before a compact run of the letters.
    /// A table of `files` (path, text), read in the order given.
    fn table_of(files: &[(&str, &str)]) -> Table {
        let mut table = Table::new(Limits::default());
        let text: HashMap<&str, &str> = files.iter().copied().collect();
        let sources: Vec<Source> = files.iter().map(|(p, _)| src(p, 1)).collect();
        table.refresh(&sources, 100, 1, |p| Some(text[p].as_bytes().to_vec()));
        table
    }

    #[test]
    fn a_fuzzy_guess_reads_the_names_words() {
        let table = table_of(&[
            ("a.rs", "fn gasnet() {}\nfn get_symbol_name() {}\n"),
            ("b.py", "def gasnets(): pass\ndef getSymbolName(): pass\n"),
        ]);
        let names = |q: &str| {
            let found = table.search(&NameQuery::new(q), |_, _| true, 0, 10);
            let mut names: Vec<(String, Tier)> = found
                .hits
                .iter()
                .map(|h| (h.symbol.name.clone(), h.tier))
                .collect();
            names[..2].sort();
            names
        };
        let fuzzy = |n: &str| (n.to_string(), Tier::Fuzzy);
        let gsn = names("gsn");
        assert_eq!(gsn[..2], [fuzzy("getSymbolName"), fuzzy("get_symbol_name")]);
        assert_eq!(gsn.len(), 4);
        let gesyna = names("gesyna");
        assert_eq!(gesyna, [fuzzy("getSymbolName"), fuzzy("get_symbol_name")]);
        // Two spellings of one name, each scored as it is spelled, whichever
        // the table holds first (the other one's path would win a tie).
        let (z, a) = (
            ("z.rs", "fn get_symbol_name() {}\n"),
            ("a.py", "def getsymbolname(): pass\n"),
        );
        for order in [[z, a], [a, z]] {
            let table = table_of(&order);
            let found = table.search(&NameQuery::new("gsn"), |_, _| true, 0, 10);
            let names: Vec<&str> = found.hits.iter().map(|h| h.symbol.name.as_str()).collect();
            assert_eq!(
                names,
                ["get_symbol_name", "getsymbolname"],
                "{:?}",
                order[0]
            );
        }
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
            .map(|h| (h.path.as_str(), h.symbol.container.as_deref()))
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

    /// A file over the size bound is counted too large, not unreadable,
    /// and is not read.
    #[test]
    fn files_too_large_are_counted_as_such_and_not_read() {
        let mut table = Table::new(Limits::default());
        let big = Source {
            size: (Limits::default().max_bytes + 1) as u64,
            ..src("sqlite3.c", 1)
        };
        table.refresh(&[big], 100, 1, |_| panic!("not read"));
        let st = table.stats();
        assert_eq!((st.too_large, st.unreadable), (1, 0));
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

    /// A held outline is what parsing the file now gives, and is given only
    /// for the stamps it was parsed at, when nothing changed the file from
    /// the second before the read on; a truncated one says so.
    #[test]
    fn a_held_outline_is_given_only_for_the_bytes_it_was_parsed_from() {
        let body = b"struct S;\nimpl S {\n    fn go(&self) {}\n}\nfn broken( {\n";
        let mut table = Table::new(Limits::default());
        table.refresh(&[src("a/x.rs", 10)], 100, 1, |_| Some(body.to_vec()));
        let parsed = Extractor::new(Limits::default())
            .extract(Lang::Rust, body)
            .unwrap();
        assert!(parsed.had_errors);
        assert_eq!(table.outline("a/x.rs", 10, 1, 10), Some(parsed.clone()));
        assert_eq!(table.outline("a/x.rs", 10, 1, 98), Some(parsed));
        // Another time or size, another file: none.
        assert_eq!(table.outline("a/x.rs", 11, 1, 11), None);
        assert_eq!(table.outline("a/x.rs", 10, 2, 10), None);
        assert_eq!(table.outline("a/y.rs", 10, 1, 10), None);
        // Changed in the second of the read or after it (written, its time
        // put back): none.
        assert_eq!(table.outline("a/x.rs", 10, 1, 99), None);
        assert_eq!(table.outline("a/x.rs", 10, 1, 150), None);
        // Unreadable or skipped files have none.
        let mut small = Table::new(Limits {
            max_bytes: 4,
            ..Limits::default()
        });
        small.refresh(&[src("big.rs", 1), src("no.rs", 1)], 100, 1, |p| {
            (p == "big.rs").then(|| body.to_vec())
        });
        assert_eq!(small.outline("big.rs", 1, 1, 1), None);
        assert_eq!(small.outline("no.rs", 1, 1, 1), None);
        // Truncated, it says so, here and read back from its bytes.
        let limits = Limits {
            max_symbols: 2,
            ..Limits::default()
        };
        let mut few = Table::new(limits);
        let three = b"fn a() {}\nfn b() {}\nfn c() {}\n";
        few.refresh(&[src("t.rs", 1)], 100, 1, |_| Some(three.to_vec()));
        let held = few.outline("t.rs", 1, 1, 1).unwrap();
        assert!(held.truncated && !held.had_errors);
        assert_eq!(held.symbols.len(), 2);
        let back = Table::from_bytes(&few.to_bytes(b"k"), limits, b"k").unwrap();
        assert_eq!(back.outline("t.rs", 1, 1, 1), Some(held));
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

    /// Paths are held as a tree of folders: each comes back as given, a
    /// folder gone takes only what is below it, and a folder emptied is
    /// forgotten and made again when a file comes back to it.
    #[test]
    fn paths_come_back_as_given_and_folders_go_with_their_files() {
        let deep = format!("{}/deep.rs", vec!["nest"; 300].join("/"));
        let paths = [
            "top.rs",
            "/lead.rs",
            "a//b.rs",
            "a/b/c/d/e.rs",
            "a/b/c2/f.rs",
            "a/b.rs",
            "é/ü ñ.rs",
            deep.as_str(),
        ];
        let body = |_: &str| Some(b"fn here() {}\n".to_vec());
        let mut table = Table::new(Limits::default());
        let sources: Vec<Source> = paths.iter().map(|p| src(p, 1)).collect();
        table.refresh(&sources, 100, 2, body);
        let held = |t: &Table| -> Vec<String> {
            let mut v: Vec<String> = t
                .search(&NameQuery::new("here"), |_, _| true, 0, 100)
                .hits
                .into_iter()
                .map(|h| h.path)
                .collect();
            v.sort();
            v
        };
        let mut want: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        want.sort();
        assert_eq!(held(&table), want);
        // Nothing moved: nothing is read again (each path is found again).
        let r = table.refresh(&sources, 100, 2, |_| panic!("not read again"));
        assert_eq!(r, Refreshed::default());
        // `a/b` takes what is below it, not `a/b.rs` nor `a//b.rs`; the
        // empty folder name takes `/lead.rs`.
        let r = table.update(&[], &["a/b".into(), "".into()], 100, 1, body);
        assert_eq!(r.removed, 3);
        want.retain(|p| !p.starts_with("a/b/") && p != "/lead.rs");
        assert_eq!(held(&table), want);
        // Back again, in folders made anew.
        let back = [src("a/b/c/d/e.rs", 2), src("nest/x.rs", 2)];
        table.update(&back, &[], 100, 1, body);
        want.extend(["a/b/c/d/e.rs".to_string(), "nest/x.rs".to_string()]);
        want.sort();
        assert_eq!(held(&table), want);
        let r = table.update(&[], &["nest".into()], 100, 1, body);
        assert_eq!(r.removed, 2);
        assert_eq!(table.stats().files, want.len() - 2);
    }
}
