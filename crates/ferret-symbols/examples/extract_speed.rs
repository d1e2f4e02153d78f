//! Extraction speed on one core: every source file under a folder (at most
//! 8 MiB each), extracted one after another by one [`Extractor`].
//!
//! ```text
//! cargo run --release -p ferret-symbols --example extract_speed -- DIR [ROUNDS]
//! ```
//!
//! Prints the bytes, files, definitions (and a digest of what they are), and MB/s (the best of ROUNDS, 3 by
//! default, files read into memory first so that only extraction is timed).

use std::time::Instant;

use ferret_symbols::{Extractor, Lang, Limits};

fn walk(dir: &std::path::Path, out: &mut Vec<(Lang, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let Ok(kind) = e.file_type() else { continue };
        let path = e.path();
        if kind.is_dir() {
            walk(&path, out);
        } else if kind.is_file()
            && let Some(lang) = path.to_str().and_then(Lang::of_path)
            && let Ok(bytes) = std::fs::read(&path)
            && !bytes.is_empty()
            && bytes.len() <= 8 << 20
        {
            out.push((lang, bytes));
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("a folder");
    let rounds: usize = args.next().map_or(3, |r| r.parse().expect("a count"));
    let mut files = Vec::new();
    walk(std::path::Path::new(&dir), &mut files);
    let bytes: usize = files.iter().map(|(_, b)| b.len()).sum();
    let mut best = f64::MAX;
    let mut defs = 0;
    let mut digest = 0u64;
    for _ in 0..rounds {
        let mut x = Extractor::new(Limits::default());
        let started = Instant::now();
        defs = 0;
        digest = 0;
        for (lang, b) in &files {
            if let Ok(o) = x.extract(*lang, b) {
                defs += o.symbols.len();
                // What was found, not only how many: two builds of the
                // extractor compare by this.
                let mut h = std::hash::DefaultHasher::new();
                std::hash::Hash::hash(&format!("{o:?}"), &mut h);
                digest = digest.rotate_left(5) ^ std::hash::Hasher::finish(&h);
            }
        }
        best = best.min(started.elapsed().as_secs_f64());
    }
    println!(
        "{} files, {:.1} MB, {defs} definitions (digest {digest:016x}): {:.2} s, {:.1} MB/s on one core",
        files.len(),
        bytes as f64 / 1e6,
        best,
        bytes as f64 / 1e6 / best
    );
}
