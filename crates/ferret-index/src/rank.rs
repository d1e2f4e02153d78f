//! Relevance: which of a search's matches is most likely the one meant.
//!
//! The order, most relevant first:
//! 1. the exact name (or its stem, `main` for `main.rs`, `libc` for
//!    `libc.so.6`) before any other fit, then names that start with the
//!    word: what was typed letter for letter, or a name's start, is what was
//!    meant, even in a vendored folder (a Python installation's
//!    `site-packages`, a crate's `vendor`);
//! 2. entries outside generated or vendored folders (`node_modules`, `target`,
//!    `vendor`, `dist`, `build`, `__pycache__`, `.git`, virtual environments …)
//!    before those inside, within each of those fits and for the rest; after
//!    every other match, what lies in a tool's output, such as `__pycache__`,
//!    `target` or `.git` (byte code, build products: a name means the file
//!    they were made from);
//! 3. how the name answers the query's words: the exact name, then names that
//!    start with the word, then the word at a word or camelCase boundary (`_`,
//!    `-`, `.`, space, `aB`), then anywhere;
//! 4. a score: recently modified files and files used lately through ferret
//!    (read, edited, matched; [`crate::uses`]) up, deep and long paths down,
//!    and, for a query of several words, each word that is the whole name
//!    of a folder on the entry's way (not the word its own name is) up.
//!
//! Each hit carries a single `score` (higher is better) that sums these.

use std::collections::HashMap;

use crate::names::fold_into;
use crate::store::{EntryId, Kind, NONE, Store};
use crate::uses::Uses;

/// Folders whose contents are generated or vendored.
const GENERATED: &[&[u8]] = &[
    b"node_modules",
    b"target",
    b"vendor",
    b"dist",
    b"build",
    b"__pycache__",
    b".git",
    b".venv",
    b"venv",
    b"site-packages",
    b".tox",
    b".gradle",
    b".next",
    b".nuxt",
    b"bower_components",
    b"Pods",
    b"DerivedData",
    b".terraform",
    b".cache",
];

/// Generated folders whose contents a tool made from files kept elsewhere
/// (byte code, build products, a version control's own store): what is
/// looked for by name is the file they were made from. Their entries come
/// after every other match ([`Relevance::class`]): `zipfile` means
/// `zipfile.py`, then `test/test_zipfile.py`, before three copies of
/// `__pycache__/zipfile.cpython-311.pyc`; among themselves they rank by fit
/// and score as the rest do. A subset of [`GENERATED`].
const BUILT: &[&[u8]] = &[
    b"__pycache__",
    b".git",
    b"target",
    b"build",
    b"dist",
    b".cache",
    b".gradle",
    b".next",
    b".nuxt",
    b"DerivedData",
];

/// How a name answers a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum NameFit {
    Exact = 0,
    Prefix = 1,
    Boundary = 2,
    Anywhere = 3,
}

/// The forms a (folded) name answers exactly: itself, its stem and what
/// comes before its first dot (`main` is the exact name of `main.rs`, and
/// `libc` of `libc.so.6`).
pub(crate) fn exact_forms(folded: &[u8]) -> [&[u8]; 3] {
    let before = |at: Option<usize>| match at {
        Some(i) if i > 0 => &folded[..i],
        _ => folded,
    };
    [
        folded,
        before(memchr::memrchr(b'.', folded)),
        before(memchr::memchr(b'.', folded)),
    ]
}

/// A folder's name without a version at its end (`rustix` for
/// `rustix-1.1.6`, `six` for `six-1.17.0.dist-info`): what comes before the
/// first `-` followed by a digit or by `v` and a digit.
pub(crate) fn unversioned(name: &[u8]) -> &[u8] {
    let digit = |i: usize| name.get(i).is_some_and(u8::is_ascii_digit);
    for (i, &b) in name.iter().enumerate() {
        if b == b'-' && i > 0 && (digit(i + 1) || (name.get(i + 1) == Some(&b'v') && digit(i + 2)))
        {
            return &name[..i];
        }
    }
    name
}

/// How `name` answers `word` (folded), best of all its occurrences.
pub(crate) fn name_fit(name: &[u8], word: &[u8], buf: &mut Vec<u8>) -> NameFit {
    if name.is_ascii() && word.is_ascii() && !word.is_empty() {
        return ascii_fit(name, word).unwrap_or(NameFit::Anywhere);
    }
    fold_into(name, buf);
    let folded = &buf[..];
    if word.is_empty() {
        return NameFit::Anywhere;
    }
    if exact_forms(folded).contains(&word) {
        return NameFit::Exact;
    }
    if folded.starts_with(word) {
        return NameFit::Prefix;
    }
    let finder = memchr::memmem::find_iter(folded, word);
    for at in finder {
        let before = folded[at - 1];
        let camel = name.len() == folded.len()
            && name[at].is_ascii_uppercase()
            && name[at - 1].is_ascii_lowercase();
        if matches!(before, b'_' | b'-' | b'.' | b' ' | b'/' | b'@' | b'+') || camel {
            return NameFit::Boundary;
        }
    }
    NameFit::Anywhere
}

