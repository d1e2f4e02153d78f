//! Proof of equality: grep through the content index finds exactly what a full
//! scan finds. Random trees (text, binary, UTF-16, Latin-1, empty, sensitive,
//! files over the index's size cap and past its budget), random edits
//! (create, append, rewrite keeping the size, delete, rename files and
//! folders, turn binary), and random patterns (literals cut from the files,
//! regexes, case-insensitive, whole word, multi-line), each searched both ways
//! right after the edits (before the watcher has reported them), the moment
//! the name index has reported them (before the content index has read them
//! again), and again once it has.

use std::{
    collections::HashSet,
    fs,
    path::{Path, PathBuf},
    sync::{Arc, mpsc::Receiver},
    time::{Duration, Instant},
};

use ferret_content::{Config, ContentIndex};
use ferret_fs::{Policy, Roots};
use ferret_grep::{Output, Pattern, compile, gather, narrow};
use ferret_index::{Index, IndexConfig, IndexRoot};

mod common;
use common::{Rng, grep_all, whole_tree};

const WORDS: &[&str] = &[
    "alpha",
    "beta",
    "gamma",
    "needle",
    "Needle",
    "NEEDLE",
    "café",
    "CAFÉ",
    "\u{212A}elvin",
    "kelvin",
    "straße",
    "STRASSE",
    "fn",
    "main",
    "handler_42",
    "Request",
    "x",
    "yy",
    "zzz",
    "hay_stack",
    "r2d2",
    "(paren)",
    "a.b",
    "tab\there",
    "über",
    "ünicode",
    "日本語",
];

fn text(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..1 + rng.below(12) {
        for w in 0..1 + rng.below(8) {
            if w > 0 {
                s.push(' ');
            }
            let w: &&str = rng.pick(WORDS);
            s.push_str(w);
        }
        s.push_str(if rng.chance(15) { "\r\n" } else { "\n" });
    }
    s
}

fn contents(rng: &mut Rng) -> Vec<u8> {
    match rng.below(20) {
        0 => b"needle\0binary\0data".to_vec(),
        1 => {
            let mut v = vec![0xFF, 0xFE];
            for u in text(rng).encode_utf16() {
                v.extend_from_slice(&u.to_le_bytes());
            }
            v
        }
        2 => b"caf\xe9 na\xefve \xe9l\xe8ve needle no\xebl fran\xe7ais alpha beta\n".to_vec(),
        3 => Vec::new(),
        // Over the index's per-file cap: always read directly.
        4 => text(rng).repeat(60).into_bytes(),
        _ => text(rng).into_bytes(),
    }
}

const FOLDERS: &[&str] = &["src", "src/deep", "docs", "a/b/c", "misc"];

struct World {
    dir: tempfile::TempDir,
    files: Vec<PathBuf>,
    rng: Rng,
    /// The folder that gets renamed (it starts as `a/b`).
    moving: String,
    /// Files written in the last round: patterns are often cut from them.
    recent: Vec<PathBuf>,
}

impl World {
    fn new(seed: u64) -> World {
        let dir = tempfile::tempdir().unwrap();
        let mut w = World {
            dir,
            files: Vec::new(),
            rng: Rng(seed),
            moving: "a/b".into(),
            recent: Vec::new(),
        };
        for f in FOLDERS {
            fs::create_dir_all(w.dir.path().join(f)).unwrap();
        }
        for i in 0..70 {
            let folder = *w.rng.pick(FOLDERS);
            let p = w.dir.path().join(folder).join(format!("f{i}.txt"));
            let c = contents(&mut w.rng);
            fs::write(&p, c).unwrap();
            w.files.push(p);
        }
        // Sensitive: listed by the index, never read.
        fs::write(w.dir.path().join("misc/id_rsa"), "needle alpha\n").unwrap();
        w
    }

    fn rel(&self, p: &Path) -> String {
        p.strip_prefix(self.dir.path())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string()
    }

    /// A folder that exists now.
    fn folder(&mut self) -> String {
        let f = *self.rng.pick(FOLDERS);
        match f.strip_prefix("a/b") {
            Some(rest) => format!("{}{rest}", self.moving),
            None => f.to_string(),
        }
    }

