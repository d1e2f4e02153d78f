//! Reading one file for the index, through the roots' handles, and judging it
//! the way `ferret-grep` does: a document (its cached text), binary, text in
//! another encoding, or text whose bytes are what the matcher sees.

use std::{io::Read, sync::Arc};

use cap_std::fs::MetadataExt;
use ferret_fs::{
    ErrorCode, Roots, Target,
    ferret_docs::{Extracted, Key},
    sniff,
};

use crate::format::{DocMeta, DocState};

/// What was read.
pub enum Text {
    /// The file's bytes, in the caller's buffer.
    Bytes,
    /// A document's extracted text.
    Document(Arc<Extracted>),
    /// Text in UTF-16 or a legacy encoding, decoded as grep decodes it.
    Decoded(Vec<u8>),
    None,
}

fn meta_of(m: &cap_std::fs::Metadata, state: DocState) -> DocMeta {
    DocMeta {
        size: m.len(),
        mtime_s: m.mtime(),
        mtime_ns: m.mtime_nsec() as u32,
        ctime_s: m.ctime(),
        ctime_ns: m.ctime_nsec() as u32,
        ino: m.ino(),
        state,
    }
}

/// Read `shown` (a path as shown to agents) into `buf` when it is text of at
/// most `max_bytes`. Sensitive files are refused by the file layer before
/// they are opened; FIFOs and devices are never opened for reading.
pub fn read(roots: &Roots, shown: &str, max_bytes: u64, buf: &mut Vec<u8>) -> (DocMeta, Text) {
    buf.clear();
    let unread = |state| (DocMeta::unread(0, state), Text::None);
    let opened = match roots.resolve(shown) {
        Ok(Target::In(root, rel)) => roots.open_for_content(root, &rel, shown),
        Ok(Target::AllRoots) => return unread(DocState::Unreadable),
        Err(e) => Err(e),
    };
    let mut opened = match opened {
        Ok(o) => o,
        Err(e) if e.code == ErrorCode::PathDenied => return unread(DocState::Sensitive),
        Err(_) => return unread(DocState::Unreadable),
    };
    let before = meta_of(&opened.metadata, DocState::Text);
    // A change through another of its hard links is heard in that link's
    // folder only (or nowhere, from outside the roots): never vouched for,
    // so not read either.
    if opened.metadata.is_file() && opened.metadata.nlink() > 1 {
        return (before.with(DocState::Linked), Text::None);
    }
    let size = before.size;
    // The head decides, as in ferret-grep: document, binary, encoding. It is
    // read straight into `buf`, and no further than the size the file had
    // when opened: a small file costs one read, not a second to find its
    // end (a file that grew since is caught by its metadata below). An
    // empty file is read as far as a head goes: some files (in /proc, say)
    // say they are empty and are not.
    let head_len = match size {
        0 => sniff::BINARY_SNIFF_BYTES,
        n => (n as usize).min(sniff::BINARY_SNIFF_BYTES),
    };
    buf.resize(head_len, 0);
    let mut filled = 0;
    while filled < head_len {
        match opened.file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                buf.clear();
                return (before.with(DocState::Unreadable), Text::None);
            }
        }
    }
    buf.truncate(filled);
    let head = &buf[..];
    let judged = if roots.document_format(opened.real.as_str(), head).is_some() {
        // Documents only when the roots read them (as ferret-grep asks):
        // with documents off, a PDF is judged by its bytes like any file.
        // Only text already extracted (by a grep or read of the document):
        // indexing never starts an extraction.
        let cached = roots.documents().and_then(|docs| {
            let key = Key::of(&opened.file).ok()?;
            docs.cached(&key)?.ok()
        });
        Some(match cached {
            Some(doc) => (before.with(DocState::Document), Text::Document(doc)),
            None => (before.with(DocState::DocumentPending), Text::None),
        })
    } else if size > max_bytes {
        Some((before.with(DocState::TooLarge), Text::None))
    } else if !matches!(sniff::classify(head), sniff::Content::Text) {
        Some((before.with(DocState::Binary), Text::None))
    } else {
        None
    };
    if let Some(judged) = judged {
        buf.clear();
        return judged;
    }
    if (buf.len() as u64) < size {
        buf.reserve_exact((size - buf.len() as u64) as usize);
        let rest = size - buf.len() as u64;
        if opened.file.by_ref().take(rest).read_to_end(buf).is_err() {
            buf.clear();
            return (before.with(DocState::Unreadable), Text::None);
        }
    }
    // Changed while read (rewritten, truncated, grown): not this version.
    let after = opened.file.metadata().map(|m| meta_of(&m, DocState::Text));
    if buf.len() as u64 != size || !after.is_ok_and(|a| a.same_version(&before)) {
        buf.clear();
        return (before.with(DocState::Changed), Text::None);
    }
    // The head decides how the matcher sees the file (`filled` bytes of it).
    match seen_as(&buf[..filled], filled as u64 >= size) {
        Seen::AsIs => (before, Text::Bytes),
        Seen::Decoded(encoding, mark) => {
            // One call decodes what the searcher decodes in pieces:
            // `encoding_rs` gives the same text either way.
            let text = encoding.decode_without_bom_handling(&buf[mark..]).0;
            let text = text.into_owned().into_bytes();
            buf.clear();
            (before.with(DocState::Decoded), Text::Decoded(text))
        }
        Seen::Unlabelled => {
            buf.clear();
            (before.with(DocState::Transcoded), Text::None)
        }
    }
}

