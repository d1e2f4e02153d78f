//! The compiled query and its evaluator.

use crate::ast::DateField;
use crate::compile::{Compiler, Ctx};
use crate::error::{Limit, PError};
use crate::node::{ExtSet, NameMatch, Node, PathMatch, and_nodes, extension, not_node};
use crate::parser::{fix_example, parse_raw};
use crate::text::{fold_case, fold_into, give_buf, take_buf};
use crate::{Clock, Entry, Kind, Options, QueryError};

/// A compiled query: immutable, `Send + Sync`, cheap to evaluate on millions of
/// entries. Build it with [`Query::compile`]; combine with [`Query::and`] and
/// [`Query::negate`].
#[derive(Debug, Clone)]
pub struct Query {
    root: Node,
}

impl Default for Query {
    fn default() -> Self {
        Query::match_all()
    }
}

impl ExtSet {
    fn is_match<E: Entry + ?Sized>(&self, cx: &mut Cx<'_, E>) -> bool {
        let name = cx.e.name();
        let Some(ext) = extension(name) else {
            return self.none;
        };
        if !self.plain.is_empty() {
            let mut stack = [0u8; 32];
            let found = if ext.is_ascii() && self.plain.len() <= 8 {
                // Few extensions (`ext:rs;toml`): compare in place.
                self.plain
                    .iter()
                    .any(|p| p.len() == ext.len() && ext.eq_ignore_ascii_case(p))
            } else if ext.is_ascii() && ext.len() <= stack.len() {
                let buf = &mut stack[..ext.len()];
                buf.copy_from_slice(ext);
                buf.make_ascii_lowercase();
                self.plain.binary_search_by(|p| (**p).cmp(buf)).is_ok()
            } else {
                let folded = fold_case(ext);
                self.plain
                    .binary_search_by(|p| (**p).cmp(folded.as_ref()))
                    .is_ok()
            };
            if found {
                return true;
            }
        }
        if !self.dotted.is_empty() {
            let folded = cx.folded_name();
            return self
                .dotted
                .iter()
                .any(|d| folded.len() > d.len() && folded.ends_with(d));
        }
        false
    }
}

/// Per-entry evaluation state: folded name and path are computed at most once, into
/// reused buffers.
struct Cx<'e, E: Entry + ?Sized> {
    e: &'e E,
    name_fold: Option<Vec<u8>>,
    /// `"/" + rel_path`, plus `/` for folders other than the root.
    path: Option<Vec<u8>>,
    path_fold: Option<Vec<u8>>,
    dir_slash: bool,
    /// Literal and glob tests made in place on the ASCII name so far.
    tests: u8,
}

impl<'e, E: Entry + ?Sized> Cx<'e, E> {
    fn new(e: &'e E) -> Self {
        Cx {
            e,
            name_fold: None,
            path: None,
            path_fold: None,
            dir_slash: false,
            tests: 0,
        }
    }

    fn folded_name(&mut self) -> &[u8] {
        let e = self.e;
        self.name_fold.get_or_insert_with(|| {
            let mut b = take_buf();
            fold_into(e.name(), &mut b);
            b
        })
    }

    fn ensure_path(&mut self) {
        if self.path.is_none() {
            let rel = self.e.rel_path();
            let mut b = take_buf();
            b.push(b'/');
            b.extend_from_slice(&rel);
            if !rel.is_empty() && self.e.kind() == Kind::Dir {
                b.push(b'/');
                self.dir_slash = true;
            }
            self.path = Some(b);
        }
    }

    /// The decorated path (see [`PathMatch::Literal`]), folded or not.
    fn path(&mut self, fold: bool) -> &[u8] {
        self.ensure_path();
        let raw = self.path.as_deref().unwrap_or_default();
        if !fold {
            return raw;
        }
        self.path_fold.get_or_insert_with(|| {
            let mut b = take_buf();
            fold_into(raw, &mut b);
            b
        })
    }

    /// The decorated path without the folder's trailing `/`.
    fn path_trimmed(&mut self, fold: bool) -> &[u8] {
        self.ensure_path();
        let cut = usize::from(self.dir_slash);
        let p = self.path(fold);
        &p[..p.len() - cut]
    }