    /// Apply a few random edits; the paths the name index will report.
    fn edit(&mut self) -> Vec<String> {
        let mut touched = Vec::new();
        self.recent.clear();
        for _ in 0..1 + self.rng.below(5) {
            if self.files.is_empty() {
                break;
            }
            let i = self.rng.below(self.files.len());
            let p = self.files[i].clone();
            match self.rng.below(8) {
                0 => {
                    let folder = self.folder();
                    let n = self.rng.next() % 100_000;
                    let q = self.dir.path().join(folder).join(format!("new{n}.txt"));
                    if q.exists() {
                        continue;
                    }
                    fs::write(&q, contents(&mut self.rng)).unwrap();
                    touched.push(self.rel(&q));
                    self.recent.push(q.clone());
                    self.files.push(q);
                }
                1 => {
                    use std::io::Write;
                    let mut f = fs::OpenOptions::new().append(true).open(&p).unwrap();
                    f.write_all(text(&mut self.rng).as_bytes()).unwrap();
                    touched.push(self.rel(&p));
                    self.recent.push(p);
                }
                2 => {
                    // Rewritten keeping the size (and most likely the mtime
                    // second): only the watcher's report tells.
                    let old = fs::read(&p).unwrap();
                    let mut new = text(&mut self.rng).into_bytes();
                    new.resize(old.len(), b'z');
                    if new == old {
                        continue;
                    }
                    fs::write(&p, new).unwrap();
                    touched.push(self.rel(&p));
                    self.recent.push(p);
                }
                3 => {
                    fs::remove_file(&p).unwrap();
                    touched.push(self.rel(&p));
                    self.files.remove(i);
                }
                4 => {
                    let folder = self.folder();
                    let n = self.rng.next() % 100_000;
                    let q = self.dir.path().join(folder).join(format!("moved{n}.txt"));
                    if q.exists() {
                        continue;
                    }
                    fs::rename(&p, &q).unwrap();
                    touched.push(self.rel(&p));
                    touched.push(self.rel(&q));
                    self.files[i] = q;
                }
                5 => {
                    fs::write(&p, b"needle\0now binary").unwrap();
                    touched.push(self.rel(&p));
                }
                6 if touched.is_empty() => {
                    // A folder renamed (alone in its round, so that the other
                    // reports name the paths as they were): its files move.
                    let n = self.rng.next() % 100_000;
                    let from = self.dir.path().join(&self.moving);
                    let to_rel = format!("a/b{n}");
                    let to = self.dir.path().join(&to_rel);
                    if to.exists() {
                        continue;
                    }
                    fs::rename(&from, &to).unwrap();
                    touched.push(self.moving.clone());
                    touched.push(to_rel.clone());
                    for f in &mut self.files {
                        if let Ok(rest) = f.strip_prefix(&from) {
                            *f = to.join(rest);
                        }
                    }
                    self.moving = to_rel;
                    break;
                }
                _ => {
                    fs::write(&p, contents(&mut self.rng)).unwrap();
                    touched.push(self.rel(&p));
                    self.recent.push(p);
                }
            }
        }
        touched
    }

    /// A pattern that matches somewhere, more often than not.
    fn pattern(&mut self) -> Pattern {
        let rng = &mut self.rng;
        let mut p = Pattern::default();
        match rng.below(6) {
            0 | 1 => {
                // A piece of a file (often one just written): a literal
                // that is there.
                let f = if !self.recent.is_empty() && rng.chance(60) {
                    &self.recent[rng.below(self.recent.len())]
                } else {
                    &self.files[rng.below(self.files.len())]
                };
                let bytes = fs::read(f).unwrap_or_default();
                let s = String::from_utf8_lossy(&bytes).to_string();
                let chars: Vec<char> = s.chars().filter(|c| *c != '\n' && *c != '\r').collect();
                if chars.len() < 3 {
                    p.text = "needle".into();
                } else {
                    let len = 3 + rng.below(10).min(chars.len() - 3);
                    let start = rng.below(chars.len() - len + 1);
                    p.text = chars[start..start + len].iter().collect();
                }
                p.literal = true;
            }
            2 => {
                p.text = rng.pick(WORDS).to_string();
                p.literal = true;
            }
            3 => {
                p.text = rng
                    .pick(&[
                        r"handler_\d+",
                        r"(alpha|gamma) beta",
                        r"\w+_stack",
                        r"[A-Z]eedle",
                        r"^fn main",
                        r"main$",
                        r"caf.",
                        r"stra(ß|ss)e",
                        r"needle.*alpha",
                        r"(?i)kelvin",
                        r"r\dd\d",
                        r"\(paren\)",
                        r"日本",
                        r"zzz+",
                        r"yy\s+x",
                    ])
                    .to_string();
            }
            4 => {
                p.text = rng
                    .pick(&[r"alpha\nbeta", r"needle\s+\w+", r"main\r?\n"])
                    .to_string();
                p.multiline = true;
            }
            _ => {
                p.text = rng.pick(&["ab", ".", r"\w+", "x|y"]).to_string();
            }
        }
        p.case_insensitive = rng.chance(30);
        p.whole_word = rng.chance(20);
        p
    }
}

struct Served {
    roots: Arc<Roots>,
    index: Index,
    content: ContentIndex,
    feed: Receiver<Vec<String>>,
}

fn serve(dir: &Path) -> Served {
    let roots = Roots::open(&[dir.to_str().unwrap().parse().unwrap()], Policy::default()).unwrap();
    let root = &roots.roots()[0];
    let index = Index::open(IndexConfig::new(vec![IndexRoot {
        name: root.name.clone(),
        path: root.path.clone(),
        walk_path: root.handle_path(),
    }]))
    .unwrap();
    index.start();
    let roots = Arc::new(roots);
    let mut config = Config::new(None);
    config.budget.max_file_bytes = 2048;
    config.budget.max_total_bytes = 24 * 1024;
    config.budget.threads = 2;
    let content = ContentIndex::new(config, roots.clone(), index.clone());
    content.start();
    // Registered after the content index's: it hears every report first.
    let feed = index.touches();
    Served {
        roots,
        index,
        content,
        feed,
    }
}

