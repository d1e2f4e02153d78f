//! The bytes a [`Table`] holds: every source file under a folder listed as
//! a caller's index would list it, the table built with
//! [`Table::refresh`], and the heap counted by a counting allocator before
//! and after (the listing dropped first), so the figure is the table's
//! own, not the process's.
//!
//! ```text
//! cargo run --release -p ferret-symbols --example table_memory -- DIR [THREADS]
//! ```
//!
//! Files holding a NUL byte are given as unreadable, as the server's file
//! layer refuses binary files. Prints the files held, the definitions, the
//! table's bytes (and per file, per definition), the peak while building,
//! and the same for the table read back from its saved bytes.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Instant, UNIX_EPOCH},
};

use ferret_symbols::{Lang, Limits, Source, Table};

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only
// the sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = NOW.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        NOW.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            NOW.fetch_sub(layout.size(), Ordering::Relaxed);
            let now = NOW.fetch_add(new_size, Ordering::Relaxed) + new_size;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn walk(base: &std::path::Path, dir: &std::path::Path, out: &mut Vec<Source>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        let path = e.path();
        if kind.is_dir() {
            walk(base, &path, out);
        } else if kind.is_file()
            && let Some(shown) = path.strip_prefix(base).ok().and_then(|p| p.to_str())
            && Lang::of_path(shown).is_some()
            && let Ok(meta) = e.metadata()
        {
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs() as i64);
            out.push(Source {
                path: shown.to_string(),
                mtime,
                size: meta.len(),
            });
        }
    }
}

fn mib(b: usize) -> f64 {
    b as f64 / (1 << 20) as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("a folder"));
    let threads: usize = args.next().map_or(2, |t| t.parse().expect("a count"));
    let start = NOW.load(Ordering::Relaxed);
    let mut sources = Vec::new();
    walk(&dir, &dir, &mut sources);
    let now = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let read = |p: &str| std::fs::read(dir.join(p)).ok().filter(|b| !b.contains(&0));
    let before = NOW.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let started = Instant::now();
    let mut table = Table::new(Limits::default());
    table.refresh(&sources, now, threads, read);
    let secs = started.elapsed().as_secs_f64();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let listed = sources.len();
    drop(sources);
    table.shrink_to_fit();
    let held = NOW.load(Ordering::Relaxed) - start;
    let st = table.stats();
    let report = |what: &str, bytes: usize| {
        println!(
            "{what}: {:.1} MiB, {:.0} B a file, {:.0} B a definition",
            mib(bytes),
            bytes as f64 / st.files.max(1) as f64,
            bytes as f64 / st.symbols.max(1) as f64,
        );
    };
    println!(
        "{listed} source files listed, {} held ({} unreadable, {} timed out), {} definitions, built in {secs:.1} s on {threads} threads",
        st.files, st.unreadable, st.timed_out, st.symbols
    );
    report("table", held);
    println!(
        "peak while building (beyond the listing's start): {:.1} MiB",
        mib(peak)
    );
    let bytes = table.to_bytes(b"k");
    drop(table);
    let base = NOW.load(Ordering::Relaxed);
    let back = Table::from_bytes(&bytes, Limits::default(), b"k").expect("reads back");
    let read_back = NOW.load(Ordering::Relaxed) - base;
    println!(
        "saved: {:.1} MiB; read back: {} files",
        mib(bytes.len()),
        back.stats().files
    );
    report("read back", read_back);
}