/// The fit of a name that starts with the word (its first `n` bytes, ASCII
/// case aside): exact when the word is the name, or what comes before its
/// last dot, or before its first; else a prefix.
pub(crate) fn start_fit(name: &[u8], n: usize) -> NameFit {
    let exact = name.len() == n
        || (name[n] == b'.'
            && (memchr::memchr(b'.', &name[..n]).is_none()
                || memchr::memrchr(b'.', name) == Some(n)));
    if exact {
        NameFit::Exact
    } else {
        NameFit::Prefix
    }
}

/// [`name_fit`] of an ASCII name for an ASCII word (lower case, not empty),
/// in place: no folded copy, no searcher built. `None` when the name does
/// not hold the word, so that a name dictionary's check of a word and its
/// fit are one pass. Occurrences are read as `name_fit` reads them: the
/// leftmost, then each after the end of the last (none overlap).
pub(crate) fn ascii_fit(name: &[u8], word: &[u8]) -> Option<NameFit> {
    let n = word.len();
    if n == 0 || n > name.len() {
        return None;
    }
    let (first, upper) = (word[0], word[0].to_ascii_uppercase());
    let last = name.len() - n;
    let mut best = None;
    let mut at = 0;
    // Names are short: a plain loop finds the first byte sooner than
    // `memchr2`'s call does, below a vector's width.
    let find = |from: usize| -> Option<usize> {
        let hay = &name[from..=last];
        if hay.len() < 32 {
            hay.iter().position(|&b| b == first || b == upper)
        } else {
            memchr::memchr2(first, upper, hay)
        }
    };
    while at <= last {
        let Some(i) = find(at) else {
            break;
        };
        let start = at + i;
        if !name[start..start + n].eq_ignore_ascii_case(word) {
            at = start + 1;
            continue;
        }
        if start == 0 {
            return Some(start_fit(name, n));
        }
        let before = name[start - 1];
        let camel = name[start].is_ascii_uppercase() && before.is_ascii_lowercase();
        if matches!(before, b'_' | b'-' | b'.' | b' ' | b'/' | b'@' | b'+') || camel {
            return Some(NameFit::Boundary);
        }
        best = Some(NameFit::Anywhere);
        at = start + n;
    }
    best
}

/// An entry's place in the relevance order: compare with `Ord` (less is more
/// relevant).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Relevance {
    pub fit: NameFit,
    pub generated: bool,
    /// In a folder of a tool's output ([`BUILT`]): after every other match.
    pub built: bool,
    /// Higher is better.
    pub bonus: f32,
}

/// Each class of [`Relevance::class`] as it counts in the score: 100 apart
/// at least, so that a bonus seldom carries a score past another class's.
const CLASS_SCORE: [f32; 12] = [
    800.0, 700.0, 600.0, 500.0, 200.0, 100.0, -200.0, -300.0, -600.0, -700.0, -800.0, -900.0,
];

impl Relevance {
    /// The order's classes, best first: exact names, in a generated folder
    /// after; names starting with the word, likewise; then outside generated
    /// folders the word at a boundary and anywhere; then inside them; last,
    /// by fit, what lies in a tool's output (byte code, build products, a
    /// version control's store: what a name means is the file they were
    /// made from, wherever it is).
    fn class(&self) -> usize {
        if self.built {
            return 8 + self.fit as usize;
        }
        let generated = usize::from(self.generated);
        match self.fit {
            NameFit::Exact | NameFit::Prefix => self.fit as usize * 2 + generated,
            NameFit::Boundary | NameFit::Anywhere => 2 + self.fit as usize + generated * 2,
        }
    }

    pub fn cmp(&self, other: &Relevance) -> std::cmp::Ordering {
        self.class()
            .cmp(&other.class())
            .then(other.bonus.total_cmp(&self.bonus))
    }

    /// Whether no name that neither is nor starts with the word can rank
    /// above this entry because of its fit and folder: what the prefix
    /// shortcut counts.
    pub fn leads(&self) -> bool {
        self.fit <= NameFit::Prefix && !self.built
    }

    /// One number for agents and people, higher is better: its class's
    /// ([`CLASS_SCORE`]: exact names 800, names starting with the word 600,
    /// 100 less in a generated folder; then 200 and 100 by fit, 400 less in
    /// a generated folder; in a tool's output -600 to -900 by fit) plus the
    /// bonus.
    pub fn score(&self) -> f32 {
        ((CLASS_SCORE[self.class()] + self.bonus) * 10.0).round() / 10.0
    }
}

/// Where a folder sits, for the entries in it: how many folders lie between
/// it and its root (itself included, the root not), the length of its path
/// below the root, and whether it is or lies in a generated folder.
///
/// For a query of several words, also which of them (a bit each, the first
/// [`WORDS_MAX`]) are the whole name of this folder or of one above it (as
/// [`exact_forms`] reads a name, or without its version): `rfc7519 claims`
/// means `jose/rfc7519/claims.pyi` more than `joserfc/_rfc7519/claims.py`,
/// and `oauth2 auth` the file `oauth2/auth.pyi` more than the folder
/// `oauth2`, whose name alone holds both words.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Place {
    depth: u32,
    len: u32,
    pub(crate) generated: bool,
    /// It is or lies in a [`BUILT`] folder.
    built: bool,
    words: u16,
}

/// The query words a folder's [`Place`] can mark.
const WORDS_MAX: usize = 15;

