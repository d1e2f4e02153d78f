//! Case folding, literal search with anchors and whole words, and name globs.
//!
//! Case-insensitive matching compares [`fold_case`]d bytes: ASCII letters are
//! lowercased in place (the fast path), other characters with Unicode's simple,
//! context-free lowercase mapping (`char::to_lowercase`, so `É` → `é`), then
//! stripped of their diacritics (decomposed, the combining accents dropped, and
//! the Latin letters with a stroke, `ø ł đ ħ ŧ`, taken as their base letter:
//! `résumé` → `resume`, as Everything matches by default), then composed (Unicode's
//! NFC, so names that differ only in their normalisation match alike), and bytes
//! that are not valid UTF-8 are kept as they are. Needles are folded the same way
//! once, at compile time.

use std::borrow::Cow;
use std::cell::Cell;

use memchr::memmem;

/// Folds case the way every case-insensitive comparison of this crate does: ASCII
/// lowercase for ASCII text (borrowed, no work when already lowercase), else each
/// character's Unicode lowercase mapping, invalid UTF-8 bytes unchanged.
///
/// [`crate::Query::required_name_literals`] are folded this way: an index that checks
/// them against its own lowercase copy of names must fold non-ASCII names with this
/// function (an ASCII-only lowercase misses `K`, the Kelvin sign, whose lowercase is `k`).
pub fn fold_case(s: &[u8]) -> Cow<'_, [u8]> {
    if s.is_ascii() && !s.iter().any(u8::is_ascii_uppercase) {
        return Cow::Borrowed(s);
    }
    let mut out = Vec::with_capacity(s.len());
    fold_into(s, &mut out);
    Cow::Owned(out)
}

/// Appends the folded form of `s` to `out`.
pub(crate) fn fold_into(s: &[u8], out: &mut Vec<u8>) {
    if s.is_ascii() {
        out.extend(s.iter().map(u8::to_ascii_lowercase));
        return;
    }
    for chunk in s.utf8_chunks() {
        let start = out.len();
        for c in chunk.valid().chars() {
            if c.is_ascii() {
                out.push(c.to_ascii_lowercase() as u8);
            } else {
                for l in c.to_lowercase() {
                    unicode_normalization::char::decompose_canonical(l, |d| {
                        if !is_diacritic(d) {
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(unstroked(d).encode_utf8(&mut buf).as_bytes());
                        }
                    });
                }
            }
        }
        compose_from(out, start);
        out.extend_from_slice(chunk.invalid());
    }
}

/// The combining accents [`fold_case`] drops, as ranges of characters: the
/// Unicode blocks of combining diacritical marks, which Latin, Greek and
/// Cyrillic accents decompose to. Other combining marks (the kana's voicing
/// marks, Indic vowel signs) change the letter and are kept.
pub const DIACRITICS: [(char, char); 4] = [
    ('\u{300}', '\u{36F}'),
    ('\u{1AB0}', '\u{1AFF}'),
    ('\u{1DC0}', '\u{1DFF}'),
    ('\u{FE20}', '\u{FE2F}'),
];

fn is_diacritic(c: char) -> bool {
    DIACRITICS.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// The base letter of a lowercase Latin letter with a stroke, which has no
/// decomposition to drop an accent from.
fn unstroked(c: char) -> char {
    match c {
        'ø' => 'o',
        'ł' => 'l',
        'đ' => 'd',
        'ħ' => 'h',
        'ŧ' => 't',
        other => other,
    }
}

/// `out[start..]` (valid UTF-8) in Unicode's composed form (NFC), in place;
/// nothing to do for most text, which the quick check says is composed.
fn compose_from(out: &mut Vec<u8>, start: usize) {
    use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};
    let Ok(text) = std::str::from_utf8(&out[start..]) else {
        return;
    };
    if is_nfc_quick(text.chars()) == IsNormalized::Yes {
        return;
    }
    let composed: String = text.nfc().collect();
    out.truncate(start);
    out.extend_from_slice(composed.as_bytes());
}

pub(crate) fn fold_str(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    fold_into(s.as_bytes(), &mut out);
    out
}

thread_local! {
    /// Reused buffers, so that folding a name or building a path allocates only while
    /// a thread warms up.
    static POOL: Cell<Vec<Vec<u8>>> = const { Cell::new(Vec::new()) };
}

