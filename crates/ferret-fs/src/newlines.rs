//! Line ends in raw bytes, without decoding: a file's line count in one
//! streaming pass, and where its last lines begin, found by reading back
//! from its end. Both agree with `text::scan_lines` on what a line is (ended
//! by `\n`; a last line without one still counts).
//!
//! A `\n` byte ends a line in every encoding ferret decodes but UTF-16: in
//! UTF-8 and in the legacy multi-byte encodings (GBK, Big5, Shift_JIS, EUC-*)
//! the byte 0x0A is never part of another character. A UTF-16 line ends with
//! the unit 0x000A, read two bytes at a time.

use std::io::{self, Read, Seek, SeekFrom};

use crate::sniff::Detected;

/// How a line end is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Byte,
    Utf16Le,
    Utf16Be,
}

impl Form {
    fn of(detected: &Detected) -> Form {
        if detected.encoding == encoding_rs::UTF_16LE {
            Form::Utf16Le
        } else if detected.encoding == encoding_rs::UTF_16BE {
            Form::Utf16Be
        } else {
            Form::Byte
        }
    }

    fn width(self) -> u64 {
        match self {
            Form::Byte => 1,
            _ => 2,
        }
    }

    /// Whether the unit starting at `unit[0]` is a line end.
    fn is_newline(self, unit: &[u8]) -> bool {
        match self {
            Form::Byte => unit[0] == b'\n',
            Form::Utf16Le => unit[0] == b'\n' && unit[1] == 0,
            Form::Utf16Be => unit[0] == 0 && unit[1] == b'\n',
        }
    }
}

/// Counts the lines of a stream fed to it piece by piece.
#[derive(Debug)]
pub struct Counter {
    form: Form,
    /// Byte-order-mark bytes still to skip.
    bom_left: usize,
    newlines: u64,
    /// Whether anything follows the last line end (a last line without one).
    open_line: bool,
    /// The first byte of a UTF-16 unit split between two pieces.
    carry: Option<u8>,
}

impl Counter {
    pub fn new(detected: &Detected) -> Counter {
        Counter {
            form: Form::of(detected),
            bom_left: detected.bom_len,
            newlines: 0,
            open_line: false,
            carry: None,
        }
    }

    pub fn feed(&mut self, mut bytes: &[u8]) {
        if self.bom_left > 0 {
            let skip = self.bom_left.min(bytes.len());
            bytes = &bytes[skip..];
            self.bom_left -= skip;
        }
        if bytes.is_empty() {
            return;
        }
        match self.form {
            Form::Byte => {
                let n = memchr::memchr_iter(b'\n', bytes).count() as u64;
                self.newlines += n;
                self.open_line = bytes[bytes.len() - 1] != b'\n';
            }
            form => {
                if let Some(first) = self.carry.take() {
                    let unit = [first, bytes[0]];
                    self.unit(form, &unit);
                    bytes = &bytes[1..];
                }
                let mut units = bytes.chunks_exact(2);
                for unit in &mut units {
                    self.unit(form, unit);
                }
                if let [last] = units.remainder() {
                    self.carry = Some(*last);
                }
            }
        }
    }

    fn unit(&mut self, form: Form, unit: &[u8]) {
        let newline = form.is_newline(unit);
        self.newlines += u64::from(newline);
        self.open_line = !newline;
    }

    /// Lines so far, the open last line included.
    pub fn lines(&self) -> u64 {
        self.newlines + u64::from(self.open_line)
    }
}

/// The lines of `bytes`, a whole file.
pub fn count(bytes: &[u8], detected: &Detected) -> u64 {
    let mut counter = Counter::new(detected);
    counter.feed(bytes);
    counter.lines()
}

/// Count the lines of `reader` to its end, handing every piece to `also`
/// (a checksum) too. `go_on(bytes so far)` is asked after every piece; when it
/// says no, the count stops and is `None`.
pub fn count_stream<R: Read>(
    mut reader: R,
    detected: &Detected,
    also: &mut dyn FnMut(&[u8]),
    go_on: &dyn Fn(u64) -> bool,
) -> io::Result<Option<u64>> {
    let mut counter = Counter::new(detected);
    let mut buf = vec![0u8; 256 * 1024];
    let mut read = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(Some(counter.lines())),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        counter.feed(&buf[..n]);
        also(&buf[..n]);
        read += n as u64;
        if !go_on(read) {
            return Ok(None);
        }
    }
}

/// Where the last lines of a file begin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    /// The byte offset of the first of them (a line start).
    pub offset: u64,
    /// How many lines there are from `offset` to the end.
    pub lines: u64,
    /// `offset` is the start of the text: the file has no more lines than these.
    pub whole: bool,
    /// Fewer lines than asked: no line end was found within `reach` bytes.
    pub cut: bool,
}

