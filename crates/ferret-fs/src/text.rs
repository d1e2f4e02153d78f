//! Decoding a file into lines, in one streaming pass that can stop early.
//!
//! The same pass serves a `read` window (stop after the window when the file is
//! large), and the line count and line-ending facts of `stat` (run to the end).

use std::io::{self, Read};

use crate::sniff::Detected;

/// Which lines to keep, and the budgets that bound them.
#[derive(Debug, Clone)]
pub struct Window {
    /// First line to return (1-based).
    pub start: u64,
    /// Last line to return (inclusive).
    pub end: u64,
    /// Bytes of text the window may return; it stops before a line that would pass it.
    pub max_bytes: usize,
    /// Longer lines are clipped to this many characters.
    pub max_line_chars: usize,
    /// Prefix each returned line with its number and a tab.
    pub line_numbers: bool,
    /// When the byte budget is reached, drop the earliest lines (a tail keeps
    /// its end) instead of stopping.
    pub keep_last: bool,
    /// The numbers `line_numbers` shows, for a pass that does not start at
    /// the file's first line.
    pub numbering: Numbering,
}

/// How a line's place in the pass becomes the number shown for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Numbering {
    /// The pass starts at the file's first line.
    #[default]
    FromStart,
    /// The pass starts after this many lines.
    After(u64),
    /// The pass covers this many lines, the file's last: line 1 of the
    /// pass is shown as `-n`, the last line as `-1`.
    FromEnd(u64),
}

impl Numbering {
    /// The number shown for line `n` of the pass.
    pub fn shown(self, n: u64) -> i64 {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        match self {
            Numbering::FromStart => n,
            Numbering::After(before) => n.saturating_add(i64::try_from(before).unwrap_or(0)),
            Numbering::FromEnd(lines) => n - i64::try_from(lines).unwrap_or(0) - 1,
        }
    }
}

impl Window {
    /// A window that keeps nothing: for counting lines only.
    pub fn none() -> Window {
        Window {
            start: u64::MAX,
            end: 0,
            max_bytes: 0,
            max_line_chars: 0,
            line_numbers: false,
            keep_last: false,
            numbering: Numbering::FromStart,
        }
    }
}

/// A line that was shortened, and its full length in characters.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ClippedLine {
    pub line: u64,
    pub chars: u64,
}

/// What one pass learnt.
#[derive(Debug, Default)]
pub struct Scan {
    /// The window's text, exactly as in the file (line endings kept) but for clipping.
    pub text: String,
    /// Number of the first line returned: the window's start, or later when
    /// `keep_last` dropped lines to stay within the budget.
    pub first_line: u64,
    /// Number of the last line returned (start - 1 when none was).
    pub last_line: u64,
    /// The next line to ask for, when lines remain after what was returned.
    pub next_start_line: Option<u64>,
    /// Total lines, when the pass reached the end of the file.
    pub total_lines: Option<u64>,
    /// The byte budget stopped the window before its last line.
    pub truncated: bool,
    pub clipped: Vec<ClippedLine>,
    pub crlf: u64,
    pub lf: u64,
    /// Some bytes could not be decoded and became U+FFFD.
    pub replaced: bool,
}

impl Scan {
    pub fn line_endings(&self) -> &'static str {
        match (self.crlf, self.lf) {
            (0, _) => "lf",
            (_, 0) => "crlf",
            _ => "mixed",
        }
    }
}

/// The line being read.
#[derive(Default)]
struct Line {
    kept: String,
    kept_chars: usize,
    chars: u64,
    started: bool,
    ends_with_cr: bool,
}

struct Scanner<'w> {
    window: &'w Window,
    scan: Scan,
    line_no: u64,
    line: Line,
    stopped: bool,
}

