//! `ferret-bench`: the index benchmark, in-process. `bench/index.py` drives it and
//! times ferret as users wait for it (an MCP round trip, a CLI process) beside
//! plocate and fd; see docs/benchmarks.md for the figures and the exact command.
//!
//! ```text
//! ferret-bench tree DIR --entries N [--seed S]   build a synthetic tree
//! ferret-bench index DIR [--freshness N] [--storm PER_SECOND] [--hidden] [--no-ignore]
//!                                                build, memory, snapshot, load, query,
//!                                                freshness (also during a storm of changes)
//! ferret-bench fuzzy DIR --queries FILE [--runs N]
//!                                                fuzzy search, in-process, one query a line
//! ```

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use ferret_index::{Index, IndexConfig, IndexRoot, Rules, SearchRequest, SortKey};
use ferret_query::{Clock, Options, Query};

/// A small deterministic generator (xorshift64*), so trees are the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "alpha", "beta", "report", "draft", "final", "notes", "main", "util", "config", "test", "data",
    "image", "render", "parser", "index", "server", "client", "model", "view", "build", "cache",
    "photo", "invoice", "summary", "archive", "module", "handler", "schema", "backup", "readme",
];
const EXTS: &[&str] = &[
    "rs", "md", "txt", "json", "toml", "py", "js", "png", "jpg", "pdf", "log", "csv", "html", "c",
    "h",
];