impl DocMeta {
    fn with(self, state: DocState) -> DocMeta {
        DocMeta { state, ..self }
    }
}

/// How ripgrep's searcher hands a text file to the matcher, as
/// `ferret-grep` (`search_one`) sets it up from the same head.
enum Seen {
    /// Its own bytes: no byte-order mark but UTF-8's, and no legacy
    /// encoding detected. (A UTF-8 mark is stripped there: its bytes here
    /// only add trigrams, never remove one.)
    AsIs,
    /// Decoded: by the mark's encoding, the mark (its length) dropped, as
    /// the searcher sniffs and strips marks; else by the encoding detected,
    /// given to the searcher by its label.
    Decoded(&'static encoding_rs::Encoding, usize),
    /// A detected encoding whose label the searcher does not know (it then
    /// searches the bytes as they are): not indexed, searched directly.
    Unlabelled,
}

fn seen_as(head: &[u8], complete: bool) -> Seen {
    match sniff::bom(head) {
        Some((encoding, _, _)) if encoding == encoding_rs::UTF_8 => Seen::AsIs,
        Some((encoding, mark, _)) => Seen::Decoded(encoding, mark),
        None => match sniff::detect_encoding(head, complete).encoding {
            encoding if encoding == encoding_rs::UTF_8 => Seen::AsIs,
            encoding => match encoding_rs::Encoding::for_label(encoding.name().as_bytes()) {
                Some(named) => Seen::Decoded(named, 0),
                None => Seen::Unlabelled,
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use std::{
        io::Write,
        sync::atomic::{AtomicBool, Ordering},
    };

    use ferret_fs::Policy;

    use super::*;

    /// A file that says it is empty and is not (as in /proc) is read as far
    /// as a head goes, and never taken for an empty text (the index would
    /// then say it holds nothing, and grep would never read it).
    #[test]
    fn a_file_that_says_it_is_empty_and_is_not_is_never_an_empty_text() {
        let roots = Roots::open(&["/proc/self".parse().unwrap()], Policy::default())
            .expect("/proc/self opens as a root (Linux)");
        let mut buf = Vec::new();
        let (meta, _) = read(&roots, "status", 64 << 20, &mut buf);
        assert_eq!({ meta.size }, 0, "/proc/self/status says it is empty");
        assert_eq!(meta.state, DocState::Changed);
        assert!(buf.is_empty());
    }

    /// A file with a second hard link is not read: a write through the
    /// other link is heard in that link's folder only (or nowhere), so the
    /// index never answers for it. Its one-link neighbour is read.
    #[test]
    fn a_hard_linked_file_is_never_vouched_for() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("one.txt"), "text\n").unwrap();
        std::fs::write(dir.path().join("alone.txt"), "text\n").unwrap();
        let roots = Roots::open(
            &[dir.path().to_str().unwrap().parse().unwrap()],
            Policy::default(),
        )
        .unwrap();
        let mut buf = Vec::new();
        let (meta, _) = read(&roots, "one.txt", 64 << 20, &mut buf);
        assert_eq!(meta.state, DocState::Text);
        std::fs::hard_link(dir.path().join("one.txt"), dir.path().join("two.txt")).unwrap();
        for name in ["one.txt", "two.txt"] {
            let (meta, text) = read(&roots, name, 64 << 20, &mut buf);
            assert_eq!(meta.state, DocState::Linked, "{name}");
            assert!(!meta.state.indexed() && matches!(text, Text::None) && buf.is_empty());
        }
        let (meta, _) = read(&roots, "alone.txt", 64 << 20, &mut buf);
        assert_eq!(meta.state, DocState::Text);
    }

    /// A file written while it is read is never taken for a version it was
    /// not: every read either has exactly the bytes of the size it reports,
    /// or is marked changed (searched directly until read again).
    #[test]
    fn a_file_rewritten_while_read_is_marked_changed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("growing.txt");
        std::fs::write(&path, "start\n".repeat(20_000)).unwrap();
        let roots = Roots::open(
            &[dir.path().to_str().unwrap().parse().unwrap()],
            Policy::default(),
        )
        .unwrap();
        let stop = AtomicBool::new(false);
        let started = AtomicBool::new(false);
        let (mut changed, mut whole) = (0, 0);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                let mut written = 0;
                while !stop.load(Ordering::Relaxed) && written < 32 << 20 {
                    f.write_all(b"more text appended while it is read\n")
                        .unwrap();
                    written += 36;
                    started.store(true, Ordering::Relaxed);
                }
            });
            while !started.load(Ordering::Relaxed) {
                std::thread::yield_now();
            }
            let mut buf = Vec::new();
            // Until a read has seen the change (a loaded machine may give
            // the writer few turns), at most 2,000 reads.
            for _ in 0..2000 {
                if changed > 0 && changed + whole >= 200 {
                    break;
                }
                let (meta, text) = read(&roots, "growing.txt", 64 << 20, &mut buf);
                match (meta.state, text) {
                    (DocState::Changed, Text::None) => changed += 1,
                    (DocState::Text, Text::Bytes) => {
                        assert_eq!(buf.len() as u64, { meta.size });
                        whole += 1;
                    }
                    (state, _) => panic!("unexpected {state:?}"),
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert!(
            changed > 0,
            "no read saw the file change ({whole} whole reads)"
        );
    }
}
