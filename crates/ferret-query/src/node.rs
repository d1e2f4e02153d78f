//! The compiled form of a query: the tree the compiler builds and the evaluator
//! walks. Its own module so that the compiler (`compile`) and the evaluator
//! (`query`) both depend on it and not on each other.

use regex::bytes::Regex;

use crate::Kind;
use crate::ast::DateField;
use crate::text::{Glob, Literal};

/// An inclusive range, possibly negated; empty when `lo > hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interval<T> {
    pub lo: T,
    pub hi: T,
    pub negate: bool,
}

impl<T: PartialOrd + Copy> Interval<T> {
    #[inline]
    pub fn contains(&self, x: T) -> bool {
        (self.lo <= x && x <= self.hi) != self.negate
    }
}

/// The evaluation tree. `And`/`Or` children are ordered cheapest first.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Const(bool),
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
    Kind(Kind),
    Ext(ExtSet),
    /// Sizes never match folders (their size is not known here).
    Size(Interval<u64>),
    /// Entries without that time never match.
    Time(DateField, Interval<i64>),
    Depth(Interval<u64>),
    Len(Interval<u64>),
    /// Name starts with a dot.
    Hidden,
    /// Nobody may write.
    ReadOnly,
    /// A regular file with an execute bit.
    Exec,
    /// Zero-byte regular file or folder without children.
    Empty,
    Name(NameMatch),
    Path(PathMatch),
    /// Direct child of a folder.
    Parent(Folder),
    /// Anywhere below a folder.
    Under(Folder),
    /// A folder with a direct child whose name matches.
    Child(NameMatch),
}

/// How a term matches a name.
#[derive(Debug, Clone)]
pub(crate) enum NameMatch {
    /// On the folded name when `fold`, else on the raw name.
    Literal {
        lit: Literal,
        fold: bool,
    },
    Glob {
        glob: Glob,
        fold: bool,
    },
    /// Case-insensitivity is built into the regex.
    Regex(Regex),
}

/// How a term matches the path.
#[derive(Debug, Clone)]
pub(crate) enum PathMatch {
    /// Searched in `"/" + rel_path`, plus a trailing `/` for folders (so `src/`
    /// matches the folder `src` itself, and a leading `/` means "at a component
    /// boundary"). With `trim`, the folder's trailing `/` is left off (for `endwith:`
    /// and `wfn:` when the needle does not end with `/`).
    Literal {
        lit: Literal,
        fold: bool,
        trim: bool,
    },
    /// On `rel_path` as it is.
    Regex(Regex),
}

/// A folder for `parent:` / `in:`: `prefix` is `"/a/b"` (parent) or `"/a/b/"`
/// (under), folded when `fold`; `components` is how many names the folder has.
#[derive(Debug, Clone)]
pub(crate) struct Folder {
    pub prefix: Vec<u8>,
    pub components: u32,
    pub fold: bool,
}

/// An `ext:` list (or an extension group), folded.
#[derive(Debug, Clone)]
pub(crate) struct ExtSet {
    /// Extensions without dots, sorted.
    pub plain: Vec<Box<[u8]>>,
    /// Multi-part extensions with their leading dot (`.tar.gz`).
    pub dotted: Vec<Box<[u8]>>,
    /// `ext:` with no value: matches names without an extension.
    pub none: bool,
}

/// The extension of a name: after the last `.`, when that `.` is not the first
/// character and something follows it.
#[inline]
pub(crate) fn extension(name: &[u8]) -> Option<&[u8]> {
    match memchr::memrchr(b'.', name) {
        Some(i) if i > 0 && i + 1 < name.len() => Some(&name[i + 1..]),
        _ => None,
    }
}

/// Relative cost of evaluating a node, to put cheap tests first.
pub(crate) fn cost(node: &Node) -> u32 {
    match node {
        Node::Const(_) => 0,
        Node::Kind(_)
        | Node::Size(_)
        | Node::Time(..)
        | Node::Depth(_)
        | Node::Hidden
        | Node::ReadOnly
        | Node::Exec => 1,
        Node::Ext(_) | Node::Len(_) => 2,
        Node::Name(NameMatch::Literal { .. }) => 3,
        Node::Name(NameMatch::Glob { .. }) | Node::Empty => 4,
        Node::Name(NameMatch::Regex(_)) => 6,
        Node::Parent(_) | Node::Under(_) => 7,
        Node::Path(PathMatch::Literal { .. }) => 8,
        Node::Path(PathMatch::Regex(_)) => 10,
        Node::Child(_) => 12,
        Node::Not(n) => cost(n),
        Node::And(v) | Node::Or(v) => v.iter().map(cost).max().unwrap_or(0) + 1,
    }
}

/// AND of nodes: flattened, constants folded, cheapest first.
pub(crate) fn and_nodes(nodes: Vec<Node>) -> Node {
    let mut out = Vec::with_capacity(nodes.len());
    for n in nodes {
        match n {
            Node::Const(true) => {}
            Node::Const(false) => return Node::Const(false),
            Node::And(v) => out.extend(v),
            n => out.push(n),
        }
    }
    match out.len() {
        0 => Node::Const(true),
        1 => out.pop().unwrap_or(Node::Const(true)),
        _ => {
            out.sort_by_key(cost);
            Node::And(out)
        }
    }
}

/// OR of nodes: flattened, constants folded, cheapest first.
pub(crate) fn or_nodes(nodes: Vec<Node>) -> Node {
    let mut out = Vec::with_capacity(nodes.len());
    for n in nodes {
        match n {
            Node::Const(false) => {}
            Node::Const(true) => return Node::Const(true),
            Node::Or(v) => out.extend(v),
            n => out.push(n),
        }
    }
    match out.len() {
        0 => Node::Const(false),
        1 => out.pop().unwrap_or(Node::Const(false)),
        _ => {
            out.sort_by_key(cost);
            Node::Or(out)
        }
    }
}

pub(crate) fn not_node(n: Node) -> Node {
    match n {
        Node::Const(b) => Node::Const(!b),
        Node::Not(inner) => *inner,
        n => Node::Not(Box::new(n)),
    }
}