impl Scanner<'_> {
    fn wants(&self, n: u64) -> bool {
        !self.stopped && n >= self.window.start && n <= self.window.end
    }

    /// Add a piece of the current line (no `\n` inside).
    fn push(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        if !self.line.started {
            self.line.started = true;
            if self.line_no > self.window.end || self.stopped {
                self.scan.next_start_line.get_or_insert(self.line_no);
            }
        }
        self.line.ends_with_cr = piece.ends_with('\r');
        if self.wants(self.line_no) {
            let room = self
                .window
                .max_line_chars
                .saturating_sub(self.line.kept_chars);
            let mut taken = 0;
            for (i, c) in piece.char_indices() {
                if taken == room {
                    self.line.kept.push_str(&piece[..i]);
                    break;
                }
                taken += 1;
                if i + c.len_utf8() == piece.len() {
                    self.line.kept.push_str(piece);
                }
            }
            self.line.kept_chars += taken;
            self.line.chars += piece.chars().count() as u64;
        }
    }

    /// The current line ended (`newline` says whether with a line feed).
    fn finish(&mut self, newline: bool) {
        if !newline && !self.line.started {
            return;
        }
        if !self.line.started {
            self.line.started = true;
            if self.line_no > self.window.end || self.stopped {
                self.scan.next_start_line.get_or_insert(self.line_no);
            }
        }
        let crlf = newline && self.line.ends_with_cr;
        if newline {
            if crlf {
                self.scan.crlf += 1;
            } else {
                self.scan.lf += 1;
            }
        }
        if self.wants(self.line_no) {
            self.emit(crlf, newline);
        }
        self.line_no += 1;
        self.line = Line::default();
    }

    fn emit(&mut self, crlf: bool, newline: bool) {
        let n = self.line_no;
        let line = std::mem::take(&mut self.line);
        let mut text = line.kept;
        let mut chars = line.chars;
        if crlf {
            // The `\r` belongs to the ending, not to the line's text.
            if text.ends_with('\r') {
                text.pop();
            }
            chars -= 1;
        }
        let mut clipped = chars > text.chars().count() as u64;
        let number = if self.window.line_numbers {
            format!("{}\t", self.window.numbering.shown(n))
        } else {
            String::new()
        };
        let ending = match (newline, crlf) {
            (false, _) => "",
            (true, true) => "\r\n",
            (true, false) => "\n",
        };
        let cost = number.len() + text.len() + ending.len();
        if self.window.keep_last {
            while !self.scan.text.is_empty() && self.scan.text.len() + cost > self.window.max_bytes
            {
                self.drop_first_line();
            }
        }
        if self.scan.text.len() + cost > self.window.max_bytes {
            if !self.scan.text.is_empty() {
                self.stopped = true;
                self.scan.truncated = true;
                self.scan.next_start_line = Some(n);
                return;
            }
            // A single line larger than the whole budget: clip it to fit.
            let room = self
                .window
                .max_bytes
                .saturating_sub(number.len() + ending.len());
            let mut cut = room.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            clipped = true;
        }
        if clipped {
            self.scan.clipped.push(ClippedLine { line: n, chars });
        }
        self.scan.text.push_str(&number);
        self.scan.text.push_str(&text);
        self.scan.text.push_str(ending);
        self.scan.last_line = n;
    }

    /// Drop the earliest line kept (its line end is a `\n`: only the file's
    /// last line can lack one, and it is never before another).
    fn drop_first_line(&mut self) {
        let cut = memchr::memchr(b'\n', self.scan.text.as_bytes())
            .map_or(self.scan.text.len(), |i| i + 1);
        self.scan.text.drain(..cut);
        let dropped = self.scan.first_line;
        self.scan.clipped.retain(|c| c.line != dropped);
        self.scan.first_line += 1;
        self.scan.truncated = true;
    }

    fn feed(&mut self, chunk: &str) {
        let mut rest = chunk;
        while let Some(pos) = memchr::memchr(b'\n', rest.as_bytes()) {
            self.push(&rest[..pos]);
            self.finish(true);
            rest = &rest[pos + 1..];
        }
        self.push(rest);
    }

    fn done_early(&self) -> bool {
        self.scan.next_start_line.is_some()
    }
}

/// Decode `reader` with `detected` (its BOM already skipped by the caller or not:
/// the BOM bytes are dropped here) and collect `window`. With `to_end` false, the
/// pass stops as soon as it knows whether lines remain after the window.
pub fn scan_lines<R: Read>(
    mut reader: R,
    detected: &Detected,
    window: &Window,
    to_end: bool,
) -> io::Result<Scan> {
    let mut decoder = detected.encoding.new_decoder_without_bom_handling();
    let mut scanner = Scanner {
        window,
        scan: Scan {
            first_line: window.start,
            last_line: window.start.saturating_sub(1),
            ..Scan::default()
        },
        line_no: 1,
        line: Line::default(),
        stopped: false,
    };
    let mut raw = vec![0u8; 64 * 1024];
    let mut decoded = String::new();
    let mut bom_left = detected.bom_len;
    loop {
        let n = read_some(&mut reader, &mut raw)?;
        let last = n == 0;
        let mut input = &raw[..n];
        if bom_left > 0 {
            let skip = bom_left.min(input.len());
            input = &input[skip..];
            bom_left -= skip;
        }
        decoded.clear();
        decoded.reserve(
            decoder
                .max_utf8_buffer_length(input.len())
                .unwrap_or(input.len() * 3 + 16),
        );
        let (_, _, replaced) = decoder.decode_to_string(input, &mut decoded, last);
        scanner.scan.replaced |= replaced;
        scanner.feed(&decoded);
        if last {
            scanner.finish(false);
            scanner.scan.total_lines = Some(scanner.line_no - 1);
            break;
        }
        if !to_end && scanner.done_early() {
            break;
        }
    }
    Ok(scanner.scan)
}

