//! ferret's file layer: confined access to the folders an operator serves.
//!
//! Everything here works on [`Roots`]: paths typed by an agent are normalised and
//! refused by [`path::normalize`], then every file-system call goes through a
//! cap-std directory handle, so the kernel keeps it inside the root. Sensitive
//! files are refused before they are opened. This crate knows nothing of MCP.
//!
//! ```no_run
//! use ferret_fs::{Policy, ReadOutcome, ReadRequest, Roots};
//! let roots = Roots::open(&["./docs".parse().unwrap()], Policy::default()).unwrap();
//! if let ReadOutcome::Text(w) = roots.read("guide.md", &ReadRequest::default()).unwrap() {
//!     println!("{} of {:?} lines, {}", w.end_line, w.total_lines, w.encoding);
//! }
//! ```

pub mod codec;
pub mod deny;
pub mod document;
pub mod edit;
pub mod error;
pub mod list;
pub mod manage;
pub mod meter;
mod near;
pub mod newlines;
pub mod open;
pub mod path;
pub mod read;
pub mod roots;
pub mod sniff;
pub mod stat;
pub mod text;
pub mod window;
pub mod write;

pub use deny::Denylist;
pub use document::{DocumentInfo, DocumentWindow, PartOf, PartRef, PartStart, Selection};
pub use edit::{EditOp, EditOutcome, EditRequest, LineAction};
pub use error::{ErrorCode, FsError, FsResult};
pub use ferret_docs;
pub use list::{KindFilter, ListEntry, ListOutcome, ListRequest, SortKey};
pub use manage::{ManageOp, ManageOutcome, ManageRequest};
pub use meter::Meter;
pub use read::{Image, ReadOutcome, ReadRequest, TextWindow, checksum};
pub use roots::{Limits, Policy, Root, RootError, RootSpec, Roots, Target};
pub use stat::{ImageInfo, StatInfo};
pub use write::{FileChange, WriteMode, WriteOutcome, WriteRequest};