    /// `rel_path` as the entry gave it.
    fn rel(&mut self) -> &[u8] {
        self.ensure_path();
        let cut = usize::from(self.dir_slash);
        let p = self.path.as_deref().unwrap_or_default();
        &p[1.min(p.len())..p.len() - cut]
    }
}

impl<E: Entry + ?Sized> Drop for Cx<'_, E> {
    fn drop(&mut self) {
        for b in [
            self.name_fold.take(),
            self.path.take(),
            self.path_fold.take(),
        ]
        .into_iter()
        .flatten()
        {
            give_buf(b);
        }
    }
}

/// Literal and glob tests an entry's ASCII name gets in place before it is
/// folded for the rest (folding costs more than a few tests of a short name).
const IN_PLACE_TESTS: u8 = 3;

fn name_len(name: &[u8]) -> u64 {
    // Characters = bytes that are not UTF-8 continuation bytes.
    name.iter().filter(|&&b| b & 0xc0 != 0x80).count() as u64
}

fn eval<E: Entry + ?Sized>(node: &Node, cx: &mut Cx<'_, E>) -> bool {
    match node {
        Node::Const(b) => *b,
        Node::And(v) => v.iter().all(|n| eval(n, cx)),
        Node::Or(v) => v.iter().any(|n| eval(n, cx)),
        Node::Not(n) => !eval(n, cx),
        Node::Kind(k) => cx.e.kind() == *k,
        Node::Ext(set) => set.is_match(cx),
        Node::Size(iv) => cx.e.kind() != Kind::Dir && iv.contains(cx.e.size()),
        Node::Time(field, iv) => match field {
            DateField::Modified => cx.e.modified(),
            DateField::Created => cx.e.created(),
        }
        .is_some_and(|t| iv.contains(t)),
        Node::Depth(iv) => iv.contains(u64::from(cx.e.depth())),
        Node::Len(iv) => iv.contains(name_len(cx.e.name())),
        Node::Hidden => cx.e.name().first() == Some(&b'.'),
        Node::ReadOnly => cx.e.mode() & 0o222 == 0,
        Node::Exec => cx.e.kind() == Kind::File && cx.e.mode() & 0o111 != 0,
        Node::Empty => match cx.e.kind() {
            Kind::File => cx.e.size() == 0,
            Kind::Dir => {
                let mut any = false;
                cx.e.for_each_child(&mut |_, _| {
                    any = true;
                    false
                });
                !any
            }
            Kind::Symlink | Kind::Other => false,
        },
        // Case-insensitive tests on ASCII text compare in place (the fast path);
        // other text is folded once into a reused buffer. So are ASCII names
        // after an entry's first few literal or glob tests: one fold, then
        // each term's `memmem` finder, instead of a comparison at every place
        // its first byte occurs, for every term (hundreds of ORed terms on
        // long names).
        Node::Name(m) => {
            let name = cx.e.name();
            match m {
                NameMatch::Literal { lit, fold: true } if name.is_ascii() => {
                    if cx.name_fold.is_some() || cx.tests >= IN_PLACE_TESTS {
                        lit.is_match(cx.folded_name())
                    } else {
                        cx.tests += 1;
                        lit.is_match_ascii_ci(name)
                    }
                }
                NameMatch::Literal { lit, fold: true } => lit.is_match(cx.folded_name()),
                NameMatch::Literal { lit, fold: false } => lit.is_match(name),
                NameMatch::Glob { glob, fold: true } if name.is_ascii() => {
                    if cx.name_fold.is_some() || cx.tests >= IN_PLACE_TESTS {
                        glob.is_match(cx.folded_name())
                    } else {
                        cx.tests += 1;
                        glob.is_match_ascii_ci(name)
                    }
                }
                NameMatch::Glob { glob, fold: true } => glob.is_match(cx.folded_name()),
                NameMatch::Glob { glob, fold: false } => glob.is_match(name),
                NameMatch::Regex(re) => re.is_match(name),
            }
        }
        Node::Path(m) => match m {
            PathMatch::Literal { lit, fold, trim } => {
                let raw = if *trim {
                    cx.path_trimmed(false)
                } else {
                    cx.path(false)
                };
                if !*fold {
                    lit.is_match(raw)
                } else if raw.is_ascii() {
                    lit.is_match_ascii_ci(raw)
                } else if *trim {
                    lit.is_match(cx.path_trimmed(true))
                } else {
                    lit.is_match(cx.path(true))
                }
            }
            PathMatch::Regex(re) => re.is_match(cx.rel()),
        },
        Node::Parent(f) => {
            if u64::from(cx.e.depth()) != u64::from(f.components) + 1 {
                return false;
            }
            let raw = cx.path_trimmed(false);
            if f.fold && !raw.is_ascii() {
                let p = cx.path_trimmed(true);
                let cut = memchr::memrchr(b'/', p).unwrap_or(0);
                return p[..cut] == f.prefix[..];
            }
            let cut = memchr::memrchr(b'/', raw).unwrap_or(0);
            if f.fold {
                raw[..cut].eq_ignore_ascii_case(&f.prefix)
            } else {
                raw[..cut] == f.prefix[..]
            }
        }
        Node::Under(f) => {
            if cx.e.depth() <= f.components {
                return false;
            }
            let raw = cx.path(false);
            let n = f.prefix.len();
            if !f.fold {
                raw.starts_with(&f.prefix)
            } else if raw.is_ascii() {
                raw.len() >= n && raw[..n].eq_ignore_ascii_case(&f.prefix)
            } else {
                cx.path(true).starts_with(&f.prefix)
            }
        }
        Node::Child(m) => {
            if cx.e.kind() != Kind::Dir {
                return false;
            }
            let mut found = false;
            let mut buf = take_buf();
            cx.e.for_each_child(&mut |name, _| {
                found = child_matches(m, name, &mut buf);
                !found
            });
            give_buf(buf);
            found
        }
    }
}

