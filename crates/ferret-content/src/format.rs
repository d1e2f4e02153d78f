//! The index file: written once (at a build or a merge), then memory-mapped
//! and only read.
//!
//! ```text
//! header     128 bytes: magic, version, key, counts, section offsets, checksum
//! postings   per trigram, its files' numbers: the first, then the gaps (varints)
//! grams      16 bytes per trigram, sorted: trigram u32, files u32, offset u64
//! docs       52 bytes per file: folder u32, name offset u32, name length u16,
//!            state u8, 0, size u64, mtime s i64, ctime s i64, mtime ns u32,
//!            ctime ns u32, inode u64
//! folders    12 bytes per folder: parent u32, name offset u32, name length u32;
//!            the first is the top (the folder of paths with no `/`: no name),
//!            each other's parent comes before it
//! names      the folders' and files' names, one after another (UTF-8): a
//!            file's path as shown to agents is its folders' names and its
//!            own, joined by `/` (a path is held once, however deep)
//! tables     of large files, where in each its trigrams are (`segments`):
//!            count u64, then per table file u32, entries u32, offset u64
//!            (from the end of this list), ascending by file; then the tables
//! ```
//!
//! Little-endian throughout. The checksum covers everything after the header,
//! so a damaged or truncated file is discarded at load rather than believed.

use std::{
    fs::File,
    io::{self, BufWriter, Cursor, Seek, SeekFrom, Write},
    ops::Deref,
    path::{Path, PathBuf},
};

use ferret_index::snapshot::{Hasher, hash64};

use crate::{
    grams::get_varint,
    paths::{Paths, TOP},
};

const MAGIC: &[u8; 8] = b"FRTGRAM1";
/// 2: the tables of large files' segments. 3: paths as folders and names.
/// 4: hard-linked files not indexed (`DocState::Linked`).
const VERSION: u32 = 4;
pub const HEADER_LEN: usize = 128;
const GRAM_LEN: usize = 16;
const DOC_LEN: usize = 52;
const FOLDER_LEN: usize = 12;
const TABLE_DIR_LEN: usize = 16;

/// What the index knows of a file's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DocState {
    /// Its bytes are indexed.
    Text = 1,
    /// A document whose extracted text (from the document cache) is indexed.
    Document = 2,
    /// Binary as grep judges it: never matches.
    Binary = 3,
    // Not indexed: always searched directly.
    Sensitive = 4,
    TooLarge = 5,
    Unreadable = 6,
    /// UTF-16 or a legacy encoding that ripgrep's searcher cannot be given
    /// (no label for it): searched directly, transcoded or not.
    Transcoded = 7,
    /// A document whose text is not in the cache yet.
    DocumentPending = 8,
    /// Changed while it was read.
    Changed = 9,
    /// Past the index's size budget.
    OverBudget = 10,
    /// UTF-16 or a legacy encoding: its text decoded as grep decodes it is
    /// indexed (it has no segment table: windows are byte ranges).
    Decoded = 11,
    /// A file with more than one hard link: written through another link
    /// (in another folder, or outside the roots), it changes with no event
    /// in its own folder, so no watcher can vouch for it. Searched directly.
    Linked = 12,
}

impl DocState {
    pub fn from_u8(v: u8) -> Option<DocState> {
        use DocState::*;
        Some(match v {
            1 => Text,
            2 => Document,
            3 => Binary,
            4 => Sensitive,
            5 => TooLarge,
            6 => Unreadable,
            7 => Transcoded,
            8 => DocumentPending,
            9 => Changed,
            10 => OverBudget,
            11 => Decoded,
            12 => Linked,
            _ => return None,
        })
    }

    /// Its name in `diagnostics` (as serialised).
    pub fn as_str(self) -> &'static str {
        use DocState::*;
        match self {
            Text => "text",
            Document => "document",
            Binary => "binary",
            Sensitive => "sensitive",
            TooLarge => "too_large",
            Unreadable => "unreadable",
            Transcoded => "transcoded",
            DocumentPending => "document_pending",
            Changed => "changed",
            OverBudget => "over_budget",
            Decoded => "decoded",
            Linked => "linked",
        }
    }

    /// Whether the index answers for this file (otherwise it is searched).
    pub fn indexed(self) -> bool {
        matches!(
            self,
            DocState::Text | DocState::Document | DocState::Decoded | DocState::Binary
        )
    }

    /// Whether the file has trigrams in the index.
    pub fn has_grams(self) -> bool {
        matches!(
            self,
            DocState::Text | DocState::Document | DocState::Decoded
        )
    }
}

/// A file's version as it was indexed. Packed (44 bytes, not 48): the live
/// index holds one per file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct DocMeta {
    pub size: u64,
    pub mtime_s: i64,
    pub ctime_s: i64,
    pub ino: u64,
    pub mtime_ns: u32,
    pub ctime_ns: u32,
    pub state: DocState,
}

