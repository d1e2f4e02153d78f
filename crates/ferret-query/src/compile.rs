//! From [`Ast`] to the evaluation tree: modifiers are pushed down to the terms, text
//! is case-folded, globs and regexes are built, sizes and dates become integer ranges.
//!
//! How a plain term is read (after the modifiers in force):
//! - `regex:` → a regex on the name, or on `rel_path` when `path:` is on or the
//!   pattern contains `/` (a name never holds one). `\` keeps its regex meaning.
//! - Otherwise `\` is read as `/`, and a leading `./` or `**/` is dropped (repeatedly).
//!   A term that had `**/` stays a glob (`**/Cargo.toml` = names equal to
//!   `Cargo.toml`, anywhere); `./` is simply dropped (`./src/` = `src/`).
//! - Without `/` (and without `path:`): on the **name**. With `*`/`?` the glob must
//!   match the whole name; otherwise a substring (`startwith:`, `endwith:`, `wfn:` and
//!   `ww:` anchor it).
//! - With `/` (or `path:`): on the **path** relative to the root.
//!   - Substrings are searched in `"/" + rel_path`, with a trailing `/` added for
//!     folders: a leading `/` in the term therefore means "at a component boundary"
//!     (the start of the path counts: `/target/` matches `target/debug/x`), and a
//!     trailing `/` matches the folder itself as well as everything below it
//!     (`src/` matches the folder `src` and `src/main.rs`).
//!   - Globs follow gitignore habits: `*` and `?` never cross `/`, `**` does, and the
//!     glob must match the end of the path starting at a component boundary (as if
//!     `**/` were in front): `src/*.rs` matches `src/lib.rs` and `crates/a/src/lib.rs`
//!     but not `src/bin/x.rs`. A trailing `/` keeps folders only. `startwith:` or
//!     `wfn:` anchor the glob at the root.

use regex::bytes::{Regex, RegexBuilder};

use crate::ast::{Ast, Attrib, FileType, Filter, Function, Modifier, SizeValue, Text};
use crate::date;
use crate::error::{Limit, PError, remove, splice};
use crate::groups;
use crate::node::{
    ExtSet, Folder, Interval, NameMatch, Node, PathMatch, and_nodes, not_node, or_nodes,
};
use crate::text::{Anchor, Glob, Literal, fold_str};
use crate::{Clock, Kind, Options};

/// Regexes (user-written or made from path globs) are capped at this compiled
/// size: the regex engine's worst case on a name grows with it.
pub(crate) const REGEX_SIZE_LIMIT: usize = Limit::RegexSize.max();

/// The modifiers in force at a point of the tree.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx {
    case: bool,
    ww: bool,
    wfn: bool,
    path: bool,
    regex: bool,
    wildcards: bool,
    startwith: bool,
    endwith: bool,
}

impl Ctx {
    pub fn from_options(o: &Options) -> Ctx {
        Ctx {
            case: o.match_case,
            ww: o.whole_word,
            wfn: false,
            path: o.match_path,
            regex: o.regex,
            wildcards: true,
            startwith: false,
            endwith: false,
        }
    }

    fn anchor(&self) -> Anchor {
        match (
            self.wfn || (self.startwith && self.endwith),
            self.startwith,
            self.endwith,
        ) {
            (true, _, _) => Anchor::Whole,
            (false, true, _) => Anchor::Start,
            (false, _, true) => Anchor::End,
            _ => Anchor::Anywhere,
        }
    }
}

pub(crate) struct Compiler<'a> {
    pub chars: &'a [char],
    pub clock: &'a Clock,
    /// Regexes built so far (against [`Limit::Regexes`]).
    pub regexes: std::cell::Cell<usize>,
}

/// Integer types usable in intervals.
trait Num: Copy + Ord {
    const MIN: Self;
    const MAX: Self;
    fn pred(self) -> Option<Self>;
    fn succ(self) -> Option<Self>;
}

impl Num for u64 {
    const MIN: Self = 0;
    const MAX: Self = u64::MAX;
    fn pred(self) -> Option<Self> {
        self.checked_sub(1)
    }
    fn succ(self) -> Option<Self> {
        self.checked_add(1)
    }
}