/// Build `entries` files and folders under `dir`: folders of 5-40 entries, names
/// from a word list, extensions from a fixed list, a few rare names.
fn make_tree(dir: &Path, entries: u64, seed: u64) -> anyhow::Result<()> {
    let mut rng = Rng(seed | 1);
    std::fs::create_dir_all(dir)?;
    let mut folders: Vec<PathBuf> = vec![dir.to_path_buf()];
    let mut made = 0u64;
    let mut cursor = 0usize;
    while made < entries {
        let parent = folders[cursor % folders.len()].clone();
        cursor += 1 + rng.below(3) as usize;
        let fanout = 5 + rng.below(36);
        for _ in 0..fanout {
            if made >= entries {
                break;
            }
            let w1 = WORDS[rng.below(WORDS.len() as u64) as usize];
            let w2 = WORDS[rng.below(WORDS.len() as u64) as usize];
            let n = rng.below(100_000);
            if rng.below(10) == 0 {
                let path = parent.join(format!("{w1}_{w2}_{n}"));
                if std::fs::create_dir(&path).is_ok() {
                    folders.push(path);
                    made += 1;
                }
            } else {
                let ext = EXTS[rng.below(EXTS.len() as u64) as usize];
                let rare = if rng.below(200_000) == 0 {
                    "zyzzyva-"
                } else {
                    ""
                };
                let path = parent.join(format!("{rare}{w1}-{w2}-{n}.{ext}"));
                let size = rng.below(4096);
                // Sparse: the size is real, no data is written (a 10M-entry
                // tree then fits on a small disk).
                if std::fs::File::create(&path)
                    .and_then(|f| f.set_len(size))
                    .is_ok()
                {
                    made += 1;
                }
            }
        }
        if made % 100_000 < 40 {
            eprint!("\r{made} entries");
        }
    }
    eprintln!("\r{made} entries under {}", dir.display());
    Ok(())
}

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn peak_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// The fixed query set (also run through plocate and fd by bench/index.sh).
pub const QUERIES: &[(&str, &str)] = &[
    ("rare substring", "zyzzyva"),
    ("common substring", "report"),
    ("extension", "ext:pdf"),
    ("wildcard", "invoice-*.csv"),
    ("path term", "/alpha_beta_"),
    ("size function", "size:>4000"),
    ("date function", "dm:today"),
    ("sorted by date, limit 50", "ext:rs"),
];

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn bench_index(
    dir: &Path,
    freshness_changes: usize,
    storm: u64,
    rules: Rules,
) -> anyhow::Result<()> {
    let dir = std::fs::canonicalize(dir)?;
    let state = tempdir_in_target()?;
    let mut config = IndexConfig::new(vec![IndexRoot::new("bench", &dir)]);
    config.rules = rules;
    config.state_dir = Some(state.clone());
    config.watch = false;
    let index = Index::open(config.clone()).map_err(anyhow::Error::msg)?;
    let rss_start = rss_bytes();
    let started = Instant::now();
    index.build_now(None);
    let build = started.elapsed();
    println!(
        "process RSS             {:.1} MiB before the build, {:.1} MiB after, peak {:.1} MiB",
        rss_start as f64 / 1048576.0,
        rss_bytes() as f64 / 1048576.0,
        peak_bytes() as f64 / 1048576.0
    );
    let entries = index.status().entries;
    let heap = index.with_store(|s| s.heap_bytes());
    let parts = index.with_store(|s| s.heap_parts());

    println!("entries                 {entries}");
    println!("build (warm)            {:.2} s", build.as_secs_f64());
    let parts: Vec<String> = parts
        .iter()
        .map(|(what, b)| format!("{what} {:.1}", *b as f64 / entries as f64))
        .collect();
    println!(
        "store heap              {:.1} bytes/entry: {}",
        heap as f64 / entries as f64,
        parts.join(", ")
    );
    let started = Instant::now();
    let bytes = index
        .save_snapshot()
        .map_err(anyhow::Error::msg)?
        .unwrap_or(0);
    println!(
        "snapshot save           {:.2} s ({:.1} bytes/entry on disk)",
        started.elapsed().as_secs_f64(),
        bytes as f64 / entries as f64
    );
    drop(index);
    let rss_before = rss_bytes();
    let started = Instant::now();
    let loaded = Index::open(config).map_err(anyhow::Error::msg)?;
    println!(
        "snapshot load           {:.3} s",
        started.elapsed().as_secs_f64()
    );
    println!(
        "process RSS             {:.1} MiB after the load ({:.1} bytes/entry grown by the load)",
        rss_bytes() as f64 / (1 << 20) as f64,
        rss_bytes().saturating_sub(rss_before) as f64 / entries as f64
    );
    assert_eq!(
        loaded.status().entries,
        entries,
        "the snapshot holds every entry"
    );

    let clock = Clock::system();
    println!(
        "\nquery latency, in-process, {} runs each, in the order search gives by default (ms):",
        50
    );
    println!(
        "{:<26} {:>8} {:>8} {:>8} {:>9}",
        "query", "p50", "p99", "min", "matches"
    );
    let only = std::env::var("FERRET_BENCH_ONLY").ok();
    // FERRET_BENCH_QUERIES="a;re;rep" times these instead of the fixed set.
    let extra: Vec<(String, String)> = std::env::var("FERRET_BENCH_QUERIES")
        .ok()
        .map(|q| {
            q.split(';')
                .map(|t| (format!("`{t}`"), t.to_string()))
                .collect()
        })
        .unwrap_or_default();
    let fixed: Vec<(String, String)> = QUERIES
        .iter()
        .map(|(l, t)| (l.to_string(), t.to_string()))
        .collect();
    for (label, text) in if extra.is_empty() { fixed } else { extra } {
        let (label, text) = (label.as_str(), text.as_str());
        if only.as_deref().is_some_and(|o| o != label) {
            continue;
        }
        let query = Query::compile(text, &Options::default(), &clock)
            .map_err(|e| anyhow::anyhow!(e.render(text)))?;
        // The order `search` gives when none is asked for: relevance when the
        // query names something (as the server decides), else by name.
        let sort = if label.starts_with("sorted") {
            SortKey::Modified
        } else if std::env::var_os("FERRET_BENCH_BY_NAME").is_none()
            && (!query.name_words().is_empty() || !query.required_path_literals().is_empty())
        {
            SortKey::Relevance
        } else {
            SortKey::Name
        };
        let mut times = Vec::new();
        let mut total = 0;
        let runs: usize = std::env::var("FERRET_BENCH_RUNS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(50);
        for _ in 0..runs {
            let t = Instant::now();
            let out = loaded.search(&SearchRequest {
                query: &query,
                under: None,
                sort,
                descending: sort == SortKey::Modified,
                offset: 0,
                limit: 50,
                group_by: None,
            });
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            total = out.total;
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{:<26} {:>8.3} {:>8.3} {:>8.3} {:>9}   {text}",
            label,
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            times[0],
            total
        );
    }
    completion_latency(&loaded);
    if freshness_changes > 0 {
        freshness(&dir, freshness_changes, 0)?;
        if storm > 0 {
            freshness(&dir, freshness_changes, storm)?;
        }
    }
    let _ = std::fs::remove_dir_all(&state);
    Ok(())
}

/// `completion/complete` of paths: the top level, a typed prefix, and folders
/// one and three levels down (real folders, found from the index itself).
fn completion_latency(index: &Index) {
    let mut deep = String::new();
    for _ in 0..3 {
        let next = index.complete_path(&deep, true, 1);
        match next.values.first() {
            Some(folder) => deep = folder.clone(),
            None => break,
        }
    }
    let first = index
        .complete_path("", true, 1)
        .values
        .first()
        .cloned()
        .unwrap_or_default();
    let cases = [
        ("top level", String::new()),
        ("prefix `r`", "r".to_string()),
        ("one down", first.clone()),
        ("one down + `re`", format!("{first}re")),
        ("three down", deep),
    ];
    println!("\ncompletion/complete of paths, in-process, 200 runs each (ms):");
    println!(
        "{:<26} {:>8} {:>8} {:>9}",
        "partial", "p50", "p99", "matches"
    );
    for (label, partial) in cases {
        let mut times = Vec::new();
        let mut total = 0;
        for _ in 0..200 {
            let t = Instant::now();
            let done = index.complete_path(&partial, false, 100);
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            total = done.total;
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{:<26} {:>8.3} {:>8.3} {:>9}   {partial:?}",
            label,
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            total
        );
    }
}

/// Create, rename and delete files on disk with the watcher running, and time
/// until `search` sees each change; with `storm` > 0, while another thread makes
/// that many other changes a second.
fn freshness(dir: &Path, changes: usize, storm: u64) -> anyhow::Result<()> {
    let work = dir.join("ferret-freshness");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let storm_dir = dir.join("ferret-storm");
    let _ = std::fs::remove_dir_all(&storm_dir);
    std::fs::create_dir_all(&storm_dir)?;
    let mut config = IndexConfig::new(vec![IndexRoot::new("bench", dir)]);
    config.state_dir = None;
    let index = Index::open(config).map_err(anyhow::Error::msg)?;
    index.start();
    index.wait_ready(Duration::from_secs(600));
    std::thread::sleep(Duration::from_millis(500));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let made = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stormer = (storm > 0).then(|| {
        let (stop, made, storm_dir) = (stop.clone(), made.clone(), storm_dir.clone());
        std::thread::spawn(move || {
            // Creates, renames and deletes, `storm` of them a second, paced.
            let started = Instant::now();
            let mut n: u64 = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let due = (started.elapsed().as_secs_f64() * storm as f64) as u64;
                while n < due {
                    let a = storm_dir.join(format!("s{}", n / 3));
                    let b = storm_dir.join(format!("t{}", n / 3));
                    let _ = match n % 3 {
                        0 => std::fs::write(&a, b"s"),
                        1 => std::fs::rename(&a, &b),
                        _ => std::fs::remove_file(&b),
                    };
                    n += 1;
                }
                std::thread::sleep(Duration::from_micros(500));
            }
            made.store(n, std::sync::atomic::Ordering::Relaxed);
        })
    });
    let storm_started = Instant::now();
    // Meanwhile a searcher: how long searches take while changes are applied.
    let searcher = {
        let (stop, index) = (stop.clone(), index.clone());
        std::thread::spawn(move || {
            let q = Query::compile("report", &Options::default(), &Clock::system()).expect("query");
            let mut times = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let t = Instant::now();
                index.search(&SearchRequest {
                    query: &q,
                    under: None,
                    sort: SortKey::Name,
                    descending: false,
                    offset: 0,
                    limit: 50,
                    group_by: None,
                });
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                std::thread::sleep(Duration::from_millis(2));
            }
            times
        })
    };
    let clock = Clock::system();
    let mut latencies = Vec::new();
    let seen = |name: &str| -> bool {
        let q = Query::compile(&format!("wfn:{name}"), &Options::default(), &clock).expect("query");
        index.count(&q) > 0
    };
    let wait = |cond: &dyn Fn() -> bool| -> f64 {
        let t = Instant::now();
        while !cond() {
            if t.elapsed() > Duration::from_secs(10) {
                return f64::INFINITY;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        t.elapsed().as_secs_f64() * 1000.0
    };
    for i in 0..changes / 3 + 1 {
        let a = format!("fresh-{i}-a.txt");
        let b = format!("fresh-{i}-b.txt");
        std::fs::write(work.join(&a), b"x")?;
        let created = wait(&|| seen(&a));
        std::fs::rename(work.join(&a), work.join(&b))?;
        let renamed = wait(&|| seen(&b) && !seen(&a));
        std::fs::remove_file(work.join(&b))?;
        let deleted = wait(&|| !seen(&b));
        for (what, ms) in [
            ("create", created),
            ("rename", renamed),
            ("delete", deleted),
        ] {
            if !ms.is_finite() {
                eprintln!("change {i}: {what} never became visible");
            }
            latencies.push(ms);
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let storm_secs = storm_started.elapsed().as_secs_f64();
    let mut searches = searcher.join().unwrap_or_default();
    searches.sort_by(f64::total_cmp);
    if let Some(t) = stormer {
        let _ = t.join();
    }
    index.shutdown();
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&storm_dir);
    latencies.sort_by(f64::total_cmp);
    let during = if storm > 0 {
        format!(
            " during a storm of {:.0} other changes a second",
            made.load(std::sync::atomic::Ordering::Relaxed) as f64 / storm_secs
        )
    } else {
        String::new()
    };
    println!(
        "\nfreshness over {} changes (create, rename, delete){during}: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        latencies.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.95),
        latencies.last().copied().unwrap_or(0.0)
    );
    println!(
        "searches meanwhile (`report`, page of 50): {} runs, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        searches.len(),
        percentile(&searches, 0.5),
        percentile(&searches, 0.99),
        searches.last().copied().unwrap_or(0.0)
    );
    Ok(())
}

/// Fuzzy search in-process (the index built, no watcher): each query's
/// median over `runs`, then the median and p95 over every call, so a profile
/// (`perf record`) sees the search and nothing of MCP.
fn bench_fuzzy(dir: &Path, queries: &Path, runs: usize) -> anyhow::Result<()> {
    let dir = std::fs::canonicalize(dir)?;
    let state = tempdir_in_target()?;
    let mut config = IndexConfig::new(vec![IndexRoot::new("bench", &dir)]);
    config.state_dir = Some(state.clone());
    config.watch = false;
    // FERRET_BENCH_ALL=1: hidden and ignored files too, as `serve --hidden
    // --no-ignore` (bench/root.py's serve) indexes them.
    if std::env::var_os("FERRET_BENCH_ALL").is_some() {
        config.rules.hidden = true;
        config.rules.no_ignore = true;
    }
    let index = Index::open(config).map_err(anyhow::Error::msg)?;
    index.build_now(None);
    let entries = index.status().entries;
    let text = std::fs::read_to_string(queries)?;
    let clock = Clock::system();
    let mut all = Vec::new();
    println!("fuzzy, in-process, {entries} entries, {runs} runs each (ms):");
    println!("{:>8} {:>8} {:>9}   query", "p50", "max", "total");
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (rest, words) =
            ferret_query::split_words(line).map_err(|e| anyhow::anyhow!(e.render(line)))?;
        let filter = Query::compile(&rest, &Options::default(), &clock)
            .map_err(|e| anyhow::anyhow!(e.render(&rest)))?;
        let mut times = Vec::new();
        let mut total = 0;
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            let out = index.fuzzy(&ferret_index::fuzzy::FuzzyRequest {
                words: &words,
                filter: &filter,
                under: None,
                offset: 0,
                limit: 50,
            });
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            total = out.total;
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{:>8.2} {:>8.2} {:>9}   {line}",
            percentile(&times, 0.5),
            times[times.len() - 1],
            total
        );
        all.extend(times);
    }
    all.sort_by(f64::total_cmp);
    if !all.is_empty() {
        println!(
            "all {} calls: p50 {:.2} ms, p95 {:.2} ms",
            all.len(),
            percentile(&all, 0.5),
            percentile(&all, 0.95)
        );
    }
    let _ = std::fs::remove_dir_all(&state);
    Ok(())
}