/// A cleared buffer from this thread's pool.
pub(crate) fn take_buf() -> Vec<u8> {
    POOL.with(|p| {
        let mut pool = p.take();
        let buf = pool.pop().unwrap_or_default();
        p.set(pool);
        buf
    })
}

/// Gives a buffer back to this thread's pool.
pub(crate) fn give_buf(mut buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > 1 << 16 {
        return;
    }
    buf.clear();
    POOL.with(|p| {
        let mut pool = p.take();
        if pool.len() < 8 {
            pool.push(buf);
        }
        p.set(pool);
    });
}

/// Word characters for whole-word matching: letters, digits (Unicode) and `_`.
pub(crate) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The character that starts at `i` (`None` at the end or on invalid UTF-8).
fn char_at(h: &[u8], i: usize) -> Option<char> {
    let len = utf8_len(h, i);
    std::str::from_utf8(h.get(i..i + len)?).ok()?.chars().next()
}

/// The character that ends at `i` (`None` at the start or on invalid UTF-8).
fn char_before(h: &[u8], i: usize) -> Option<char> {
    let len = utf8_len_before(h, i);
    if len == 0 {
        return None;
    }
    std::str::from_utf8(&h[i - len..i]).ok()?.chars().next()
}

/// Byte length of the character at `i` (1 for an invalid byte, 0 at the end).
pub(crate) fn utf8_len(h: &[u8], i: usize) -> usize {
    let Some(&b) = h.get(i) else { return 0 };
    let want = match b {
        0x00..=0x7f => return 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return 1,
    };
    match h.get(i..i + want) {
        Some(bytes) if std::str::from_utf8(bytes).is_ok() => want,
        _ => 1,
    }
}

/// Byte length of the character ending at `i` (1 for an invalid byte, 0 at the start).
pub(crate) fn utf8_len_before(h: &[u8], i: usize) -> usize {
    if i == 0 {
        return 0;
    }
    for len in 2..=4.min(i) {
        if utf8_len(h, i - len) == len {
            return len;
        }
    }
    1
}

/// Where a literal must sit in the haystack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Anywhere,
    Start,
    End,
    Whole,
}

/// A literal needle with its anchor and whole-word rule, searched with `memmem`.
#[derive(Debug, Clone)]
pub(crate) struct Literal {
    needle: Vec<u8>,
    /// Boxed: a finder is large, and nodes are kept small.
    finder: Box<memmem::Finder<'static>>,
    anchor: Anchor,
    /// Whole words: the match must not cut a word in two, i.e. a word character at
    /// the needle's edge must not touch another word character outside it.
    word: bool,
    first_is_word: bool,
    last_is_word: bool,
    /// The needle is ASCII (else [`Literal::is_match_ascii_ci`] never matches).
    ascii: bool,
}

impl Literal {
    pub fn new(needle: Vec<u8>, anchor: Anchor, word: bool) -> Literal {
        let first_is_word = char_at(&needle, 0).is_some_and(is_word_char);
        let last_is_word = char_before(&needle, needle.len()).is_some_and(is_word_char);
        Literal {
            finder: Box::new(memmem::Finder::new(&needle).into_owned()),
            ascii: needle.is_ascii(),
            needle,
            anchor,
            word,
            first_is_word,
            last_is_word,
        }
    }

    pub fn needle(&self) -> &[u8] {
        &self.needle
    }

    /// Whether a match anywhere in a haystack's prefix is a match in the whole
    /// haystack (a substring search with no anchor and no whole-word rule).
    pub fn holds_in_any_extension(&self) -> bool {
        self.anchor == Anchor::Anywhere && !self.word
    }

    fn word_ok(&self, hay: &[u8], start: usize) -> bool {
        let end = start + self.needle.len();
        (!self.first_is_word || !char_before(hay, start).is_some_and(is_word_char))
            && (!self.last_is_word || !char_at(hay, end).is_some_and(is_word_char))
    }