impl Num for i64 {
    const MIN: Self = i64::MIN;
    const MAX: Self = i64::MAX;
    fn pred(self) -> Option<Self> {
        self.checked_sub(1)
    }
    fn succ(self) -> Option<Self> {
        self.checked_add(1)
    }
}

/// What one value means under each operator.
#[derive(Debug, Clone, Copy)]
struct Bounds<T> {
    /// No operator: the value's period (`size:1kb` = 1024..=2047, `dm:2026` = the year).
    is: (T, T),
    /// `=`: exact (empty when a fractional size is no whole number of bytes).
    eq: (T, T),
    /// `<v` means `x < below`.
    below: T,
    /// `<=v` means `x <= upto`.
    upto: T,
    /// `>v` means `x > above`.
    above: T,
    /// `>=v` means `x >= from`.
    from: T,
}

impl<T: Num> Bounds<T> {
    fn point(v: T) -> Self {
        Bounds {
            is: (v, v),
            eq: (v, v),
            below: v,
            upto: v,
            above: v,
            from: v,
        }
    }

    /// A period: every operator compares with its ends.
    fn period(lo: T, hi: T) -> Self {
        Bounds {
            is: (lo, hi),
            eq: (lo, hi),
            below: lo,
            upto: hi,
            above: hi,
            from: lo,
        }
    }
}

fn interval<T: Num>(f: &Filter<Bounds<T>>) -> Result<Interval<T>, ()> {
    use crate::ast::Cmp;
    let iv = |(lo, hi): (T, T), negate| Interval { lo, hi, negate };
    let empty = || Interval {
        lo: T::MAX,
        hi: T::MIN,
        negate: false,
    };
    Ok(match *f {
        Filter::Is(b) => iv(b.is, false),
        Filter::Cmp(Cmp::Eq, b) => iv(b.eq, false),
        Filter::Cmp(Cmp::Ne, b) => iv(b.eq, true),
        Filter::Cmp(Cmp::Lt, b) => match b.below.pred() {
            Some(hi) => iv((T::MIN, hi), false),
            None => empty(),
        },
        Filter::Cmp(Cmp::Le, b) => iv((T::MIN, b.upto), false),
        Filter::Cmp(Cmp::Gt, b) => match b.above.succ() {
            Some(lo) => iv((lo, T::MAX), false),
            None => empty(),
        },
        Filter::Cmp(Cmp::Ge, b) => iv((b.from, T::MAX), false),
        Filter::Range(a, b) => {
            if a.from > b.upto {
                return Err(());
            }
            iv((a.from, b.upto), false)
        }
    })
}

fn map_filter<V, T>(f: &Filter<V>, g: impl Fn(&V) -> T) -> Filter<T> {
    match f {
        Filter::Is(v) => Filter::Is(g(v)),
        Filter::Cmp(c, v) => Filter::Cmp(*c, g(v)),
        Filter::Range(a, b) => Filter::Range(g(a), g(b)),
    }
}

/// Saturating `u128` → `u64`.
fn sat(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

fn size_bounds(v: &SizeValue) -> Bounds<u64> {
    match *v {
        SizeValue::Class(c) => {
            let (lo, hi) = c.bounds();
            Bounds::period(lo, hi)
        }
        SizeValue::Amount {
            mantissa,
            decimals,
            unit,
        } => {
            let unit = u128::from(unit.bytes());
            let den = 10u128.pow(u32::from(decimals));
            let num = u128::from(mantissa) * unit;
            let floor = num / den;
            let ceil = num.div_ceil(den);
            // The granularity written: one unit of the last digit.
            let next = (u128::from(mantissa) + 1) * unit;
            let period_hi = next.div_ceil(den).saturating_sub(1);
            let eq = if num % den == 0 {
                (sat(floor), sat(floor))
            } else {
                (1, 0)
            };
            Bounds {
                is: (sat(ceil), sat(period_hi)),
                eq,
                below: sat(ceil),
                upto: sat(floor),
                above: sat(floor),
                from: sat(ceil),
            }
        }
    }
}

fn build_regex(pattern: &str, case_insensitive: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
}

/// A one-line description of a regex error.
fn regex_message(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(s) => s
            .lines()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or_else(|| s.lines().last().unwrap_or("syntax error"))
            .to_string(),
        regex::Error::CompiledTooBig(_) => "the pattern is too large once compiled".to_string(),
        _ => e.to_string(),
    }
}