/// Find where the last `wanted` lines of `file` (`size` bytes, decoded as
/// `detected`) begin, reading back from the end at most `reach` bytes.
pub fn find_tail<F: Read + Seek>(
    file: &mut F,
    size: u64,
    detected: &Detected,
    wanted: u64,
    reach: u64,
) -> io::Result<Tail> {
    let form = Form::of(detected);
    let w = form.width();
    let text_start = (detected.bom_len as u64).min(size);
    // Whole units only: a UTF-16 file cut mid-unit ends one byte early.
    let end = text_start + (size - text_start) / w * w;
    if end == text_start {
        return Ok(Tail {
            offset: text_start,
            lines: 0,
            whole: true,
            cut: false,
        });
    }
    let mut unit = [0u8; 2];
    file.seek(SeekFrom::Start(end - w))?;
    file.read_exact(&mut unit[..w as usize])?;
    // A line end at the very end closes the last line; it starts no new one.
    let scan_end = if form.is_newline(&unit) { end - w } else { end };
    let floor = text_start.max(end.saturating_sub(reach) / w * w + text_start % w);
    let mut found = 0u64;
    let mut farthest = None;
    let mut pos = scan_end;
    let mut buf = vec![0u8; 64 * 1024];
    while pos > floor {
        let len = (pos - floor).min(buf.len() as u64) / w * w;
        let len = if len == 0 { pos - floor } else { len };
        let from = pos - len;
        let piece = &mut buf[..len as usize];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(piece)?;
        let mut hits: Vec<u64> = Vec::new();
        match form {
            Form::Byte => hits.extend(memchr::memrchr_iter(b'\n', piece).map(|i| i as u64)),
            _ => {
                let mut i = piece.len() / 2;
                while i > 0 {
                    i -= 1;
                    if form.is_newline(&piece[i * 2..i * 2 + 2]) {
                        hits.push(i as u64 * 2);
                    }
                }
            }
        }
        for at in hits {
            found += 1;
            farthest = Some(from + at);
            if found == wanted {
                return Ok(Tail {
                    offset: from + at + w,
                    lines: wanted,
                    whole: false,
                    cut: false,
                });
            }
        }
        pos = from;
    }
    if floor == text_start {
        return Ok(Tail {
            offset: text_start,
            lines: found + 1,
            whole: true,
            cut: false,
        });
    }
    Ok(match farthest {
        Some(at) => Tail {
            offset: at + w,
            lines: found,
            whole: false,
            cut: true,
        },
        // One line longer than the reach: its end, from mid-line.
        None => Tail {
            offset: floor,
            lines: 1,
            whole: false,
            cut: true,
        },
    })
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::{
        sniff::detect_encoding,
        text::{Window, scan_lines},
    };

    fn scanned_lines(bytes: &[u8]) -> u64 {
        let d = detect_encoding(bytes, true);
        scan_lines(bytes, &d, &Window::none(), true)
            .unwrap()
            .total_lines
            .unwrap()
    }

    fn utf16le(text: &str, bom: bool) -> Vec<u8> {
        let mut out = if bom { vec![0xff, 0xfe] } else { vec![] };
        for u in text.encode_utf16() {
            out.extend_from_slice(&u.to_le_bytes());
        }
        out
    }

    #[test]
    fn counts_agree_with_the_decoding_scan() {
        let samples: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"\n".to_vec(),
            b"a".to_vec(),
            b"a\n".to_vec(),
            b"a\nb".to_vec(),
            b"a\r\nb\r\n\r\n".to_vec(),
            b"\xef\xbb\xbf".to_vec(),
            b"\xef\xbb\xbfone\ntwo".to_vec(),
            utf16le("h\u{e9}llo\r\nw\u{f6}rld\r\n", true),
            utf16le("x\ny", true),
            // U+0A0A in UTF-16: two 0x0A bytes that are not a line end.
            utf16le("\u{a0a}\u{a0a}\n", true),
            encoding_rs::GBK
                .encode("第一行中文内容用于检测编码\n第二行中文内容继续测试\n最后一行")
                .0
                .into_owned(),
        ];
        for s in &samples {
            let d = detect_encoding(s, true);
            assert_eq!(count(s, &d), scanned_lines(s), "{s:?}");
            // Fed in pieces of every size, even odd ones for UTF-16.
            for piece in [1, 2, 3, 7] {
                let mut c = Counter::new(&d);
                for part in s.chunks(piece) {
                    c.feed(part);
                }
                assert_eq!(c.lines(), scanned_lines(s), "{s:?} in pieces of {piece}");
            }
        }
    }

    #[test]
    fn a_stream_count_can_be_stopped_and_feeds_the_checksum() {
        let data = b"a\nb\nc\n".repeat(100_000);
        let d = detect_encoding(&data[..1000], false);
        let mut seen = 0usize;
        let total = count_stream(&data[..], &d, &mut |p| seen += p.len(), &|_| true).unwrap();
        assert_eq!((total, seen), (Some(300_000), data.len()));
        let stopped = count_stream(&data[..], &d, &mut |_| {}, &|_| false).unwrap();
        assert_eq!(stopped, None);
    }

    fn tail_text(bytes: &[u8], wanted: u64, reach: u64) -> (Tail, String) {
        let d = detect_encoding(bytes, true);
        let mut c = Cursor::new(bytes.to_vec());
        let t = find_tail(&mut c, bytes.len() as u64, &d, wanted, reach).unwrap();
        let rest = &bytes[t.offset as usize..];
        let text = if Form::of(&d) == Form::Byte {
            String::from_utf8_lossy(rest).into_owned()
        } else {
            let units: Vec<u16> = rest
                .chunks_exact(2)
                .map(|u| u16::from_le_bytes([u[0], u[1]]))
                .collect();
            String::from_utf16_lossy(&units)
        };
        (t, text)
    }

    #[test]
    fn the_tail_starts_at_a_line_start() {
        let file: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let (t, text) = tail_text(file.as_bytes(), 3, 1 << 20);
        assert_eq!(text, "line 998\nline 999\nline 1000\n");
        assert_eq!((t.lines, t.whole, t.cut), (3, false, false));
        // No final line end: the open last line is one of the three.
        let (t, text) = tail_text(b"a\nb\nc\nd", 3, 1 << 20);
        assert_eq!((text.as_str(), t.lines), ("b\nc\nd", 3));
        // Fewer lines than asked: the whole text, and how many it has.
        let (t, text) = tail_text(b"a\nb\n", 10, 1 << 20);
        assert_eq!((text.as_str(), t.lines, t.whole), ("a\nb\n", 2, true));
        let (t, _) = tail_text(b"\n", 5, 1 << 20);
        assert_eq!((t.lines, t.whole), (1, true));
        // Reading back across many 64 KiB pieces.
        let big: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
        let (t, text) = tail_text(big.as_bytes(), 150_000, 1 << 30);
        assert_eq!(t.lines, 150_000);
        assert!(text.starts_with("50001\n"), "{}", &text[..20]);
    }

    /// A file that remembers the lowest offset it was read from.
    struct Watched {
        inner: Cursor<Vec<u8>>,
        lowest: u64,
    }

    impl Read for Watched {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.lowest = self.lowest.min(self.inner.position());
            self.inner.read(buf)
        }
    }

    impl Seek for Watched {
        fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
            self.inner.seek(to)
        }
    }

    #[test]
    fn a_tail_reads_only_the_end_of_the_file() {
        let big: Vec<u8> = (0..2_000_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let size = big.len() as u64;
        let d = detect_encoding(&big[..4096], false);
        let mut f = Watched {
            inner: Cursor::new(big),
            lowest: u64::MAX,
        };
        let t = find_tail(&mut f, size, &d, 100, 1 << 30).unwrap();
        assert_eq!(t.lines, 100);
        // The last byte, then one 64 KiB piece before it: 100 short lines are in it.
        assert!(
            size - f.lowest <= 64 * 1024 + 1,
            "read back {} bytes",
            size - f.lowest
        );
    }

    #[test]
    fn utf16_tails_keep_whole_units() {
        let bytes = utf16le("one\ntwo\nthree\n", true);
        let (t, text) = tail_text(&bytes, 2, 1 << 20);
        assert_eq!((text.as_str(), t.lines), ("two\nthree\n", 2));
        let bytes = utf16le("\u{a0a}\u{a0a}\nlast", true);
        let (_, text) = tail_text(&bytes, 1, 1 << 20);
        assert_eq!(text, "last");
    }

    #[test]
    fn the_reach_bounds_how_far_back_it_reads() {
        let mut file = b"early\n".to_vec();
        file.extend(std::iter::repeat_n(b'x', 5000));
        file.extend(b"\nshort\nend\n");
        let (t, text) = tail_text(&file, 10, 100);
        assert_eq!((text.as_str(), t.lines, t.cut), ("short\nend\n", 2, true));
        // Not one line end within reach: the end of the last line.
        let (t, text) = tail_text(&[b'y'; 1000], 1, 100);
        assert_eq!((t.lines, t.cut, text.len()), (1, true, 100));
    }
}
