//! Abbreviations: whether a word was typed as the starts of a path's words,
//! `tpurea` for `tokio/src/process/unix/reap.rs`, `ccecom` for
//! `clap_complete/examples/completion-derive.rs`, `gsns` for the name
//! `getSymbolNames`, and at what cost. The word is cut into runs, each run
//! the start of one of the path's words (a part's start, a piece after `_`,
//! `-`, `.` or a space, a camelCase hump, a change between letters and
//! digits) read on in place; the last run ends in the path's last part, its
//! name. nucleo scores such a path as a scattered subsequence and a compact
//! one (`t`…`p`…`u`…`rea` across `typenum/README.md`) above it: this says
//! that the word was typed as an abbreviation of the path, for `search`'s
//! fuzzy lead and the `symbols` table's fuzzy tier.
//!
//! The cost of a way: one for each word with a letter passed over between
//! two runs (a version or a number is not typed, nor a folder named `src`:
//! `tucdec` is `tokio-util/src/codec/decoder.rs`), and for each such word
//! before the first run in its own part of the path (a folder's words are
//! typed from its first: `rpmod` is `rustix/src/path/mod.rs` before
//! `rustix/…/linux_raw/pid/mod.rs`), and [`MID_NAME`] more when no run
//! covers the name's start (`cop` in `fs_copy.rs`). The name must hold two
//! of the word's letters ([`IN_NAME`]). The least cost of every way is found
//! by dynamic programming over the word's positions and the path's word
//! starts, suffix minima keeping it linear in the runs tried. Written here
//! because no kept crate does it: nucleo and fzf score one alignment by
//! bonuses, none says whether a word is an abbreviation.
//!
//! Pure: no I/O, no dependencies.

#![deny(missing_docs)]

/// What a way costs more when no run covers the name's start: more than a
/// couple of folders passed over.
pub const MID_NAME: u32 = 3;

/// How many of the word's letters the name must hold (all of a shorter
/// word): a word is not an abbreviation of a path by its last letter alone
/// (`parameter` of `p/a/r/a/m/e/t/e/x.rs`, by its `.rs`).
pub const IN_NAME: usize = 2;

const NONE: u32 = u32::MAX / 4;

/// The share of an abbreviation's lead a way of this cost keeps: 0.9 for
/// each unit (a word passed over keeps 90%, the name's start passed over
/// 73%). The one scale `search`'s fuzzy lead and the `symbols` table share.
pub fn share(cost: u32) -> f32 {
    0.9f32.powi(cost.min(64) as i32)
}

/// The runs a word may try on one path before it is taken for no
/// abbreviation: a hostile name (`a_a_a_…`, 255 bytes) and a long word of
/// one letter would try tens of thousands a path. A path holds every run
/// its name does, so the name's own bound still holds.
const MAX_STEPS: usize = 1 << 14;

/// A path read for abbreviations ([`Abbrev::load`]), then asked for each
/// word ([`Abbrev::cost`]); its buffers reused from path to path.
#[derive(Default)]
pub struct Abbrev {
    /// The path's letters and digits, lowercased.
    units: Vec<u8>,
    /// The unit the name starts at.
    name: usize,
    /// Which bytes start a word anywhere (a mask by byte, as `names` keeps).
    at_start: [u64; 4],
    /// Where each word starts, as an index into `units`.
    starts: Vec<u32>,
    /// For each start, how many counted starts come before it (a start
    /// counts when passing over it costs: a word with a letter, not in a
    /// `src` folder); then how many there are in all.
    lettered: Vec<u32>,
    /// For each start, how many counted starts come before it in its own
    /// part of the path (a folder's words are not typed from the middle).
    head: Vec<u32>,
    /// The starts whose letter is in the word asked: the only ones a run
    /// can start at.
    able: Vec<u32>,
    /// The least cost of the word from position `q` on with its first run
    /// at able start `a`, plus its `lettered`, minimised over the able
    /// starts from `a` on; then the same over those before the name:
    /// `2 × (len + 1) × (able + 1)`.
    least: Vec<u32>,
}

