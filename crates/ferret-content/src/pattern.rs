//! From a search pattern to the trigrams every match must contain.
//!
//! The pattern is parsed with `regex-syntax`, as `grep-regex` parses it (the
//! same flags, wrapped in `(?:…)` the same way), and its HIR is analysed bottom
//! up after Russ Cox's "Regular Expression Matching with a Trigram Index"
//! (the method of Google Code Search): for every sub-expression, whether it can
//! match the empty string, its exact set of matched strings when that set is
//! small, otherwise sets of prefixes and suffixes every match starts and ends
//! with, and a query of trigrams any text holding a match must hold. Written
//! here because no crate does it: `regex-syntax`'s literal extractor gives
//! prefixes and suffixes only, not the inner literals (`\w+_handler\(`) nor
//! the AND/OR query between them.
//!
//! Soundness is the only rule: the query may let through files that do not
//! match (the matcher checks every candidate), never keep out one that does.
//! So every shortcut here widens the query (toward [`Grams::All`]), and
//! `grep-regex`'s own changes to a pattern (line terminators removed, word
//! boundaries added) only ever narrow what matches.

use std::collections::BTreeSet;

use regex_syntax::hir::{Class, Hir, HirKind};

use crate::grams::{fold, grams_of};

/// A query over trigrams.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Grams {
    /// Every file: nothing to look up.
    All,
    Gram(u32),
    And(Vec<Grams>),
    Or(Vec<Grams>),
}

/// An AND keeps at most this many terms (dropping one only widens it).
const MAX_AND: usize = 64;
/// An OR of more alternatives than this is not worth a lookup.
const MAX_OR: usize = 512;

impl Grams {
    pub fn and(self, other: Grams) -> Grams {
        match (self, other) {
            (Grams::All, x) | (x, Grams::All) => x,
            (Grams::And(mut a), Grams::And(b)) => {
                for x in b {
                    push_and(&mut a, x);
                }
                Grams::And(a)
            }
            (Grams::And(mut a), x) | (x, Grams::And(mut a)) => {
                push_and(&mut a, x);
                Grams::And(a)
            }
            (a, b) if a == b => a,
            (a, b) => Grams::And(vec![a, b]),
        }
    }

    pub fn or(self, other: Grams) -> Grams {
        let mut alternatives = match self {
            Grams::All => return Grams::All,
            Grams::Or(a) => a,
            x => vec![x],
        };
        match other {
            Grams::All => return Grams::All,
            Grams::Or(b) => {
                for x in b {
                    if !alternatives.contains(&x) {
                        alternatives.push(x);
                    }
                }
            }
            x => {
                if !alternatives.contains(&x) {
                    alternatives.push(x);
                }
            }
        }
        match alternatives.len() {
            1 => alternatives.pop().unwrap_or(Grams::All),
            n if n > MAX_OR => Grams::All,
            _ => Grams::Or(alternatives),
        }
    }

    /// Whether a text with the trigrams `has` answers yes.
    pub fn holds(&self, has: &dyn Fn(u32) -> bool) -> bool {
        match self {
            Grams::All => true,
            Grams::Gram(g) => has(*g),
            Grams::And(qs) => qs.iter().all(|q| q.holds(has)),
            Grams::Or(qs) => qs.iter().any(|q| q.holds(has)),
        }
    }

    /// Nodes in the query (to keep its size bounded).
    pub fn size(&self) -> usize {
        match self {
            Grams::All | Grams::Gram(_) => 1,
            Grams::And(qs) | Grams::Or(qs) => 1 + qs.iter().map(Grams::size).sum::<usize>(),
        }
    }

    /// Every trigram the query names.
    pub fn grams(&self, out: &mut Vec<u32>) {
        match self {
            Grams::All => {}
            Grams::Gram(g) => out.push(*g),
            Grams::And(qs) | Grams::Or(qs) => qs.iter().for_each(|q| q.grams(out)),
        }
    }
}

fn push_and(terms: &mut Vec<Grams>, x: Grams) {
    if terms.len() < MAX_AND && !terms.contains(&x) {
        terms.push(x);
    }
}