/// A gitignore-style path glob as a regex body (see the module docs).
fn glob_regex(glob: &str) -> String {
    let chars: Vec<char> = glob.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                if chars.get(i) == Some(&'/') {
                    i += 1;
                    out.push_str("(?:(?s-u:.)*/)?");
                } else {
                    out.push_str("(?s-u:.)*");
                }
                continue;
            }
            '*' => out.push_str("(?s-u:[^/])*"),
            '?' => out.push_str("(?:[^/]|(?s-u:[^/]))"),
            c => out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
        i += 1;
    }
    out
}

impl Compiler<'_> {
    /// One more regex, within [`Limit::Regexes`].
    fn count_regex(&self, at: usize) -> Result<(), PError> {
        let n = self.regexes.get() + 1;
        self.regexes.set(n);
        if n > Limit::Regexes.max() {
            return Err(PError::limit(
                Limit::Regexes,
                &format!("more than {} regexes", Limit::Regexes.max()),
                at,
                "regex:\"^IMG_[0-9]+\\.jpg$\"",
            ));
        }
        Ok(())
    }

    pub fn node(&self, ast: &Ast, cx: Ctx) -> Result<Node, PError> {
        Ok(match ast {
            Ast::All => Node::Const(true),
            Ast::And(items) => and_nodes(
                items
                    .iter()
                    .map(|a| self.node(a, cx))
                    .collect::<Result<_, _>>()?,
            ),
            Ast::Or(items) => or_nodes(
                items
                    .iter()
                    .map(|a| self.node(a, cx))
                    .collect::<Result<_, _>>()?,
            ),
            Ast::Not(b) => not_node(self.node(b, cx)?),
            Ast::Modified { modifier, body, .. } => {
                let mut cx = cx;
                match *modifier {
                    Modifier::Files => {
                        return Ok(and_nodes(vec![
                            Node::Kind(Kind::File),
                            self.node(body, cx)?,
                        ]));
                    }
                    Modifier::Folders => {
                        return Ok(and_nodes(vec![Node::Kind(Kind::Dir), self.node(body, cx)?]));
                    }
                    Modifier::Case(on) => cx.case = on,
                    Modifier::WholeWord(on) => cx.ww = on,
                    Modifier::WholeFileName(on) => cx.wfn = on,
                    Modifier::Path(on) => cx.path = on,
                    Modifier::Regex(on) => cx.regex = on,
                    Modifier::Wildcards(on) => cx.wildcards = on,
                    Modifier::StartWith(on) => cx.startwith = on,
                    Modifier::EndWith(on) => cx.endwith = on,
                }
                self.node(body, cx)?
            }
            Ast::Text(t) => self.text(t, cx)?,
            Ast::Func(f) => self.func(&f.function, f.span.start, f.span.end, cx)?,
        })
    }

    /// A regex term, wrapped for the anchoring modifiers.
    fn regex(
        &self,
        pattern: &str,
        cx: Ctx,
        start: usize,
        end: usize,
        replacement: &str,
    ) -> Result<Regex, PError> {
        self.count_regex(start)?;
        let err = |e: regex::Error| match e {
            regex::Error::CompiledTooBig(_) => PError::limit(
                Limit::RegexSize,
                &format!("the regex `{pattern}` is larger once compiled"),
                start,
                "regex:\"^IMG_[0-9]+\\.jpg$\"",
            ),
            e => PError::new(
                format!("bad regex `{pattern}`: {}", regex_message(&e)),
                start,
                splice(self.chars, start, end, replacement),
                "regex:\"^IMG_[0-9]+\\.jpg$\"",
            ),
        };
        let ci = !cx.case;
        let anchor = cx.anchor();
        if anchor == Anchor::Anywhere && !cx.ww {
            return build_regex(pattern, ci).map_err(err);
        }
        // Check the pattern alone first, so that wrapping cannot hide its mistakes.
        build_regex(pattern, ci).map_err(err)?;
        let b = if cx.ww { r"\b" } else { "" };
        let wrapped = match anchor {
            Anchor::Whole => format!("^(?:{pattern})$"),
            Anchor::Start => format!("^(?:{pattern}){b}"),
            Anchor::End => format!("{b}(?:{pattern})$"),
            Anchor::Anywhere => format!("{b}(?:{pattern}){b}"),
        };
        build_regex(&wrapped, ci).map_err(err)
    }

    fn text(&self, t: &Text, cx: Ctx) -> Result<Node, PError> {
        let quoted_literal = format!("\"{}\"", regex::escape(&t.text));
        if cx.regex {
            let re = self.regex(&t.text, cx, t.span.start, t.span.end, &quoted_literal)?;
            return Ok(if cx.path || t.text.contains('/') {
                Node::Path(PathMatch::Regex(re))
            } else {
                Node::Name(NameMatch::Regex(re))
            });
        }
        let mut s = t.text.replace('\\', "/");
        // A dropped `**/` leaves a glob: `**/Cargo.toml` is the whole name.
        let mut globstar = false;
        loop {
            if let Some(rest) = s.strip_prefix("./") {
                s = rest.to_string();
            } else if let Some(rest) = s.strip_prefix("**/") {
                s = rest.to_string();
                globstar = true;
            } else {
                break;
            }
        }
        // `**/` alone is "anything", like `./` alone.
        let wild = cx.wildcards && ((globstar && !s.is_empty()) || s.contains(['*', '?']));
        if !(cx.path || s.contains('/')) {
            // Stars alone match every name: nothing to test (a search
            // page's first keystroke of `*.csv` matched a million names one
            // by one, 24 ms on the 1M tree).
            if wild && s.bytes().all(|b| b == b'*') {
                return Ok(Node::Const(true));
            }
            let named = Node::Name(name_matcher(&s, cx, wild));
            // A name that is not UTF-8 as paths show it (`caf%E9.txt`,
            // `ferret_names`), typed as shown: its own bytes match too (else
            // the agent's copy of a shown name found nothing).
            if !wild && let Some(raw) = ferret_names::escaped_bytes(&s) {
                return Ok(Node::Or(vec![
                    named,
                    Node::Name(name_matcher_of(&raw, cx, false)),
                ]));
            }
            return Ok(named);
        }
        let fold = !cx.case;
        if wild {
            let dir_only = s.ends_with('/');
            let glob = s.trim_end_matches('/').trim_start_matches('/');
            let start = if cx.startwith || cx.wfn {
                "^"
            } else {
                "(?:^|/)"
            };
            let pattern = format!("{start}{}$", glob_regex(glob));
            self.count_regex(t.span.start)?;
            let re = build_regex(&pattern, fold).map_err(|e| match e {
                regex::Error::CompiledTooBig(_) => PError::limit(
                    Limit::RegexSize,
                    &format!("the path pattern `{}` is larger once compiled", t.text),
                    t.span.start,
                    "src/*.rs",
                ),
                e => PError::new(
                    format!(
                        "path pattern `{}` is too complex: {}",
                        t.text,
                        regex_message(&e)
                    ),
                    t.span.start,
                    remove(self.chars, t.span.start, t.span.end),
                    "src/*.rs",
                ),
            })?;
            let node = Node::Path(PathMatch::Regex(re));
            return Ok(if dir_only {
                and_nodes(vec![Node::Kind(Kind::Dir), node])
            } else {
                node
            });
        }
        let anchor = cx.anchor();
        let needle = match anchor {
            Anchor::Start | Anchor::Whole => format!("/{}", s.trim_start_matches('/')),
            Anchor::Anywhere | Anchor::End => s.clone(),
        };
        let trim = matches!(anchor, Anchor::End | Anchor::Whole) && !s.ends_with('/');
        let literal = |path: &[u8]| {
            Node::Path(PathMatch::Literal {
                lit: Literal::new(folded_bytes(path, fold), anchor, cx.ww),
                fold,
                trim,
            })
        };
        // A path with names that are not UTF-8, typed as shown
        // (`d%FF/inner`): their bytes match too, as for a name word.
        Ok(match escaped_path(&needle) {
            Some(raw) => Node::Or(vec![literal(needle.as_bytes()), literal(&raw)]),
            None => literal(needle.as_bytes()),
        })
    }

    fn func(&self, f: &Function, start: usize, end: usize, cx: Ctx) -> Result<Node, PError> {
        let fold = !cx.case;
        Ok(match f {
            Function::Ext(items) => Node::Ext(ext_set(items.iter().map(String::as_str))),
            Function::Type(t) => match groups::extensions(*t) {
                Some(list) => Node::Ext(ext_set(list.iter().copied())),
                None => Node::Kind(match t {
                    FileType::Folder => Kind::Dir,
                    FileType::Symlink => Kind::Symlink,
                    _ => Kind::File,
                }),
            },
            Function::Size(filter) => {
                let iv = interval(&map_filter(filter, size_bounds))
                    .map_err(|()| self.backwards(f, start, end))?;
                Node::Size(iv)
            }
            Function::Date(field, filter) => {
                let bounds = map_filter(filter, |v| {
                    let (lo, hi) = date::resolve(v, self.clock);
                    Bounds::period(lo, hi)
                });
                let iv = interval(&bounds).map_err(|()| self.backwards(f, start, end))?;
                Node::Time(*field, iv)
            }
            Function::Depth(filter) => Node::Depth(
                interval(&map_filter(filter, |v| Bounds::point(*v)))
                    .map_err(|()| self.backwards(f, start, end))?,
            ),
            Function::Len(filter) => Node::Len(
                interval(&map_filter(filter, |v| Bounds::point(*v)))
                    .map_err(|()| self.backwards(f, start, end))?,
            ),
            Function::Parent(p) | Function::InFolder(p) => {
                let under = matches!(f, Function::InFolder(_));
                let components = if p.is_empty() {
                    0
                } else {
                    u32::try_from(p.matches('/').count() + 1).unwrap_or(u32::MAX)
                };
                let mut prefix = String::new();
                if !p.is_empty() {
                    prefix.push('/');
                    prefix.push_str(p);
                }
                if under {
                    prefix.push('/');
                }
                let node = |prefix: &[u8]| {
                    let folder = Folder {
                        prefix: folded_bytes(prefix, fold),
                        components,
                        fold,
                    };
                    if under {
                        Node::Under(folder)
                    } else {
                        Node::Parent(folder)
                    }
                };
                // A folder with names that are not UTF-8, typed as shown
                // (`in:d%FF`): its bytes too, as for a name word.
                match escaped_path(&prefix) {
                    Some(raw) => Node::Or(vec![node(prefix.as_bytes()), node(&raw)]),
                    None => node(prefix.as_bytes()),
                }
            }
            Function::Child(name) => {
                let m = if cx.regex {
                    let replacement = format!("child:\"{}\"", regex::escape(name));
                    NameMatch::Regex(self.regex(name, cx, start, end, &replacement)?)
                } else {
                    name_matcher(name, cx, cx.wildcards && name.contains(['*', '?']))
                };
                and_nodes(vec![Node::Kind(Kind::Dir), Node::Child(m)])
            }
            Function::Empty => Node::Empty,
            Function::Attrib(list) => and_nodes(
                list.iter()
                    .map(|a| match a {
                        Attrib::Hidden => Node::Hidden,
                        Attrib::ReadOnly => Node::ReadOnly,
                        Attrib::Directory => Node::Kind(Kind::Dir),
                        Attrib::Symlink => Node::Kind(Kind::Symlink),
                        Attrib::Executable => Node::Exec,
                    })
                    .collect(),
            ),
            Function::Dupe | Function::SizeDupe => {
                let name = if matches!(f, Function::Dupe) {
                    "dupe"
                } else {
                    "sizedupe"
                };
                return Err(PError::new(
                    format!("`{name}:` is not supported yet"),
                    start,
                    remove(self.chars, start, end),
                    "ext:rs",
                ));
            }
            Function::Content(_) => {
                return Err(PError::new(
                    "`content:` works only as a top-level term of a whole query (`ext:md content:TODO`), not inside `|`, `!` or groups; for more, search text with the `grep` tool and give it this query as its `filter`",
                    start,
                    remove(self.chars, start, end),
                    "ext:md",
                ));
            }
        })
    }

    fn backwards(&self, f: &Function, start: usize, end: usize) -> PError {
        let swapped = match f {
            Function::Size(Filter::Range(a, b)) => Function::Size(Filter::Range(*b, *a)),
            Function::Date(field, Filter::Range(a, b)) => {
                Function::Date(*field, Filter::Range(*b, *a))
            }
            Function::Depth(Filter::Range(a, b)) => Function::Depth(Filter::Range(*b, *a)),
            Function::Len(Filter::Range(a, b)) => Function::Len(Filter::Range(*b, *a)),
            other => other.clone(),
        };
        PError::new(
            "this range is empty: its start comes after its end",
            start,
            splice(self.chars, start, end, &swapped.to_string()),
            "size:10kb..2mb",
        )
    }
}

