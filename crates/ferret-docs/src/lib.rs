//! Documents as text: PDF, DOCX, PPTX, XLSX, XLS, ODS, ODT, ODP and EPUB
//! turned into lines that ferret reads, pages and greps like any text file.
//!
//! [`Format::detect`] says whether a file is a document (from its first bytes
//! and its name). [`Documents::text`] gives its [`Extracted`] text: the text,
//! its parts (pages, slides, sheets, chapters, each with its first line) and
//! its metadata, from the [`Cache`] when this version of the file was seen
//! before, else from an extractor process bounded in time and memory
//! ([`Isolation::Process`]). A hostile or broken file is a [`DocError`] for
//! that file, never a crash of the caller.
//!
//! This crate takes open files and bytes; it knows nothing of roots, paths
//! or MCP. A content index can use the same cache through
//! [`Documents::text`] (extract when needed) or [`Documents::cached`] (only
//! what is already known).
//!
//! ```no_run
//! use ferret_docs::{CacheConfig, Documents, Format, Isolation, Key, Limits};
//! let docs = Documents::new(Isolation::InProcess, Limits::default(), CacheConfig::default());
//! let file = std::fs::File::open("report.pdf").unwrap();
//! let key = Key::of(&file).unwrap();
//! let doc = docs.text(file, key, Format::Pdf, &|| false).unwrap();
//! println!("{} pages, {} lines", doc.parts.len(), doc.lines);
//! ```

mod cache;
mod epub;
mod error;
mod extract;
mod extracted;
mod format;
mod isolate;
mod odf;
mod office;
mod pdf;
mod sheets;
mod xml_text;
mod zipped;

use std::{
    io::Read,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

pub use cache::{Cache, CacheConfig, Cached, Key};
pub use error::{DocError, DocErrorKind};
pub use extract::extract;
pub use extracted::{Extracted, Meta, Part, PartKind};
pub use format::{EXTENSIONS, Format};
pub use isolate::{WORKER_ARG, worker_main_if_asked};

/// The bounds of one extraction.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Larger documents are refused unread.
    pub max_input_bytes: u64,
    /// What the parts of a zip container may unpack to, in all.
    pub max_unpacked_bytes: u64,
    /// The extracted text.
    pub max_text_bytes: usize,
    /// The extractor process's data (heap) limit.
    pub max_memory_bytes: u64,
    /// Wall-clock time for one document.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_input_bytes: 64 << 20,
            max_unpacked_bytes: 160 << 20,
            max_text_bytes: 64 << 20,
            max_memory_bytes: 256 << 20,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Where the parsers run.
#[derive(Debug, Clone)]
pub enum Isolation {
    /// In the calling thread: no memory or time bound, for tests and
    /// measurements only.
    InProcess,
    /// In an extractor process started from `exe` (ferret's own binary, which
    /// must call [`worker_main_if_asked`] first thing).
    Process { exe: PathBuf },
}

/// Extraction and its cache, shared by every tool.
pub struct Documents {
    isolation: Isolation,
    limits: Limits,
    cache: Cache,
    extractions: AtomicU64,
    hits: AtomicU64,
}

impl Documents {
    pub fn new(isolation: Isolation, limits: Limits, cache: CacheConfig) -> Documents {
        Documents {
            isolation,
            limits,
            cache: Cache::new(cache),
            extractions: AtomicU64::new(0),
            hits: AtomicU64::new(0),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// (documents extracted, answers from the cache) since start.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.extractions.load(Ordering::Relaxed),
            self.hits.load(Ordering::Relaxed),
        )
    }

    /// What is already known of this version of a file, without extracting.
    pub fn cached(&self, key: &Key) -> Option<Cached> {
        self.cache.get(key)
    }

    /// The text of `file` (this version of it: `key`), as `format`. `stop` is
    /// polled while an extractor runs; when it says so the extractor is
    /// killed and the answer is [`DocErrorKind::Cancelled`].
    pub fn text(
        &self,
        file: std::fs::File,
        key: Key,
        format: Format,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Cached {
        if let Some(hit) = self.cache.get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return hit;
        }
        if stop() {
            return Err(DocError::new(
                DocErrorKind::Cancelled,
                "the request was cancelled",
            ));
        }
        let started = Instant::now();
        let result = if key.size > self.limits.max_input_bytes {
            Err(DocError::too_large(format!(
                "it is {} MB, over the {} MB bound for documents",
                key.size >> 20,
                self.limits.max_input_bytes >> 20
            )))
        } else {
            match &self.isolation {
                Isolation::InProcess => {
                    let mut bytes = Vec::new();
                    // From its start, as the extractor process reads it
                    // (`isolate::run`): a caller may have read its head.
                    let mut file = file;
                    match std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0)).and_then(
                        |_| {
                            file.take(self.limits.max_input_bytes + 1)
                                .read_to_end(&mut bytes)
                        },
                    ) {
                        Ok(_) => extract(&bytes, format, &self.limits),
                        Err(e) => Err(DocError::new(
                            DocErrorKind::Io,
                            format!("it could not be read: {e}"),
                        )),
                    }
                }
                Isolation::Process { exe } => isolate::run(exe, file, format, &self.limits, stop),
            }
        };
        self.extractions.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            format = format.name(),
            ms = started.elapsed().as_millis() as u64,
            outcome = result.as_ref().map_or_else(|e| e.kind.name(), |_| "ok"),
            "document extracted"
        );
        let result = result.map(Arc::new);
        self.cache.put(&key, &result);
        result
    }
}