impl Abbrev {
    /// Reads `text` (ASCII, as shown, its case kept for camelCase), whose
    /// name starts at byte `name_from`; false (and nothing read) when it is
    /// not ASCII.
    pub fn load(&mut self, text: &[u8], name_from: usize) -> bool {
        self.units.clear();
        self.starts.clear();
        self.lettered.clear();
        self.head.clear();
        self.at_start = [0; 4];
        self.name = usize::MAX;
        if !text.is_ascii() {
            return false;
        }
        let mut lettered = 0;
        let mut at = 0;
        for part in text.split(|&b| b == b'/') {
            if at == name_from {
                self.name = self.units.len();
            }
            // `src` is not typed: `tucdec` is `tokio-util/src/codec/decoder.rs`.
            let typed = !part.eq_ignore_ascii_case(b"src");
            let mut head = 0;
            let mut prev = b'/';
            for (i, &b) in part.iter().enumerate() {
                if !b.is_ascii_alphanumeric() {
                    prev = b'/';
                    continue;
                }
                let start = !prev.is_ascii_alphanumeric()
                    || (prev.is_ascii_lowercase() && b.is_ascii_uppercase())
                    || (prev.is_ascii_uppercase()
                        && b.is_ascii_uppercase()
                        && part.get(i + 1).is_some_and(u8::is_ascii_lowercase))
                    || prev.is_ascii_digit() != b.is_ascii_digit();
                let unit = b.to_ascii_lowercase();
                if start {
                    let counted = typed && b.is_ascii_alphabetic();
                    self.starts.push(self.units.len() as u32);
                    self.lettered.push(lettered);
                    self.head.push(head);
                    self.at_start[usize::from(unit >> 6)] |= 1 << (unit & 63);
                    lettered += u32::from(counted);
                    head += u32::from(counted);
                }
                self.units.push(unit);
                prev = b;
            }
            at += part.len() + 1;
        }
        self.lettered.push(lettered);
        if self.name == usize::MAX {
            self.name = self.units.len();
        }
        true
    }