/// A name term (a glob when `wild`, else a substring) under the modifiers in force.
fn name_matcher(s: &str, cx: Ctx, wild: bool) -> NameMatch {
    name_matcher_of(s.as_bytes(), cx, wild)
}

/// [`name_matcher`] of a name given as bytes (not UTF-8 where it stands
/// for a name shown escaped).
fn name_matcher_of(s: &[u8], cx: Ctx, wild: bool) -> NameMatch {
    let fold = !cx.case;
    let mut bytes = folded_bytes(s, fold);
    if wild {
        match cx.anchor() {
            Anchor::Start => bytes.push(b'*'),
            Anchor::End => bytes.insert(0, b'*'),
            Anchor::Whole | Anchor::Anywhere => {}
        }
        return NameMatch::Glob {
            glob: Glob::new(&bytes),
            fold,
        };
    }
    NameMatch::Literal {
        lit: Literal::new(bytes, cx.anchor(), cx.ww),
        fold,
    }
}

/// `s`, case-folded as entries' names and paths are when `fold`.
fn folded_bytes(s: &[u8], fold: bool) -> Vec<u8> {
    if fold {
        let mut out = Vec::with_capacity(s.len());
        crate::text::fold_into(s, &mut out);
        out
    } else {
        s.to_vec()
    }
}