/// What to look for, as `ferret-grep` compiles it.
#[derive(Debug, Clone, Copy)]
pub struct PatternSpec<'a> {
    pub text: &'a str,
    pub literal: bool,
    pub case_insensitive: bool,
    pub multiline: bool,
}

/// A query larger than this is not worth evaluating: scan instead.
const MAX_QUERY_NODES: usize = 4096;

/// The trigram query of a pattern; [`Grams::All`] when the pattern cannot be
/// narrowed (too short, `.*`, a parse this analysis does not follow).
pub fn query(spec: &PatternSpec) -> Grams {
    let text = if spec.literal {
        regex_syntax::escape(spec.text)
    } else {
        spec.text.to_string()
    };
    // The same parse as grep-regex: its AST parser's defaults, then a
    // translator without UTF-8 enforcement, the pattern wrapped in `(?:…)`.
    let parsed = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .unicode(true)
        .case_insensitive(spec.case_insensitive)
        .multi_line(spec.multiline)
        .nest_limit(250)
        .build()
        .parse(&format!("(?:{text})"));
    let Ok(hir) = parsed else {
        return Grams::All;
    };
    let mut info = analyze(&hir);
    info.simplify(true);
    info.add_exact();
    if info.query.size() > MAX_QUERY_NODES {
        return Grams::All;
    }
    info.query
}

/// The most bytes a match of the pattern can span, when that is bounded and
/// the match stays within a line (not multi-line): what decides whether the
/// segments of a large file can tell where a match is (`segments`). `None`:
/// unbounded (`\w+`), multi-line, or not parsed.
pub fn reach(spec: &PatternSpec) -> Option<usize> {
    if spec.multiline {
        return None;
    }
    let text = if spec.literal {
        regex_syntax::escape(spec.text)
    } else {
        spec.text.to_string()
    };
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .unicode(true)
        .case_insensitive(spec.case_insensitive)
        .nest_limit(250)
        .build()
        .parse(&format!("(?:{text})"))
        .ok()?;
    hir.properties().maximum_len()
}

/// Exact sets larger than this become prefixes, suffixes and trigrams.
const MAX_EXACT: usize = 16;
/// Prefix and suffix sets larger than this are shortened.
const MAX_SET: usize = 24;
/// A class with more characters than this counts as any character.
const MAX_CLASS: usize = 16;

type Set = BTreeSet<Vec<u8>>;

fn set_of(s: &[u8]) -> Set {
    std::iter::once(s.to_vec()).collect()
}

fn min_len(s: &Set) -> usize {
    s.iter().map(Vec::len).min().unwrap_or(0)
}

fn cross(a: &Set, b: &Set) -> Set {
    let mut out = Set::new();
    for x in a {
        for y in b {
            let mut s = x.clone();
            s.extend_from_slice(y);
            out.insert(s);
        }
    }
    out
}

/// What is known of the strings a sub-expression matches.
#[derive(Debug, Clone)]
struct Info {
    can_empty: bool,
    /// Exactly the strings matched (ASCII-folded), when known and small.
    exact: Option<Set>,
    /// Every match starts with one of these (meaningful when `exact` is `None`).
    prefix: Set,
    /// Every match ends with one of these.
    suffix: Set,
    /// A text holding a match satisfies this.
    query: Grams,
}

impl Info {
    fn exact(set: Set) -> Info {
        Info {
            can_empty: set.iter().any(Vec::is_empty),
            exact: Some(set),
            prefix: Set::new(),
            suffix: Set::new(),
            query: Grams::All,
        }
    }

    fn empty_string() -> Info {
        Info::exact(set_of(b""))
    }

    /// One character of a large class: nothing known.
    fn any_char() -> Info {
        Info {
            can_empty: false,
            exact: None,
            prefix: set_of(b""),
            suffix: set_of(b""),
            query: Grams::All,
        }
    }

    /// Any string, the empty one included (`x*`).
    fn any_string() -> Info {
        Info {
            can_empty: true,
            ..Info::any_char()
        }
    }

