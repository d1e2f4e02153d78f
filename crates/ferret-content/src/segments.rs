//! Where in a large file a match can be: its 64 segments, and for each of
//! its trigrams the segments that hold it (a bit each), so that a grep reads
//! only the parts of a large candidate file where every trigram of a match
//! lies together, not the whole file.
//!
//! A file of `size` bytes is cut into 64 segments of [`seg_len`] bytes; a
//! trigram belongs to the segment where it starts. A match no longer than a
//! segment starts in some segment `i` and ends in `i` or `i + 1`, so every
//! trigram of it is in segment `i` or `i + 1`: the pairs of segments that
//! may hold a match are those where the query holds with each trigram's
//! bits widened to the next segment ([`reach`]). When no pair is left, the
//! file holds no match at all; otherwise the grep checks those windows
//! first ([`windows`]) and reads the file only when one holds a match.
//!
//! A table is 12 bytes per distinct trigram of the file, sorted: trigram
//! (u32), segments (u64), little-endian.

use crate::{grams::Extractor, pattern::Grams, radix};

/// Segments per file (the bits of a mask).
pub const SEGMENTS: u64 = 64;
/// Bytes of a table entry.
pub const ENTRY: usize = 12;
/// What a window is widened by on each side, so that the character before
/// and after any match inside it is read too (a word boundary, a line start
/// or a `\W` of whole-word search is judged as in the whole file).
pub const CONTEXT: u64 = 4;

/// The length of each of a file's 64 segments (the last may be shorter).
pub fn seg_len(size: u64) -> u64 {
    size.div_ceil(SEGMENTS).max(1)
}

/// The table of `text` (a whole file): each distinct trigram with the
/// segments it starts in. `scratch` is reused between calls.
pub fn table(x: &mut Extractor, text: &[u8], scratch: &mut Vec<u32>) -> Vec<u8> {
    let seg = seg_len(text.len() as u64) as usize;
    scratch.clear();
    for i in 0..SEGMENTS as usize {
        let start = i * seg;
        if start >= text.len() {
            break;
        }
        // The trigrams that start in this segment: two bytes past its end.
        let end = (start + seg + 2).min(text.len());
        for &g in x.distinct(&text[start..end]) {
            scratch.push((g << 6) | i as u32);
        }
    }
    let n = scratch.len();
    scratch.resize(2 * n, 0);
    let (entries, room) = scratch.split_at_mut(n);
    sort_by_gram(entries, room);
    scratch.truncate(n);
    let mut out = Vec::with_capacity(n * ENTRY / 4);
    let mut k = 0;
    while k < scratch.len() {
        let g = scratch[k] >> 6;
        let mut mask = 0u64;
        while k < scratch.len() && scratch[k] >> 6 == g {
            mask |= 1u64 << (scratch[k] & 63);
            k += 1;
        }
        out.extend_from_slice(&g.to_le_bytes());
        out.extend_from_slice(&mask.to_le_bytes());
    }
    out
}

/// Sort `(trigram << 6) | segment` entries by trigram (two stable passes
/// of twelve bits, through `room`, as long). Compared, they were most of a
/// large file's time in the index: three times its distinct trigrams.
fn sort_by_gram(entries: &mut [u32], room: &mut [u32]) {
    let mut counts = [[0u32; radix::DIGITS]; 2];
    for &e in entries.iter() {
        counts[0][((e >> 6) & 0xFFF) as usize] += 1;
        counts[1][((e >> 18) & 0xFFF) as usize] += 1;
    }
    // Into the room, then back.
    radix::scatter(entries, room, &mut counts[0], |e| {
        ((e >> 6) & 0xFFF) as usize
    });
    radix::scatter(room, entries, &mut counts[1], |e| {
        ((e >> 18) & 0xFFF) as usize
    });
}

/// Whether `bytes` is a well-formed table (whole entries, trigrams
/// ascending): checked when an index file is opened.
pub fn is_table(bytes: &[u8]) -> bool {
    bytes.len().is_multiple_of(ENTRY)
        && bytes
            .chunks_exact(ENTRY)
            .map(gram_of)
            .try_fold(None, |prev: Option<u32>, g| {
                (prev.is_none_or(|p| p < g) && g < 1 << 24).then_some(Some(g))
            })
            .is_some()
}

/// The trigrams of a table, ascending: every trigram of the file it was
/// made from (each starts in some segment).
pub fn grams(table: &[u8]) -> impl Iterator<Item = u32> + '_ {
    table.chunks_exact(ENTRY).map(gram_of)
}

fn gram_of(entry: &[u8]) -> u32 {
    u32::from_le_bytes(entry[..4].try_into().expect("4 bytes"))
}

/// The segments of the file that hold `gram` (0 when none does).
pub fn mask(table: &[u8], gram: u32) -> u64 {
    let n = table.len() / ENTRY;
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let e = &table[mid * ENTRY..(mid + 1) * ENTRY];
        match gram_of(e).cmp(&gram) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => {
                return u64::from_le_bytes(e[4..].try_into().expect("8 bytes"));
            }
        }
    }
    0
}

/// The pairs of segments (bit `i`: segments `i` and `i + 1`) that may hold
/// a match of `q` no longer than a segment.
pub fn reach(table: &[u8], q: &Grams) -> u64 {
    match q {
        Grams::All => u64::MAX,
        Grams::Gram(g) => {
            let m = mask(table, *g);
            m | (m >> 1)
        }
        Grams::And(qs) => {
            let mut acc = u64::MAX;
            for q in qs {
                acc &= reach(table, q);
                if acc == 0 {
                    break;
                }
            }
            acc
        }
        Grams::Or(qs) => qs.iter().fold(0, |acc, q| acc | reach(table, q)),
    }
}

