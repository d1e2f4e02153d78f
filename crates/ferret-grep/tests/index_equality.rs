//! Proof of equality: grep through the content index finds exactly what a full
//! scan finds. Random trees (text, binary, UTF-16, Latin-1, empty, sensitive,
//! files over the index's size cap and past its budget, and with documents
//! read, Word documents), random edits (create, in new folders too, append,
//! rewrite keeping the size, delete, rename files and folders, turn binary,
//! rewrite a document), random scopes (every file, a folder, `filter`,
//! `glob`) and random patterns (literals cut from the files, regexes,
//! case-insensitive, whole word, multi-line), each searched three ways (a
//! full scan; every file of the scope looked up in the content index,
//! `narrow`; the content index asked first and its answer looked up in the
//! name index, `gather_narrowed`) right after the edits (before the watcher
//! has reported them), the moment the name index has reported them (before
//! the content index has read them again), and again once it has.

use std::{
    collections::HashSet,
    fs,
    path::{Path, PathBuf},
    sync::{Arc, mpsc::Receiver},
    time::{Duration, Instant},
};

use ferret_content::{Config, ContentIndex};
use ferret_fs::{
    Policy, Roots,
    ferret_docs::{CacheConfig, Documents, Isolation, Limits},
};
use ferret_grep::{
    Output, Pattern, Scope, candidates::Globs, compile, gather, gather_narrowed, narrow,
};
use ferret_index::{Index, IndexConfig, IndexRoot};
use ferret_query::{Clock, Query};

mod common;
use common::{Rng, grep_all_with};

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

/// A Word document whose paragraphs are the lines of `text`.
fn docx(text: &str) -> Vec<u8> {
    use std::io::Write;
    let body: String = text
        .lines()
        .map(|l| {
            let l = l
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            format!("<w:p><w:r><w:t xml:space=\"preserve\">{l}</w:t></w:r></w:p>")
        })
        .collect();
    let document = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"><w:body>{body}</w:body></w:document>"
    );
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, content) in [
        (
            "[Content_Types].xml",
            "<?xml version=\"1.0\"?><Types/>".to_string(),
        ),
        ("word/document.xml", document),
    ] {
        w.start_file(name, options).unwrap();
        w.write_all(content.as_bytes()).unwrap();
    }
    w.finish().unwrap().into_inner()
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
    /// The roots read documents: some files are Word documents, searched
    /// as their text.
    documents: bool,
}

impl World {
    fn new(seed: u64, documents: bool) -> World {
        let dir = tempfile::tempdir().unwrap();
        let mut w = World {
            dir,
            files: Vec::new(),
            rng: Rng(seed),
            moving: "a/b".into(),
            recent: Vec::new(),
            documents,
        };
        for f in FOLDERS {
            fs::create_dir_all(w.dir.path().join(f)).unwrap();
        }
        for i in 0..70 {
            let folder = *w.rng.pick(FOLDERS);
            let (name, c) = w.file(i);
            let p = w.dir.path().join(folder).join(name);
            fs::write(&p, c).unwrap();
            w.files.push(p);
        }
        // Sensitive: listed by the index, never read.
        fs::write(w.dir.path().join("misc/id_rsa"), "needle alpha\n").unwrap();
        w
    }