/// What each query word that is a whole folder name on an entry's way adds
/// to its bonus (a folder level costs 1.5: about two and a half levels).
const FOLDER_WORD: f32 = 4.0;

/// The places of the folders one thread has ranked entries in.
///
/// Matches share folders, so each folder's [`Place`] is worked out once per
/// query and remembered (a common word matches tens of thousands of entries in
/// a few thousand folders; climbing each entry's ancestors anew, comparing
/// every name with [`GENERATED`], was most of a relevance search's time). A
/// word per folder slot, zero for "not yet known": in a small map while few
/// folders are known (a query with five matches should not allocate a table
/// for every folder), then in a table allocated zeroed (pages the kernel maps
/// on first touch).
#[derive(Default)]
pub(crate) struct Places {
    /// While few folders are known: by folder slot.
    sparse: HashMap<usize, u64, foldhash::fast::FixedState>,
    /// Once many are: a word per folder slot.
    dense: Vec<u64>,
}

/// Folders remembered in the map before the table by slot is cheaper.
const SPARSE_MAX: usize = 4096;

impl Places {
    fn slot(&mut self, store: &Store, dir: EntryId) -> Option<&mut u64> {
        let slot = store.dir_slot(dir)?;
        if self.dense.is_empty() {
            if self.sparse.len() < SPARSE_MAX || self.sparse.contains_key(&slot) {
                return Some(self.sparse.entry(slot).or_insert(0));
            }
            self.dense = vec![0; store.dirs.len()];
            for (&at, &w) in &self.sparse {
                if let Some(d) = self.dense.get_mut(at) {
                    *d = w;
                }
            }
            self.sparse = HashMap::default();
        }
        self.dense.get_mut(slot)
    }
}

impl Place {
    /// Packed, never zero: depth + 1 in the low 23 bits (a folder level
    /// takes at least two bytes of a path, so no path shorter than 16 MiB
    /// is that deep), `built` in the next, the length in the next 24 (a
    /// path below the root is far shorter than 16 MiB; longer ones count as
    /// that long), the words in the 15 above, `generated` in the top bit.
    pub(crate) fn pack(self) -> u64 {
        (u64::from(self.depth) + 1).min(0x7F_FFFF)
            | u64::from(self.built) << 23
            | u64::from(self.len.min(0xFF_FFFF)) << 24
            | (u64::from(self.words) & 0x7FFF) << 48
            | u64::from(self.generated) << 63
    }

    pub(crate) fn unpack(w: u64) -> Place {
        Place {
            depth: ((w & 0x7F_FFFF) - 1) as u32,
            built: (w >> 23) & 1 == 1,
            len: ((w >> 24) & 0xFF_FFFF) as u32,
            generated: w >> 63 == 1,
            words: ((w >> 48) & 0x7FFF) as u16,
        }
    }

    /// The place of a folder named `name` (as stored) in a folder at
    /// `self`: a level deeper, its name and a `/` longer, generated or
    /// built if it is or its folder was; the words as its folder's.
    pub(crate) fn below(self, name: &[u8]) -> Place {
        Place {
            depth: self.depth + 1,
            len: self.len + name.len() as u32 + 1,
            generated: self.generated || GENERATED.contains(&name),
            built: self.built || BUILT.contains(&name),
            words: self.words,
        }
    }

    /// The same place with the query's words met on its way set to `words`.
    pub(crate) fn with_words(self, words: u16) -> Place {
        Place { words, ..self }
    }
}

/// Which of the query's `words` a folder's name (folded) is wholly, as a
/// folder on an entry's way counts them in its [`Place`].
pub(crate) fn folder_name_words(folded: &[u8], words: &[Vec<u8>]) -> u16 {
    whole_words(folded, words, true, false)
}

/// Ranks entries for one query.
///
/// Use scores are kept by path. With few entries to rank, each one's path is
/// spelled out and looked up; with more entries than used paths, the used
/// paths are resolved to entries once instead ([`Ranker::prepare`]), so a
/// common word's tens of thousands of matches cost a map lookup each and a
/// rare word's five matches never pay for resolving thousands of paths.
pub(crate) struct Ranker<'a> {
    /// The query's name words, folded, longest first.
    words: Vec<Vec<u8>>,
    now: i64,
    uses: Option<&'a Uses>,
    /// The uses by entry, once resolved.
    used: Option<HashMap<EntryId, f32>>,
}

/// What a file has over a folder of the same fit: a tie-break worth about
/// two and a half folder levels (one costs 1.5). A name guessed at is most
/// often a file's (`uring` means `driver/uring.rs` more often than the folder
/// `driver/uring/`, `sta` `http/src/status.rs` more than the folder
/// `stable_deref_trait-1.2.1`): on bench/retrieval.py's cargo set, plain
/// searches of a name's start went from 50 to 55 of 200 first, and no query
/// of either set lost its place. Regular files only: a symlink may name a
/// folder, and a FIFO or a socket is seldom what is looked for.
const FILE_LEAD: f32 = 4.0;

