//! ferret's content index: which files hold which trigrams, so that `grep`
//! reads only the files that can match.
//!
//! A pattern becomes a query of trigrams ([`pattern::query`]: every match of
//! the pattern holds them); the index answers with the files that hold them
//! ([`ContentIndex::narrow`]), plus every file it cannot answer for (not
//! indexed, changed since it was read, or not read again yet), and the
//! caller's matcher checks each. Asked first ([`ContentIndex::answer`]), it
//! names those files itself, from its posting lists and the sets it keeps of
//! the files it cannot answer for, so a caller need not list its scope. The index is built in the background from
//! the files the name index lists, read through [`ferret_fs::Roots`] (so
//! confinement, the denylist and the size limit hold), written to the state
//! directory and memory-mapped, and kept fresh from [`ferret_index::Index::touches`].
//!
//! ```no_run
//! # fn demo(roots: std::sync::Arc<ferret_fs::Roots>, index: ferret_index::Index) {
//! use ferret_content::{Config, ContentIndex, pattern::{PatternSpec, query}};
//! let content = ContentIndex::new(Config::new(None), roots, index);
//! content.start();
//! let q = query(&PatternSpec { text: "fn main", literal: true, case_insensitive: false, multiline: false });
//! if let Ok(n) = content.narrow(&q, &[("src/main.rs", 1_700_000_000, 120)], false) {
//!     println!("search src/main.rs: {}", n.keep[0]);
//! }
//! # }
//! ```
//!
//! Invariants: files are read only through the roots' handles; sensitive,
//! binary and ignored files are never indexed (ignored ones are not in the
//! name index); nothing here knows MCP.

pub mod build;
mod eval;
pub mod format;
pub mod grams;
mod live;
mod paths;
pub mod pattern;
mod radix;
mod read;
pub mod segments;
#[cfg(test)]
mod testing;

pub use build::{Budget, BuildError};
pub use format::DocState;
pub use live::{
    Answer, BuildProgress, Config, ContentIndex, Hit, Narrowed, Status, Summary, Unused, file_for,
    inspect,
};
pub use pattern::{Grams, PatternSpec};
