//! How fast one core finds the distinct trigrams of text (the content
//! index's first step for every file): every file of a folder without a NUL
//! byte and under 4 MiB is read into memory, then `Extractor::distinct` runs
//! over all of them, nine rounds; each round prints its speed and a digest of
//! every trigram list in order (equal digests: the same trigrams, in the same
//! order, as another build's).
//!
//! ```text
//! cargo run --release -p ferret-content --example grams_speed -- DIR
//! ```

use std::time::Instant;

fn main() {
    let dir = std::env::args().nth(1).expect("usage: grams_speed DIR");
    let mut texts = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(dir)];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file()
                && let Ok(b) = std::fs::read(e.path())
                && b.len() < 4 << 20
                && !b.contains(&0)
            {
                texts.push(b);
            }
        }
    }
    let total: usize = texts.iter().map(Vec::len).sum();
    let mut x = ferret_content::grams::Extractor::new();
    for round in 0..9 {
        let t = Instant::now();
        let (mut digest, mut grams) = (0u64, 0usize);
        for text in &texts {
            let found = x.distinct(text);
            grams += found.len();
            for (i, &g) in found.iter().enumerate() {
                digest = digest
                    .wrapping_mul(31)
                    .wrapping_add(u64::from(g) ^ i as u64);
            }
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "round {round}: {} files, {:.1} MB in {secs:.3} s = {:.1} MB/s; {grams} trigrams, digest {digest:x}",
            texts.len(),
            total as f64 / 1e6,
            total as f64 / 1e6 / secs
        );
    }
}
