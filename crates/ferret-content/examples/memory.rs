//! What the content index holds in memory: the name index of a folder is
//! built first (not counted), then the content index is built into a file
//! as `ferret index` and a server build it, and the heap is counted by a
//! counting allocator from just before (so the figures are the content
//! index's own, not the name index's); then the file is loaded back as a
//! restarted server loads it.
//!
//! ```text
//! cargo run --release -p ferret-content --example memory -- DIR [THREADS]
//! ```
//!
//! Prints, for the build and for the load: the heap held after, the peak
//! while it ran (both beyond the name index), the file's size, bytes a file
//! and the share of the indexed text; and the process's VmRSS, VmHWM and
//! RssAnon from `/proc/self/status` (these include the name index and the
//! mapped file's pages).

use std::{
    alloc::{GlobalAlloc, Layout, System},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use ferret_content::{
    Config, ContentIndex,
    pattern::{PatternSpec, query},
};
use ferret_fs::{Policy, Roots};
use ferret_index::{EntryId, Index, IndexConfig, IndexRoot, Kind, search::display_path};

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
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
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

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// VmRSS, VmHWM and RssAnon, in bytes.
fn proc_status() -> (u64, u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"), field("RssAnon:"))
}

fn print_rss(when: &str) {
    let (rss, hwm, anon) = proc_status();
    println!(
        "  process {when}: VmRSS {:.1} MiB, VmHWM {:.1} MiB, RssAnon {:.1} MiB",
        mib(rss),
        mib(hwm),
        mib(anon)
    );
}

fn main() {
    // As the binary does (`ferret` main): large buffers are mapped, so
    // they go back to the system when freed.
    ferret_index::map_large_allocations();
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("a folder"));
    let threads: usize = args.next().map_or(2, |t| t.parse().expect("a count"));
    let state = std::env::temp_dir().join(format!("ferret-content-memory-{}", std::process::id()));
    std::fs::create_dir_all(&state).expect("a state folder");

    let roots = Roots::open(
        &[dir.to_str().expect("UTF-8").parse().expect("a root")],
        Policy::default(),
    )
    .expect("the root opens");
    let root = &roots.roots()[0];
    let mut config = IndexConfig::new(vec![IndexRoot {
        name: root.name.clone(),
        path: root.path.clone(),
        walk_path: root.handle_path(),
    }]);
    // Nothing changes while this runs: no watcher, no snapshot.
    config.watch = false;
    let index = Index::open(config).expect("the name index");
    index.start();
    let started = Instant::now();
    while !index.wait_ready(Duration::from_secs(1)) {}
    println!(
        "name index of {} ready in {:.1} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    print_rss("with the name index");
    let roots = Arc::new(roots);

    let before = NOW.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let mut c = Config::new(Some(state.clone()));
    // Asked without a watcher (none runs here): every file's version is
    // compared with the name index's, as a one-shot search does.
    c.require_watcher = false;
    c.budget.threads = threads;
    let content = ContentIndex::new(c.clone(), roots.clone(), index.clone());
    let started = Instant::now();
    content.build_now(true).expect("the content index builds");
    let secs = started.elapsed().as_secs_f64();
    let held = NOW.load(Ordering::Relaxed).saturating_sub(before) as u64;
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before) as u64;
    let st = content.status();
    let files = st.files.max(1);
    println!(
        "built in {secs:.2} s on {threads} threads: {} files, {} indexed, {:.1} MiB of text, file {:.1} MiB ({:.0} B a file)",
        st.files,
        st.indexed_files,
        mib(st.indexed_bytes),
        mib(st.size_bytes),
        st.size_bytes as f64 / files as f64,
    );
    let report = |what: &str, held: u64, peak: u64| {
        // (A tree of empty or binary files has no text to compare with.)
        let share = if st.indexed_bytes >= 1 << 20 {
            format!("{:.4}x the text", held as f64 / st.indexed_bytes as f64)
        } else {
            "no text indexed".to_string()
        };
        println!(
            "{what}: heap held {:.1} MiB ({:.0} B a file, {share}), peak {:.1} MiB",
            mib(held),
            held as f64 / files as f64,
            mib(peak),
        );
    };
    report("build", held, peak);
    print_rss("after the build");
    content.shutdown();
    drop(content);

    let before = NOW.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let loaded = ContentIndex::new(c, roots, index.clone());
    let started = Instant::now();
    let answered = loaded.open_saved().expect("the file loads");
    let secs = started.elapsed().as_secs_f64();
    let held = NOW.load(Ordering::Relaxed).saturating_sub(before) as u64;
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before) as u64;
    println!("loaded and checked in {secs:.1} s: answers for {answered} files");
    report("load", held, peak);
    print_rss("after the load");
    // What a grep that lists its scope pays here: every file looked up by
    // its path (in batches, as the list of a million paths is large).
    let q = query(&PatternSpec {
        text: "zyzzyva",
        literal: true,
        case_insensitive: false,
        multiline: false,
    });
    let ids: Vec<EntryId> = index.with_store(|store| {
        (0..store.capacity_ids() as EntryId)
            .filter(|&id| store.is_live(id) && store.kind(id) == Kind::File)
            .collect()
    });
    let (mut looked_up, mut answered, mut kept) = (0usize, 0u64, 0usize);
    let mut spent = Duration::ZERO;
    for batch in ids.chunks(10_000) {
        let files: Vec<(String, i64, u64)> = index.with_store(|store| {
            batch
                .iter()
                .map(|&id| {
                    let m = store.meta(id);
                    (display_path(store, id), m.mtime, m.size)
                })
                .collect()
        });
        let list: Vec<(&str, i64, u64)> =
            files.iter().map(|(p, t, s)| (p.as_str(), *t, *s)).collect();
        let started = Instant::now();
        let n = loaded.narrow(&q, &list, true).expect("the index answers");
        spent += started.elapsed();
        looked_up += list.len();
        answered += n.answered;
        kept += n.keep.iter().filter(|k| **k).count();
    }
    println!(
        "narrow over every file: {looked_up} looked up in {:.0} ms ({:.0} ns a file), {answered} answered for, {kept} to search",
        spent.as_secs_f64() * 1e3,
        spent.as_secs_f64() * 1e9 / looked_up.max(1) as f64
    );
    loaded.shutdown();
    drop(loaded);
    index.shutdown();
    let _ = std::fs::remove_dir_all(&state);
}