    /// A new file's name and contents (a document, now and then, when the
    /// roots read them).
    fn file(&mut self, n: u64) -> (String, Vec<u8>) {
        if self.documents && self.rng.chance(15) {
            let t = text(&mut self.rng);
            (format!("d{n}.docx"), docx(&t))
        } else {
            (format!("f{n}.txt"), contents(&mut self.rng))
        }
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
        let before: HashSet<PathBuf> = self.files.iter().cloned().collect();
        for _ in 0..1 + self.rng.below(5) {
            if self.files.is_empty() {
                break;
            }
            let i = self.rng.below(self.files.len());
            let p = self.files[i].clone();
            match self.rng.below(8) {
                0 => {
                    // In a folder that exists, or in one made for it (a few
                    // levels deep now and then).
                    let n = self.rng.next() % 100_000;
                    let folder = if self.rng.chance(30) {
                        let fresh = if self.rng.chance(50) {
                            format!("new{n}")
                        } else {
                            format!("{}/new{n}/deeper", self.folder())
                        };
                        fs::create_dir_all(self.dir.path().join(&fresh)).unwrap();
                        fresh
                    } else {
                        self.folder()
                    };
                    let (name, c) = self.file(n);
                    let q = self.dir.path().join(folder).join(format!("new{name}"));
                    if q.exists() {
                        continue;
                    }
                    fs::write(&q, c).unwrap();
                    touched.push(self.rel(&q));
                    self.recent.push(q.clone());
                    self.files.push(q);
                }
                1 | 2 | 5 | 7 if p.extension().is_some_and(|e| e == "docx") => {
                    // A document rewritten (its text is what is searched).
                    fs::write(&p, docx(&text(&mut self.rng))).unwrap();
                    touched.push(self.rel(&p));
                    self.recent.push(p);
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
        // A file made and then moved or removed within the round may never
        // be reported (the watcher finds it gone): not waited for.
        touched.retain(|rel| {
            let p = self.dir.path().join(rel);
            p.exists() || before.contains(&p)
        });
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
                let bytes = if f.extension().is_some_and(|e| e == "docx") {
                    // A word of its text (the zip's bytes are not searched).
                    rng.pick(WORDS).as_bytes().to_vec()
                } else {
                    fs::read(f).unwrap_or_default()
                };
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
                        // Only in the windows-1252 file, decoded.
                        r"élève",
                        r"(?i)NOËL",
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

fn serve(dir: &Path, documents: bool) -> Served {
    let mut roots =
        Roots::open(&[dir.to_str().unwrap().parse().unwrap()], Policy::default()).unwrap();
    if documents {
        roots = roots.with_documents(Arc::new(Documents::new(
            Isolation::InProcess,
            Limits::default(),
            CacheConfig::default(),
        )));
    }
    let root = &roots.roots()[0];
    let index = Index::open(IndexConfig::new(vec![IndexRoot {
        name: root.name.clone(),
        path: root.path.clone(),
        walk_path: root.handle_path(),
    }]))
    .unwrap();
    index.start();
    let roots = Arc::new(roots);
    if documents {
        // The documents there at the start are extracted (by a grep) before
        // the content index reads them: it indexes their text, and answers
        // for them. Those written later are pending extraction (read
        // directly) until it reads them again.
        let scope = scope_of(None, "", &[]);
        let mut g = gather(&index, &roots, &scope).unwrap();
        g.newest_first();
        let m = compile(&Pattern {
            text: "needle".into(),
            ..Pattern::default()
        })
        .unwrap();
        let o = grep_all_with(&roots, &m, false, &g.candidates, Output::Files, 0, true);
        assert_eq!(o.skipped.unreadable, 0, "{:?}", o.skipped);
    }
    let mut config = Config::new(None);
    config.budget.max_file_bytes = 2048;
    config.budget.max_total_bytes = 24 * 1024;
    config.budget.threads = 2;
    // Files from 256 bytes get segment tables (segments of 4 to 32 bytes):
    // most patterns fit in them, some do not.
    config.budget.segment_from = 256;
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

/// A scope as the grep tool builds one.
fn scope_of<'a>(path: Option<&'a str>, filter: &str, globs: &[&str]) -> Scope<'a> {
    let globs: Vec<String> = globs.iter().map(|g| g.to_string()).collect();
    Scope {
        path,
        query: Query::compile(filter, &Default::default(), &Clock::system()).unwrap(),
        globs: Globs::new(&globs).unwrap(),
        stop: Default::default(),
    }
}

impl World {
    /// Every file, or a random part of them: a folder (the one that moves
    /// too), a `filter`, a `glob`, or both.
    fn scope(&mut self) -> (Option<String>, &'static str, &'static [&'static str]) {
        if self.rng.chance(50) {
            return (None, "", &[]);
        }
        let path = self.rng.chance(40).then(|| {
            let moving = self.moving.clone();
            self.rng
                .pick(&["src", "docs", "a", "misc", moving.as_str()])
                .to_string()
        });
        let filter = *self.rng.pick(&[
            "",
            "",
            "ext:txt",
            "!src/",
            "size:>100",
            "new",
            "ext:docx",
            "file: f1",
        ]);
        const GLOBS: &[&[&str]] = &[
            &[],
            &[],
            &["*.txt"],
            &["src/**"],
            &["new*", "*.docx"],
            &["**/deep/*"],
        ];
        (path, filter, *self.rng.pick(GLOBS))
    }
}

/// How the content index took part in the searches of a run.
#[derive(Default, Debug)]
struct Tally {
    searches: u64,
    /// `narrow` used the index, and left files out.
    used: u64,
    narrowed: u64,
    /// The index named the files itself (`gather_narrowed`, not listed).
    answered: u64,
    /// Large files read first where a match can be, and left out because
    /// no match fits where their trigrams are.
    windowed: u64,
    apart: u64,
}

/// Search three ways, with the same scope: a full scan, every file of the
/// scope looked up in the content index (`narrow`), and the content index
/// asked first (`gather_narrowed`); both must find what the scan finds.
fn compare(
    s: &Served,
    p: &Pattern,
    output: Output,
    context: usize,
    scope: (Option<&str>, &str, &[&str]),
    documents: bool,
    tally: &mut Tally,
) {
    let Ok(matcher) = compile(p) else {
        return;
    };
    let scope = scope_of(scope.0, scope.1, scope.2);
    let grep = |candidates: &[ferret_grep::Candidate]| {
        grep_all_with(
            &s.roots,
            &matcher,
            p.multiline,
            candidates,
            output,
            context,
            documents,
        )
    };
    let mut gathered = gather(&s.index, &s.roots, &scope).unwrap();
    gathered.newest_first();
    let full = grep(&gathered.candidates);
    let mut listed = ferret_grep::candidates::Gathered {
        candidates: gathered.candidates.clone(),
        from_walk: gathered.from_walk,
        caught_up: gathered.caught_up,
        unheard: gathered.unheard.clone(),
        walk_capped: gathered.walk_capped,
        named_file: gathered.named_file,
    };
    let n = narrow(Some(&s.content), p, &mut listed);
    let fast = grep(&listed.candidates);
    assert_eq!(
        result(&fast),
        result(&full),
        "pattern {p:?}, {output:?}, scope {:?} {:?}: through the index ({n:?}) differs from a full scan",
        scope.path,
        scope.query,
    );
    assert!(fast.files_scanned <= full.files_scanned);
    let (asked, a) = gather_narrowed(&s.index, &s.roots, Some(&s.content), &scope, p).unwrap();
    let first = grep(&asked.candidates);
    if result(&first) != result(&full) {
        let files = |o: &ferret_grep::Outcome| -> std::collections::BTreeSet<String> {
            o.files
                .iter()
                .cloned()
                .chain(o.lines.iter().map(|l| l.path.clone()))
                .chain(o.counts.iter().map(|c| c.path.clone()))
                .collect()
        };
        let (got, want) = (files(&first), files(&full));
        let only_full: Vec<_> = want.difference(&got).collect();
        let only_first: Vec<_> = got.difference(&want).collect();
        let windows: Vec<_> = asked
            .candidates
            .iter()
            .filter(|c| !c.windows.is_empty())
            .map(|c| (c.path.clone(), c.size, c.windows.clone()))
            .collect();
        panic!(
            "pattern {p:?}, {output:?}, scope {:?} {:?}: the content index asked first ({a:?}) differs from a full scan: only in the scan {only_full:?}, only asked first {only_first:?}; windows {windows:?}",
            scope.path, scope.query,
        );
    }
    assert!(first.files_scanned <= full.files_scanned);
    if a.used {
        // Binary files left out are counted as grep would have.
        assert_eq!(
            first.skipped.binary + a.binary,
            full.skipped.binary,
            "pattern {p:?}, scope {:?} {:?}: binary files ({a:?})",
            scope.path,
            scope.query,
        );
    }
    tally.searches += 1;
    tally.used += u64::from(n.used);
    tally.narrowed += u64::from(n.used && n.after < n.before);
    tally.answered += u64::from(a.used && !a.listed);
    tally.windowed += a.windowed;
    tally.apart += a.apart;
}

fn run(seed: u64, documents: bool) -> Tally {
    let mut world = World::new(seed, documents);
    let s = serve(world.dir.path(), documents);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.content.is_ready() {
        assert!(Instant::now() < deadline, "the content index never built");
        std::thread::sleep(Duration::from_millis(10));
    }
    if documents {
        // The documents there at the start are answered for by their text.
        let status = s.content.status();
        assert!(
            !status.not_indexed.contains_key("document_pending"),
            "{status:?}"
        );
    }
    let mut tally = Tally::default();
    let mut search = |world: &mut World, output: Output, context: usize| {
        let p = world.pattern();
        let (path, filter, globs) = world.scope();
        compare(
            &s,
            &p,
            output,
            context,
            (path.as_deref(), filter, globs),
            documents,
            &mut tally,
        );
    };
    for round in 0..14 {
        let touched = world.edit();
        if round % 2 == 1 {
            // A moment after the edits, before the watcher has reported
            // them: the search waits for it to apply what the kernel queued.
            for _ in 0..3 {
                let output = *world
                    .rng
                    .pick(&[Output::Content, Output::Files, Output::Count]);
                search(&mut world, output, 0);
            }
        }
        s.heard(touched);
        // At once: what changed is not read again yet.
        for _ in 0..6 {
            let output = *world
                .rng
                .pick(&[Output::Content, Output::Files, Output::Count]);
            let context = if world.rng.chance(20) { 1 } else { 0 };
            search(&mut world, output, context);
        }
        if round % 3 == 2 {
            s.caught_up();
            for _ in 0..4 {
                search(&mut world, Output::Content, 0);
            }
        }
    }
    s.content.shutdown();
    s.index.shutdown();
    tally
}

#[test]
fn indexed_grep_equals_a_full_scan() {
    let mut all = Tally::default();
    for (seed, documents) in [
        (0x9E37_79B9_7F4A_7C15, false),
        (0xD1B5_4A32_D192_ED03, true),
        (42, false),
        (7, true),
    ] {
        let t = run(seed, documents);
        all.searches += t.searches;
        all.used += t.used;
        all.narrowed += t.narrowed;
        all.answered += t.answered;
        all.windowed += t.windowed;
        all.apart += t.apart;
    }
    // The comparisons above are only worth something if the index narrowed
    // most searches (the others: patterns it cannot narrow, by design) and
    // named the files itself in many.
    eprintln!("{all:?}");
    assert!(
        all.used * 2 > all.searches,
        "the index was used in {} of {} searches",
        all.used,
        all.searches
    );
    assert!(
        all.narrowed * 3 > all.searches,
        "the index narrowed {} of {} searches",
        all.narrowed,
        all.searches
    );
    assert!(
        all.answered * 3 > all.searches,
        "the index named the files itself in {} of {} searches",
        all.answered,
        all.searches
    );
    // The segments of large files were used both ways, many times.
    assert!(
        all.windowed > 100 && all.apart > 20,
        "{} files read in windows, {} left out by their segments",
        all.windowed,
        all.apart
    );
}