    /// Case-insensitive match on an ASCII haystack, in place: the same answer as
    /// [`Literal::is_match`] on the haystack's fold (the needle is already folded).
    pub fn is_match_ascii_ci(&self, hay: &[u8]) -> bool {
        debug_assert!(hay.is_ascii());
        if !self.ascii {
            // A folded ASCII haystack holds no non-ASCII byte.
            return false;
        }
        let n = self.needle.len();
        if n > hay.len() {
            return false;
        }
        let eq = |i: usize| hay[i..i + n].eq_ignore_ascii_case(&self.needle);
        match self.anchor {
            Anchor::Whole => hay.len() == n && eq(0),
            Anchor::Start => eq(0) && (!self.word || self.word_ok(hay, 0)),
            Anchor::End => {
                let at = hay.len() - n;
                eq(at) && (!self.word || self.word_ok(hay, at))
            }
            Anchor::Anywhere => {
                let Some(&first) = self.needle.first() else {
                    return true;
                };
                let upper = first.to_ascii_uppercase();
                let last_start = hay.len() - n;
                let mut from = 0;
                while let Some(i) = memchr::memchr2(first, upper, &hay[from..=last_start]) {
                    let at = from + i;
                    if eq(at) && (!self.word || self.word_ok(hay, at)) {
                        return true;
                    }
                    from = at + 1;
                    if from > last_start {
                        break;
                    }
                }
                false
            }
        }
    }

    pub fn is_match(&self, hay: &[u8]) -> bool {
        let n = self.needle.len();
        match self.anchor {
            Anchor::Whole => hay == self.needle.as_slice(),
            Anchor::Start => hay.starts_with(&self.needle) && (!self.word || self.word_ok(hay, 0)),
            Anchor::End => {
                hay.ends_with(&self.needle) && (!self.word || self.word_ok(hay, hay.len() - n))
            }
            Anchor::Anywhere if !self.word => self.finder.find(hay).is_some(),
            Anchor::Anywhere => {
                // Overlapping occurrences matter here ("a-a" in "xa-a-a").
                let mut from = 0;
                while let Some(i) = self.finder.find(&hay[from..]) {
                    if self.word_ok(hay, from + i) {
                        return true;
                    }
                    from += i + 1;
                    if from > hay.len() {
                        break;
                    }
                }
                false
            }
        }
    }
}

/// One piece of a glob between stars.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Lit(Vec<u8>),
    /// `?`: exactly one character.
    Any,
}

type Seg = Vec<Tok>;

/// A glob over a name (`*` any run of characters, `?` one character) that must match
/// the whole haystack. Matching splits on the stars: the first piece must match at
/// the start, the last at the end, and the middle ones are found leftmost, in order,
/// in between (which is exact for `*`-only globs), so it runs in linear-ish time with
/// no backtracking blow-up.
#[derive(Debug, Clone)]
pub(crate) struct Glob {
    segs: Vec<Seg>,
    /// The pattern is ASCII (else [`Glob::is_match_ascii_ci`] never matches).
    ascii: bool,
    /// For middle segments that are one literal: a precompiled finder.
    finders: Vec<Option<Box<memmem::Finder<'static>>>>,
}

impl Glob {
    /// `pattern` is already case-folded when matching is case-insensitive.
    pub fn new(pattern: &[u8]) -> Glob {
        let mut segs: Vec<Seg> = vec![Vec::new()];
        let mut lit: Vec<u8> = Vec::new();
        let flush = |seg: &mut Seg, lit: &mut Vec<u8>| {
            if !lit.is_empty() {
                seg.push(Tok::Lit(std::mem::take(lit)));
            }
        };
        for &b in pattern {
            match b {
                b'*' => {
                    let seg = segs.last_mut().expect("one segment");
                    flush(seg, &mut lit);
                    segs.push(Vec::new());
                }
                b'?' => {
                    let seg = segs.last_mut().expect("one segment");
                    flush(seg, &mut lit);
                    seg.push(Tok::Any);
                }
                _ => lit.push(b),
            }
        }
        flush(segs.last_mut().expect("one segment"), &mut lit);
        let finders = segs
            .iter()
            .map(|s| match s.as_slice() {
                [Tok::Lit(l)] => Some(Box::new(memmem::Finder::new(l).into_owned())),
                _ => None,
            })
            .collect();
        Glob {
            segs,
            ascii: pattern.is_ascii(),
            finders,
        }
    }

    /// The literal every match ends with: the last piece's last literal (a
    /// match ends with the whole last piece, stars or not).
    pub fn suffix(&self) -> Option<&[u8]> {
        match self.segs.last()?.last()? {
            Tok::Lit(l) => Some(l),
            Tok::Any => None,
        }
    }

