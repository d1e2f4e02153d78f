//! ferret's symbols: the definitions in source files (functions, methods,
//! classes, structs, enums, traits and interfaces, type aliases, constants,
//! modules, macros), each with its kind, its container and its lines, read
//! with the tree-sitter project's grammars and their tags queries.
//!
//! [`Extractor::extract`] gives one file's [`Outline`] (within [`Limits`] of
//! size, time and count); [`Table`] keeps many files' outlines by their
//! modification time and size and answers a [`NameQuery`]; its bytes
//! ([`Table::to_bytes`], [`Table::from_bytes`]) keep it across restarts.
//!
//! ```
//! use ferret_symbols::{Extractor, Kind, Lang, Limits};
//! let mut x = Extractor::new(Limits::default());
//! let outline = x.extract(Lang::Rust, b"struct S;\nimpl S {\n    fn go(&self) {}\n}\n").unwrap();
//! let go = &outline.symbols[1];
//! assert_eq!((go.name.as_str(), go.kind, go.container.as_deref(), go.line), ("go", Kind::Method, Some("S"), 3));
//! ```
//!
//! Invariants: pure code over bytes, no I/O (the caller reads files, through
//! its confinement); every parse and query is bounded in time; nothing here
//! knows MCP or the index.
#![deny(missing_docs)]

mod extract;
mod find;
mod lang;
mod names;
mod paths;
mod saved;
mod strings;
mod table;
#[cfg(test)]
mod tests;

pub use extract::{Extractor, KINDS, Kind, Limits, Outline, Skip, Symbol};
pub use find::{NameQuery, Tier, fold, matcher};
pub use lang::Lang;
pub use saved::Refused;
pub use table::{Found, Hit, Refreshed, Source, Stats, Table};