fn tempdir_in_target() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("ferret-bench-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn main() -> anyhow::Result<()> {
    if std::env::var_os("FERRET_NO_MMAP_TUNE").is_none() {
        ferret_index::map_large_allocations();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    match args.first().map(String::as_str) {
        Some("tree") => {
            let dir = PathBuf::from(
                args.get(1)
                    .ok_or_else(|| anyhow::anyhow!("tree DIR --entries N"))?,
            );
            let entries = flag("--entries").map_or(Ok(1_000_000), |s| s.parse())?;
            let seed = flag("--seed").map_or(Ok(42), |s| s.parse())?;
            make_tree(&dir, entries, seed)
        }
        Some("index") => {
            let dir = PathBuf::from(args.get(1).ok_or_else(|| anyhow::anyhow!("index DIR"))?);
            let changes = flag("--freshness").map_or(Ok(210), |s| s.parse())?;
            let rules = Rules {
                hidden: args.iter().any(|a| a == "--hidden"),
                no_ignore: args.iter().any(|a| a == "--no-ignore"),
            };
            let storm = flag("--storm").map_or(Ok(0), |s| s.parse())?;
            bench_index(&dir, changes, storm, rules)
        }
        Some("fuzzy") => {
            let dir = PathBuf::from(args.get(1).ok_or_else(|| anyhow::anyhow!("fuzzy DIR"))?);
            let queries = flag("--queries").ok_or_else(|| anyhow::anyhow!("--queries FILE"))?;
            let runs = flag("--runs").map_or(Ok(5), |s| s.parse())?;
            bench_fuzzy(&dir, Path::new(&queries), runs)
        }
        Some("queries") => {
            for (label, q) in QUERIES {
                println!("{label}\t{q}");
            }
            Ok(())
        }
        _ => anyhow::bail!(
            "usage: ferret-bench tree DIR --entries N [--seed S] | index DIR [--freshness N] [--storm PER_SECOND] [--hidden] [--no-ignore] | fuzzy DIR --queries FILE [--runs N] | queries"
        ),
    }
}