/// Whether an `Or` is the two forms of one term typed as paths are shown
/// (`caf%E9.txt`, `in:d%FF`: as written, then as the bytes its escaped names
/// stand for, which are not UTF-8), not an `|` the query wrote.
fn escaped_forms(v: &[Node]) -> bool {
    fn bytes(n: &Node) -> Option<&[u8]> {
        match n {
            Node::Name(NameMatch::Literal { lit, .. })
            | Node::Path(PathMatch::Literal { lit, .. }) => Some(lit.needle()),
            Node::Parent(f) | Node::Under(f) => Some(&f.prefix),
            _ => None,
        }
    }
    match v {
        [written, raw] => {
            std::mem::discriminant(written) == std::mem::discriminant(raw)
                && bytes(written).is_some_and(|w| std::str::from_utf8(w).is_ok())
                && bytes(raw).is_some_and(|r| std::str::from_utf8(r).is_err())
        }
        _ => false,
    }
}

fn child_matches(m: &NameMatch, name: &[u8], buf: &mut Vec<u8>) -> bool {
    let folded = |buf: &mut Vec<u8>| {
        buf.clear();
        fold_into(name, buf);
    };
    match m {
        NameMatch::Literal { lit, fold: true } if name.is_ascii() => lit.is_match_ascii_ci(name),
        NameMatch::Literal { lit, fold: true } => {
            folded(buf);
            lit.is_match(buf)
        }
        NameMatch::Literal { lit, fold: false } => lit.is_match(name),
        NameMatch::Glob { glob, fold: true } if name.is_ascii() => glob.is_match_ascii_ci(name),
        NameMatch::Glob { glob, fold: true } => {
            folded(buf);
            glob.is_match(buf)
        }
        NameMatch::Glob { glob, fold: false } => glob.is_match(name),
        NameMatch::Regex(re) => re.is_match(name),
    }
}

/// Whether a node depends on nothing but the entry's name.
fn name_only(n: &Node) -> bool {
    match n {
        Node::Const(_) | Node::Name(_) | Node::Ext(_) | Node::Len(_) | Node::Hidden => true,
        Node::Not(n) => name_only(n),
        Node::And(v) | Node::Or(v) => v.iter().all(name_only),
        _ => false,
    }
}

/// A bare name, for [`Query::matches_name`].
struct NameOnly<'a>(&'a [u8]);