    /// The literal every match starts with: the first piece's first literal
    /// (a match starts with the whole first piece).
    pub fn prefix(&self) -> Option<&[u8]> {
        match self.segs.first()?.first()? {
            Tok::Lit(l) => Some(l),
            Tok::Any => None,
        }
    }

    /// Whether the glob is a star and then literal bytes alone (`*.h`).
    pub fn is_star_then_literal(&self) -> bool {
        matches!(self.segs.as_slice(), [first, last] if first.is_empty() && matches!(last.as_slice(), [Tok::Lit(_)]))
    }

    /// The literal pieces: every match contains each of them.
    pub fn literals(&self) -> impl Iterator<Item = &[u8]> {
        self.segs.iter().flatten().filter_map(|t| match t {
            Tok::Lit(l) => Some(l.as_slice()),
            Tok::Any => None,
        })
    }

    pub fn is_match(&self, h: &[u8]) -> bool {
        self.is_match_with(h, false)
    }

    /// Case-insensitive match on an ASCII haystack, in place: the same answer as
    /// [`Glob::is_match`] on the haystack's fold (the pattern is already folded).
    pub fn is_match_ascii_ci(&self, h: &[u8]) -> bool {
        debug_assert!(h.is_ascii());
        self.ascii && self.is_match_with(h, true)
    }

    fn is_match_with(&self, h: &[u8], ci: bool) -> bool {
        let last = self.segs.len() - 1;
        if last == 0 {
            return match_at(&self.segs[0], h, 0, ci) == Some(h.len());
        }
        let Some(mut pos) = match_at(&self.segs[0], h, 0, ci) else {
            return false;
        };
        let Some(end) = match_back(&self.segs[last], h, h.len(), ci) else {
            return false;
        };
        if end < pos {
            return false;
        }
        let middle = &h[..end];
        for (seg, finder) in self.segs[1..last].iter().zip(&self.finders[1..last]) {
            let found = match finder {
                Some(f) if !ci => f.find(&middle[pos..]).map(|i| pos + i + f.needle().len()),
                _ => find_seg(seg, middle, pos, ci),
            };
            match found {
                Some(next) => pos = next,
                None => return false,
            }
        }
        true
    }
}

