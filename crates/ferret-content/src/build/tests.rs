use std::{collections::HashSet, fs, path::Path};

use ferret_fs::{Policy, Roots};

use super::*;
use crate::grams::grams_of;

/// What a build gave, each file's path (as read back from the index, as a
/// load reads it) beside its version.
struct Tested {
    base: Base,
    docs: Vec<(Arc<str>, DocMeta)>,
}

/// [`super::build`] of a list of paths.
fn build(
    roots: &Roots,
    list: Vec<Entry>,
    budget: &Budget,
    key: u64,
    sink: Sink,
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<Tested, BuildError> {
    let mut paths = Paths::new();
    for e in &list {
        paths.push(&e.path).unwrap();
    }
    let sizes: Vec<u64> = list.iter().map(|e| e.size).collect();
    let built = super::build(roots, &paths, &sizes, budget, key, sink, progress, stop)?;
    let back = built.base.paths().unwrap();
    let docs: Vec<(Arc<str>, DocMeta)> = built
        .metas
        .iter()
        .enumerate()
        .map(|(i, m)| (Arc::from(back.path(i as u32)), *m))
        .collect();
    let listed: Vec<&str> = list.iter().map(|e| &*e.path).collect();
    let read: Vec<&str> = docs.iter().map(|(p, _)| &**p).collect();
    assert_eq!(read, listed);
    Ok(Tested {
        base: built.base,
        docs,
    })
}

/// [`super::write`] of files given by path.
fn write(
    sink: Sink,
    sources: Vec<Box<dyn Source + '_>>,
    docs: &[(Arc<str>, DocMeta)],
    tables: &[(u32, &[u8])],
    key: u64,
    text_bytes: u64,
    stop: &AtomicBool,
) -> Result<Base, BuildError> {
    let mut paths = Paths::new();
    for (p, _) in docs {
        paths.push(p).unwrap();
    }
    let metas: Vec<DocMeta> = docs.iter().map(|(_, m)| *m).collect();
    super::write(sink, sources, &paths, &metas, tables, key, text_bytes, stop)
}

fn roots(dir: &Path) -> Roots {
    Roots::open(&[dir.to_str().unwrap().parse().unwrap()], Policy::default()).unwrap()
}

fn entries(dir: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    fn walk(base: &Path, d: &Path, out: &mut Vec<Entry>) {
        for e in fs::read_dir(d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            let p = e.path();
            if t.is_dir() {
                walk(base, &p, out);
            } else if t.is_file() {
                let rel = p.strip_prefix(base).unwrap().to_str().unwrap().to_string();
                out.push(Entry {
                    path: rel.as_str().into(),
                    size: e.metadata().unwrap().len(),
                });
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn budget() -> Budget {
    Budget {
        max_file_bytes: 1 << 20,
        max_total_bytes: 1 << 30,
        threads: 3,
        segment_from: 4096,
    }
}

/// A tree of every kind of file the index meets.
fn tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    fs::create_dir_all(d.join("src/deep")).unwrap();
    for i in 0..60 {
        let text = format!(
            "fn item_{i}() {{ let value = {}; }}\n// note {}\n",
            i * 7,
            "x".repeat(i * 13)
        );
        fs::write(d.join(format!("src/deep/f{i:02}.rs")), text).unwrap();
    }
    fs::write(d.join("README.md"), "Hello Ferret\nneedle in a haystack\n").unwrap();
    fs::write(d.join("bin.dat"), b"needle\0\0\0binary").unwrap();
    fs::write(d.join(".env"), "SECRET=needle\n").unwrap();
    let mut utf16 = vec![0xFF, 0xFE];
    for u in "needle".encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    fs::write(d.join("wide.txt"), utf16).unwrap();
    fs::write(d.join("big.txt"), "needle\n".repeat(200_000)).unwrap();
    fs::write(
        d.join("latin1.txt"),
        b"caf\xe9 na\xefve \xe9l\xe8ve needle no\xebl fran\xe7ais",
    )
    .unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        d.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .ok();
    t
}

fn docs_holding(base: &Base, gram: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Some(p) = base.posting(gram) {
        p.for_each(|d| out.push(d));
    }
    out
}

#[test]
fn every_text_file_is_indexed_with_exactly_its_trigrams() {
    let t = tree();
    let roots = roots(t.path());
    let mut list = entries(t.path());
    list.retain(|e| &*e.path != "fifo");
    let stop = AtomicBool::new(false);
    let progress = Progress::default();
    let built = build(
        &roots,
        list.clone(),
        &budget(),
        7,
        Sink::memory(),
        &progress,
        &stop,
    )
    .unwrap();
    assert_eq!(built.base.doc_count(), list.len());
    assert_eq!(
        progress.files_done.load(Ordering::Relaxed),
        list.len() as u64
    );
    let state = |name: &str| {
        built
            .docs
            .iter()
            .find(|(p, _)| &**p == name)
            .unwrap()
            .1
            .state
    };
    assert_eq!(state("README.md"), DocState::Text);
    assert_eq!(state("src/deep/f07.rs"), DocState::Text);
    assert_eq!(state("bin.dat"), DocState::Binary);
    assert_eq!(state(".env"), DocState::Sensitive);
    assert_eq!(state("wide.txt"), DocState::Decoded);
    assert_eq!(state("latin1.txt"), DocState::Decoded);
    assert_eq!(state("big.txt"), DocState::TooLarge);
    // Every trigram's list is exactly the text files that hold it: their
    // bytes, or the text decoded from UTF-16 (its mark dropped) or from the
    // legacy encoding the head shows (here windows-1252), as grep decodes it.
    let decoded: std::collections::HashMap<&str, &str> = [
        ("wide.txt", "needle"),
        ("latin1.txt", "café naïve élève needle noël français"),
    ]
    .into();
    let mut all: HashSet<u32> = HashSet::new();
    let mut holders: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    let mut text_bytes = 0;
    for (i, (path, meta)) in built.docs.iter().enumerate() {
        let text = match meta.state {
            DocState::Text => fs::read(t.path().join(&**path)).unwrap(),
            DocState::Decoded => decoded[&**path].as_bytes().to_vec(),
            _ => continue,
        };
        text_bytes += text.len() as u64;
        let grams: HashSet<u32> = grams_of(&text).collect();
        for g in grams {
            all.insert(g);
            holders.entry(g).or_default().push(i as u32);
        }
    }
    assert_eq!(built.base.gram_count(), all.len());
    for (g, docs) in holders {
        assert_eq!(docs_holding(&built.base, g), docs, "gram {g:06x}");
    }
    assert_eq!(built.base.text_bytes, text_bytes);
}

#[test]
fn a_fifo_is_never_opened_for_reading() {
    let t = tree();
    let roots = roots(t.path());
    let list = vec![Entry {
        path: "fifo".into(),
        size: 0,
    }];
    let stop = AtomicBool::new(false);
    // Would hang forever if the FIFO were opened blocking for reading.
    let built = build(
        &roots,
        list,
        &budget(),
        7,
        Sink::memory(),
        &Progress::default(),
        &stop,
    )
    .unwrap();
    assert_eq!(built.docs[0].1.state, DocState::Unreadable);
}

#[test]
fn the_budget_stops_the_index_and_says_so() {
    let t = tree();
    let roots = roots(t.path());
    let mut list = entries(t.path());
    list.retain(|e| e.path.starts_with("src/"));
    let b = Budget {
        max_total_bytes: 2000,
        ..budget()
    };
    let built = build(
        &roots,
        list.clone(),
        &b,
        7,
        Sink::memory(),
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap();
    let indexed: u64 = built
        .docs
        .iter()
        .filter(|(_, m)| m.state == DocState::Text)
        .map(|(_, m)| m.size)
        .sum();
    let over = built
        .docs
        .iter()
        .filter(|(_, m)| m.state == DocState::OverBudget)
        .count();
    assert!(indexed <= 2000 && indexed > 1000, "{indexed}");
    assert!(over > 0 && over < list.len(), "{over}");
    assert_eq!(built.base.text_bytes, indexed);
}

#[test]
fn a_file_build_leaves_only_the_index() {
    let t = tree();
    let state = tempfile::tempdir().unwrap();
    let dest = state.path().join("c.idx");
    let roots = roots(t.path());
    let mut list = entries(t.path());
    list.retain(|e| &*e.path != "fifo");
    let built = build(
        &roots,
        list,
        &budget(),
        7,
        Sink::file(&dest).unwrap(),
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert!(built.base.is_mapped());
    let left: Vec<_> = fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["c.idx"]);
}

#[test]
fn a_stopped_build_leaves_nothing() {
    let t = tree();
    let state = tempfile::tempdir().unwrap();
    let dest = state.path().join("c.idx");
    let roots = roots(t.path());
    let stop = AtomicBool::new(true);
    let r = build(
        &roots,
        entries(t.path()),
        &budget(),
        7,
        Sink::file(&dest).unwrap(),
        &Progress::default(),
        &stop,
    );
    assert!(matches!(r, Err(BuildError::Stopped)));
    assert_eq!(fs::read_dir(state.path()).unwrap().count(), 0);
}

#[test]
fn merging_renumbers_and_drops() {
    let t = tree();
    let roots = roots(t.path());
    let mut list = entries(t.path());
    list.retain(|e| e.path.starts_with("src/"));
    let built = build(
        &roots,
        list,
        &budget(),
        7,
        Sink::memory(),
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap();
    let n = built.base.doc_count();
    // Drop every other file; add one new file with a trigram of its own.
    let renumber: Vec<u32> = (0..n)
        .map(|i| if i % 2 == 0 { (i / 2) as u32 } else { u32::MAX })
        .collect();
    let kept = n.div_ceil(2) as u32;
    let mut docs: Vec<(Arc<str>, DocMeta)> = built.docs.iter().step_by(2).cloned().collect();
    docs.push(("new.txt".into(), DocMeta::unread(3, DocState::Text)));
    let zzz = crate::grams::gram(b'z', b'z', b'z');
    let fn_ = crate::grams::gram(b'f', b'n', b' ');
    let sources: Vec<Box<dyn Source>> = vec![
        Box::new(BaseSource::new(&built.base, &renumber)),
        Box::new(PairSource::new(vec![
            (u64::from(zzz) << 32) | u64::from(kept),
            (u64::from(fn_) << 32) | u64::from(kept),
        ])),
    ];
    let merged = write(
        Sink::memory(),
        sources,
        &docs,
        &[],
        7,
        0,
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(merged.doc_count(), kept as usize + 1);
    assert_eq!(docs_holding(&merged, zzz), [kept]);
    let mut want: Vec<u32> = (0..kept).collect();
    want.push(kept);
    assert_eq!(docs_holding(&merged, fn_), want);
    assert_eq!(merged.paths().unwrap().path(kept), "new.txt");
}

/// Large text files get a segment table: each trigram with exactly the
/// segments it starts in; small, binary or transcoded files get none, nor
/// a text file with a NUL byte past its head.
#[test]
fn large_text_files_get_the_segments_of_their_trigrams() {
    let t = tree();
    let d = t.path();
    let mut text = String::new();
    for i in 0..3000 {
        text.push_str(&format!("line {i} of a large file, word{}\n", i % 97));
    }
    fs::write(d.join("large.txt"), &text).unwrap();
    let mut nul = text.clone().into_bytes();
    nul[5000] = 0;
    fs::write(d.join("nul.txt"), &nul).unwrap();
    let roots = roots(d);
    let mut list = entries(d);
    list.retain(|e| &*e.path != "fifo");
    let built = build(
        &roots,
        list,
        &budget(),
        7,
        Sink::memory(),
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap();
    let with: Vec<&str> = built
        .base
        .tables()
        .map(|(doc, _)| &*built.docs[doc as usize].0)
        .collect();
    // (big.txt is over the size bound: not indexed at all.)
    assert_eq!(with, ["large.txt"]);
    let doc = built
        .docs
        .iter()
        .position(|(p, _)| &**p == "large.txt")
        .unwrap();
    let table = built.base.table(doc as u32).unwrap();
    let bytes = text.as_bytes();
    let seg = crate::segments::seg_len(bytes.len() as u64) as usize;
    let mut want: std::collections::BTreeMap<u32, u64> = Default::default();
    for (at, g) in grams_of(bytes).enumerate() {
        *want.entry(g).or_default() |= 1 << (at / seg);
    }
    let got: std::collections::BTreeMap<u32, u64> = table
        .chunks_exact(crate::segments::ENTRY)
        .map(|e| {
            (
                u32::from_le_bytes(e[..4].try_into().unwrap()),
                u64::from_le_bytes(e[4..].try_into().unwrap()),
            )
        })
        .collect();
    assert_eq!(got, want);
    // The file's postings, read off its table, are exactly its trigrams:
    // each of them lists it, and no trigram of the other files it lacks.
    let mut others: HashSet<u32> = HashSet::new();
    for (path, meta) in &built.docs {
        if meta.state == DocState::Text && &**path != "large.txt" {
            others.extend(grams_of(&fs::read(d.join(&**path)).unwrap()));
        }
    }
    for g in want.keys().chain(others.iter()) {
        let holds = docs_holding(&built.base, *g).contains(&(doc as u32));
        assert_eq!(holds, want.contains_key(g), "gram {g:06x}");
    }
}

/// The runs' sort is by trigram alone and stable: pairs in any order come
/// out as a stable sort by trigram gives them, with a scratch of any length
/// (the scratch is kept from one run to the next).
#[test]
fn the_radix_sort_is_a_stable_sort_by_trigram() {
    let mut rng = crate::testing::Rng(0x9E37_79B9_7F4A_7C15);
    let mut next = move || rng.next();
    let mut scratch = Vec::new();
    let mut counts = Box::new([[0; 4096]; 2]);
    for round in 0..40 {
        let n = (next() % 5000) as usize;
        // Few trigrams in some rounds (long runs of one), the whole 24 bits in others.
        let grams = if round % 2 == 0 { 7 } else { 1 << 24 };
        let mut pairs: Vec<u64> = (0..n)
            .map(|_| ((next() % grams) << 32) | (next() & 0xFFFF_FFFF))
            .collect();
        let mut want = pairs.clone();
        want.sort_by_key(|p| p >> 32);
        if round % 3 == 0 {
            scratch = vec![7; (next() % 9000) as usize];
        }
        let grams: Vec<u32> = pairs.iter().map(|p| (p >> 32) as u32).collect();
        // Counted in pieces, as files are added to a run.
        for part in grams.chunks(1 + round) {
            super::count_digits(&mut counts, part);
        }
        super::radix_sort_by_gram(&mut pairs, &mut scratch, &mut counts);
        assert_eq!(pairs, want, "round {round}");
        assert!(counts.iter().flatten().all(|&c| c == 0), "round {round}");
    }
}

/// A run's table and lists, written through a slice, are what the plain
/// varint writer writes: gaps of every length (one to five bytes), lone
/// files and long lists of one trigram.
#[test]
fn a_run_is_encoded_as_its_gaps_are_written_one_by_one() {
    let mut rng = crate::testing::Rng(0x2545_F491_4F6C_DD1D);
    let mut next = move || rng.next();
    let (mut table, mut lists) = (vec![9u8; 40], vec![9u8; 3]);
    for round in 0..30 {
        let mut pairs = Vec::new();
        let mut gram = 0u64;
        for _ in 0..(next() % 300) {
            gram += 1 + next() % 5000;
            let mut file = 0u64;
            for _ in 0..1 + next() % if round % 2 == 0 { 3 } else { 400 } {
                // Gaps from 1 up to 2^32 / 4: varints of one to five bytes.
                file += 1 + (next() % (1u64 << (next() % 31))).min(u64::from(u32::MAX) / 4000);
                pairs.push((gram << 32) | file);
            }
        }
        let (mut want_table, mut want_lists) = (Vec::new(), Vec::new());
        for group in pairs.chunk_by(|a, b| a >> 32 == b >> 32) {
            let start = want_lists.len();
            let mut prev = 0u32;
            for &p in group {
                put_varint(&mut want_lists, p as u32 - prev);
                prev = p as u32;
            }
            for v in [
                (group[0] >> 32) as u32,
                group.len() as u32,
                (want_lists.len() - start) as u32,
                prev,
            ] {
                want_table.extend_from_slice(&v.to_le_bytes());
            }
        }
        super::encode_run(&pairs, &mut table, &mut lists);
        assert_eq!(table, want_table, "round {round}");
        assert_eq!(lists, want_lists, "round {round}");
    }
}

/// A merge in three parts, into a file, writes the lists one merge writes
/// in memory.
#[test]
fn a_merge_in_parts_writes_what_one_merge_writes() {
    let t = tree();
    let roots = roots(t.path());
    let mut list = entries(t.path());
    list.retain(|e| &*e.path != "fifo");
    let state = tempfile::tempdir().unwrap();
    let one = Budget {
        threads: 1,
        ..budget()
    };
    let stop = AtomicBool::new(false);
    let progress = Progress::default();
    let alone = build(
        &roots,
        list.clone(),
        &one,
        7,
        Sink::memory(),
        &progress,
        &stop,
    )
    .unwrap();
    let dest = state.path().join("c.idx");
    let sink = Sink::file(&dest).unwrap();
    let parts = build(&roots, list, &budget(), 7, sink, &progress, &stop).unwrap();
    assert!(alone.base.gram_count() > 100, "{}", alone.base.gram_count());
    assert_eq!(parts.base.gram_count(), alone.base.gram_count());
    for i in 0..alone.base.gram_count() {
        let (a, b) = (
            alone.base.posting_by_index(i),
            parts.base.posting_by_index(i),
        );
        assert_eq!(a.gram, b.gram);
        let (mut x, mut y) = (Vec::new(), Vec::new());
        a.for_each(|d| x.push(d));
        b.for_each(|d| y.push(d));
        assert_eq!(x, y, "gram {:06x}", a.gram);
    }
}

/// The ranges of a merge in parts hold about as many bytes of lists each,
/// and small lists are merged in one part.
#[test]
fn parts_share_the_lists_bytes() {
    // One run whose table holds a trigram every 4096, each list 100 bytes
    // but those of the first quarter, 400.
    let mut spill = Vec::new();
    for i in 0..4096u32 {
        let len: u32 = if i < 1024 { 400 } else { 100 };
        for v in [i << 12, 1, len, 0] {
            spill.extend_from_slice(&v.to_le_bytes());
        }
    }
    let run = RunInfo {
        order: (0, 0),
        table: 0,
        grams: 4096,
        lists: spill.len() as u64,
    };
    let bounds = super::part_bounds(&spill, &[run], 2);
    // Half the bytes (358,400 of 716,800) are the first 896 lists of 400
    // bytes: 56 buckets of 2^16 trigrams.
    assert_eq!(bounds, [0, 56 << 16, 1 << 24]);
    let bounds = super::part_bounds(&spill, &[run], 4);
    assert_eq!(bounds.len(), 5);
    assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{bounds:?}");
    let tiny = RunInfo { grams: 1, ..run };
    let mut small = spill[..12].to_vec();
    small[8..12].copy_from_slice(&10u32.to_le_bytes());
    small.extend_from_slice(&[0; 4]);
    assert_eq!(super::part_bounds(&small, &[tiny], 4), [0, 1 << 24]);
}
