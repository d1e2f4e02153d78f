//! ferret's query language: the Everything-style (voidtools) syntax that the `search`
//! and `locate` tools take as `query`, that `grep` takes as `filter`, and that
//! `ferret search` reads on the command line. The language itself is specified in
//! `docs/query-syntax.md`. This crate has its scanner (module `lexer`), its parser
//! ([`parse`], giving a typed [`Ast`]), a compile step ([`Query::compile`]) and an
//! evaluator ([`Query::matches`]) that tests one index entry, seen through the
//! [`Entry`] trait.
//!
//! **Invariant: pure code, no I/O.** Nothing here touches the file system, the
//! network or the environment. The only outside input is [`Clock::system`], which reads
//! the system clock and the local time zone, and callers may pass any [`Clock`]
//! instead. So every behaviour can be unit-tested on made-up entries and fuzzed
//! (the repository's `fuzz/`, target `query_parser`).
//!
//! Compiling does all the work that does not depend on the entry: it folds case,
//! builds the regexes, turns sizes and dates into plain integer ranges and puts cheap
//! predicates (kind, extension, size) before costly ones (path, regex, children).
//! Matching a plain name term allocates nothing.
//!
//! ## Semantics where the spec leaves a choice
//!
//! - Plain terms: case-insensitive substrings of the name (Unicode lowercase folding,
//!   see [`fold_case`]). Terms with `*`/`?` match the whole name. A leading `**/` is
//!   dropped and leaves a whole-name glob (`**/Cargo.toml` = names equal to
//!   `Cargo.toml`); a leading `./` is simply dropped.
//! - Terms with `/` (or `\`) match `rel_path`: substrings are searched in
//!   `"/" + rel_path` (+ `/` for folders), so a leading `/` means "at a component
//!   boundary" and `src/` also matches the folder `src` itself. Path globs: `*` and
//!   `?` stay within one component, `**` crosses them, and the glob must match the end
//!   of the path from a component boundary (`src/*.rs` ⊇ `crates/a/src/lib.rs`).
//! - `!` is NOT only at the start of a term (`what!.txt` is a name); `(`/`)` group, so
//!   names with brackets need quotes. There is no escape for `"` (use `regex:`).
//! - A `name:` prefix is a modifier or a function, never text: unknown ones are
//!   errors (quote to search for a colon: `"foo:bar"`).
//! - `file:` = regular files, `folder:` = folders; symlinks are neither (`type:symlink`,
//!   `attrib:L`). `ext:` also applies to folder names. `size:` never matches folders.
//! - `size:1kb` = `[1024, 2048)`, `size:1.5kb` = `[1536, 1638]` (the precision
//!   written); `size:=1kb` is exact; `a..b` includes both ends exactly. Size classes
//!   follow Everything: tiny = 1 B..=10 KB (empty files are `empty`), small = (10 KB,
//!   100 KB], …, gigantic > 128 MB; comparisons with a class use its bounds
//!   (`size:>medium` = more than 1 MB).
//! - Dates: a date denotes its period; `=` is the same as no operator. `lastweek`,
//!   `lastmonth`, `lastyear` are the previous calendar periods; every other
//!   `last[N]unit` (`lastday`, `lasthour`, `last1week`…) is a rolling window from N
//!   units before now, with no upper bound.
//! - `parent:`/`in:` take a path relative to the root (`\` allowed, leading and
//!   trailing `/` ignored; empty = the root); `in:` excludes the folder itself. They
//!   follow `case:` like other terms.
//! - `pic:foo`-style groups and `empty:` AND the term written right after them.
//! - `attrib:` letters other than H R D L X are errors rather than ignored.
//!
//! ```
//! use ferret_query::{Clock, Entry, Kind, Options, Query};
//! use std::borrow::Cow;
//!
//! struct File(&'static str, u64);
//! impl Entry for File {
//!     fn name(&self) -> &[u8] { self.0.rsplit('/').next().unwrap().as_bytes() }
//!     fn rel_path(&self) -> Cow<'_, [u8]> { Cow::Borrowed(self.0.as_bytes()) }
//!     fn kind(&self) -> Kind { Kind::File }
//!     fn size(&self) -> u64 { self.1 }
//!     fn modified(&self) -> Option<i64> { None }
//!     fn created(&self) -> Option<i64> { None }
//!     fn mode(&self) -> u32 { 0o644 }
//!     fn depth(&self) -> u32 { self.0.matches('/').count() as u32 + 1 }
//!     fn for_each_child(&self, _f: &mut dyn FnMut(&[u8], Kind) -> bool) {}
//! }
//!
//! let clock = Clock { now_utc: 1_780_000_000, utc_offset_secs: 0 };
//! let q = Query::compile("ext:rs|toml size:<1mb !\\target\\", &Options::default(), &clock)?;
//! assert!(q.matches(&File("src/main.rs", 2_000)));
//! assert!(!q.matches(&File("target/debug/build.rs", 2_000)));
//! assert!(!q.matches(&File("README.md", 10)));
//!
//! let err = Query::compile("size:>1zb", &Options::default(), &clock).unwrap_err();
//! assert_eq!(err.position, 7);
//! assert_eq!(err.example, "size:>1gb");
//! # Ok::<(), ferret_query::QueryError>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ast;
mod compile;
mod content;
mod date;
mod error;
pub mod groups;
mod lexer;
mod names;
mod node;
mod parser;
mod query;
mod text;
mod words;

