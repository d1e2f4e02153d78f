//! `read`: a window of a text file, or an image, never a whole huge file.

use std::{
    io::{Read, Seek, SeekFrom},
    time::{Duration, Instant},
};

use sha2::{Digest, Sha256};

pub use crate::window::{Image, ReadOutcome, ReadRequest, TextWindow};
use crate::{
    error::{ErrorCode, FsError, FsResult},
    facts::rfc3339,
    newlines,
    roots::{Roots, Target},
    sniff::{self, Content, Detected},
    text::{self, Numbering},
};

/// Bytes read before deciding what a file is and, for large files, its encoding.
const HEAD_BYTES: usize = 64 * 1024;

/// How far back from its end a tail of a large file looks for its lines.
pub const TAIL_REACH: u64 = 64 << 20;

/// How long counting the lines of a large file may take (a checksum, when
/// asked for, is computed however long it takes).
pub const COUNT_TIME: Duration = Duration::from_secs(3);

/// The checksum format shared by `read`, `stat` and (later) the write tools.
pub fn checksum(bytes: &[u8]) -> String {
    hex_digest(&Sha256::digest(bytes))
}

/// Read up to `limit` bytes (fewer only at the end of the file).
pub(crate) fn read_up_to<R: Read>(reader: &mut R, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(limit.min(1 << 20));
    reader.take(limit as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

pub fn image_dimensions(bytes: &[u8]) -> (Option<u64>, Option<u64>) {
    match imagesize::blob_size(bytes) {
        Ok(size) => (Some(size.width as u64), Some(size.height as u64)),
        Err(_) => (None, None),
    }
}

/// Read a window of a text file, or an image as image data.
pub(crate) fn read(roots: &Roots, input: &str, request: &ReadRequest) -> FsResult<ReadOutcome> {
    let shown = input.trim();
    let (root, rel) = match roots.resolve(input)? {
        Target::AllRoots => {
            return Err(
                FsError::new(ErrorCode::IsDirectory, "`.` is the list of roots")
                    .hint("call `list` to see them")
                    .suggest("list"),
            );
        }
        Target::In(root, rel) => (root, rel),
    };
    let mut opened = roots.open_for_content(root, &rel, shown)?;
    let path = roots.display(root, &rel);
    let size = opened.metadata.len();
    let modified = rfc3339(opened.metadata.modified());
    let limits = &roots.policy.limits;
    let io_err = |e: std::io::Error| FsError::from_io(&e, shown);
    let mut head = read_up_to(&mut opened.file, HEAD_BYTES).map_err(io_err)?;
    if let Some(format) = crate::document::document_format(roots, opened.real.as_str(), &head) {
        return crate::document::read_document(roots, opened, format, path, shown, request)
            .map(ReadOutcome::Text);
    }
    if request.selection.is_some() {
        return Err(FsError::new(
            ErrorCode::NotFound,
            format!("`{shown}` is not a document: it has no pages or sheets"),
        )
        .hint("`pages` and `sheet` are for PDF, Office, OpenDocument and EPUB files; read text by `start_line`"));
    }

    match sniff::classify(&head) {
        Content::Image(format) => {
            if size > limits.max_image_bytes {
                return Err(FsError::new(
                    ErrorCode::TooLarge,
                    format!(
                        "`{shown}` is a {} image of {size} bytes, over the {} byte image limit",
                        format.name(),
                        limits.max_image_bytes
                    ),
                )
                .hint("`stat` gives its dimensions; the operator can raise --max-image-bytes")
                .suggest("stat"));
            }
            let rest =
                read_up_to(&mut opened.file, limits.max_image_bytes as usize).map_err(io_err)?;
            head.extend_from_slice(&rest);
            let (width, height) = image_dimensions(&head);
            return Ok(ReadOutcome::Image(Image {
                path,
                format,
                checksum: checksum(&head),
                bytes: head,
                width,
                height,
                modified,
            }));
        }
        Content::Binary(kind) => {
            return Err(FsError::new(
                ErrorCode::BinaryContent,
                format!("`{shown}` is binary ({kind}, {size} bytes), not text"),
            )
            .hint("`stat` gives its size and checksum; binary content is not returned")
            .suggest("stat")
            .detail("size", size.to_string())
            .detail("type", kind));
        }
        Content::Text => {}
    }

    let whole = size <= limits.max_file_bytes;
    let mut numbering = Numbering::FromStart;
    let total_lines;
    let (scan, detected, checksum) = if whole {
        let rest =
            read_up_to(&mut opened.file, limits.max_file_bytes as usize + 1).map_err(io_err)?;
        head.extend_from_slice(&rest);
        let detected = sniff::detect_encoding(&head, true);
        let start = match request.from_end {
            Some(_) => request.start(1, newlines::count(&head, &detected)),
            None => request.start_line.max(1),
        };
        let window = request.window(start, u64::MAX, limits);
        let scan = text::scan_lines(&head[..], &detected, &window, true).map_err(io_err)?;
        total_lines = scan.total_lines;
        (scan, detected, Some(checksum(&head)))
    } else {
        // Large file: never read whole into memory. Its lines are counted
        // (and its checksum computed, when asked) in one streaming pass.
        let detected = sniff::detect_encoding(&head, false);
        let file = &mut opened.file;
        let (counted, sum) =
            if request.checksum || (request.count_lines && request.from_end.is_none()) {
                count_to_end(file, size, &detected, request).map_err(io_err)?
            } else {
                (None, None)
            };
        let mut total = counted;
        let scan = match request.from_end {
            None => {
                file.seek(SeekFrom::Start(0)).map_err(io_err)?;
                let window = request.window(request.start_line.max(1), u64::MAX, limits);
                text::scan_lines(&mut *file, &detected, &window, false).map_err(io_err)?
            }
            Some(n) => {
                // A tail: found by reading back from the end, decoded
                // from where it starts.
                let tail =
                    newlines::find_tail(file, size, &detected, n, TAIL_REACH).map_err(io_err)?;
                file.seek(SeekFrom::Start(tail.offset)).map_err(io_err)?;
                let from_tail = Detected {
                    bom_len: if tail.offset == 0 {
                        detected.bom_len
                    } else {
                        0
                    },
                    ..detected.clone()
                };
                let mut window = request.window(1, tail.lines.max(1), limits);
                let before = counted.map(|t| t.saturating_sub(tail.lines));
                window.numbering = match before {
                    Some(b) => Numbering::After(b),
                    None if tail.whole => Numbering::FromStart,
                    None => Numbering::FromEnd(tail.lines),
                };
                if tail.whole {
                    total = Some(tail.lines);
                }
                numbering = window.numbering;
                let mut scan =
                    text::scan_lines(&mut *file, &from_tail, &window, false).map_err(io_err)?;
                scan.truncated |= tail.cut;
                if let Numbering::After(b) = numbering {
                    shift(&mut scan, b);
                    numbering = Numbering::FromStart;
                }
                scan
            }
        };
        total_lines = total;
        (scan, detected, sum)
    };
    let encoding = if scan.replaced && detected.encoding == encoding_rs::UTF_8 {
        "utf-8-lossy".to_string()
    } else {
        detected.label.clone()
    };
    Ok(ReadOutcome::Text(TextWindow {
        path,
        size,
        total_lines,
        start_line: scan.first_line,
        end_line: scan.last_line,
        next_start_line: scan.next_start_line,
        truncated: scan.truncated,
        encoding,
        line_endings: scan.line_endings(),
        clipped_lines: scan.clipped,
        text: scan.text,
        modified,
        checksum,
        document: None,
        numbering,
    }))
}

/// Renumber a pass that started after `before` lines.
fn shift(scan: &mut text::Scan, before: u64) {
    scan.first_line += before;
    scan.last_line += before;
    if let Some(n) = scan.next_start_line.as_mut() {
        *n += before;
    }
    for c in &mut scan.clipped {
        c.line += before;
    }
}

/// Count the lines of a large file in one pass from its start, and compute
/// its checksum on the way when asked. The count gives up after
/// [`COUNT_TIME`] (`None`) unless the checksum was asked for; both give up
/// when the request's meter is stopped.
fn count_to_end(
    file: &mut cap_std::fs::File,
    size: u64,
    detected: &Detected,
    request: &ReadRequest,
) -> std::io::Result<(Option<u64>, Option<String>)> {
    file.seek(SeekFrom::Start(0))?;
    let started = Instant::now();
    let meter = request.meter.as_deref();
    if let Some(m) = meter {
        m.set_total(size);
    }
    let mut hasher = request.checksum.then(Sha256::new);
    let go_on = |read: u64| {
        if let Some(m) = meter {
            m.done.store(read, std::sync::atomic::Ordering::Relaxed);
            if m.cancelled() {
                return false;
            }
        }
        request.checksum || started.elapsed() < COUNT_TIME
    };
    let lines = newlines::count_stream(
        &mut *file,
        detected,
        &mut |piece| {
            if let Some(h) = hasher.as_mut() {
                h.update(piece);
            }
        },
        &go_on,
    )?;
    let sum = match (lines, hasher) {
        (Some(_), Some(h)) => Some(hex_digest(&h.finalize())),
        _ => None,
    };
    Ok((lines, sum))
}

pub(crate) fn hex_digest(digest: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Limits, Meter, Policy, RootSpec};
    use std::sync::Arc;

    /// A root whose files above 2 KiB count as large.
    fn roots_with(files: &[(&str, Vec<u8>)]) -> (tempfile::TempDir, Roots) {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in files {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        let spec: RootSpec = dir.path().to_str().unwrap().parse().unwrap();
        let policy = Policy {
            limits: Limits {
                max_file_bytes: 2048,
                ..Limits::default()
            },
            ..Policy::default()
        };
        let roots = Roots::open(&[spec], policy).unwrap();
        (dir, roots)
    }

    fn numbered(from: u64, to: u64) -> Vec<u8> {
        (from..=to)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect()
    }

    fn text(roots: &Roots, path: &str, request: &ReadRequest) -> TextWindow {
        match roots.read(path, request).unwrap() {
            ReadOutcome::Text(w) => w,
            ReadOutcome::Image(_) => panic!("not text"),
        }
    }

    #[test]
    fn a_large_file_is_counted_and_checksummed_when_asked() {
        let big = numbered(1, 5000);
        let (_dir, roots) = roots_with(&[("big.txt", big.clone())]);
        let w = text(
            &roots,
            "big.txt",
            &ReadRequest {
                max_lines: 2,
                ..ReadRequest::default()
            },
        );
        assert_eq!(
            (w.text.as_str(), w.total_lines),
            ("line 1\nline 2\n", None),
            "not asked"
        );
        let counting = ReadRequest {
            count_lines: true,
            max_lines: 2,
            ..ReadRequest::default()
        };
        let w = text(&roots, "big.txt", &counting);
        assert_eq!(w.text, "line 1\nline 2\n");
        assert_eq!((w.total_lines, w.next_start_line), (Some(5000), Some(3)));
        assert_eq!(w.checksum, None, "not asked for");
        let meter = Arc::new(Meter::new());
        let asked = ReadRequest {
            start_line: 4999,
            checksum: true,
            meter: Some(meter.clone()),
            ..ReadRequest::default()
        };
        let w = text(&roots, "big.txt", &asked);
        assert_eq!(w.text, "line 4999\nline 5000\n");
        assert_eq!(w.checksum.as_deref(), Some(checksum(&big).as_str()));
        assert_eq!(meter.read(), (big.len() as u64, Some(big.len() as u64)));
        // A stopped meter stops the pass: no count, no checksum.
        let stopped = Arc::new(Meter::new());
        stopped.stop();
        let w = text(
            &roots,
            "big.txt",
            &ReadRequest {
                meter: Some(stopped),
                checksum: true,
                ..ReadRequest::default()
            },
        );
        assert_eq!((w.total_lines, w.checksum), (None, None));
        assert_eq!(
            w.text.lines().next(),
            Some("line 1"),
            "the window is still read"
        );
    }

    #[test]
    fn tails_give_the_last_lines() {
        let (_dir, roots) = roots_with(&[
            ("small.txt", numbered(1, 10)),
            ("big.txt", numbered(1, 5000)),
            (
                "short-big.txt",
                numbered(1, 3).into_iter().chain(vec![b'x'; 3000]).collect(),
            ),
        ]);
        let tail = |n: u64| ReadRequest {
            from_end: Some(n),
            line_numbers: true,
            ..ReadRequest::default()
        };
        // A small file is read whole: the tail has its real line numbers.
        let w = text(&roots, "small.txt", &tail(3));
        assert_eq!(w.text, "8\tline 8\n9\tline 9\n10\tline 10\n");
        assert_eq!((w.start_line, w.end_line, w.total_lines), (8, 10, Some(10)));
        assert_eq!(w.numbering, Numbering::FromStart);
        // A large one is not counted: numbers count back from the end.
        let w = text(&roots, "big.txt", &tail(3));
        assert_eq!(w.text, "-3\tline 4998\n-2\tline 4999\n-1\tline 5000\n");
        assert_eq!(w.total_lines, None);
        assert_eq!(w.numbering, Numbering::FromEnd(3));
        assert_eq!(
            (
                w.numbering.shown(w.start_line),
                w.numbering.shown(w.end_line)
            ),
            (-3, -1)
        );
        // Paging back: 2 lines from 5 before the end.
        let w = text(
            &roots,
            "big.txt",
            &ReadRequest {
                max_lines: 2,
                ..tail(5)
            },
        );
        assert_eq!(w.text, "-5\tline 4996\n-4\tline 4997\n");
        assert_eq!(w.next_start_line.map(|n| w.numbering.shown(n)), Some(-3));
        // With the checksum asked the file is read anyway: real numbers again.
        let w = text(
            &roots,
            "big.txt",
            &ReadRequest {
                checksum: true,
                ..tail(2)
            },
        );
        assert_eq!(w.text, "4999\tline 4999\n5000\tline 5000\n");
        assert_eq!((w.start_line, w.total_lines), (4999, Some(5000)));
        // A large file of fewer lines than asked: the whole of it, counted.
        let w = text(
            &roots,
            "short-big.txt",
            &ReadRequest {
                line_numbers: false,
                ..tail(10)
            },
        );
        assert!(w.text.starts_with("line 1\n"));
        assert_eq!((w.start_line, w.end_line, w.total_lines), (1, 4, Some(4)));
    }

    #[test]
    fn a_tail_over_the_budget_keeps_its_end() {
        let (_dir, roots) = roots_with(&[("big.txt", numbered(1, 5000))]);
        let w = text(
            &roots,
            "big.txt",
            &ReadRequest {
                from_end: Some(1000),
                max_bytes: Some(30),
                ..ReadRequest::default()
            },
        );
        assert_eq!(w.text, "line 4998\nline 4999\nline 5000\n");
        assert!(w.truncated);
        assert_eq!(w.numbering.shown(w.start_line), -3);
    }
}