/// What an entry's kind and how recently it was modified count in the rank:
/// a file's lead ([`FILE_LEAD`]); for files and symlinks 3 more within a
/// day, 2 within a week, 1 within a month; folders 0. Never more for an
/// unchanged entry as `now` moves on, which is what lets the rank order's
/// keys ([`crate::base::RankOrder`]) bound the bonus later.
pub(crate) fn recency(kind: Kind, mtime: i64, now: i64) -> f32 {
    let age_days = (now - mtime).max(0) as f32 / 86_400.0;
    let lead = if kind == Kind::File { FILE_LEAD } else { 0.0 };
    if kind == Kind::Dir {
        0.0
    } else if age_days < 1.0 {
        lead + 3.0
    } else if age_days < 7.0 {
        lead + 2.0
    } else if age_days < 31.0 {
        lead + 1.0
    } else {
        lead
    }
}

/// The bonus of an entry `name_len` bytes long in a folder at `place`.
/// One expression for the ranking and the rank order's keys: computed the
/// same way in `f32`, a smaller `recency + used` can never give a larger
/// bonus, so a key built with the recency of its day bounds every later
/// bonus of an unused entry.
pub(crate) fn bonus(recency: f32, used: f32, place: Place, name_len: usize) -> f32 {
    let len = place.len as usize + name_len;
    recency + used - place.depth as f32 * 1.5 - len as f32 / 40.0
}

/// Which of `words` (a bit each, the first [`WORDS_MAX`]) the folded name
/// `folded` is wholly: one of its [`exact_forms`], or, with `unversioned_too`
/// (a folder's name), the name without its version; with `first_only`,
/// each word at its first place only (the name's own word counts once, but
/// a word typed twice is looked for twice).
fn whole_words(folded: &[u8], words: &[Vec<u8>], unversioned_too: bool, first_only: bool) -> u16 {
    let forms = exact_forms(folded);
    let bare = unversioned_too.then(|| unversioned(folded));
    let mut mask = 0;
    for (i, w) in words.iter().take(WORDS_MAX).enumerate() {
        let whole = bare == Some(w.as_slice()) || forms.contains(&w.as_slice());
        if whole && !(first_only && words[..i].contains(w)) {
            mask |= 1 << i;
        }
    }
    mask
}

/// A use score as it counts in the rank.
fn use_bonus(score: f64) -> f32 {
    (1.0 + score as f32).ln() * 4.0
}