#[cfg(test)]
mod tests;

use std::borrow::Cow;

pub use ast::{
    Ast, Attrib, Cmp, DateConst, DateField, DateSpec, DateUnit, DateValue, FileType, Filter, Func,
    Function, Modifier, SizeClass, SizeUnit, SizeValue, Span, Text,
};
pub use content::split_content;
pub use date::parse_time;
pub use error::{Limit, QueryError};
pub use parser::parse;
pub use query::{Query, Range};
pub use text::{DIACRITICS, fold_case};
pub use words::split_words;

/// What the evaluator needs to know about one index entry. The index implements it.
pub trait Entry {
    /// The entry's own name (raw bytes; may be invalid UTF-8, compared bytewise after
    /// case folding).
    fn name(&self) -> &[u8];
    /// The path relative to its root, `/`-separated, no leading `/`; the root itself is
    /// `""`. May be computed on demand by the index (costly): the evaluator only calls
    /// it when a term needs the path (see [`Query::needs_path`]), at most once per
    /// [`Query::matches`].
    fn rel_path(&self) -> Cow<'_, [u8]>;
    /// File, folder, symlink or something else.
    fn kind(&self) -> Kind;
    /// Size in bytes (0 for folders).
    fn size(&self) -> u64;
    /// Modification time, Unix seconds, UTC.
    fn modified(&self) -> Option<i64>;
    /// Birth time, Unix seconds, UTC; `None` when the file system does not record it.
    fn created(&self) -> Option<i64>;
    /// Unix `st_mode`; only the permission bits (`0o777`) are read.
    fn mode(&self) -> u32;
    /// Folder depth below the root: the root's children are 1. Must equal the number
    /// of components of [`Entry::rel_path`] (the evaluator uses it to skip path work).
    fn depth(&self) -> u32;
    /// For folders: call `f` with each direct child's name and kind; stop early when
    /// `f` returns false. Files never call `f`. Used by `child:` and `empty:`.
    fn for_each_child(&self, f: &mut dyn FnMut(&[u8], Kind) -> bool);
}

/// The kind of an entry. Symlinks are never followed: a symlink to a folder is a
/// [`Kind::Symlink`], not a [`Kind::Dir`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// Sockets, FIFOs, devices.
    Other,
}

impl Kind {
    /// The name the tools contract gives this kind: `file`, `dir`, `symlink`
    /// or `other` (`docs/tools.md`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "dir",
            Kind::Symlink => "symlink",
            Kind::Other => "other",
        }
    }

    /// The kind [`Kind::as_str`] names; anything else is [`Kind::Other`].
    pub fn from_name(name: &str) -> Kind {
        match name {
            "file" => Kind::File,
            "dir" => Kind::Dir,
            "symlink" => Kind::Symlink,
            _ => Kind::Other,
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Serialised as its contract name (`"dir"`), as every answer shows it.
impl serde::Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Defaults from the search tool's parameters, applied to every plain term. Modifiers
/// in the query override them (`nocase:` undoes `match_case`, and so on).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Options {
    /// As if every term had `case:`.
    pub match_case: bool,
    /// As if every term had `ww:`.
    pub whole_word: bool,
    /// As if every term had `regex:`.
    pub regex: bool,
    /// As if every term had `path:`.
    pub match_path: bool,
}

/// When "now" is and the local time zone, so that date constants (`today`,
/// `thisweek`, `last2hours`) and ISO dates (read as local time) resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// Now, Unix seconds.
    pub now_utc: i64,
    /// Local time minus UTC, in seconds (`3600` for UTC+1). One offset is used for the
    /// whole query: a date range that crosses a daylight-saving change is off by the
    /// change.
    pub utc_offset_secs: i32,
}

impl Clock {
    /// The system clock and the local time zone's current offset (`chrono::Local`).
    pub fn system() -> Clock {
        let now = chrono::Local::now();
        Clock {
            now_utc: now.timestamp(),
            utc_offset_secs: now.offset().local_minus_utc(),
        }
    }
}