/// The byte ranges of a file of `size` bytes to read for the pairs in
/// `pairs` (from [`reach`]): each pair of segments widened by [`CONTEXT`]
/// on both sides, overlapping ranges merged, in file order.
pub fn windows(pairs: u64, size: u64) -> Vec<(u64, u64)> {
    let seg = seg_len(size);
    let mut out: Vec<(u64, u64)> = Vec::new();
    for i in 0..SEGMENTS {
        if pairs & (1 << i) == 0 {
            continue;
        }
        let start = (i * seg).saturating_sub(CONTEXT).min(size);
        let end = ((i + 2) * seg + CONTEXT).min(size);
        if start >= end {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.1 >= start => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::{PatternSpec, query};

    use crate::testing::Rng;

    const WORDS: &[&str] = &[
        "alpha", "beta", "Gamma", "needle", "hay", "stack", "into", "sorted", "vec", "_", " ",
        "\n", "é", "日本", "x", "yz",
    ];

    fn text(rng: &mut Rng, len: usize) -> Vec<u8> {
        let mut t = Vec::new();
        while t.len() < len {
            t.extend_from_slice(WORDS[rng.below(WORDS.len())].as_bytes());
        }
        t
    }

    /// Every occurrence of a literal (no longer than a segment) lies in a
    /// window, whatever the text's size; and a literal found nowhere leaves
    /// most texts without a window.
    #[test]
    fn every_occurrence_lies_in_a_window() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut x = Extractor::new();
        let mut scratch = Vec::new();
        let (mut checked, mut empty) = (0, 0);
        for round in 0..300 {
            let len = 3 + rng.below(if round % 3 == 0 { 200 } else { 20_000 });
            let t = text(&mut rng, len);
            let table = table(&mut x, &t, &mut scratch);
            assert!(is_table(&table));
            let seg = seg_len(t.len() as u64) as usize;
            for _ in 0..10 {
                // A piece of the text, or words that may not be there.
                let lit: Vec<u8> = if rng.below(2) == 0 {
                    let n = 3 + rng.below(seg.clamp(3, 40) - 2);
                    let at = rng.below(t.len().saturating_sub(n).max(1));
                    t[at..(at + n).min(t.len())].to_vec()
                } else {
                    let mut l = Vec::new();
                    for _ in 0..2 + rng.below(2) {
                        l.extend_from_slice(WORDS[rng.below(WORDS.len())].as_bytes());
                    }
                    l
                };
                let Ok(lit_str) = std::str::from_utf8(&lit) else {
                    continue;
                };
                if lit.len() < 3 || lit.len() > seg {
                    continue;
                }
                let q = query(&PatternSpec {
                    text: lit_str,
                    literal: true,
                    case_insensitive: rng.below(3) == 0,
                    multiline: false,
                });
                let w = windows(reach(&table, &q), t.len() as u64);
                let folded: Vec<u8> = t.iter().map(|b| b.to_ascii_lowercase()).collect();
                let needle: Vec<u8> = lit.iter().map(|b| b.to_ascii_lowercase()).collect();
                let hits: Vec<usize> = (0..=folded.len() - needle.len())
                    .filter(|&i| folded[i..i + needle.len()] == needle[..])
                    .collect();
                for &h in &hits {
                    // The occurrence and the bytes around it that decide
                    // a boundary.
                    let s = (h as u64).saturating_sub(CONTEXT);
                    let e = ((h + needle.len()) as u64 + CONTEXT).min(t.len() as u64);
                    assert!(
                        w.iter().any(|&(a, b)| a <= s && e <= b),
                        "{lit_str:?} at {s}..{e} of {}, windows {w:?}",
                        t.len()
                    );
                }
                checked += hits.len();
                empty += usize::from(hits.is_empty() && w.is_empty());
            }
        }
        assert!(
            checked > 1000 && empty > 50,
            "{checked} occurrences, {empty} empty"
        );
    }

    /// A table holds each distinct trigram of the text once, ascending,
    /// with exactly the segments it starts in.
    #[test]
    fn a_table_is_every_trigram_with_the_segments_it_starts_in() {
        let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
        let mut x = Extractor::new();
        let mut scratch = vec![7; 100];
        for round in 0..60 {
            let len = 3 + rng.below(if round % 2 == 0 { 300 } else { 60_000 });
            let t: Vec<u8> = if round % 3 == 0 {
                (0..len).map(|_| rng.next() as u8).collect()
            } else {
                text(&mut rng, len)
            };
            let seg = seg_len(t.len() as u64) as usize;
            let mut want = std::collections::BTreeMap::<u32, u64>::new();
            for (at, g) in crate::grams::grams_of(&t).enumerate() {
                *want.entry(g).or_default() |= 1 << (at / seg);
            }
            let got = table(&mut x, &t, &mut scratch);
            let got: Vec<(u32, u64)> = got
                .chunks_exact(ENTRY)
                .map(|e| {
                    let mask = u64::from_le_bytes(e[4..].try_into().unwrap());
                    (gram_of(e), mask)
                })
                .collect();
            assert_eq!(got, want.into_iter().collect::<Vec<_>>(), "round {round}");
        }
    }

    #[test]
    fn windows_merge_and_stay_within_the_file() {
        let size = 6400;
        assert_eq!(seg_len(size), 100);
        assert_eq!(windows(0, size), vec![]);
        assert_eq!(windows(1, size), vec![(0, 204)]);
        assert_eq!(windows(0b110, size), vec![(96, 404)]);
        assert_eq!(windows(1 << 63, size), vec![(6296, 6400)]);
        assert_eq!(
            windows((1 << 10) | (1 << 20), size),
            vec![(996, 1204), (1996, 2204)]
        );
        assert!(!is_table(&[0; 13]));
    }
}