fn read_some<R: Read>(reader: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match reader.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sniff::detect_encoding;

    fn window(start: u64, end: u64) -> Window {
        Window {
            start,
            end,
            max_bytes: 1 << 20,
            max_line_chars: 1000,
            line_numbers: false,
            keep_last: false,
            numbering: Numbering::FromStart,
        }
    }

    fn scan(bytes: &[u8], w: &Window) -> Scan {
        scan_lines(bytes, &detect_encoding(bytes, true), w, true).unwrap()
    }

    #[test]
    fn counts_lines_like_an_editor() {
        assert_eq!(scan(b"", &Window::none()).total_lines, Some(0));
        assert_eq!(scan(b"\n", &Window::none()).total_lines, Some(1));
        assert_eq!(scan(b"a", &Window::none()).total_lines, Some(1));
        assert_eq!(scan(b"a\nb\n", &Window::none()).total_lines, Some(2));
        assert_eq!(scan(b"a\nb", &Window::none()).total_lines, Some(2));
    }

    #[test]
    fn windows_keep_the_text_exactly() {
        let s = scan(b"one\r\ntwo\r\nthree\r\n", &window(2, 3));
        assert_eq!(s.text, "two\r\nthree\r\n");
        assert_eq!((s.last_line, s.next_start_line), (3, None));
        assert_eq!(s.line_endings(), "crlf");
        let s = scan(b"a\nb\r\nc", &window(1, 2));
        assert_eq!(s.text, "a\nb\r\n");
        assert_eq!(s.next_start_line, Some(3));
        assert_eq!(s.line_endings(), "mixed");
        let s = scan(b"a\nb\n", &window(5, 9));
        assert_eq!(
            (s.text.as_str(), s.last_line, s.next_start_line),
            ("", 4, None)
        );
    }

    #[test]
    fn budget_stops_on_a_whole_line() {
        let mut w = window(1, 100);
        w.max_bytes = 10;
        let s = scan(b"1234\n5678\nabcd\n", &w);
        assert_eq!(s.text, "1234\n5678\n");
        assert!(s.truncated);
        assert_eq!(s.next_start_line, Some(3));
    }

    #[test]
    fn long_lines_are_clipped_and_reported() {
        let long = "x".repeat(100_000);
        let bytes = format!("short\n{long}\nend\n");
        let mut w = window(1, 3);
        w.max_line_chars = 50;
        let s = scan(bytes.as_bytes(), &w);
        assert_eq!(s.text, format!("short\n{}\nend\n", "x".repeat(50)));
        assert_eq!(
            s.clipped,
            vec![ClippedLine {
                line: 2,
                chars: 100_000
            }]
        );
    }

    #[test]
    fn a_single_line_over_the_budget_is_cut_to_fit() {
        let mut w = window(1, 1);
        w.max_bytes = 8;
        let s = scan("ééééééé\n".as_bytes(), &w);
        assert!(s.text.len() <= 8);
        assert_eq!(s.clipped.len(), 1);
    }

    #[test]
    fn line_numbers_are_optional() {
        let mut w = window(2, 3);
        w.line_numbers = true;
        assert_eq!(scan(b"a\nb\nc\n", &w).text, "2\tb\n3\tc\n");
    }

    #[test]
    fn a_tail_keeps_its_last_lines_within_the_budget() {
        let mut w = window(1, 100);
        w.keep_last = true;
        w.max_bytes = 10;
        w.line_numbers = true;
        w.numbering = Numbering::FromEnd(5);
        let s = scan(b"aa\nbb\ncc\ndd\nee\n", &w);
        // "-1\tee\n" is 6 bytes: only the last line fits in 10.
        assert_eq!(s.text, "-1\tee\n");
        assert_eq!((s.first_line, s.last_line, s.truncated), (5, 5, true));
        w.max_bytes = 1 << 20;
        w.numbering = Numbering::After(100);
        let s = scan(b"aa\nbb\n", &w);
        assert_eq!(s.text, "101\taa\n102\tbb\n");
        assert_eq!(s.first_line, 1);
    }

    #[test]
    fn utf16_and_legacy_text_decode() {
        let mut utf16 = vec![0xff, 0xfe];
        for u in "héllo\r\nwörld\r\n".encode_utf16() {
            utf16.extend_from_slice(&u.to_le_bytes());
        }
        let s = scan(&utf16, &window(1, 10));
        assert_eq!(s.text, "héllo\r\nwörld\r\n");
        assert_eq!(s.total_lines, Some(2));
        let (gbk, _, _) =
            encoding_rs::GBK.encode("第一行中文内容用于检测编码\n第二行中文内容继续测试\n");
        let s = scan(&gbk, &window(2, 2));
        assert_eq!(s.text, "第二行中文内容继续测试\n");
    }

    #[test]
    fn streaming_stops_after_the_window() {
        // A reader that fails if read past the first chunk proves the pass stopped.
        struct Limited(Vec<u8>, bool);
        impl Read for Limited {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                assert!(!self.1, "read past the window");
                self.1 = true;
                let n = self.0.len().min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                Ok(n)
            }
        }
        let data: Vec<u8> = (0..1000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let det = detect_encoding(&data, false);
        let s = scan_lines(Limited(data, false), &det, &window(10, 20), false).unwrap();
        assert_eq!(s.text.lines().next(), Some("line 9"));
        assert_eq!(s.next_start_line, Some(21));
        assert_eq!(s.total_lines, None);
    }
}