    /// Move the exact set's trigrams into the query.
    fn add_exact(&mut self) {
        if let Some(exact) = &self.exact {
            self.query = std::mem::replace(&mut self.query, Grams::All).and(trigrams_of(exact));
        }
    }

    fn simplify(&mut self, force: bool) {
        if let Some(exact) = &self.exact
            && (exact.len() > MAX_EXACT || (force && min_len(exact) >= 3))
        {
            let exact = exact.clone();
            self.add_exact();
            for s in &exact {
                let n = s.len();
                if n < 3 {
                    self.prefix.insert(s.clone());
                    self.suffix.insert(s.clone());
                } else {
                    self.prefix.insert(s[..2].to_vec());
                    self.suffix.insert(s[n - 2..].to_vec());
                }
            }
            self.exact = None;
        }
        if self.exact.is_none() {
            let prefix = std::mem::take(&mut self.prefix);
            self.prefix = self.shrink(prefix, false);
            let suffix = std::mem::take(&mut self.suffix);
            self.suffix = self.shrink(suffix, true);
        }
    }

    /// Record what a prefix (suffix) set says in the query, then cut its
    /// strings to two bytes (fewer while the set is too large): a prefix of
    /// a prefix is still a prefix. Strings that extend another are dropped.
    fn shrink(&mut self, set: Set, suffix: bool) -> Set {
        self.query = std::mem::replace(&mut self.query, Grams::All).and(trigrams_of(&set));
        let mut keep = 2usize;
        let mut set = set;
        loop {
            set = set
                .into_iter()
                .map(|s| {
                    if s.len() <= keep {
                        s
                    } else if suffix {
                        s[s.len() - keep..].to_vec()
                    } else {
                        s[..keep].to_vec()
                    }
                })
                .collect();
            if set.len() <= MAX_SET || keep == 0 {
                break;
            }
            keep -= 1;
        }
        let all: Vec<Vec<u8>> = set.iter().cloned().collect();
        set.retain(|s| {
            !all.iter().any(|t| {
                t.len() < s.len()
                    && if suffix {
                        s.ends_with(t)
                    } else {
                        s.starts_with(t)
                    }
            })
        });
        set
    }
}

/// The query "holds the trigrams of one of these strings"; everything when
/// one of them is shorter than a trigram (or the set is empty: widened, never
/// narrowed).
fn trigrams_of(set: &Set) -> Grams {
    if set.is_empty() || set.iter().any(|s| s.len() < 3) {
        return Grams::All;
    }
    let mut any = None::<Grams>;
    for s in set {
        let mut grams: Vec<u32> = grams_of(s).collect();
        grams.sort_unstable();
        grams.dedup();
        let all = match grams.as_slice() {
            [one] => Grams::Gram(*one),
            _ => Grams::And(grams.into_iter().map(Grams::Gram).collect()),
        };
        any = Some(match any {
            None => all,
            Some(q) => q.or(all),
        });
    }
    any.unwrap_or(Grams::All)
}

fn folded(bytes: &[u8]) -> Vec<u8> {
    bytes.iter().map(|&b| fold(b)).collect()
}