impl DocMeta {
    /// A file the index knows only by name (no version read yet).
    pub fn unread(size: u64, state: DocState) -> DocMeta {
        DocMeta {
            size,
            mtime_s: i64::MIN,
            mtime_ns: 0,
            ctime_s: i64::MIN,
            ctime_ns: 0,
            ino: 0,
            state,
        }
    }

    /// Same size, times and inode: the same version of the file.
    pub fn same_version(&self, other: &DocMeta) -> bool {
        (
            self.size,
            self.mtime_s,
            self.mtime_ns,
            self.ctime_s,
            self.ctime_ns,
            self.ino,
        ) == (
            other.size,
            other.mtime_s,
            other.mtime_ns,
            other.ctime_s,
            other.ctime_ns,
            other.ino,
        )
    }
}

/// The bytes of an index: a mapped file, or memory (no state directory).
pub enum Bytes {
    Map(memmap2::Mmap),
    Heap(Vec<u8>),
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Heap(v) => v,
        }
    }
}

impl Bytes {
    /// Map `path` read-only.
    pub fn map(path: &Path) -> io::Result<Bytes> {
        let file = File::open(path)?;
        // SAFETY: the file is ferret's own, written whole under another name
        // and renamed into place, never written again (a new version is a new
        // file), so the mapped bytes do not change under us. Only someone
        // truncating it by hand could fault a later read; its checksum is
        // verified at load.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(Bytes::Map(map))
    }

    /// [`hash64`] of the bytes from `from` on. A mapped file's pages are let
    /// go as they are hashed: checking an index just written (or loaded)
    /// does not bring all of it into the process's memory at once (it was
    /// the first build's peak).
    pub fn hash_from(&self, from: usize) -> u64 {
        const STEP: usize = 8 << 20;
        let mut h = Hasher::new((self.len() - from) as u64);
        let mut at = from;
        while at < self.len() {
            let end = (at + STEP).min(self.len());
            h.update(&self[at..end]);
            self.forget_range(at, end);
            at = end;
        }
        h.finish()
    }