impl Entry for NameOnly<'_> {
    fn name(&self) -> &[u8] {
        self.0
    }
    fn rel_path(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(self.0)
    }
    fn kind(&self) -> Kind {
        Kind::File
    }
    fn size(&self) -> u64 {
        0
    }
    fn modified(&self) -> Option<i64> {
        None
    }
    fn created(&self) -> Option<i64> {
        None
    }
    fn mode(&self) -> u32 {
        0o644
    }
    fn depth(&self) -> u32 {
        1
    }
    fn for_each_child(&self, _: &mut dyn FnMut(&[u8], Kind) -> bool) {}
}

/// A range term of a query, as [`Query::ranges`] reports it (bounds inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// `size:`: entries other than folders whose size lies in `lo..=hi` bytes.
    Size {
        /// Smallest size, bytes.
        lo: u64,
        /// Largest size, bytes.
        hi: u64,
    },
    /// `dm:`: entries modified within `lo..=hi` (Unix seconds).
    Modified {
        /// Earliest, Unix seconds.
        lo: i64,
        /// Latest, Unix seconds.
        hi: i64,
    },
}

impl Query {
    /// Parses and compiles `query`. `options` are the defaults for plain terms (the
    /// search tool's `match_case`, `whole_word`, `regex`, `match_path`); `clock` gives
    /// "now" and the time zone for dates. An empty query matches everything.
    ///
    /// Errors carry the position and a corrected query that compiles with the same
    /// options. `content:` is an error here (the grep engine answers it), and so are
    /// `dupe:` and `sizedupe:` (not supported yet).
    pub fn compile(query: &str, options: &Options, clock: &Clock) -> Result<Query, QueryError> {
        let run = |q: &str| {
            let ast = parse_raw(q)?;
            let chars: Vec<char> = q.chars().collect();
            Compiler {
                chars: &chars,
                clock,
                regexes: std::cell::Cell::new(0),
            }
            .node(&ast, Ctx::from_options(options))
        };
        match run(query) {
            Ok(root) => Ok(Query { root }),
            Err(e) => Err(fix_example(e, |q| run(q).map(|_| ()))),
        }
    }

    /// Whether `entry` matches. Allocates nothing once the thread's buffers are warm;
    /// calls [`Entry::rel_path`] only when a term needs the path (at most once).
    pub fn matches<E: Entry + ?Sized>(&self, entry: &E) -> bool {
        let mut cx = Cx::new(entry);
        eval(&self.root, &mut cx)
    }

    /// Both this query and `other` (the search tool's `exclude`, `kind` and `path`).
    pub fn and(self, other: Query) -> Query {
        Query {
            root: and_nodes(vec![self.root, other.root]),
        }
    }

    /// Whether a query put together with [`Query::and`] (a search's query, its
    /// `exclude`s, its kind) still keeps within [`Limit::Terms`] and
    /// [`Limit::Regexes`], which each part kept on its own. The error names
    /// the limit; its position is 0 (no one text holds every part).
    pub fn check_limits(&self) -> Result<(), QueryError> {
        fn walk(n: &Node, terms: &mut usize, regexes: &mut usize) {
            match n {
                Node::Const(_) => {}
                Node::And(v) | Node::Or(v) => v.iter().for_each(|n| walk(n, terms, regexes)),
                Node::Not(n) => walk(n, terms, regexes),
                Node::Name(NameMatch::Regex(_))
                | Node::Child(NameMatch::Regex(_))
                | Node::Path(PathMatch::Regex(_)) => {
                    *terms += 1;
                    *regexes += 1;
                }
                _ => *terms += 1,
            }
        }
        let (mut terms, mut regexes) = (0, 0);
        walk(&self.root, &mut terms, &mut regexes);
        let past = |limit: Limit, n: usize| {
            let e = PError::limit(
                limit,
                &format!("{n} {} in all its parts", limit.name()),
                0,
                "ext:rs|toml",
            );
            Err(e.err)
        };
        if terms > Limit::Terms.max() {
            return past(Limit::Terms, terms);
        }
        if regexes > Limit::Regexes.max() {
            return past(Limit::Regexes, regexes);
        }
        Ok(())
    }

    /// Exactly the entries this query does not match.
    pub fn negate(self) -> Query {
        Query {
            root: not_node(self.root),
        }
    }

    /// A query that matches every entry (what the empty query compiles to).
    pub fn match_all() -> Query {
        Query {
            root: Node::Const(true),
        }
    }

