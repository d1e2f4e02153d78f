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

mod codec;
mod deny;
mod document;
mod edit;
mod error;
mod facts;
pub mod list;
mod manage;
mod meter;
mod near;
mod newlines;
mod open;
pub mod path;
mod read;
mod replace;
mod resolve;
pub mod roots;
pub mod sniff;
mod spec;
mod stat;
pub mod text;
mod window;
mod write;

pub use deny::Denylist;
pub use document::{DocumentInfo, DocumentWindow, PartOf, PartRef, PartStart, Selection, part_of};
pub use edit::{EditOp, EditOutcome, EditRequest, LineAction};
pub use error::{ErrorCode, FsError, FsResult};
pub use ferret_docs;
pub use list::{KindFilter, ListEntry, ListOutcome, ListRequest, SortKey};
pub use manage::{ManageOp, ManageOutcome, ManageRequest};
pub use meter::Meter;
pub use read::{Image, ReadOutcome, ReadRequest, TextWindow, checksum};
pub use replace::FileChange;
pub use roots::{Root, RootError, Roots, Target};
pub use spec::{Limits, Policy, RootSpec};
pub use stat::{ImageInfo, StatInfo};
pub use write::{WriteMode, WriteOutcome, WriteRequest};

use std::{path::Path, sync::Arc};

use facts::Kind;
use ferret_docs::{Extracted, Format};
use path::RelPath;
use roots::OpenedFile;

/// Every operation on the roots, each written in its own module: this block
/// (with the constructors and accessors in `roots.rs`) is the whole of
/// [`Roots`]' API, so that it has an edge.
impl Roots {
    /// Open a regular file for its content: confined, not sensitive, not a folder,
    /// not a device or FIFO. The sensitivity check happens before the open; the
    /// open is [`crate::open::file`]'s (no symlink followed, non-blocking, the
    /// metadata from `fstat`).
    ///
    /// The common case is one `openat2` of the path as asked, which succeeds only
    /// when no component is a symlink (so the name checked is the file's real
    /// name). Otherwise the links are resolved inside the root one by one, the
    /// real name is checked too, and the real path is opened the same way: a
    /// component swapped for a symlink in between makes the open fail.
    pub fn open_for_content(
        &self,
        root: &Root,
        rel: &RelPath,
        shown: &str,
    ) -> FsResult<OpenedFile> {
        crate::resolve::open_for_content(self, root, rel, shown)
    }

    /// Turn what an agent typed into a root and a relative path, or refuse it
    /// before any file-system call (`resolve.rs`).
    pub fn resolve(&self, input: &str) -> FsResult<Target<'_>> {
        crate::resolve::resolve(self, input)
    }

    /// Resolve symlinks inside the root; a link that leads out is `PATH_OUTSIDE_ROOT`,
    /// a dangling one `NOT_FOUND`.
    pub fn real_path(&self, root: &Root, rel: &RelPath, shown: &str) -> FsResult<RelPath> {
        crate::resolve::real_path(root, rel, shown)
    }

    /// Follow symlinks one component at a time through the root handle
    /// (`resolve.rs` says why by hand): the result holds no symlink.
    pub fn resolve_links(&self, root: &Root, path: &Path, shown: &str) -> FsResult<RelPath> {
        crate::resolve::resolve_links(root, path, shown)
    }

    /// Read a window of a text file, or an image as image data (`read.rs`).
    pub fn read(&self, input: &str, request: &ReadRequest) -> FsResult<ReadOutcome> {
        crate::read::read(self, input, request)
    }

    /// The entries of a folder, or of a walk below it (`list.rs`).
    pub fn list(&self, input: &str, request: &ListRequest) -> FsResult<ListOutcome> {
        crate::list::list(self, input, request)
    }

    /// What a path is: kind, size, times, and for files their content facts
    /// (`stat.rs`).
    pub fn stat(&self, input: &str) -> FsResult<StatInfo> {
        crate::stat::stat(self, input)
    }

    /// What `input` names, or `None` when nothing is there. Metadata only:
    /// nothing is opened or read, and a symlink is reported as one.
    pub fn entry_kind(&self, input: &str) -> Option<Kind> {
        crate::stat::entry_kind(self, input)
    }

    /// The size and modification time of the regular file `input` names,
    /// or `None` (nothing there, not a plain file, or a sensitive one).
    /// Metadata only, like [`Roots::entry_kind`]: for links to files that
    /// an answer names, which a client may open later.
    pub fn file_facts(&self, input: &str) -> Option<(u64, Option<String>)> {
        crate::stat::file_facts(self, input)
    }

    /// The document format of a file whose name is `name` and whose content
    /// starts with `head`, when this server reads documents (`document.rs`).
    pub fn document_format(&self, name: &str, head: &[u8]) -> Option<Format> {
        crate::document::document_format(self, name, head)
    }

    /// The text of an opened document, from the cache or extracted.
    pub fn document_text(
        &self,
        opened: OpenedFile,
        format: Format,
        shown: &str,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> FsResult<Arc<Extracted>> {
        crate::document::document_text(self, opened, format, shown, stop)
    }

    /// `write`: create, overwrite or append to a file, atomically (`write.rs`).
    pub fn write(&self, input: &str, request: &WriteRequest) -> FsResult<WriteOutcome> {
        crate::write::write(self, input, request)
    }

    /// `edit`: apply every edit in order to the file's text, or none of them
    /// (`edit.rs`).
    pub fn edit(&self, input: &str, request: &EditRequest) -> FsResult<EditOutcome> {
        crate::edit::edit(self, input, request)
    }

    /// `manage`: move, copy, delete or create a folder (`manage.rs`).
    pub fn manage(&self, input: &str, request: &ManageRequest) -> FsResult<ManageOutcome> {
        crate::manage::manage(self, input, request)
    }

    /// Remove a `.ferret-tmp-*` file a killed write left behind (`input` as
    /// shown to agents): only in a writable root, only a regular file under
    /// a name ferret's writes make, only one older than `before` (`replace.rs`).
    /// `Ok(true)` when it was removed.
    pub fn remove_stale_temp(&self, input: &str, before: std::time::SystemTime) -> FsResult<bool> {
        crate::replace::remove_stale_temp(self, input, before)
    }
}