/// The bytes of a path typed as paths show it (`ferret_names::path_bytes`)
/// when one of its names is the escaped form of a name that is not UTF-8;
/// `None` when every name stands for itself.
fn escaped_path(path: &str) -> Option<Vec<u8>> {
    match ferret_names::path_bytes(path) {
        std::borrow::Cow::Owned(raw) if raw != path.as_bytes() => Some(raw),
        _ => None,
    }
}

fn ext_set<'a>(items: impl Iterator<Item = &'a str>) -> ExtSet {
    let mut plain = Vec::new();
    let mut dotted = Vec::new();
    for item in items {
        let folded = fold_str(item.trim_start_matches('.'));
        if folded.is_empty() {
            continue;
        }
        if folded.contains(&b'.') {
            let mut d = vec![b'.'];
            d.extend_from_slice(&folded);
            dotted.push(d.into_boxed_slice());
        } else {
            plain.push(folded.into_boxed_slice());
        }
    }
    plain.sort();
    plain.dedup();
    let none = plain.is_empty() && dotted.is_empty();
    ExtSet {
        plain,
        dotted,
        none,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{Cmp, SizeClass, SizeUnit};

    fn size(f: Filter<SizeValue>) -> Interval<u64> {
        interval(&map_filter(&f, size_bounds)).unwrap()
    }

    fn amount(mantissa: u64, decimals: u8, unit: SizeUnit) -> SizeValue {
        SizeValue::Amount {
            mantissa,
            decimals,
            unit,
        }
    }

    fn iv(lo: u64, hi: u64) -> Interval<u64> {
        Interval {
            lo,
            hi,
            negate: false,
        }
    }

    #[test]
    fn size_intervals() {
        let kb = amount(1, 0, SizeUnit::Kb);
        assert_eq!(size(Filter::Is(kb)), iv(1024, 2047));
        assert_eq!(size(Filter::Cmp(Cmp::Eq, kb)), iv(1024, 1024));
        assert_eq!(size(Filter::Cmp(Cmp::Gt, kb)), iv(1025, u64::MAX));
        assert_eq!(size(Filter::Cmp(Cmp::Ge, kb)), iv(1024, u64::MAX));
        assert_eq!(size(Filter::Cmp(Cmp::Lt, kb)), iv(0, 1023));
        assert_eq!(size(Filter::Cmp(Cmp::Le, kb)), iv(0, 1024));
        let ne = size(Filter::Cmp(Cmp::Ne, kb));
        assert!(ne.negate && !ne.contains(1024) && ne.contains(1025));
        // 1.5kb = 1536; granularity 0.1kb.
        let x = amount(15, 1, SizeUnit::Kb);
        assert_eq!(size(Filter::Is(x)), iv(1536, 1638));
        // 1.05kb = 1075.2 bytes: never equal, > means >= 1076.
        let y = amount(105, 2, SizeUnit::Kb);
        assert!(!size(Filter::Cmp(Cmp::Eq, y)).contains(1075));
        assert_eq!(size(Filter::Cmp(Cmp::Gt, y)), iv(1076, u64::MAX));
        assert_eq!(size(Filter::Cmp(Cmp::Lt, y)), iv(0, 1075));
        assert_eq!(size(Filter::Cmp(Cmp::Le, y)), iv(0, 1075));
        let zero = amount(0, 0, SizeUnit::None);
        assert!(!size(Filter::Cmp(Cmp::Lt, zero)).contains(0));
        assert_eq!(size(Filter::Is(zero)), iv(0, 0));
        let t = SizeValue::Class(SizeClass::Tiny);
        assert_eq!(size(Filter::Is(t)), iv(1, 10240));
        assert_eq!(size(Filter::Cmp(Cmp::Gt, t)), iv(10241, u64::MAX));
        assert_eq!(size(Filter::Cmp(Cmp::Lt, t)), iv(0, 0));
        let g = SizeValue::Class(SizeClass::Gigantic);
        assert!(!size(Filter::Cmp(Cmp::Gt, g)).contains(u64::MAX));
        assert_eq!(
            size(Filter::Range(
                amount(10, 0, SizeUnit::Kb),
                amount(2, 0, SizeUnit::Mb)
            )),
            iv(10240, 2 << 20)
        );
        assert_eq!(
            size(Filter::Range(t, SizeValue::Class(SizeClass::Small))),
            iv(1, 102400)
        );
        assert!(
            interval(&map_filter(
                &Filter::Range(amount(2, 0, SizeUnit::Mb), kb),
                size_bounds
            ))
            .is_err()
        );
        let huge = amount(u64::MAX, 0, SizeUnit::Tb);
        assert_eq!(size(Filter::Is(huge)), iv(u64::MAX, u64::MAX));
    }

    #[test]
    fn path_globs_to_regex() {
        let m = |g: &str, p: &str| {
            Regex::new(&format!("(?:^|/){}$", glob_regex(g)))
                .unwrap()
                .is_match(p.as_bytes())
        };
        assert!(m("src/*.rs", "src/lib.rs"));
        assert!(m("src/*.rs", "crates/a/src/lib.rs"));
        assert!(!m("src/*.rs", "src/bin/x.rs"));
        assert!(!m("src/*.rs", "mysrc/lib.rs"));
        assert!(m("src/**/*.rs", "src/bin/x.rs"));
        assert!(m("src/**/*.rs", "src/x.rs"));
        assert!(m("src/**", "src/a/b"));
        assert!(m("a?c/x", "abc/x"));
        assert!(m("a?c/x", "aéc/x"));
        assert!(!m("a?c/x", "a/c/x"));
        assert!(m("a.c/x", "a.c/x"));
        assert!(!m("a.c/x", "abc/x"));
    }
}