fn analyze(hir: &Hir) -> Info {
    let mut info = match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Info::empty_string(),
        HirKind::Literal(lit) => Info::exact(set_of(&folded(&lit.0))),
        HirKind::Class(Class::Unicode(class)) => {
            let count: usize = class
                .ranges()
                .iter()
                .map(|r| (r.end() as usize) - (r.start() as usize) + 1)
                .sum();
            if count > MAX_CLASS * 4 {
                Info::any_char()
            } else {
                let mut set = Set::new();
                for r in class.ranges() {
                    for c in r.start()..=r.end() {
                        let mut buf = [0u8; 4];
                        set.insert(folded(c.encode_utf8(&mut buf).as_bytes()));
                    }
                }
                if set.len() > MAX_CLASS || set.is_empty() {
                    Info::any_char()
                } else {
                    Info::exact(set)
                }
            }
        }
        HirKind::Class(Class::Bytes(class)) => {
            let mut set = Set::new();
            for r in class.ranges() {
                for b in r.start()..=r.end() {
                    set.insert(vec![fold(b)]);
                }
            }
            if set.len() > MAX_CLASS || set.is_empty() {
                Info::any_char()
            } else {
                Info::exact(set)
            }
        }
        HirKind::Repetition(rep) => {
            let x = analyze(&rep.sub);
            match (rep.min, rep.max) {
                (0, Some(0)) => Info::empty_string(),
                (0, Some(1)) => alternate(x, Info::empty_string()),
                (0, _) => Info::any_string(),
                (min, max) => {
                    // x{n,m} holds at least x{min(n,3)}, then anything.
                    let n = min.min(3);
                    let mut info = x.clone();
                    for _ in 1..n {
                        info = concat(info, x.clone());
                    }
                    if max != Some(n) {
                        info = concat(info, Info::any_string());
                    }
                    info
                }
            }
        }
        HirKind::Capture(cap) => analyze(&cap.sub),
        HirKind::Concat(subs) => {
            let mut it = subs.iter();
            let first = it.next().map_or_else(Info::empty_string, analyze);
            it.fold(first, |acc, h| concat(acc, analyze(h)))
        }
        HirKind::Alternation(subs) => {
            let mut it = subs.iter();
            let first = it.next().map_or_else(Info::any_string, analyze);
            it.fold(first, |acc, h| alternate(acc, analyze(h)))
        }
    };
    info.simplify(false);
    info
}

fn concat(x: Info, y: Info) -> Info {
    let mut xy = Info {
        can_empty: x.can_empty && y.can_empty,
        exact: None,
        prefix: Set::new(),
        suffix: Set::new(),
        query: x.query.clone().and(y.query.clone()),
    };
    // Both sides were simplified, so each exact set has at most MAX_EXACT
    // strings and their product is small; `simplify` below shrinks it.
    if let (Some(a), Some(b)) = (&x.exact, &y.exact) {
        xy.exact = Some(cross(a, b));
        xy.simplify(false);
        return xy;
    }
    xy.prefix = match &x.exact {
        Some(e) => cross(e, &y.prefix),
        None if x.can_empty => x.prefix.union(&y.prefix).cloned().collect(),
        None => x.prefix.clone(),
    };
    xy.suffix = match &y.exact {
        Some(e) => cross(&x.suffix, e),
        None if y.can_empty => y.suffix.union(&x.suffix).cloned().collect(),
        None => y.suffix.clone(),
    };
    // A match spans the boundary: some suffix of x, then some prefix of y.
    if x.exact.is_none()
        && y.exact.is_none()
        && x.suffix.len() <= MAX_SET
        && y.prefix.len() <= MAX_SET
        && min_len(&x.suffix) + min_len(&y.prefix) >= 3
    {
        xy.query = xy.query.and(trigrams_of(&cross(&x.suffix, &y.prefix)));
    }
    xy.simplify(false);
    xy
}

fn alternate(mut x: Info, mut y: Info) -> Info {
    let mut xy = Info {
        can_empty: x.can_empty || y.can_empty,
        exact: None,
        prefix: Set::new(),
        suffix: Set::new(),
        query: Grams::All,
    };
    match (&x.exact, &y.exact) {
        (Some(a), Some(b)) => xy.exact = Some(a.union(b).cloned().collect()),
        (Some(a), None) => {
            xy.prefix = a.union(&y.prefix).cloned().collect();
            xy.suffix = a.union(&y.suffix).cloned().collect();
            x.add_exact();
        }
        (None, Some(b)) => {
            xy.prefix = x.prefix.union(b).cloned().collect();
            xy.suffix = x.suffix.union(b).cloned().collect();
            y.add_exact();
        }
        (None, None) => {
            xy.prefix = x.prefix.union(&y.prefix).cloned().collect();
            xy.suffix = x.suffix.union(&y.suffix).cloned().collect();
        }
    }
    xy.query = x.query.or(y.query);
    xy.simplify(false);
    xy
}

#[cfg(test)]
mod tests;