/// Matches `seg` starting at `p`; the end offset.
/// `a == b`, ignoring ASCII case when `ci`.
#[inline]
fn same(a: &[u8], b: &[u8], ci: bool) -> bool {
    if ci {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

/// Matches `seg` starting at `p`; the end offset.
fn match_at(seg: &Seg, h: &[u8], mut p: usize, ci: bool) -> Option<usize> {
    for t in seg {
        match t {
            Tok::Lit(l) => {
                if !same(h.get(p..p.checked_add(l.len())?)?, l, ci) {
                    return None;
                }
                p += l.len();
            }
            Tok::Any => {
                let n = utf8_len(h, p);
                if n == 0 {
                    return None;
                }
                p += n;
            }
        }
    }
    Some(p)
}

/// Matches `seg` so that it ends at `end`; the start offset.
fn match_back(seg: &Seg, h: &[u8], mut end: usize, ci: bool) -> Option<usize> {
    for t in seg.iter().rev() {
        match t {
            Tok::Lit(l) => {
                if !same(h.get(end.checked_sub(l.len())?..end)?, l, ci) {
                    return None;
                }
                end -= l.len();
            }
            Tok::Any => {
                let n = utf8_len_before(h, end);
                if n == 0 {
                    return None;
                }
                end -= n;
            }
        }
    }
    Some(end)
}

/// The leftmost match of `seg` at or after `from`, on character boundaries; its end.
fn find_seg(seg: &Seg, h: &[u8], from: usize, ci: bool) -> Option<usize> {
    let mut p = from;
    loop {
        if let Some(end) = match_at(seg, h, p, ci) {
            return Some(end);
        }
        let n = utf8_len(h, p);
        if n == 0 {
            return None;
        }
        p += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(s: &str) -> Vec<u8> {
        fold_case(s.as_bytes()).into_owned()
    }

    #[test]
    fn folding() {
        assert_eq!(fold("ABC.rs"), b"abc.rs");
        assert_eq!(fold("Éclair"), b"eclair");
        assert_eq!(fold("ΣΑΣ"), "σασ".as_bytes());
        assert_eq!(fold("\u{212A}"), b"k");
        assert_eq!(fold_case(b"A\xffB").as_ref(), b"a\xffb");
        // É (C3 89) folds to e; the invalid byte stays.
        assert_eq!(fold_case(b"\xc3\x89\xff").as_ref(), b"e\xff");
        assert!(matches!(fold_case(b"lower"), Cow::Borrowed(_)));
        // Composed and decomposed forms fold alike, in either case; text
        // around an invalid byte is composed on each side of it.
        assert_eq!(fold("CAFE\u{301}"), fold("café"));
        assert_eq!(fold("Å"), fold("A\u{30a}"));
        // Diacritics are dropped: composed or not, in either case.
        assert_eq!(fold("Cafe\u{301}.txt"), b"cafe.txt");
        assert_eq!(
            fold("Résumé naïve Ångström Über"),
            b"resume naive angstrom uber"
        );
        assert_eq!(fold("Łódź Øre Đak"), b"lodz ore dak");
        assert_eq!(fold("ἀθῆναι"), fold("αθηναι"));
        assert_eq!(fold_case(b"e\xcc\x81\xffE\xcc\x81").as_ref(), b"e\xffe");
        // Marks that make another letter stay: kana voicing, Hangul
        // syllables (decomposed and composed again), CJK.
        assert_eq!(fold("が"), "が".as_bytes());
        assert_eq!(fold("ka\u{3099}"), "ka\u{3099}".as_bytes());
        assert_eq!(fold("한국어"), "한국어".as_bytes());
        assert_eq!(fold("文書"), "文書".as_bytes());
        // Letters that are not a letter plus an accent stay.
        assert_eq!(fold("Æsir Straße œuvre"), "æsir straße œuvre".as_bytes());
    }

    /// A literal whose in-place ASCII variant is checked against every answer.
    struct Checked(Literal);

    impl Checked {
        fn is_match(&self, h: &[u8]) -> bool {
            let want = self.0.is_match(h);
            if h.is_ascii() && !h.iter().any(u8::is_ascii_uppercase) {
                assert_eq!(self.0.is_match_ascii_ci(h), want);
                assert_eq!(self.0.is_match_ascii_ci(&h.to_ascii_uppercase()), want);
            }
            want
        }
    }

    fn lit(n: &str, anchor: Anchor, word: bool) -> Checked {
        Checked(Literal::new(n.as_bytes().to_vec(), anchor, word))
    }

    #[test]
    fn literal_anchors() {
        assert!(lit("ain", Anchor::Anywhere, false).is_match(b"main.rs"));
        assert!(!lit("mainx", Anchor::Anywhere, false).is_match(b"main.rs"));
        assert!(lit("main", Anchor::Start, false).is_match(b"main.rs"));
        assert!(!lit("ain", Anchor::Start, false).is_match(b"main.rs"));
        assert!(lit(".rs", Anchor::End, false).is_match(b"main.rs"));
        assert!(!lit("main", Anchor::End, false).is_match(b"main.rs"));
        assert!(lit("main.rs", Anchor::Whole, false).is_match(b"main.rs"));
        assert!(!lit("main", Anchor::Whole, false).is_match(b"main.rs"));
        assert!(lit("", Anchor::Anywhere, false).is_match(b""));
    }

    #[test]
    fn whole_words() {
        let w = lit("log", Anchor::Anywhere, true);
        assert!(w.is_match(b"app log.txt"));
        assert!(w.is_match(b"log"));
        assert!(w.is_match(b"error-log"));
        assert!(!w.is_match(b"catalog"));
        assert!(!w.is_match(b"logs"));
        assert!(!w.is_match(b"my_log"));
        assert!(w.is_match(b"catalog log"));
        // Overlapping occurrences.
        assert!(lit("a-a", Anchor::Anywhere, true).is_match(b"xa-a-a"));
        // Needles that start or end with a non-word character cut no word.
        assert!(lit(".rs", Anchor::Anywhere, true).is_match(b"main.rs"));
        assert!(!lit(".rs", Anchor::Anywhere, true).is_match(b"main.rsx"));
        // Unicode letters are word characters.
        assert!(!lit("caf", Anchor::Anywhere, true).is_match("café".as_bytes()));
        assert!(lit("café", Anchor::Start, true).is_match("café au lait".as_bytes()));
        assert!(!lit("café", Anchor::Start, true).is_match("cafés".as_bytes()));
        assert!(lit("lait", Anchor::End, true).is_match("café au lait".as_bytes()));
        assert!(!lit("ait", Anchor::End, true).is_match("café au lait".as_bytes()));
    }

    /// Checks the in-place ASCII variant against matching the fold, then answers.
    fn glob(p: &str, h: &str) -> bool {
        let g = Glob::new(&fold(p));
        let want = g.is_match(&fold(h));
        if h.is_ascii() {
            assert_eq!(g.is_match_ascii_ci(h.as_bytes()), want, "{p} on {h}");
            let upper = h.to_ascii_uppercase();
            assert_eq!(g.is_match_ascii_ci(upper.as_bytes()), want, "{p} on {h}");
        }
        Glob::new(p.as_bytes()).is_match(h.as_bytes())
    }

    #[test]
    fn globs() {
        assert!(glob("*.rs", "main.rs"));
        assert!(!glob("*.rs", "main.rs.bak"));
        assert!(glob("report-??.txt", "report-07.txt"));
        assert!(!glob("report-??.txt", "report-7.txt"));
        assert!(glob("report-??.txt", "report-é7.txt"));
        assert!(glob("a*b*c", "abc"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxcyyb"));
        assert!(glob("*", ""));
        assert!(glob("**", "x"));
        assert!(!glob("a*a", "a"));
        assert!(glob("a*a", "aa"));
        assert!(glob("*a?c*", "zzabcx"));
        assert!(glob("*?", "é"));
        assert!(!glob("??", "é"));
        assert!(glob("main", "main"));
        assert!(!glob("main", "mainx"));
        assert!(glob("?", "\u{ff}"));
        assert!(glob("a?b", "a\u{ff}b"));
        assert!(Glob::new(b"a?b").is_match(b"a\xffb"));
        assert!(Glob::new(b"*b").is_match(b"\xff\xfeb"));
        let g = Glob::new(b"ab*c?d*");
        let lits: Vec<&[u8]> = g.literals().collect();
        assert_eq!(lits, vec![&b"ab"[..], b"c", b"d"]);
    }

    proptest::proptest! {
        /// The in-place ASCII case-insensitive matchers agree with matching the fold.
        #[test]
        fn ascii_in_place_equals_folding(
            needle in "[aAbB._ -]{0,4}",
            pattern in "[aAb.*?_]{0,5}",
            hay in "[aAbB._ -]{0,10}",
        ) {
            let folded = fold(&hay);
            for anchor in [Anchor::Anywhere, Anchor::Start, Anchor::End, Anchor::Whole] {
                for word in [false, true] {
                    let l = Literal::new(fold(&needle), anchor, word);
                    proptest::prop_assert_eq!(l.is_match_ascii_ci(hay.as_bytes()), l.is_match(&folded));
                }
            }
            let g = Glob::new(&fold(&pattern));
            proptest::prop_assert_eq!(g.is_match_ascii_ci(hay.as_bytes()), g.is_match(&folded));
        }
    }

    #[test]
    fn utf8_steps() {
        let h = "aé€😀".as_bytes();
        assert_eq!(utf8_len(h, 0), 1);
        assert_eq!(utf8_len(h, 1), 2);
        assert_eq!(utf8_len(h, 3), 3);
        assert_eq!(utf8_len(h, 6), 4);
        assert_eq!(utf8_len(h, 10), 0);
        assert_eq!(utf8_len_before(h, 10), 4);
        assert_eq!(utf8_len_before(h, 6), 3);
        assert_eq!(utf8_len_before(h, 3), 2);
        assert_eq!(utf8_len_before(h, 1), 1);
        assert_eq!(utf8_len_before(b"\xff\xff", 2), 1);
    }

    #[test]
    fn buffers_are_reused() {
        let mut b = take_buf();
        b.extend_from_slice(b"hello");
        let cap = b.capacity();
        give_buf(b);
        let b = take_buf();
        assert!(b.is_empty());
        assert_eq!(b.capacity(), cap);
        give_buf(b);
    }
}