impl Served {
    /// Wait until the name index has reported every path in `paths`.
    fn heard(&self, paths: Vec<String>) {
        let mut left: HashSet<String> = paths.into_iter().collect();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !left.is_empty() {
            let wait = deadline.saturating_duration_since(Instant::now());
            assert!(!wait.is_zero(), "the index never reported {left:?}");
            if let Ok(batch) = self.feed.recv_timeout(wait) {
                for p in batch {
                    left.remove(&p);
                }
            }
        }
    }

    fn caught_up(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.content.status().pending_files > 0 {
            assert!(
                Instant::now() < deadline,
                "the content index never caught up"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// What a grep returns, comparable: lines (path, number, text, context),
/// files, counts, total.
type Found = (
    Vec<(String, u64, String, bool)>,
    Vec<String>,
    Vec<(String, u64)>,
    u64,
);

fn result(o: &ferret_grep::Outcome) -> Found {
    (
        o.lines
            .iter()
            .map(|l| (l.path.clone(), l.line, l.text.clone(), l.context))
            .collect(),
        o.files.clone(),
        o.counts.iter().map(|c| (c.path.clone(), c.count)).collect(),
        o.total,
    )
}

/// Search both ways; the index was used (or why not).
fn compare(s: &Served, p: &Pattern, output: Output, context: usize) -> (bool, u64, u64) {
    let Ok(matcher) = compile(p) else {
        return (false, 0, 0);
    };
    let mut gathered = gather(&s.index, &s.roots, &whole_tree()).unwrap();
    gathered.newest_first();
    let full = grep_all(
        &s.roots,
        &matcher,
        p.multiline,
        &gathered.candidates,
        output,
        context,
    );
    let mut narrowed = ferret_grep::candidates::Gathered {
        candidates: gathered.candidates.clone(),
        from_walk: gathered.from_walk,
        caught_up: gathered.caught_up,
        walk_capped: gathered.walk_capped,
    };
    let n = narrow(Some(&s.content), p, &mut narrowed);
    let fast = grep_all(
        &s.roots,
        &matcher,
        p.multiline,
        &narrowed.candidates,
        output,
        context,
    );
    assert_eq!(
        result(&fast),
        result(&full),
        "pattern {p:?}, {output:?}: through the index ({n:?}) differs from a full scan"
    );
    assert!(fast.files_scanned <= full.files_scanned);
    (n.used, n.before, n.after)
}

fn run(seed: u64) -> (u64, u64, u64) {
    let mut world = World::new(seed);
    let s = serve(world.dir.path());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.content.is_ready() {
        assert!(Instant::now() < deadline, "the content index never built");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (mut used, mut narrowed, mut searches) = (0u64, 0u64, 0u64);
    let mut tally = |(u, b, a): (bool, u64, u64)| {
        searches += 1;
        used += u64::from(u);
        narrowed += u64::from(u && a < b);
    };
    for round in 0..14 {
        let touched = world.edit();
        if round % 2 == 1 {
            // A moment after the edits, before the watcher has reported
            // them: the search waits for it to apply what the kernel queued.
            for _ in 0..3 {
                let p = world.pattern();
                let output = *world
                    .rng
                    .pick(&[Output::Content, Output::Files, Output::Count]);
                tally(compare(&s, &p, output, 0));
            }
        }
        s.heard(touched);
        // At once: what changed is not read again yet.
        for _ in 0..6 {
            let p = world.pattern();
            let output = *world
                .rng
                .pick(&[Output::Content, Output::Files, Output::Count]);
            let context = if world.rng.chance(20) { 1 } else { 0 };
            tally(compare(&s, &p, output, context));
        }
        if round % 3 == 2 {
            s.caught_up();
            for _ in 0..4 {
                let p = world.pattern();
                tally(compare(&s, &p, Output::Content, 0));
            }
        }
    }
    s.content.shutdown();
    s.index.shutdown();
    (searches, used, narrowed)
}

#[test]
fn indexed_grep_equals_a_full_scan() {
    let (mut searches, mut used, mut narrowed) = (0, 0, 0);
    for seed in [0x9E37_79B9_7F4A_7C15, 0xD1B5_4A32_D192_ED03, 42] {
        let (s, u, n) = run(seed);
        searches += s;
        used += u;
        narrowed += n;
    }
    // The comparisons above are only worth something if the index narrowed
    // most searches (the others: patterns it cannot narrow, by design).
    eprintln!("{searches} searches, {used} through the index, {narrowed} narrowed");
    assert!(
        used * 2 > searches,
        "the index was used in {used} of {searches} searches"
    );
    assert!(
        narrowed * 3 > searches,
        "the index narrowed {narrowed} of {searches} searches"
    );
}