    /// The least cost of `word` (folded: lowercase ASCII, no separators) as
    /// an abbreviation of the path loaded; `None` when it is not one. With
    /// `open`, the word may start before the path (its runs before it in
    /// folders not given): the cost is then the least of what the path
    /// holds, a bound for every path that ends in it.
    pub fn cost(&mut self, word: &[u8], open: bool) -> Option<u32> {
        let n = word.len();
        let name = self.name;
        // A run starts with the word's first letter, and the last one ends
        // in the name, holding the word's last letter.
        let first = word.first()?;
        if self.at_start[usize::from(first >> 6)] & (1 << (first & 63)) == 0 && !open {
            return None;
        }
        if !self.units[name.min(self.units.len())..].contains(&word[n - 1]) {
            return None;
        }
        let mut in_word = [0u64; 4];
        for &b in word {
            in_word[usize::from(b >> 6)] |= 1 << (b & 63);
        }
        self.able.clear();
        for (s, &p) in self.starts.iter().enumerate() {
            let b = self.units[p as usize];
            if in_word[usize::from(b >> 6)] & (1 << (b & 63)) != 0 {
                self.able.push(s as u32);
            }
        }
        let count = self.able.len();
        let width = count + 1;
        self.least.clear();
        self.least.resize(2 * (n + 1) * width, NONE);
        let (least, folders) = self.least.split_at_mut((n + 1) * width);
        // The first able start at or after unit `u`.
        let (starts, able) = (&self.starts, &self.able);
        let next = |u: usize| able.partition_point(|&s| (starts[s as usize] as usize) < u);
        let need = IN_NAME.min(n);
        let mut best = NONE;
        let mut steps = 0usize;
        for q in (0..n).rev() {
            for a in (0..count).rev() {
                let s = able[a] as usize;
                let p = starts[s] as usize;
                let mut cost = NONE;
                let mut l = 1;
                while q + l <= n
                    && p + l <= self.units.len()
                    && self.units[p + l - 1] == word[q + l - 1]
                {
                    steps += 1;
                    if steps > MAX_STEPS {
                        return None;
                    }
                    let end = p + l;
                    // The word's letters this run puts in the name.
                    let in_name = end.saturating_sub(name.max(p));
                    if q + l == n {
                        if end > name && (p >= name || in_name >= need) {
                            cost = 0;
                        }
                    } else {
                        let a2 = next(end);
                        let rest = if a2 >= count {
                            NONE
                        } else if p >= name {
                            least[(q + l) * width + a2]
                        } else if end > name {
                            // Across the name's start: enough of the word in it.
                            if in_name + (n - q - l) >= need {
                                least[(q + l) * width + a2]
                            } else {
                                NONE
                            }
                        } else if n - q - l >= need {
                            least[(q + l) * width + a2]
                        } else {
                            folders[(q + l) * width + a2]
                        };
                        if rest < NONE {
                            // Every start from here on is past the name's
                            // start when this run reached it: it was
                            // covered, not passed over.
                            let covered = if end > name { MID_NAME } else { 0 };
                            // The counted starts before `end`: those after
                            // it up to the next run's are passed over.
                            let x = starts.partition_point(|&t| (t as usize) < end);
                            cost = cost.min(rest - self.lettered[x] - covered);
                        }
                    }
                    l += 1;
                }
                // Starting past the name's start passes it over: no run can
                // cover it after.
                let here = match cost {
                    NONE => NONE,
                    c if p > name => c + MID_NAME,
                    c => c,
                };
                let entry = p < name || n - q >= need;
                if here < NONE && (q == 0 || open) && entry {
                    best = best.min(here + self.head[s]);
                }
                let keep = if here < NONE {
                    here + self.lettered[s]
                } else {
                    NONE
                };
                let at = q * width + a;
                least[at] = keep.min(least[at + 1]);
                folders[at] = if p < name {
                    keep.min(folders[at + 1])
                } else {
                    NONE
                };
            }
        }
        (best < NONE).then_some(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(word: &str, path: &str) -> Option<u32> {
        let from = path.trim_end_matches('/').rfind('/').map_or(0, |i| i + 1);
        let mut ab = Abbrev::default();
        assert!(ab.load(path.as_bytes(), from));
        ab.cost(word.as_bytes(), false)
    }

    /// Every way of cutting `word` into runs at `path`'s word starts, tried
    /// one by one: the reference the dynamic programming is held to.
    fn brute(word: &[u8], path: &str, open: bool) -> Option<u32> {
        let from = path.rfind('/').map_or(0, |i| i + 1);
        let mut ab = Abbrev::default();
        assert!(ab.load(path.as_bytes(), from));
        let name = ab.name;
        // Each way as its runs: (start index, word position, length).
        let mut ways: Vec<Vec<(usize, usize, usize)>> = Vec::new();
        fn cut(
            ab: &Abbrev,
            word: &[u8],
            q: usize,
            from: usize,
            runs: &mut Vec<(usize, usize, usize)>,
            ways: &mut Vec<Vec<(usize, usize, usize)>>,
        ) {
            if q == word.len() {
                ways.push(runs.clone());
                return;
            }
            for (s, &p) in ab.starts.iter().enumerate() {
                let p = p as usize;
                if p < from {
                    continue;
                }
                for l in 1..=word.len() - q {
                    if p + l > ab.units.len() || ab.units[p..p + l] != word[q..q + l] {
                        break;
                    }
                    runs.push((s, q, l));
                    cut(ab, word, q + l, p + l, runs, ways);
                    runs.pop();
                }
            }
        }
        let firsts = if open { 0..word.len() } else { 0..1 };
        for q in firsts {
            cut(&ab, word, q, 0, &mut Vec::new(), &mut ways);
        }
        ways.iter()
            .filter_map(|runs| {
                let span = |&(s, _, l): &(usize, usize, usize)| {
                    let p = ab.starts[s] as usize;
                    (p, p + l)
                };
                let (_, last_end) = span(runs.last().unwrap());
                let in_name: usize = runs
                    .iter()
                    .map(|r| {
                        let (p, end) = span(r);
                        end.saturating_sub(name.max(p))
                    })
                    .sum();
                if last_end <= name || in_name < IN_NAME.min(word.len()) {
                    return None;
                }
                let mut cost = ab.head[runs[0].0];
                for pair in runs.windows(2) {
                    let (_, end) = span(&pair[0]);
                    let (next, _) = span(&pair[1]);
                    cost += (0..ab.starts.len())
                        .filter(|&t| {
                            let u = ab.starts[t] as usize;
                            u >= end && u < next && ab.lettered[t + 1] > ab.lettered[t]
                        })
                        .count() as u32;
                }
                let covered = runs.iter().any(|r| {
                    let (p, end) = span(r);
                    p <= name && name < end
                });
                Some(cost + if covered { 0 } else { MID_NAME })
            })
            .min()
    }

    #[test]
    fn initials_and_starts_across_folders() {
        assert_eq!(
            cost("tpurea", "tokio-1.54.1/src/process/unix/reap.rs"),
            Some(0)
        );
        assert_eq!(cost("tpurea", "typenum-1.20.1/README.md"), None);
        let complete = "clap_complete-4.6.12/examples/completion-derive.rs";
        assert_eq!(cost("ccecom", complete), Some(0));
        assert_eq!(
            cost("ccecom", "cc-1.11.3/src/detect_compiler_family.c"),
            None
        );
        // The name's start passed over costs more than a folder or two.
        assert_eq!(cost("tfcop", "tokio-1.54.1/src/fs/copy.rs"), Some(0));
        assert_eq!(cost("tfcop", "tokio-1.54.1/tests/fs_copy.rs"), Some(0));
        assert_eq!(
            cost("ttcop", "tokio-1.54.1/tests/fs_copy.rs"),
            Some(1 + MID_NAME)
        );
        assert_eq!(cost("cop", "tests/fs_copy.rs"), Some(1 + MID_NAME));
        // A folder's words are not typed from the middle: `linux_raw`'s
        // `raw` passes over `linux`.
        assert_eq!(cost("rpmod", "rustix-1.1.6/src/path/mod.rs"), Some(0));
        assert_eq!(
            cost("rpmod", "rustix-1.1.6/src/backend/linux_raw/pid/mod.rs"),
            Some(1)
        );
        // camelCase humps, an acronym's end, letters and digits.
        assert_eq!(cost("rrdbc", "rules/rds/DbClusterAurora.py"), Some(0));
        assert_eq!(cost("hs", "x/HTTPServer.java"), Some(0));
        assert_eq!(cost("sha384", "tests/data/sha384.blb"), Some(0));
        assert_eq!(cost("d910", "data/910599ec.json"), Some(0));
        // A run may read on over a separator (`fst` in `fs_try_exists`).
        assert_eq!(cost("ttfst", "tokio/tests/fs_try_exists.rs"), Some(0));
        // The name holds two letters of the word at least; folders alone
        // do not do.
        assert_eq!(cost("ts", "tokio/src/lib.rs"), None);
        assert_eq!(cost("tsl", "tokio/src/lib.rs"), None);
        assert_eq!(cost("tli", "tokio/src/lib.rs"), Some(0));
        // Folders before the first run are free, lettered ones between runs
        // are not; versions and `src` are.
        assert_eq!(cost("ulib", "a/b/u/x/y/lib.rs"), Some(2));
        assert_eq!(cost("ulib", "a/b/u/1.2/src/lib.rs"), Some(0));
    }

    #[test]
    fn a_hostile_path_is_no_abbreviation() {
        let name = "a_".repeat(127) + "a";
        let path = format!("{name}/{name}/{name}");
        // Tens of thousands of runs would be tried: none is.
        assert_eq!(cost(&"a".repeat(64), &path), None);
        assert_eq!(cost("aaa", &path), Some(0));
    }

    /// Every path of one to three of these parts, and a fixed stride
    /// through those of five: the dynamic programming gives the least cost
    /// of every way tried one by one, and a name's own (open) cost is at
    /// most that of the path it ends.
    #[test]
    fn the_least_cost_of_every_way() {
        let parts = [
            "tokio-1.54.1",
            "Src",
            "linux_raw",
            "src",
            "fs",
            "fs_copy.rs",
            "copy.rs",
            "Cargo.toml",
            "cop",
            "TcpStream",
            "t",
            "st",
            "ts",
            "x2y",
            "HTTPServer",
            "a-b.c",
            "s",
        ];
        let words = [
            "tfcop", "ts", "tst", "s", "fsc", "cop", "tcps", "x2", "2y", "hs", "stcs", "abc", "ttt",
        ];
        let k = parts.len();
        let path_of = |mut i: usize, len: usize| {
            let mut p = Vec::with_capacity(len);
            for _ in 0..len {
                p.push(parts[i % k]);
                i /= k;
            }
            p.join("/")
        };
        let mut paths: Vec<String> = (1..=3)
            .flat_map(|len| (0..k.pow(len as u32)).map(move |i| (i, len)))
            .map(|(i, len)| path_of(i, len))
            .collect();
        paths.extend((0..k.pow(5)).step_by(997).map(|i| path_of(i, 5)));
        let mut ab = Abbrev::default();
        let (mut found, mut bounded) = (0, 0);
        for path in &paths {
            for word in words {
                let from = path.rfind('/').map_or(0, |i| i + 1);
                let mut shut = None;
                for open in [false, true] {
                    assert!(ab.load(path.as_bytes(), from));
                    let got = ab.cost(word.as_bytes(), open);
                    assert_eq!(
                        got,
                        brute(word.as_bytes(), path, open),
                        "{word} {path} open {open}"
                    );
                    found += usize::from(got.is_some());
                    if !open {
                        shut = got;
                    }
                }
                if let Some(shut) = shut {
                    assert!(ab.load(&path.as_bytes()[from..], 0));
                    let open = ab.cost(word.as_bytes(), true);
                    assert!(
                        open.is_some_and(|o| o <= shut),
                        "{word} {path}: {open:?} > {shut}"
                    );
                    bounded += 1;
                }
            }
        }
        assert!(found > 10_000 && bounded > 4000, "{found} {bounded}");
    }
}