    /// True when evaluating may call [`Entry::rel_path`] (path terms, `parent:`,
    /// `in:`), so the index can skip building paths otherwise.
    pub fn needs_path(&self) -> bool {
        fn walk(n: &Node) -> bool {
            match n {
                Node::Path(_) | Node::Parent(_) | Node::Under(_) => true,
                Node::And(v) | Node::Or(v) => v.iter().any(walk),
                Node::Not(n) => walk(n),
                _ => false,
            }
        }
        walk(&self.root)
    }

    /// Byte strings that every matching entry's name contains once case-folded with
    /// [`crate::fold_case`] (ASCII lowercase for ASCII names), taken from the
    /// top-level AND: plain name terms that are not negated, the literal pieces of
    /// wildcard terms (`report-??.txt` gives `report-` and `.txt`), and `.ext` for an
    /// `ext:` with a single extension. Regex, path and OR-ed terms give nothing. An
    /// empty `Vec` is always a correct answer; every literal returned is a necessary
    /// condition (checked by a property test), never a guess.
    ///
    /// Intended use: scan a lowercase copy of all names for the longest literal
    /// (`memchr::memmem`), and call [`Query::matches`] only on the hits; names that are
    /// not ASCII should be folded with [`crate::fold_case`] or simply always checked.
    ///
    /// Why it pays (no benchmark here, just the arithmetic): `matches` costs a few
    /// tens of nanoseconds per entry even on the fast path (a virtual call or two, a
    /// cache miss on the name), while a `memmem` scan over one contiguous arena of
    /// names runs at several GB/s, i.e. a few nanoseconds per entry, and a selective
    /// literal leaves `matches` to a small fraction of the entries.
    pub fn required_name_literals(&self) -> Vec<Vec<u8>> {
        fn walk(n: &Node, out: &mut Vec<Vec<u8>>) {
            match n {
                Node::And(v) => v.iter().for_each(|n| walk(n, out)),
                Node::Name(NameMatch::Literal { lit, fold }) => {
                    let l = lit.needle();
                    out.push(if *fold {
                        l.to_vec()
                    } else {
                        fold_case(l).into_owned()
                    });
                }
                Node::Name(NameMatch::Glob { glob, fold }) => {
                    for l in glob.literals() {
                        out.push(if *fold {
                            l.to_vec()
                        } else {
                            fold_case(l).into_owned()
                        });
                    }
                }
                Node::Ext(set) if !set.none && set.plain.len() + set.dotted.len() == 1 => {
                    if let Some(p) = set.plain.first() {
                        let mut l = vec![b'.'];
                        l.extend_from_slice(p);
                        out.push(l);
                    } else if let Some(d) = set.dotted.first() {
                        out.push(d.to_vec());
                    }
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut out);
        out.retain(|l| !l.is_empty());
        out.sort();
        out.dedup();
        out
    }

    /// Lowercased byte strings that `"/" + rel_path` of EVERY matching entry must
    /// contain (plus a trailing `/` for folders): the path literals and the
    /// `parent:`/`in:` folders of the top-level AND. The index splits them at `/`:
    /// each piece then lies inside one path component, so the entries whose own name
    /// holds a piece, and everything below such folders, are the only candidates.
    /// An empty Vec is always correct.
    pub fn required_path_literals(&self) -> Vec<Vec<u8>> {
        fn folded(bytes: &[u8], already: bool) -> Vec<u8> {
            if already {
                bytes.to_vec()
            } else {
                fold_case(bytes).into_owned()
            }
        }
        fn literal(n: &Node) -> Option<Vec<u8>> {
            match n {
                Node::Path(PathMatch::Literal { lit, fold, .. }) => {
                    Some(folded(lit.needle(), *fold))
                }
                Node::Parent(f) | Node::Under(f) => Some(folded(&f.prefix, f.fold)),
                _ => None,
            }
        }
        fn walk(n: &Node, out: &mut Vec<Vec<u8>>) {
            match n {
                Node::And(v) => v.iter().for_each(|n| walk(n, out)),
                // A path or folder typed as shown with escaped names
                // (`d%FF/inner`, `in:d%FF`) is each of its forms: the
                // `/`-free pieces of the first that every form holds.
                Node::Or(v) if escaped_forms(v) => {
                    let Some(forms) = v.iter().map(literal).collect::<Option<Vec<_>>>() else {
                        return;
                    };
                    let Some((first, others)) = forms.split_first() else {
                        return;
                    };
                    out.extend(
                        first
                            .split(|&b| b == b'/')
                            .filter(|p| !p.is_empty())
                            .filter(|p| others.iter().all(|o| memchr::memmem::find(o, p).is_some()))
                            .map(<[u8]>::to_vec),
                    );
                }
                n => out.extend(literal(n)),
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut out);
        out.retain(|l| l.iter().any(|&b| b != b'/'));
        out.sort();
        out.dedup();
        out
    }

    /// Whether this query matches every entry (the empty query, or one that folded
    /// to a constant).
    pub fn is_match_all(&self) -> bool {
        matches!(self.root, Node::Const(true))
    }

    /// Whether this query matches no entry at all.
    pub fn is_match_none(&self) -> bool {
        matches!(self.root, Node::Const(false))
    }

    /// Splits the top-level AND into the terms that depend on the entry's name
    /// alone (plain and wildcard name terms, `ext:`, `len:`, hidden, regexes on the
    /// name, and any `|`/`!` of those) and everything else: `(name, rest)`, with
    /// `name.and(rest)` equivalent to `self`. Either part may be
    /// [`Query::is_match_all`].
    ///
    /// An index that stores each distinct name once evaluates `name` once per
    /// distinct name (with [`Query::matches_name`]) instead of once per entry.
    pub fn split_name_terms(&self) -> (Query, Query) {
        let conjuncts: Vec<Node> = match &self.root {
            Node::And(v) => v.clone(),
            n => vec![n.clone()],
        };
        let (name, rest): (Vec<Node>, Vec<Node>) = conjuncts.into_iter().partition(name_only);
        (
            Query {
                root: and_nodes(name),
            },
            Query {
                root: and_nodes(rest),
            },
        )
    }

    /// Evaluates a query made of name terms only (the first half of
    /// [`Query::split_name_terms`]) on a bare name. Terms that need more than the
    /// name see a regular file of size 0 with no times.
    pub fn matches_name(&self, name: &[u8]) -> bool {
        self.matches(&NameOnly(name))
    }

    /// The ranges of the top-level AND that a sorted order can answer, each with
    /// the position of its term among the top-level conjuncts (for
    /// [`Query::without_conjunct`]). Negated ranges are not reported.
    pub fn ranges(&self) -> Vec<(usize, Range)> {
        let conjuncts: &[Node] = match &self.root {
            Node::And(v) => v,
            n => std::slice::from_ref(n),
        };
        conjuncts
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let r = match n {
                    Node::Size(iv) if !iv.negate && iv.lo <= iv.hi => Range::Size {
                        lo: iv.lo,
                        hi: iv.hi,
                    },
                    Node::Time(DateField::Modified, iv) if !iv.negate && iv.lo <= iv.hi => {
                        Range::Modified {
                            lo: iv.lo,
                            hi: iv.hi,
                        }
                    }
                    _ => return None,
                };
                Some((i, r))
            })
            .collect()
    }

    /// This query without top-level conjunct number `index` (as numbered by
    /// [`Query::ranges`]): what is left to check on the entries of a range.
    pub fn without_conjunct(&self, index: usize) -> Query {
        match &self.root {
            Node::And(v) => Query {
                root: and_nodes(
                    v.iter()
                        .enumerate()
                        .filter(|&(i, _)| i != index)
                        .map(|(_, n)| n.clone())
                        .collect(),
                ),
            },
            _ if index == 0 => Query::match_all(),
            _ => self.clone(),
        }
    }

    /// When this query is nothing but one case-insensitive substring of the name
    /// (the plainest and commonest search), that substring, folded: an index
    /// may then test names with a substring search of its own.
    pub fn plain_name_literal(&self) -> Option<&[u8]> {
        match &self.root {
            Node::Name(NameMatch::Literal { lit, fold: true }) if lit.holds_in_any_extension() => {
                Some(lit.needle())
            }
            _ => None,
        }
    }

    /// The words a relevance order measures names against: the folded needles
    /// of the top-level AND's plain name terms, and the last component of its
    /// path terms (`src/main` gives `main`).
    pub fn name_words(&self) -> Vec<Vec<u8>> {
        let conjuncts: &[Node] = match &self.root {
            Node::And(v) => v,
            n => std::slice::from_ref(n),
        };
        let mut out = Vec::new();
        for n in conjuncts {
            // A name or a path typed as shown with escaped names
            // (`caf%E9.txt`, `d%FF/inner`) is measured as typed: its first form.
            let n = match n {
                Node::Or(v) if escaped_forms(v) => &v[0],
                n => n,
            };
            match n {
                Node::Name(NameMatch::Literal { lit, fold }) => out.push(if *fold {
                    lit.needle().to_vec()
                } else {
                    fold_case(lit.needle()).into_owned()
                }),
                Node::Path(PathMatch::Literal { lit, .. }) => {
                    if let Some(last) = lit.needle().rsplit(|&b| b == b'/').find(|p| !p.is_empty())
                    {
                        out.push(fold_case(last).into_owned());
                    }
                }
                _ => {}
            }
        }
        out.retain(|w| !w.is_empty());
        out
    }

    /// Whether this query is nothing but one `ext:` list (or extension group)
    /// of plain extensions: then the entries whose folded extension is one of
    /// [`Query::required_extensions`] are exactly its matches.
    pub fn is_extension_list(&self) -> bool {
        matches!(&self.root, Node::Ext(set) if !set.none && set.dotted.is_empty() && !set.plain.is_empty())
    }

    /// This query for entries whose decorated path (`"/" + rel_path`, with a `/`
    /// after folders) starts with `prefix`, such as everything below one folder
    /// (its decorated path): top-level path substring terms that `prefix`
    /// already contains are dropped, since every such entry contains them too.
    pub fn assuming_path_prefix(&self, prefix: &[u8]) -> Query {
        let conjuncts: Vec<Node> = match &self.root {
            Node::And(v) => v.clone(),
            n => vec![n.clone()],
        };
        let mut folded: Option<Vec<u8>> = None;
        let kept = conjuncts
            .into_iter()
            .filter(|n| match n {
                Node::Path(PathMatch::Literal {
                    lit,
                    fold,
                    trim: false,
                }) if lit.holds_in_any_extension() => {
                    let hay: &[u8] = if *fold {
                        folded.get_or_insert_with(|| fold_case(prefix).into_owned())
                    } else {
                        prefix
                    };
                    !lit.is_match(hay)
                }
                _ => true,
            })
            .collect();
        Query {
            root: and_nodes(kept),
        }
    }

    /// The extensions (folded, without the dot) that every match's name must end
    /// with, when the top-level AND holds an `ext:` list (or an extension group
    /// such as `pic:`) without multi-part extensions. An index can answer such a
    /// term from per-extension lists.
    pub fn required_extensions(&self) -> Option<Vec<Vec<u8>>> {
        let conjuncts: &[Node] = match &self.root {
            Node::And(v) => v,
            n => std::slice::from_ref(n),
        };
        conjuncts.iter().find_map(|n| match n {
            Node::Ext(set) if !set.none && set.dotted.is_empty() && !set.plain.is_empty() => {
                Some(set.plain.iter().map(|p| p.to_vec()).collect())
            }
            _ => None,
        })
    }

    /// For a query of a name glob (or an AND holding one) that starts with a
    /// literal piece in ASCII (`alpha*`, `ab?*`, `invoice-*.csv`): those
    /// bytes, ASCII lower case, and how many literal pieces the glob holds
    /// in all. Every match's name starts with them once folded, so the
    /// sorted names that do (and those whose fold may) are the only
    /// candidates. (With more pieces, `main_*.rs`, the trigram lists of all
    /// of them may narrow more.)
    pub fn glob_start(&self) -> Option<(Vec<u8>, usize)> {
        let conjuncts: &[Node] = match &self.root {
            Node::And(v) => v,
            n => std::slice::from_ref(n),
        };
        conjuncts.iter().find_map(|n| match n {
            Node::Name(NameMatch::Glob { glob, .. }) => {
                let p = glob.prefix()?;
                p.is_ascii()
                    .then(|| (p.to_ascii_lowercase(), glob.literals().count()))
            }
            _ => None,
        })
    }

    /// The extension (folded, without the dot) after which a name glob of the
    /// top-level AND ends (`h` for `*.h`, `gz` for `*.tar.gz`): every match's
    /// folded name has it as its extension, but for names whose folded form
    /// starts with its only dot (`.h`), which have none. An index can narrow
    /// such a glob by its per-extension lists, then check each name. With
    /// `true` when the query is nothing but `*.EXT`, matching case
    /// (`*.h`): then every name of the list matches, and only those that may
    /// start with the dot need checking.
    pub fn glob_extension(&self) -> Option<(Vec<u8>, bool)> {
        let conjuncts: &[Node] = match &self.root {
            Node::And(v) => v,
            n => std::slice::from_ref(n),
        };
        let exact = |glob: &crate::text::Glob, fold: bool, ext: &[u8]| {
            fold && matches!(&self.root, Node::Name(_))
                && glob.is_star_then_literal()
                && glob
                    .suffix()
                    .is_some_and(|s| s.len() == ext.len() + 1 && s.ends_with(ext))
        };
        conjuncts.iter().find_map(|n| match n {
            Node::Name(NameMatch::Glob { glob, fold }) => {
                let suffix = glob.suffix()?;
                let dot = memchr::memrchr(b'.', suffix)?;
                let ext = &suffix[dot + 1..];
                if ext.is_empty() {
                    return None;
                }
                // A case-sensitive glob's pattern is as typed; the lists are folded.
                let folded = if *fold {
                    ext.to_vec()
                } else {
                    fold_case(ext).into_owned()
                };
                let exact = exact(glob, *fold, ext);
                (!folded.is_empty()).then_some((folded, exact))
            }
            _ => None,
        })
    }

    /// For a query that is nothing but a case-insensitive `*` then ASCII
    /// literal bytes (`*.`, `*_v2`): those bytes, folded. Every name ending
    /// with them (ASCII case aside) matches, and only those: an index can
    /// compare each name's end in place, where the literal is too short for
    /// trigram lists and names no extension.
    pub fn glob_suffix(&self) -> Option<Vec<u8>> {
        match &self.root {
            Node::Name(NameMatch::Glob { glob, fold: true }) if glob.is_star_then_literal() => {
                glob.suffix().filter(|s| s.is_ascii()).map(<[u8]>::to_vec)
            }
            _ => None,
        }
    }

    /// The kind every match must have, when the top-level AND requires one (`file:`,
    /// `folder:`, `type:symlink`, `attrib:D`, `child:` …).
    pub fn kind_restriction(&self) -> Option<Kind> {
        fn walk(n: &Node) -> Option<Kind> {
            match n {
                Node::Kind(k) => Some(*k),
                Node::Exec => Some(Kind::File),
                Node::And(v) => v.iter().find_map(walk),
                _ => None,
            }
        }
        walk(&self.root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::or_nodes;
    use crate::text::Literal;

    #[test]
    fn query_is_send_sync() {
        fn assert<T: Send + Sync + Clone + 'static>() {}
        assert::<Query>();
    }

    #[test]
    fn extensions() {
        assert_eq!(extension(b"a.tar.gz"), Some(&b"gz"[..]));
        assert_eq!(extension(b".bashrc"), None);
        assert_eq!(extension(b"Makefile"), None);
        assert_eq!(extension(b"x."), None);
        assert_eq!(extension(b".a.b"), Some(&b"b"[..]));
    }

    #[test]
    fn node_algebra() {
        assert!(matches!(and_nodes(vec![]), Node::Const(true)));
        assert!(matches!(or_nodes(vec![]), Node::Const(false)));
        assert!(matches!(
            and_nodes(vec![Node::Hidden, Node::Const(false)]),
            Node::Const(false)
        ));
        assert!(matches!(not_node(not_node(Node::Hidden)), Node::Hidden));
        let n = and_nodes(vec![
            Node::Child(NameMatch::Literal {
                lit: Literal::new(vec![], crate::text::Anchor::Anywhere, false),
                fold: true,
            }),
            Node::Kind(Kind::Dir),
        ]);
        let Node::And(v) = n else { panic!() };
        assert!(matches!(v[0], Node::Kind(Kind::Dir)));
    }

    #[test]
    fn name_lengths() {
        assert_eq!(name_len(b"abc"), 3);
        assert_eq!(name_len("héllo".as_bytes()), 5);
        assert_eq!(name_len("😀".as_bytes()), 1);
    }
}
