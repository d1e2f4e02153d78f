//! Trigrams: every run of three bytes of a text, ASCII letters folded to lower
//! case, as a 24-bit number.
//!
//! Folding makes one index serve case-sensitive and case-insensitive searches:
//! a case-sensitive pattern asks for its folded trigrams (a superset of the
//! files that hold it exactly; the matcher checks the rest). Non-ASCII letters
//! are not folded here; a case-insensitive pattern lists their variants itself
//! (see [`crate::pattern`]).

/// How many distinct trigrams there can be.
pub const GRAM_SPACE: usize = 1 << 24;

const FOLD: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).to_ascii_lowercase();
        i += 1;
    }
    t
};

/// The byte as the index keeps it.
#[inline]
pub fn fold(b: u8) -> u8 {
    FOLD[b as usize]
}

/// The trigram of three bytes.
#[inline]
pub fn gram(a: u8, b: u8, c: u8) -> u32 {
    (u32::from(fold(a)) << 16) | (u32::from(fold(b)) << 8) | u32::from(fold(c))
}

/// Every trigram of `s`, in order, repeats included.
pub fn grams_of(s: &[u8]) -> impl Iterator<Item = u32> + '_ {
    s.windows(3).map(|w| gram(w[0], w[1], w[2]))
}

/// Collects the distinct trigrams of one text at a time. Holds a bit per
/// possible trigram (2 MiB), cleared after each text by the list it collected,
/// so a small file costs only its own bytes.
pub struct Extractor {
    /// Of a fixed length, so that a trigram's word needs no bounds check.
    seen: Box<[u64; GRAM_SPACE / 64]>,
    /// The trigrams found are `list[..len]`; past that, room written over.
    list: Vec<u32>,
    len: usize,
}

impl Default for Extractor {
    fn default() -> Self {
        Extractor::new()
    }
}

/// Bytes of a text read between two checks of the list's room (see
/// [`Extractor::distinct`]).
const BLOCK: usize = 16 * 1024;

impl Extractor {
    pub fn new() -> Extractor {
        Extractor {
            seen: vec![0; GRAM_SPACE / 64]
                .into_boxed_slice()
                .try_into()
                .expect("the bit set's length"),
            list: Vec::new(),
            len: 0,
        }
    }

    /// The distinct trigrams of `text`, in the order first seen.
    pub fn distinct(&mut self, text: &[u8]) -> &[u32] {
        self.clear();
        if text.len() < 3 {
            return &self.list[..0];
        }
        let seen = &mut *self.seen;
        let list = &mut self.list;
        let mut g = (u32::from(fold(text[0])) << 8) | u32::from(fold(text[1]));
        // Without a branch on whether a trigram is new (about one in eight
        // is, at random: a branch mispredicted that often costs more than
        // the rest): each is written past the list's end and kept by moving
        // the end only when it was new. A block at a time, so the list
        // never holds more than the trigrams found and one block. (Eight
        // bytes folded at a time, each trigram a shift of them, measured no
        // faster.)
        let mut n = 0;
        for block in text[2..].chunks(BLOCK) {
            if list.len() < n + block.len() {
                list.resize(n + block.len(), 0);
            }
            for &b in block {
                g = ((g << 8) | u32::from(fold(b))) & 0xFF_FFFF;
                let (word, bit) = ((g >> 6) as usize, 1u64 << (g & 63));
                let w = seen[word];
                seen[word] = w | bit;
                list[n] = g;
                n += usize::from(w & bit == 0);
            }
        }
        self.len = n;
        &self.list[..n]
    }

    /// The distinct trigrams the last [`Extractor::distinct`] gave.
    pub fn last(&self) -> &[u32] {
        &self.list[..self.len]
    }

    fn clear(&mut self) {
        if self.len > GRAM_SPACE / 512 {
            self.seen.fill(0);
        } else {
            for &g in &self.list[..self.len] {
                self.seen[(g >> 6) as usize] &= !(1u64 << (g & 63));
            }
        }
        self.len = 0;
    }
}

/// LEB128 varints, the encoding of posting lists (gaps between document numbers).
pub fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Read a varint at `*at`, moving past it; `None` when the bytes end early or
/// the number is too long (a damaged file).
#[inline]
pub fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u32> {
    let mut v: u32 = 0;
    let mut shift = 0;
    loop {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u32::from(b & 0x7F).checked_shl(shift)?;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 28 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigrams_fold_ascii_case_only() {
        assert_eq!(gram(b'F', b'o', b'O'), gram(b'f', b'o', b'o'));
        assert_ne!(gram(b'f', b'o', b'o'), gram(b'f', b'o', b'p'));
        // Non-ASCII bytes stay as they are.
        assert_ne!(gram(0xC3, 0x89, b'a'), gram(0xC3, 0xA9, b'a'));
    }

    #[test]
    fn distinct_trigrams_are_every_trigram_once_in_the_order_first_seen() {
        let mut rng = crate::testing::Rng(0x1234_5678_9ABC_DEF1);
        let mut x = Extractor::new();
        for round in 0..200 {
            // Lengths across the blocks and the bit set's clearing; few
            // letters in some rounds (many repeats), any byte in others.
            let len = match round % 4 {
                0 => (rng.next() % 40) as usize,
                1 => (rng.next() % 300) as usize,
                _ => (rng.next() % (3 * BLOCK as u64)) as usize,
            };
            let text: Vec<u8> = (0..len)
                .map(|_| match round % 3 {
                    0 => b"aAbB \n"[(rng.next() % 6) as usize],
                    _ => rng.next() as u8,
                })
                .collect();
            let mut want = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for g in grams_of(&text) {
                if seen.insert(g) {
                    want.push(g);
                }
            }
            assert_eq!(x.distinct(&text), &want[..], "round {round}, {len} bytes");
        }
    }

    #[test]
    fn distinct_trigrams_of_each_text_alone() {
        let mut x = Extractor::new();
        let mut got = x.distinct(b"abcabcab").to_vec();
        got.sort();
        let mut want: Vec<u32> = grams_of(b"abcabcab").collect();
        want.sort();
        want.dedup();
        assert_eq!(got, want);
        assert_eq!(got.len(), 3); // abc, bca, cab
        // The next text starts from nothing.
        assert_eq!(x.distinct(b"xyz").to_vec(), vec![gram(b'x', b'y', b'z')]);
        assert!(x.distinct(b"ab").is_empty());
        // Again, with the previous text's trigrams forgotten.
        assert_eq!(x.distinct(b"abcd").len(), 2);
    }

    #[test]
    fn varints_round_trip_and_refuse_damage() {
        let mut out = Vec::new();
        for v in [0, 1, 127, 128, 300, 1 << 21, u32::MAX] {
            put_varint(&mut out, v);
        }
        let mut at = 0;
        for v in [0, 1, 127, 128, 300, 1 << 21, u32::MAX] {
            assert_eq!(get_varint(&out, &mut at), Some(v));
        }
        assert_eq!(get_varint(&out, &mut at), None);
        assert_eq!(get_varint(&[0x80, 0x80], &mut 0), None);
        assert_eq!(get_varint(&[0xFF; 6], &mut 0), None);
    }
}