    /// Let the pages of `start..end` of a mapped file go (see
    /// [`Bytes::forget_pages`]; memmap2 widens the range to whole pages): a
    /// check that reads a section as it goes keeps only a part of it in
    /// memory. Nothing for bytes in memory.
    pub fn forget_range(&self, start: usize, end: usize) {
        if let Bytes::Map(m) = self
            && end > start
        {
            // SAFETY: as in `forget_pages`.
            let _ = unsafe {
                m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }

    pub fn is_mapped(&self) -> bool {
        matches!(self, Bytes::Map(_))
    }

    /// Let the pages of a mapped file go from the process's memory: they
    /// are read again from the file (the page cache) when next touched.
    /// For a spill whose runs are all read while what is left is copied.
    pub fn forget_pages(&self) {
        if let Bytes::Map(m) = self {
            // SAFETY: a read-only mapping of a file: dropped pages are read
            // back from the file on the next access, unchanged (the file is
            // ferret's own, never written while mapped).
            let _ = unsafe { m.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Where an index is written: a file in the state directory (then renamed
/// into place), or memory.
pub enum Sink {
    File {
        out: BufWriter<File>,
        tmp: PathBuf,
        dest: PathBuf,
    },
    Memory(Cursor<Vec<u8>>),
}

impl Sink {
    /// A temporary file next to `dest` (readable by its owner only: the index
    /// says which trigrams each file holds).
    pub fn file(dest: &Path) -> io::Result<Sink> {
        let dir = dest.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = dest.with_extension(format!("tmp{}", std::process::id()));
        Ok(Sink::File {
            out: BufWriter::with_capacity(1 << 20, private_file(&tmp)?),
            tmp,
            dest: dest.to_path_buf(),
        })
    }

    pub fn memory() -> Sink {
        Sink::Memory(Cursor::new(Vec::new()))
    }

    /// Where part `n` of the posting lists is written while other parts
    /// are: a temporary file beside this one's (so a build's memory stays
    /// bounded), or memory when this is memory.
    pub(crate) fn part(&self, n: usize) -> io::Result<Sink> {
        match self {
            Sink::File { tmp, .. } => {
                let mut name = tmp.as_os_str().to_owned();
                name.push(format!(".part{n}"));
                let path = PathBuf::from(name);
                Ok(Sink::File {
                    out: BufWriter::with_capacity(1 << 20, private_file(&path)?),
                    tmp: path.clone(),
                    dest: path,
                })
            }
            Sink::Memory(_) => Ok(Sink::memory()),
        }
    }

    fn writer(&mut self) -> &mut dyn WriteSeek {
        match self {
            Sink::File { out, .. } => out,
            Sink::Memory(c) => c,
        }
    }

    /// Remove what was written (after a failure).
    pub fn discard(self) {
        if let Sink::File { tmp, .. } = self {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A new file (emptied if it was there) readable and writable by its owner
/// only: an index says which trigrams each file holds. Read too, so that a
/// part, or the build's runs, can be read back.
pub(crate) fn private_file(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

trait WriteSeek: Write + Seek {}
impl<T: Write + Seek> WriteSeek for T {}

/// Writes an index: the posting lists in trigram order, then the rest.
pub struct Writer {
    sink: Sink,
    at: u64,
    grams: Vec<u8>,
    gram_count: u64,
    last_gram: Option<u32>,
}

impl Writer {
    pub fn new(mut sink: Sink) -> io::Result<Writer> {
        sink.writer().write_all(&[0u8; HEADER_LEN])?;
        Ok(Writer::part(sink))
    }

    /// A writer of a part of the posting lists, later appended to another
    /// ([`Writer::append`]); it writes no header (but leaves room for one in
    /// its offsets, as [`Writer::new`] does).
    pub(crate) fn part(sink: Sink) -> Writer {
        Writer {
            sink,
            at: HEADER_LEN as u64,
            grams: Vec::new(),
            gram_count: 0,
            last_gram: None,
        }
    }

    /// A sink for part `n` of the lists, beside this writer's (see
    /// [`Sink::part`]).
    pub(crate) fn sink_part(&self, n: usize) -> io::Result<Sink> {
        self.sink.part(n)
    }

    /// Append the lists `part` wrote (its trigrams all above this one's),
    /// and remove its temporary file.
    pub(crate) fn append(&mut self, part: Writer) -> io::Result<()> {
        let base = self.at - HEADER_LEN as u64;
        debug_assert!(
            self.last_gram.is_none()
                || part.gram_count == 0
                || self.last_gram < Some(u32_at(&part.grams, 0))
        );
        // Entries of (trigram, files, offset u64) as `add_encoded` writes them.
        for entry in part.grams.chunks_exact(16) {
            self.grams.extend_from_slice(&entry[..8]);
            let offset = u64_at(entry, 8) + base;
            self.grams.extend_from_slice(&offset.to_le_bytes());
        }
        self.gram_count += part.gram_count;
        self.last_gram = part.last_gram.or(self.last_gram);
        let len = part.at - HEADER_LEN as u64;
        match part.sink {
            Sink::File { out, tmp, .. } => {
                let copied = out
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .and_then(|mut file| {
                        file.seek(io::SeekFrom::Start(0))?;
                        let copied =
                            io::copy(&mut io::Read::take(&mut file, len), self.sink.writer())?;
                        if copied == len {
                            Ok(())
                        } else {
                            Err(io::Error::other("a part of the index was cut short"))
                        }
                    });
                let _ = std::fs::remove_file(tmp);
                copied?;
            }
            Sink::Memory(c) => self.sink.writer().write_all(c.get_ref())?,
        }
        self.at += len;
        Ok(())
    }

    /// The `count` files holding `gram`, encoded as the index holds them
    /// (varint gaps, the first from 0: see [`crate::build::Gaps`]);
    /// trigrams come in ascending order.
    pub fn add_encoded(&mut self, gram: u32, count: u32, list: &[u8]) -> io::Result<()> {
        if count == 0 {
            return Ok(());
        }
        debug_assert!(self.last_gram.is_none_or(|g| g < gram));
        self.last_gram = Some(gram);
        self.grams.extend_from_slice(&gram.to_le_bytes());
        self.grams.extend_from_slice(&count.to_le_bytes());
        self.grams
            .extend_from_slice(&(self.at - HEADER_LEN as u64).to_le_bytes());
        self.gram_count += 1;
        self.sink.writer().write_all(list)?;
        self.at += list.len() as u64;
        Ok(())
    }

    /// Write the tables and the header; the index, ready to be read.
    /// `paths` and `metas`: the files, by number. `tables`: the segment
    /// tables of large files (`segments::table`), by file number, ascending.
    pub(crate) fn finish(
        mut self,
        paths: &Paths,
        metas: &[DocMeta],
        tables: &[(u32, &[u8])],
        key: u64,
        text_bytes: u64,
    ) -> io::Result<Bytes> {
        debug_assert_eq!(paths.len(), metas.len());
        let postings_len = self.at - HEADER_LEN as u64;
        let grams_off = self.at;
        let grams = std::mem::take(&mut self.grams);
        self.sink.writer().write_all(&grams)?;
        self.at += grams.len() as u64;
        drop(grams);
        // The names: the folders' (the top has none), then the files'.
        let folders = paths.folder_count();
        let folder_names: u64 = (1..folders as u32)
            .map(|f| paths.folder_entry(f).1.len() as u64)
            .sum();
        let file_names: u64 = (0..paths.len() as u32)
            .map(|id| paths.file(id).1.len() as u64)
            .sum();
        let names_len = folder_names + file_names;
        if names_len > u32::MAX as u64 {
            return Err(io::Error::other("more than 4 GiB of names"));
        }
        // Written as they are made (through the sink's buffer), not
        // gathered first: a tree of a million files is 52 MiB of table.
        let docs_off = self.at;
        let mut at = folder_names as u32;
        for (id, m) in metas.iter().enumerate() {
            let (folder, name) = paths.file(id as u32);
            if name.len() > u16::MAX as usize {
                return Err(io::Error::other("a file name longer than 64 KiB"));
            }
            let mut e = [0u8; DOC_LEN];
            e[0..4].copy_from_slice(&folder.to_le_bytes());
            e[4..8].copy_from_slice(&at.to_le_bytes());
            e[8..10].copy_from_slice(&(name.len() as u16).to_le_bytes());
            e[10] = m.state as u8;
            e[12..20].copy_from_slice(&{ m.size }.to_le_bytes());
            e[20..28].copy_from_slice(&{ m.mtime_s }.to_le_bytes());
            e[28..36].copy_from_slice(&{ m.ctime_s }.to_le_bytes());
            e[36..40].copy_from_slice(&{ m.mtime_ns }.to_le_bytes());
            e[40..44].copy_from_slice(&{ m.ctime_ns }.to_le_bytes());
            e[44..52].copy_from_slice(&{ m.ino }.to_le_bytes());
            self.sink.writer().write_all(&e)?;
            at += name.len() as u32;
        }
        self.at += (metas.len() * DOC_LEN) as u64;
        let mut at = 0u32;
        for f in 0..folders as u32 {
            let (parent, name) = paths.folder_entry(f);
            let mut e = [0u8; FOLDER_LEN];
            e[0..4].copy_from_slice(&parent.to_le_bytes());
            e[4..8].copy_from_slice(&at.to_le_bytes());
            e[8..12].copy_from_slice(&(name.len() as u32).to_le_bytes());
            self.sink.writer().write_all(&e)?;
            at += name.len() as u32;
        }
        self.at += (folders * FOLDER_LEN) as u64;
        for f in 1..folders as u32 {
            self.sink
                .writer()
                .write_all(paths.folder_entry(f).1.as_bytes())?;
        }
        for id in 0..paths.len() as u32 {
            self.sink.writer().write_all(paths.file(id).1.as_bytes())?;
        }
        self.at += names_len;
        let tables_off = self.at;
        let mut dir = Vec::with_capacity(8 + tables.len() * TABLE_DIR_LEN);
        dir.extend_from_slice(&(tables.len() as u64).to_le_bytes());
        let mut data_len = 0u64;
        for (doc, table) in tables {
            dir.extend_from_slice(&doc.to_le_bytes());
            dir.extend_from_slice(&((table.len() / crate::segments::ENTRY) as u32).to_le_bytes());
            dir.extend_from_slice(&data_len.to_le_bytes());
            data_len += table.len() as u64;
        }
        self.sink.writer().write_all(&dir)?;
        for (_, table) in tables {
            self.sink.writer().write_all(table)?;
        }
        self.at += dir.len() as u64 + data_len;
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        for v in [
            key,
            metas.len() as u64,
            self.gram_count,
            HEADER_LEN as u64,
            postings_len,
            grams_off,
            docs_off,
            folders as u64,
            names_len,
            text_bytes,
            self.at,
            0, // checksum, below
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            tables_off,
        ] {
            header.extend_from_slice(&v.to_le_bytes());
        }
        header.resize(HEADER_LEN, 0);
        match self.sink {
            Sink::Memory(mut c) => {
                c.seek(SeekFrom::Start(0))?;
                c.write_all(&header)?;
                let mut bytes = c.into_inner();
                let sum = hash64(&bytes[HEADER_LEN..]);
                bytes[CHECKSUM_AT..CHECKSUM_AT + 8].copy_from_slice(&sum.to_le_bytes());
                Ok(Bytes::Heap(bytes))
            }
            Sink::File { out, tmp, dest } => {
                let done = (|| {
                    let mut file = out.into_inner().map_err(|e| e.into_error())?;
                    file.seek(SeekFrom::Start(0))?;
                    file.write_all(&header)?;
                    file.flush()?;
                    let sum = Bytes::map(&tmp)?.hash_from(HEADER_LEN);
                    file.seek(SeekFrom::Start(CHECKSUM_AT as u64))?;
                    file.write_all(&sum.to_le_bytes())?;
                    // Not synced to the disk before the rename (20 ms of a
                    // 0.6 s build of the Python standard library): the
                    // index is a cache, and a file a crash left torn fails
                    // its checksum at load and is built again.
                    std::fs::rename(&tmp, &dest)?;
                    Bytes::map(&dest)
                })();
                if done.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                done
            }
        }
    }

    /// Give up: remove what was written.
    pub fn discard(self) {
        self.sink.discard();
    }
}

const CHECKSUM_AT: usize = 104;

/// A read index.
pub struct Base {
    bytes: Bytes,
    docs: usize,
    grams: usize,
    postings_off: usize,
    postings_len: usize,
    grams_off: usize,
    docs_off: usize,
    folders: usize,
    folders_off: usize,
    names_off: usize,
    names_len: usize,
    /// The tables' list (after its count) and their data.
    tables_dir: usize,
    tables: usize,
    tables_data: usize,
    pub text_bytes: u64,
    pub built_at: u64,
}

/// Why an index file was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Written for other roots or rules.
    Foreign,
    Corrupt(&'static str),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Foreign => f.write_str("it was built for other roots"),
            LoadError::Corrupt(why) => write!(f, "it is damaged ({why})"),
        }
    }
}

impl Base {
    /// Check an index's header, sections and checksum.
    pub fn open(bytes: Bytes, key: u64) -> Result<Base, LoadError> {
        Base::check(bytes, key, true)
    }

    /// An index [`Writer::finish`] has just written, and summed from these
    /// same bytes: its header and sections are checked as [`Base::open`]
    /// checks them, but its checksum is not computed a second time (on the
    /// Python standard library, 20 ms of a 0.6 s build).
    pub(crate) fn open_written(bytes: Bytes, key: u64) -> Result<Base, LoadError> {
        Base::check(bytes, key, false)
    }

    fn check(bytes: Bytes, key: u64, sum: bool) -> Result<Base, LoadError> {
        let b: &[u8] = &bytes;
        if b.len() < HEADER_LEN {
            return Err(LoadError::Corrupt("shorter than its header"));
        }
        if &b[..8] != MAGIC || u32_at(b, 8) != VERSION || u32_at(b, 12) as usize != HEADER_LEN {
            return Err(LoadError::Corrupt("not an index of this version"));
        }
        let h = |i: usize| u64_at(b, 16 + 8 * i);
        if h(0) != key {
            return Err(LoadError::Foreign);
        }
        let file_len = h(10);
        if file_len != b.len() as u64 {
            return Err(LoadError::Corrupt("truncated or extended"));
        }
        if sum && bytes.hash_from(HEADER_LEN) != h(11) {
            return Err(LoadError::Corrupt("checksum mismatch"));
        }
        let (docs, grams) = (h(1), h(2));
        let (postings_off, postings_len) = (h(3), h(4));
        let (grams_off, docs_off, folders, names_len) = (h(5), h(6), h(7), h(8));
        let folders_off = docs
            .checked_mul(DOC_LEN as u64)
            .and_then(|n| n.checked_add(docs_off));
        let names_off = folders
            .checked_mul(FOLDER_LEN as u64)
            .zip(folders_off)
            .and_then(|(n, off)| n.checked_add(off));
        let fits = postings_off == HEADER_LEN as u64
            && postings_off.checked_add(postings_len) == Some(grams_off)
            && grams
                .checked_mul(GRAM_LEN as u64)
                .and_then(|n| n.checked_add(grams_off))
                == Some(docs_off)
            && names_off.and_then(|off| off.checked_add(names_len)) == Some(h(13))
            && docs < u32::MAX as u64
            && (1..u32::MAX as u64).contains(&folders)
            && names_len <= u32::MAX as u64;
        let (Some(folders_off), Some(names_off), true) = (folders_off, names_off, fits) else {
            return Err(LoadError::Corrupt("sections do not fit"));
        };
        let tables_off = h(13);
        let tables = if tables_off.checked_add(8).is_some_and(|e| e <= file_len) {
            u64_at(b, tables_off as usize)
        } else {
            return Err(LoadError::Corrupt("sections do not fit"));
        };
        let tables_data = tables
            .checked_mul(TABLE_DIR_LEN as u64)
            .and_then(|n| n.checked_add(tables_off + 8))
            .filter(|&e| e <= file_len && tables <= docs);
        let Some(tables_data) = tables_data else {
            return Err(LoadError::Corrupt("sections do not fit"));
        };
        let base = Base {
            docs: docs as usize,
            grams: grams as usize,
            postings_off: postings_off as usize,
            postings_len: postings_len as usize,
            grams_off: grams_off as usize,
            docs_off: docs_off as usize,
            folders: folders as usize,
            folders_off: folders_off as usize,
            names_off: names_off as usize,
            names_len: names_len as usize,
            tables_dir: tables_off as usize + 8,
            tables: tables as usize,
            tables_data: tables_data as usize,
            text_bytes: h(9),
            built_at: h(12),
            bytes,
        };
        // The sections are read as they are checked, and their pages let
        // go every so often: checking an index of a million small files
        // (47 MB of file table, 22 MB of names) brought all of it in at
        // once, the first build's peak.
        const FORGET_EVERY: usize = 1 << 16;
        let mut last = None;
        for i in 0..base.grams {
            if i % FORGET_EVERY == FORGET_EVERY - 1 {
                base.bytes
                    .forget_range(base.grams_off, base.grams_off + i * GRAM_LEN);
            }
            let (g, count, off) = base.gram_entry(i);
            if last.is_some_and(|l| l >= g) || off > base.postings_len as u64 || count == 0 {
                return Err(LoadError::Corrupt("trigram table out of order"));
            }
            last = Some(g);
        }
        // Every name whole UTF-8 in the names; the top first, each other
        // folder's parent before it (so following parents ends at the top).
        let name_ok = |off: usize, len: usize| {
            off.checked_add(len).is_some_and(|e| e <= base.names_len)
                && std::str::from_utf8(&base.bytes[base.names_off + off..][..len]).is_ok()
        };
        for f in 0..base.folders {
            let at = base.folders_off + f * FOLDER_LEN;
            let b = &base.bytes;
            let (parent, off, len) = (
                u32_at(b, at) as usize,
                u32_at(b, at + 4) as usize,
                u32_at(b, at + 8) as usize,
            );
            let placed = if f == TOP as usize {
                parent == f && len == 0
            } else {
                parent < f
            };
            if !placed || !name_ok(off, len) {
                return Err(LoadError::Corrupt("folder table"));
            }
        }
        let mut names_read = 0;
        for i in 0..base.docs {
            if i % FORGET_EVERY == FORGET_EVERY - 1 {
                base.bytes
                    .forget_range(base.docs_off, base.docs_off + i * DOC_LEN);
                // Names are laid out in the files' order: those read so far
                // lie before the furthest read.
                base.bytes
                    .forget_range(base.names_off, base.names_off + names_read);
            }
            let at = base.docs_off + i * DOC_LEN;
            let b = &base.bytes;
            let (folder, off, len) = (
                u32_at(b, at) as usize,
                u32_at(b, at + 4) as usize,
                u16_of(&base, at + 8),
            );
            if folder >= base.folders
                || DocState::from_u8(b[at + 10]).is_none()
                || !name_ok(off, len)
            {
                return Err(LoadError::Corrupt("file table"));
            }
            names_read = names_read.max(off + len);
        }
        // The tables: ascending by file, each where the list says, whole.
        let (mut last, mut end) = (None, 0u64);
        for i in 0..base.tables {
            let (doc, entries, off) = base.table_entry(i);
            let len = u64::from(entries) * crate::segments::ENTRY as u64;
            let fits = last.is_none_or(|l| l < doc)
                && (doc as usize) < base.docs
                && off == end
                && (base.tables_data as u64)
                    .checked_add(off + len)
                    .is_some_and(|e| e <= file_len)
                && crate::segments::is_table(base.table_at(off, len));
            if !fits {
                return Err(LoadError::Corrupt("segment tables"));
            }
            last = Some(doc);
            end = off + len;
        }
        if base.tables_data as u64 + end != file_len {
            return Err(LoadError::Corrupt("segment tables"));
        }
        Ok(base)
    }

    fn table_entry(&self, i: usize) -> (u32, u32, u64) {
        let at = self.tables_dir + i * TABLE_DIR_LEN;
        let b = &self.bytes;
        (u32_at(b, at), u32_at(b, at + 4), u64_at(b, at + 8))
    }

    fn table_at(&self, off: u64, len: u64) -> &[u8] {
        &self.bytes[self.tables_data + off as usize..][..len as usize]
    }

    /// The segment table of file number `doc` (a large file), if it has one.
    pub fn table(&self, doc: u32) -> Option<&[u8]> {
        let (mut lo, mut hi) = (0usize, self.tables);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let (d, entries, off) = self.table_entry(mid);
            match d.cmp(&doc) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let len = u64::from(entries) * crate::segments::ENTRY as u64;
                    return Some(self.table_at(off, len));
                }
            }
        }
        None
    }

    /// Every segment table: its file's number and its bytes, by file.
    pub fn tables(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        (0..self.tables).map(|i| {
            let (d, entries, off) = self.table_entry(i);
            let len = u64::from(entries) * crate::segments::ENTRY as u64;
            (d, self.table_at(off, len))
        })
    }

    pub fn doc_count(&self) -> usize {
        self.docs
    }

    pub fn gram_count(&self) -> usize {
        self.grams
    }

    /// Bytes of the index.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    pub fn is_mapped(&self) -> bool {
        self.bytes.is_mapped()
    }

    /// Let the mapped file's pages go from the process's memory (opening
    /// read them all, for the checksum): queries bring back those they read.
    pub fn forget_pages(&self) {
        self.bytes.forget_pages();
    }

    fn gram_entry(&self, i: usize) -> (u32, u32, u64) {
        let at = self.grams_off + i * GRAM_LEN;
        let b = &self.bytes;
        (u32_at(b, at), u32_at(b, at + 4), u64_at(b, at + 8))
    }

    /// A name in the names section (checked at open).
    fn name(&self, off: usize, len: usize) -> &str {
        std::str::from_utf8(&self.bytes[self.names_off + off..][..len]).unwrap_or("")
    }

    /// File number `i`'s version.
    pub fn meta(&self, i: usize) -> DocMeta {
        let b = &self.bytes;
        let at = self.docs_off + i * DOC_LEN;
        DocMeta {
            state: DocState::from_u8(b[at + 10]).unwrap_or(DocState::Unreadable),
            size: u64_at(b, at + 12),
            mtime_s: u64_at(b, at + 20) as i64,
            ctime_s: u64_at(b, at + 28) as i64,
            mtime_ns: u32_at(b, at + 36),
            ctime_ns: u32_at(b, at + 40),
            ino: u64_at(b, at + 44),
        }
    }

    /// The paths of the files, by number, as the live index holds them.
    pub(crate) fn paths(&self) -> Result<Paths, LoadError> {
        let mut paths = Paths::new();
        paths.reserve(self.docs, self.folders, self.names_len);
        // Folder number in the file to number held. (Two folders alike, which
        // this writer never writes, would be held as one.)
        let mut held = vec![TOP; self.folders];
        let b = &self.bytes;
        for f in 1..self.folders {
            let at = self.folders_off + f * FOLDER_LEN;
            let parent = held[u32_at(b, at) as usize];
            let name = self.name(u32_at(b, at + 4) as usize, u32_at(b, at + 8) as usize);
            // Checked at open: the names fit in 4 GiB, the parent is before.
            held[f] = paths
                .folder(parent, name)
                .ok_or(LoadError::Corrupt("folder table"))?;
        }
        for i in 0..self.docs {
            let at = self.docs_off + i * DOC_LEN;
            let folder = held[u32_at(b, at) as usize];
            let name = self.name(u32_at(b, at + 4) as usize, u16_of(self, at + 8));
            paths
                .add(folder, name)
                .ok_or(LoadError::Corrupt("file table"))?;
        }
        Ok(paths)
    }

    /// How many files hold `gram`, and their encoded list.
    pub fn posting(&self, gram: u32) -> Option<Posting<'_>> {
        let (mut lo, mut hi) = (0usize, self.grams);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let (g, _, _) = self.gram_entry(mid);
            match g.cmp(&gram) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.posting_by_index(mid)),
            }
        }
        None
    }

    /// The posting of the `i`-th trigram of the table.
    pub fn posting_by_index(&self, i: usize) -> Posting<'_> {
        let (gram, count, off) = self.gram_entry(i);
        let end = if i + 1 < self.grams {
            self.gram_entry(i + 1).2 as usize
        } else {
            self.postings_len
        };
        let start = (off as usize).min(end);
        Posting {
            gram,
            count,
            bytes: &self.bytes[self.postings_off + start..self.postings_off + end],
            docs: self.docs as u32,
        }
    }
}