impl<'a> Ranker<'a> {
    pub fn new(mut words: Vec<Vec<u8>>, now: i64, uses: Option<&'a Uses>) -> Ranker<'a> {
        words.sort_by_key(|w| std::cmp::Reverse(w.len()));
        Ranker {
            words,
            now,
            uses: uses.filter(|u| !u.is_empty()),
            used: None,
        }
    }

    /// Before ranking `candidates` entries: resolve the used paths to entries
    /// when that is cheaper than spelling out each candidate's path.
    pub fn prepare(&mut self, store: &Store, candidates: usize) {
        if let (Some(u), None) = (self.uses, &self.used)
            && candidates >= u.len()
        {
            let now = self.now;
            self.used = Some(
                u.scores(now)
                    .filter_map(|(path, score)| {
                        Some((
                            crate::hits::find_display_path(store, path)?,
                            use_bonus(score),
                        ))
                    })
                    .collect(),
            );
        }
    }

    /// The query's one word, what the prefix shortcut looks for; `None` for
    /// several: a name's fit is its best over every word, so `foo.barbaz` is
    /// exact for `foo barbaz` through `foo` though it does not start with
    /// `barbaz`, and names starting with any one word cannot bound the rest.
    pub fn only_word(&self) -> Option<&[u8]> {
        match self.words.as_slice() {
            [word] => Some(word),
            _ => None,
        }
    }

    /// The place of folder `dir`, from the remembered places of its
    /// ancestors; `words` (several, or none) are the query's, whose whole
    /// folder names it marks. One `places` serves one set of words.
    pub(crate) fn place(
        store: &Store,
        dir: EntryId,
        places: &mut Places,
        words: &[Vec<u8>],
    ) -> Place {
        if dir == NONE || store.parent(dir) == NONE {
            return Place::default();
        }
        if let Some(&mut w) = places.slot(store, dir)
            && w != 0
        {
            return Place::unpack(w);
        }
        // Climb to the nearest folder whose place is known (or the root), then
        // fill in the places on the way back down.
        let mut chain = vec![dir];
        let mut base = Place::default();
        let mut at = store.parent(dir);
        while at != NONE && store.parent(at) != NONE {
            if let Some(&mut w) = places.slot(store, at)
                && w != 0
            {
                base = Place::unpack(w);
                break;
            }
            chain.push(at);
            at = store.parent(at);
        }
        let mut folded = Vec::new();
        for &folder in chain.iter().rev() {
            let name = store.name(folder);
            let below = base.below(name);
            base = below.with_words(
                below.words
                    | if words.is_empty() {
                        0
                    } else {
                        fold_into(name, &mut folded);
                        folder_name_words(&folded, words)
                    },
            );
            if let Some(w) = places.slot(store, folder) {
                *w = base.pack();
            }
        }
        base
    }

    /// How a name answers the query's words: the best fit of any.
    pub fn fit(&self, name: &[u8], buf: &mut Vec<u8>) -> NameFit {
        self.words
            .iter()
            .map(|w| name_fit(name, w, buf))
            .min()
            .unwrap_or(NameFit::Anywhere)
    }

    pub fn rank(
        &self,
        store: &Store,
        id: EntryId,
        places: &mut Places,
        buf: &mut Vec<u8>,
    ) -> Relevance {
        let name = store.name(id);
        let fit = self.fit(name, buf);
        self.rank_fitted(store, id, (fit, name.len()), places)
    }

    /// [`Ranker::rank`] for an entry whose name's fit and length are known
    /// (worked out once per distinct name, in the dictionary's order, rather
    /// than once per entry through its name).
    pub fn rank_fitted(
        &self,
        store: &Store,
        id: EntryId,
        fitted: (NameFit, usize),
        places: &mut Places,
    ) -> Relevance {
        self.rank_fitted_len(store, id, fitted, places).0
    }

    /// [`Ranker::rank_fitted`], with the length of the entry's path below
    /// its root (its folders' names and a `/` after each, then its name).
    pub fn rank_fitted_len(
        &self,
        store: &Store,
        id: EntryId,
        (fit, name_len): (NameFit, usize),
        places: &mut Places,
    ) -> (Relevance, usize) {
        let place = Self::place(store, store.parent(id), places, self.folder_words());
        self.rank_placed(store, id, (fit, name_len), place)
    }

    /// [`Ranker::rank_fitted_len`] for an entry whose folder's place is
    /// known: `place`, as [`Ranker::place`] gives it with
    /// [`Ranker::folder_words`].
    pub(crate) fn rank_placed(
        &self,
        store: &Store,
        id: EntryId,
        (fit, name_len): (NameFit, usize),
        place: Place,
    ) -> (Relevance, usize) {
        let meta = store.meta(id);
        let recency = recency(store.kind(id), meta.mtime, self.now);
        let used = match (&self.used, self.uses) {
            (Some(by_id), _) => by_id.get(&id).copied().unwrap_or(0.0),
            (None, Some(u)) => use_bonus(u.score(&crate::hits::display_path(store, id), self.now)),
            (None, None) => 0.0,
        };
        let mut words = place.words;
        if words != 0 {
            // A word the name itself is counts once, in the fit (but for
            // a word typed twice: `jsonata jsonata`).
            words &= !self.name_words(store.name(id));
        }
        let rel = Relevance {
            fit,
            generated: place.generated,
            built: place.built,
            bonus: bonus(recency, used, place, name_len) + words.count_ones() as f32 * FOLDER_WORD,
        };
        (rel, place.len as usize + name_len)
    }

    /// The words whose whole folder names count: a query's of several
    /// (one word is the name's to answer).
    pub(crate) fn folder_words(&self) -> &[Vec<u8>] {
        if self.words.len() > 1 {
            &self.words
        } else {
            &[]
        }
    }

    /// Which words (a bit each, as [`Place`] marks them) `name` is wholly,
    /// each word once.
    fn name_words(&self, name: &[u8]) -> u16 {
        let mut folded = Vec::new();
        fold_into(name, &mut folded);
        whole_words(&folded, &self.words, false, true)
    }

    /// The most the words met as whole folder names can add to a bonus
    /// (what a bound on the rank order's bonus must add).
    pub(crate) fn folder_words_max(&self) -> f32 {
        self.folder_words().len().min(WORDS_MAX) as f32 * FOLDER_WORD
    }

    /// The entries the use scores name, resolved (after [`Ranker::prepare`]
    /// resolved them): their relevance holds a share the rank order cannot.
    pub fn used_entries(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.used.iter().flat_map(|m| m.keys().copied())
    }

    /// The query's name words, folded, longest first.
    pub fn words(&self) -> &[Vec<u8>] {
        &self.words
    }

    /// Whether the query has name words (without them every name fits alike).
    pub fn has_words(&self) -> bool {
        !self.words.is_empty()
    }

    /// Whether use scores count in this ranking.
    pub fn has_uses(&self) -> bool {
        self.uses.is_some()
    }

    /// The time the ranking counts recency from.
    pub fn now(&self) -> i64 {
        self.now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits() {
        let mut b = Vec::new();
        assert_eq!(name_fit(b"libc.so.6", b"libc", &mut b), NameFit::Exact);
        assert_eq!(name_fit(b"libcurl.so", b"libc", &mut b), NameFit::Prefix);
        assert_eq!(name_fit(b"libc", b"libc", &mut b), NameFit::Exact);
        assert_eq!(name_fit(b"Main.rs", b"main", &mut b), NameFit::Exact);
        assert_eq!(name_fit(b"main.rs", b"main.rs", &mut b), NameFit::Exact);
        assert_eq!(name_fit(b"x86-libc.a", b"libc", &mut b), NameFit::Boundary);
        assert_eq!(name_fit(b"myLibc.h", b"libc", &mut b), NameFit::Boundary);
        assert_eq!(
            name_fit(b"armv7-uclibceabi.html", b"libc", &mut b),
            NameFit::Anywhere
        );
        assert!(NameFit::Exact < NameFit::Anywhere);
    }

    /// The in-place fit of ASCII names is the folded one, occurrence for
    /// occurrence.
    #[test]
    fn the_ascii_fit_is_the_folded_fit() {
        let mut next = crate::testing::below(0x2545_F491_4F6C_DD1D);
        let alphabet = b"aAbB._- /@+c";
        let folded_fit = |name: &[u8], word: &[u8]| {
            let mut f = Vec::new();
            fold_into(name, &mut f);
            let folded = &f[..];
            if exact_forms(folded).contains(&word) {
                return NameFit::Exact;
            }
            if folded.starts_with(word) {
                return NameFit::Prefix;
            }
            for at in memchr::memmem::find_iter(folded, word) {
                let camel = name[at].is_ascii_uppercase() && name[at - 1].is_ascii_lowercase();
                if matches!(
                    folded[at - 1],
                    b'_' | b'-' | b'.' | b' ' | b'/' | b'@' | b'+'
                ) || camel
                {
                    return NameFit::Boundary;
                }
            }
            NameFit::Anywhere
        };
        for _ in 0..200_000 {
            let name: Vec<u8> = (0..1 + next(9))
                .map(|_| alphabet[next(alphabet.len())])
                .collect();
            let word: Vec<u8> = (0..1 + next(3))
                .map(|_| alphabet[next(alphabet.len())].to_ascii_lowercase())
                .collect();
            let mut f = Vec::new();
            fold_into(&name, &mut f);
            let holds = memchr::memmem::find(&f, &word).is_some();
            let fast = ascii_fit(&name, &word);
            assert_eq!(fast.is_some(), holds, "{name:?} {word:?}");
            assert_eq!(
                fast.unwrap_or(NameFit::Anywhere),
                folded_fit(&name, &word),
                "{:?} {:?}",
                String::from_utf8_lossy(&name),
                String::from_utf8_lossy(&word)
            );
        }
    }

    /// With several words, a path where a word is a whole folder name
    /// (or one without its version) ranks above one where it is not, and a
    /// folder whose name alone holds the words below the file in it that
    /// spells them apart.
    #[test]
    fn words_that_are_whole_folder_names_count() {
        use crate::store::Meta;
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
        let dir =
            |s: &mut Store, at, name: &[u8]| s.insert_new(at, name, Kind::Dir, Meta::default());
        let file =
            |s: &mut Store, at, name: &[u8]| s.insert_new(at, name, Kind::File, Meta::default());
        let deep = dir(&mut s, root, b"authlib");
        let rfc = dir(&mut s, deep, b"rfc7519");
        let want = file(&mut s, rfc, b"claims.pyi");
        let near = dir(&mut s, root, b"_rfc7519");
        let other = file(&mut s, near, b"claims.py");
        let oauth = dir(&mut s, deep, b"oauth2");
        let auth = file(&mut s, oauth, b"auth.pyi");
        let versioned = dir(&mut s, root, b"rustix-1.1.6");
        let m = file(&mut s, versioned, b"mod.rs");
        let plain = dir(&mut s, root, b"rustix_like");
        let m2 = file(&mut s, plain, b"mod.rs");
        let f1 = dir(&mut s, deep, b"functions");
        let twice = file(&mut s, f1, b"functions.py");
        let once = file(&mut s, root, b"functions.py");
        let mut buf = Vec::new();
        let rank = |words: &[&str], a, b, buf: &mut Vec<u8>| {
            let r = Ranker::new(
                words.iter().map(|w| w.as_bytes().to_vec()).collect(),
                0,
                None,
            );
            let mut p = Places::default();
            let (ra, rb) = (r.rank(&s, a, &mut p, buf), r.rank(&s, b, &mut p, buf));
            ra.cmp(&rb)
        };
        use std::cmp::Ordering::{Greater, Less};
        assert_eq!(rank(&["rfc7519", "claims"], want, other, &mut buf), Less);
        assert_eq!(rank(&["oauth2", "auth"], auth, oauth, &mut buf), Less);
        assert_eq!(rank(&["rustix", "mod"], m, m2, &mut buf), Less);
        // One word: the name answers it, folders do not count (the shallower
        // `claims.py` first, as before).
        assert_eq!(rank(&["claims"], want, other, &mut buf), Greater);
        // A word the name is counts once: `functions/functions.py` is not
        // lifted above a shallower `functions.py` by its folder, but a word
        // typed twice is looked for twice.
        assert_eq!(rank(&["functions", "site"], once, twice, &mut buf), Less);
        assert_eq!(rank(&["functions", "functions"], twice, f1, &mut buf), Less);
        let r = Ranker::new(vec![b"a".to_vec(), b"b".to_vec()], 0, None);
        assert_eq!(r.folder_words_max(), 2.0 * FOLDER_WORD);
        assert_eq!(
            Ranker::new(vec![b"a".to_vec()], 0, None).folder_words_max(),
            0.0
        );
    }

    /// A file two folders deeper than a folder of the same fit comes first
    /// (its lead outweighs two levels of depth); three folders deeper, the
    /// folder does. A symlink has no lead.
    #[test]
    fn a_file_leads_a_folder_of_the_same_fit() {
        use crate::store::Meta;
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
        let folder = s.insert_new(root, b"status", Kind::Dir, Meta::default());
        let mut parent = root;
        let mut files = Vec::new();
        for level in [b"a" as &[u8], b"b", b"c"] {
            parent = s.insert_new(parent, level, Kind::Dir, Meta::default());
            files.push(s.insert_new(parent, b"stat.rs", Kind::File, Meta::default()));
        }
        // Long unchanged: recency adds nothing.
        let r = Ranker::new(vec![b"sta".to_vec()], 100 * 86_400, None);
        let (mut buf, mut p) = (Vec::new(), Places::default());
        let dir = r.rank(&s, folder, &mut p, &mut buf);
        let ranked: Vec<Relevance> = files
            .iter()
            .map(|&f| r.rank(&s, f, &mut p, &mut buf))
            .collect();
        assert!(ranked.iter().all(|f| f.fit == dir.fit));
        assert_eq!(ranked[0].cmp(&dir), std::cmp::Ordering::Less);
        assert_eq!(ranked[1].cmp(&dir), std::cmp::Ordering::Less);
        assert_eq!(dir.cmp(&ranked[2]), std::cmp::Ordering::Less);
        let link = s.insert_new(root, b"stat_link", Kind::Symlink, Meta::default());
        let linked = r.rank(&s, link, &mut p, &mut buf);
        assert_eq!(dir.cmp(&linked), std::cmp::Ordering::Less);
    }

    /// The classes are the order written out: a name's start before the
    /// generated folders, they before the other fits; each its own score.
    #[test]
    fn the_classes_spell_the_order() {
        let fits = [
            NameFit::Exact,
            NameFit::Prefix,
            NameFit::Boundary,
            NameFit::Anywhere,
        ];
        let mut all: Vec<Relevance> = fits
            .iter()
            .flat_map(|&fit| {
                [(false, false), (true, false), (true, true)].map(|(generated, built)| Relevance {
                    fit,
                    generated,
                    built,
                    bonus: 0.0,
                })
            })
            .collect();
        all.sort_by(Relevance::cmp);
        let spelled: Vec<(NameFit, bool, bool)> =
            all.iter().map(|r| (r.fit, r.generated, r.built)).collect();
        assert_eq!(
            spelled,
            [
                (NameFit::Exact, false, false),
                (NameFit::Exact, true, false),
                (NameFit::Prefix, false, false),
                (NameFit::Prefix, true, false),
                (NameFit::Boundary, false, false),
                (NameFit::Anywhere, false, false),
                (NameFit::Boundary, true, false),
                (NameFit::Anywhere, true, false),
                (NameFit::Exact, true, true),
                (NameFit::Prefix, true, true),
                (NameFit::Boundary, true, true),
                (NameFit::Anywhere, true, true),
            ]
        );
        let classes: Vec<usize> = all.iter().map(Relevance::class).collect();
        assert_eq!(classes, (0..12).collect::<Vec<_>>());
        assert!(all.iter().all(|r| r.leads() == (r.class() < 4)));
        assert!(all.windows(2).all(|w| w[0].score() - w[1].score() >= 100.0));
    }

    /// In a vendored tree a tool's output ranks below the sources it was made
    /// from, though both are generated and the copy lies nearer the root.
    #[test]
    fn a_tools_output_ranks_below_vendored_sources() {
        use crate::store::Meta;
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
        let cache = s.insert_new(root, b"__pycache__", Kind::Dir, Meta::default());
        let pyc = s.insert_new(
            cache,
            b"egg_info.cpython-311.pyc",
            Kind::File,
            Meta::default(),
        );
        let mut at = s.insert_new(root, b"site-packages", Kind::Dir, Meta::default());
        for name in [&b"setuptools"[..], b"command"] {
            at = s.insert_new(at, name, Kind::Dir, Meta::default());
        }
        let source = s.insert_new(at, b"egg_info.py", Kind::File, Meta::default());
        for word in [&b"egg_info"[..], b"egg"] {
            let r = Ranker::new(vec![word.to_vec()], 100 * 86_400, None);
            let (mut buf, mut p) = (Vec::new(), Places::default());
            let (built, vendored) = (
                r.rank(&s, pyc, &mut p, &mut buf),
                r.rank(&s, source, &mut p, &mut buf),
            );
            assert!(built.generated && vendored.generated && built.built && !vendored.built);
            assert_eq!(built.fit, vendored.fit);
            assert_eq!(vendored.cmp(&built), std::cmp::Ordering::Less);
            assert!(!built.leads());
            // Two folder levels nearer the root: a higher bonus, and still after.
            let fresh = r.rank(&s, pyc, &mut Places::default(), &mut buf);
            assert!((fresh.bonus - built.bonus).abs() < 1e-4);
            assert!(
                (built.bonus - (vendored.bonus + 2.0 * 1.5 + 8.0 / 40.0)).abs() < 1e-4,
                "{} {}",
                built.bonus,
                vendored.bonus
            );
        }
    }

    /// The remembered places agree with climbing each entry's ancestors, and a
    /// use recorded under an entry's shown path reaches that entry.
    #[test]
    fn places_and_uses() {
        use crate::store::Meta;
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
        let src = s.insert_new(root, b"src", Kind::Dir, Meta::default());
        let nm = s.insert_new(src, b"node_modules", Kind::Dir, Meta::default());
        let deep = s.insert_new(nm, b"pkg", Kind::Dir, Meta::default());
        let a = s.insert_new(deep, b"report.txt", Kind::File, Meta::default());
        let b = s.insert_new(src, b"report.md", Kind::File, Meta::default());
        let c = s.insert_new(root, b"report.rs", Kind::File, Meta::default());
        let d = s.insert_new(src, b"my_report.md", Kind::File, Meta::default());
        let mut uses = Uses::default();
        uses.record("src/report.md", 5.0, 0);
        let mut r = Ranker::new(vec![b"report".to_vec()], 0, Some(&uses));
        let (mut buf, mut p) = (Vec::new(), Places::default());
        // Ranked twice: the second time from remembered places, and with the
        // uses resolved to entries instead of looked up by path.
        for round in 0..2 {
            if round == 1 {
                r.prepare(&s, usize::MAX);
                assert_eq!(r.used.as_ref().map(HashMap::len), Some(1));
            }
            let (ra, rb, rc) = (
                r.rank(&s, a, &mut p, &mut buf),
                r.rank(&s, b, &mut p, &mut buf),
                r.rank(&s, c, &mut p, &mut buf),
            );
            assert!(ra.generated && !rb.generated && !rc.generated);
            // b is one folder deeper than c but used: it comes first.
            assert_eq!(rb.cmp(&rc), std::cmp::Ordering::Less);
            assert_eq!(rc.cmp(&ra), std::cmp::Ordering::Less);
            // The exact name comes first even in a generated folder, then a
            // name starting with the word; within each fit and after them,
            // the folder outside wins.
            let exact = Ranker::new(vec![b"report.txt".to_vec()], 0, None);
            let mut q = Places::default();
            let (ea, eb) = (
                exact.rank(&s, a, &mut q, &mut buf),
                exact.rank(&s, b, &mut q, &mut buf),
            );
            assert!(ea.fit == NameFit::Exact && eb.fit != NameFit::Exact);
            assert_eq!(ea.cmp(&eb), std::cmp::Ordering::Less);
            assert!(ea.leads() && ra.leads());
            let start = Ranker::new(vec![b"rep".to_vec()], 0, None);
            let (sa, sb, sd) = (
                start.rank(&s, a, &mut q, &mut buf),
                start.rank(&s, b, &mut q, &mut buf),
                start.rank(&s, d, &mut q, &mut buf),
            );
            assert_eq!(
                (sa.fit, sb.fit, sd.fit),
                (NameFit::Prefix, NameFit::Prefix, NameFit::Boundary)
            );
            assert!(sa.leads() && sb.leads() && !sd.leads());
            assert_eq!(sb.cmp(&sa), std::cmp::Ordering::Less);
            assert_eq!(sa.cmp(&sd), std::cmp::Ordering::Less);
            assert!(
                sb.score() > sa.score() && sa.score() > sd.score(),
                "{} {} {}",
                sb.score(),
                sa.score(),
                sd.score()
            );
            assert!(ea.score() > eb.score(), "{} {}", ea.score(), eb.score());
            assert!(ra.score() < rb.score());
            let unused = Ranker::new(vec![b"report".to_vec()], 0, None);
            let mut q = Places::default();
            let (ub, uc) = (
                unused.rank(&s, b, &mut q, &mut buf),
                unused.rank(&s, c, &mut q, &mut buf),
            );
            assert_eq!(uc.cmp(&ub), std::cmp::Ordering::Less);
            // A file (its lead) modified now (+3), depth 3, path
            // `src/node_modules/pkg/report.txt` (31 bytes).
            assert!(
                (ra.bonus - (FILE_LEAD + 3.0 - 3.0 * 1.5 - 31.0 / 40.0)).abs() < 1e-4,
                "{}",
                ra.bonus
            );
        }
    }

    /// Past the map's bound the places move to the table by slot, and every
    /// rank stays what a fresh climb gives.
    #[test]
    fn places_past_the_map_agree_with_fresh_climbs() {
        use crate::store::Meta;
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
        let mut files = Vec::new();
        let mut parent = root;
        for i in 0..(SPARSE_MAX + 500) {
            // Chains of ten, some under a generated folder.
            if i % 10 == 0 {
                let top = if i % 30 == 0 {
                    &b"vendor"[..]
                } else {
                    &b"src"[..]
                };
                parent = s.insert_new(
                    root,
                    format!("{}{i}", String::from_utf8_lossy(top)).as_bytes(),
                    Kind::Dir,
                    Meta::default(),
                );
                if i % 30 == 0 {
                    parent = s.insert_new(parent, b"vendor", Kind::Dir, Meta::default());
                }
            }
            parent = s.insert_new(
                parent,
                format!("d{i}").as_bytes(),
                Kind::Dir,
                Meta::default(),
            );
            files.push(s.insert_new(
                parent,
                format!("report{i}.txt").as_bytes(),
                Kind::File,
                Meta::default(),
            ));
        }
        let r = Ranker::new(vec![b"report".to_vec()], 0, None);
        let (mut shared, mut buf) = (Places::default(), Vec::new());
        for &f in &files {
            let once = r.rank(&s, f, &mut shared, &mut buf);
            let fresh = r.rank(&s, f, &mut Places::default(), &mut buf);
            assert_eq!((once.generated, once.fit), (fresh.generated, fresh.fit));
            assert!((once.bonus - fresh.bonus).abs() < 1e-4);
        }
        assert!(!shared.dense.is_empty(), "the table was reached");
    }
}