fn u16_of(base: &Base, at: usize) -> usize {
    u16::from_le_bytes([base.bytes[at], base.bytes[at + 1]]) as usize
}

/// One trigram's files.
pub struct Posting<'a> {
    pub gram: u32,
    pub count: u32,
    bytes: &'a [u8],
    docs: u32,
}

impl Posting<'_> {
    /// Call `f` with every file number, ascending; stops at damage (a number
    /// past the end, a gap of zero after the first).
    pub fn for_each(&self, mut f: impl FnMut(u32)) {
        let mut at = 0;
        let mut doc = 0u32;
        for i in 0..self.count {
            let Some(gap) = get_varint(self.bytes, &mut at) else {
                return;
            };
            if i > 0 && gap == 0 {
                return;
            }
            let Some(d) = doc.checked_add(gap).filter(|&d| d < self.docs) else {
                return;
            };
            doc = d;
            f(doc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_file_hashed_a_part_at_a_time_hashes_as_a_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        // Past two steps of the hash, not a multiple of eight.
        let data: Vec<u8> = (0..(17u32 << 20) + 13)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        let mapped = Bytes::map(&path).unwrap();
        for from in [0, HEADER_LEN, 8 << 20] {
            assert_eq!(mapped.hash_from(from), hash64(&data[from..]), "from {from}");
        }
        assert_eq!(&mapped[..], &data[..], "the pages come back as they were");
        assert_eq!(
            Bytes::Heap(data.clone()).hash_from(HEADER_LEN),
            hash64(&data[HEADER_LEN..])
        );
    }

    #[test]
    fn every_state_is_named_as_it_is_serialised() {
        let states: Vec<DocState> = (0..=255).filter_map(DocState::from_u8).collect();
        assert_eq!(states.len(), 12);
        for st in states {
            assert_eq!(serde_json::to_value(st).unwrap(), st.as_str(), "{st:?}");
        }
    }

    fn meta(size: u64, state: DocState) -> DocMeta {
        DocMeta {
            size,
            mtime_s: 1_700_000_000,
            mtime_ns: 5,
            ctime_s: 1_700_000_001,
            ctime_ns: 6,
            ino: 42,
            state,
        }
    }

    /// A segment table: trigram 7 in segments 0 and 5, 9 in segment 1.
    fn table() -> Vec<u8> {
        let mut t = Vec::new();
        for (g, m) in [(7u32, 0b100001u64), (9, 0b10)] {
            t.extend_from_slice(&g.to_le_bytes());
            t.extend_from_slice(&m.to_le_bytes());
        }
        t
    }

    fn sample(sink: Sink) -> Bytes {
        let mut w = Writer::new(sink).unwrap();
        for (gram, docs) in [(7, &[0, 2][..]), (9, &[1]), (0xFF_FFFF, &[0, 1, 2])] {
            let (mut gaps, mut list) = (crate::build::Gaps::default(), Vec::new());
            for &d in docs {
                gaps.push(&mut list, d);
            }
            w.add_encoded(gram, gaps.count, &list).unwrap();
        }
        let t = table();
        let mut paths = Paths::new();
        for p in ["a.txt", "dir/ü.md", "bin"] {
            paths.push(p).unwrap();
        }
        w.finish(
            &paths,
            &[
                meta(10, DocState::Text),
                meta(20, DocState::Text),
                meta(30, DocState::Binary),
            ],
            &[(1, &t)],
            99,
            60,
        )
        .unwrap()
    }

    fn docs_of(base: &Base, gram: u32) -> Vec<u32> {
        let mut out = Vec::new();
        if let Some(p) = base.posting(gram) {
            p.for_each(|d| out.push(d));
        }
        out
    }

    #[test]
    fn written_then_read_back() {
        let base = Base::open(sample(Sink::memory()), 99).unwrap();
        assert_eq!(
            (base.doc_count(), base.gram_count(), base.text_bytes),
            (3, 3, 60)
        );
        assert_eq!(docs_of(&base, 7), [0, 2]);
        assert_eq!(docs_of(&base, 9), [1]);
        assert_eq!(docs_of(&base, 0xFF_FFFF), [0, 1, 2]);
        assert!(base.posting(8).is_none());
        let paths = base.paths().unwrap();
        assert_eq!(paths.path(1), "dir/ü.md");
        assert_eq!(paths.get("dir/ü.md"), Some(1));
        assert_eq!(paths.path(2), "bin");
        assert_eq!(base.meta(2), meta(30, DocState::Binary));
        assert_eq!(base.table(1), Some(&table()[..]));
        assert_eq!(base.table(0), None);
        assert_eq!(crate::segments::mask(base.table(1).unwrap(), 7), 0b100001);
        assert_eq!(base.tables().map(|(d, _)| d).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn a_file_index_is_mapped_and_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("sub/x.idx");
        let bytes = sample(Sink::file(&dest).unwrap());
        assert!(bytes.is_mapped());
        let base = Base::open(Bytes::map(&dest).unwrap(), 99).unwrap();
        assert_eq!(docs_of(&base, 7), [0, 2]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dest).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // No temporary file is left behind.
        assert_eq!(
            std::fs::read_dir(dir.path().join("sub")).unwrap().count(),
            1
        );
    }

    #[test]
    fn damage_of_any_kind_is_refused() {
        let good = match sample(Sink::memory()) {
            Bytes::Heap(v) => v,
            Bytes::Map(_) => unreachable!(),
        };
        assert_eq!(
            Base::open(Bytes::Heap(good.clone()), 98).err(),
            Some(LoadError::Foreign)
        );
        for cut in [0, 10, HEADER_LEN, good.len() - 1] {
            assert!(matches!(
                Base::open(Bytes::Heap(good[..cut].to_vec()), 99),
                Err(LoadError::Corrupt(_))
            ));
        }
        // Every single flipped byte after the header is caught.
        for at in HEADER_LEN..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x40;
            assert!(Base::open(Bytes::Heap(bad), 99).is_err(), "byte {at}");
        }
        let mut bad = good.clone();
        bad[0] = b'X';
        assert!(Base::open(Bytes::Heap(bad), 99).is_err());
    }
}
