//! Every served file's outline, kept by the file's modification time and size:
//! a caller lists the source files as its index sees them now, the table reads
//! again only those that changed (in parallel, each thread with its own
//! [`Extractor`]) and forgets those that are gone, then answers names.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use crate::{
    extract::{Extractor, Kind, Limits, Skip, Symbol},
    find::{NameQuery, Tier, fold, matcher},
    lang::Lang,
};

/// A source file as the caller's index sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Its path, as shown to agents.
    pub path: String,
    /// Its modification time (Unix seconds).
    pub mtime: i64,
    /// Its size in bytes.
    pub size: u64,
}

enum State {
    Read(Vec<(Symbol, String)>, bool),
    Skipped(Skip),
    Unreadable,
}

struct File {
    mtime: i64,
    size: u64,
    /// When it was read (Unix seconds).
    read_at: i64,
    state: State,
}

/// Modification times are whole seconds: a file read in the second it was
/// written may be written again in that second with the same size, so it
/// is read again until a read happens at least this long after its time.
const SAME_SECOND_SLACK: i64 = 2;

/// What one [`Table::refresh`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refreshed {
    /// Files read and parsed (new or changed).
    pub read: usize,
    /// Files forgotten (no longer listed).
    pub removed: usize,
}

/// How many files and symbols the table holds, and why some have none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Files listed.
    pub files: usize,
    /// Symbols in them.
    pub symbols: usize,
    /// Files larger than the bound, not parsed.
    pub too_large: usize,
    /// Files whose parse ran out of time.
    pub timed_out: usize,
    /// Files the reader could not give (sensitive, binary, gone, refused).
    pub unreadable: usize,
    /// Files parsed with errors (what could be read is kept).
    pub with_errors: usize,
}

/// A symbol found by [`Table::search`].
#[derive(Debug, Clone, Copy)]
pub struct Hit<'a> {
    /// The file it is in.
    pub path: &'a str,
    /// The definition.
    pub symbol: &'a Symbol,
    /// How its name matched.
    pub tier: Tier,
}

/// What [`Table::search`] found.
#[derive(Debug, Clone)]
pub struct Found<'a> {
    /// The page asked for, best first.
    pub hits: Vec<Hit<'a>>,
    /// How many matched in all.
    pub total: usize,
}

/// Outlines of many files.
pub struct Table {
    limits: Limits,
    files: HashMap<String, File>,
}

impl Table {
    /// An empty table whose files are extracted within `limits`.
    pub fn new(limits: Limits) -> Table {
        Table {
            limits,
            files: HashMap::new(),
        }
    }

    /// Make the table hold exactly `sources`: files not listed are forgotten,
    /// files new or changed (another modification time or size) are given by
    /// `read` (its `None`: not to be read, e.g. sensitive or binary) and
    /// parsed on up to `threads` threads. `now` is the time (Unix seconds).
    pub fn refresh<R>(&mut self, sources: &[Source], now: i64, threads: usize, read: R) -> Refreshed
    where
        R: Fn(&str) -> Option<Vec<u8>> + Sync,
    {
        let listed: HashSet<&str> = sources.iter().map(|s| s.path.as_str()).collect();
        let before = self.files.len();
        self.files.retain(|p, _| listed.contains(p.as_str()));
        let removed = before - self.files.len();
        let stale: Vec<&Source> = sources
            .iter()
            .filter(|s| Lang::of_path(&s.path).is_some())
            .filter(|s| {
                self.files.get(&s.path).is_none_or(|f| {
                    f.mtime != s.mtime
                        || f.size != s.size
                        || f.read_at < f.mtime + SAME_SECOND_SLACK
                })
            })
            .collect();
        if stale.is_empty() {
            return Refreshed { read: 0, removed };
        }
        let next = AtomicUsize::new(0);
        let done = Mutex::new(Vec::with_capacity(stale.len()));
        let limits = self.limits;
        let threads = threads.clamp(1, 16).min(stale.len());
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    let mut extractor = Extractor::new(limits);
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(source) = stale.get(i) else { break };
                        let lang = Lang::of_path(&source.path).expect("filtered above");
                        let state = match read(&source.path) {
                            None => State::Unreadable,
                            Some(bytes) => match extractor.extract(lang, &bytes) {
                                Ok(outline) => State::Read(
                                    outline
                                        .symbols
                                        .into_iter()
                                        .map(|s| {
                                            let f = fold(&s.name);
                                            (s, f)
                                        })
                                        .collect(),
                                    outline.had_errors,
                                ),
                                Err(skip) => State::Skipped(skip),
                            },
                        };
                        mine.push((i, state));
                    }
                    done.lock().expect("no panics hold it").extend(mine);
                });
            }
        });
        let done = done.into_inner().expect("no panics hold it");
        let read = done.len();
        for (i, state) in done {
            let s = stale[i];
            self.files.insert(
                s.path.clone(),
                File {
                    mtime: s.mtime,
                    size: s.size,
                    read_at: now,
                    state,
                },
            );
        }
        Refreshed { read, removed }
    }

    /// What the table holds.
    pub fn stats(&self) -> Stats {
        let mut st = Stats {
            files: self.files.len(),
            ..Stats::default()
        };
        for f in self.files.values() {
            match &f.state {
                State::Read(symbols, errors) => {
                    st.symbols += symbols.len();
                    st.with_errors += usize::from(*errors);
                }
                State::Skipped(Skip::TooLarge) => st.too_large += 1,
                State::Skipped(Skip::TimedOut) => st.timed_out += 1,
                State::Unreadable => st.unreadable += 1,
            }
        }
        st
    }

    /// The symbols whose name matches `query` (and its container, when it
    /// names one) among those `keep` accepts, best first: by how the name
    /// matched (exact, then folded, a start, a part, fuzzy), then types
    /// before functions before the rest, then shallower paths, then by path
    /// and line. Fuzzy matching runs only when the plainer tiers do not fill
    /// the page.
    pub fn search<'a>(
        &'a self,
        query: &NameQuery,
        keep: impl Fn(&str, &Symbol) -> bool,
        offset: usize,
        limit: usize,
    ) -> Found<'a> {
        let mut plain = Vec::new();
        let mut rest = Vec::new();
        for (path, file) in &self.files {
            let State::Read(symbols, _) = &file.state else {
                continue;
            };
            for (symbol, folded) in symbols {
                if !query.container_fits(symbol.container.as_deref()) {
                    continue;
                }
                match query.plain_tier(&symbol.name, folded) {
                    Some(tier) => {
                        if keep(path, symbol) {
                            plain.push((tier, 0u16, path.as_str(), symbol));
                        }
                    }
                    None => rest.push((path.as_str(), symbol, folded.as_str())),
                }
            }
        }
        let mut all = plain;
        if all.len() < offset + limit {
            let mut m = matcher();
            let mut buf = Vec::new();
            for (path, symbol, folded) in rest {
                let tier = match query.fuzzy(folded, &mut m, &mut buf) {
                    Some(score) => Some((Tier::Fuzzy, score)),
                    None => query
                        .typo(folded)
                        .map(|d| (Tier::Typo, u16::MAX - d as u16)),
                };
                if let Some((tier, score)) = tier
                    && keep(path, symbol)
                {
                    all.push((tier, score, path, symbol));
                }
            }
        }
        let total = all.len();
        all.sort_by_cached_key(|&(tier, score, path, symbol)| {
            (
                tier,
                std::cmp::Reverse(score),
                is_test(path, symbol),
                kind_rank(symbol.kind),
                !is_home(path, &symbol.name),
                path.matches('/').count(),
                path,
                symbol.line,
            )
        });
        let hits = all
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(tier, _, path, symbol)| Hit { path, symbol, tier })
            .collect();
        Found { hits, total }
    }
}

/// Test code (a test folder or file, or a `tests` module) ranks after the
/// code it tests: a name defined in both is most often wanted where it lives.
fn is_test(path: &str, symbol: &Symbol) -> bool {
    const FOLDERS: [&str; 7] = [
        "test",
        "tests",
        "__tests__",
        "testing",
        "spec",
        "benches",
        "examples",
    ];
    let mut parts = path.rsplit('/');
    let name = parts.next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    parts.any(|p| FOLDERS.contains(&p))
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || name.contains(".test.")
        || name.contains(".spec.")
        || symbol
            .container
            .as_deref()
            .is_some_and(|c| c == "tests" || c == "test")
}

/// A definition in the file named after it (`State` in `state.rs`,
/// `ZodString` in `ZodString.ts`) ranks first among its equals.
fn is_home(path: &str, name: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file);
    !stem.is_empty() && crate::fold(stem) == crate::fold(name)
}

fn kind_rank(kind: Kind) -> u8 {
    match kind {
        Kind::Class | Kind::Struct | Kind::Enum | Kind::Interface | Kind::Trait | Kind::Type => 0,
        Kind::Function | Kind::Method => 1,
        Kind::Module => 2,
        Kind::Macro | Kind::Constant => 3,
        Kind::Variable => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(path: &str, mtime: i64) -> Source {
        Source {
            path: path.into(),
            mtime,
            size: 1,
        }
    }

    #[test]
    fn only_changed_files_are_read_again_and_gone_ones_are_forgotten() {
        let mut table = Table::new(Limits::default());
        let reads = Mutex::new(Vec::new());
        let read = |p: &str| {
            reads.lock().unwrap().push(p.to_string());
            Some(match p {
                "a.rs" => b"fn alpha() {}\nstruct Beta;\n".to_vec(),
                "b.py" => b"def gamma():\n    pass\n".to_vec(),
                _ => b"fn other() {}".to_vec(),
            })
        };
        let r = table.refresh(
            &[src("a.rs", 1), src("b.py", 1), src("c.txt", 1)],
            100,
            2,
            read,
        );
        assert_eq!(
            r,
            Refreshed {
                read: 2,
                removed: 0
            }
        );
        assert_eq!(table.stats().symbols, 3);
        reads.lock().unwrap().clear();
        let r = table.refresh(&[src("a.rs", 1), src("b.py", 2)], 100, 2, read);
        assert_eq!(
            r,
            Refreshed {
                read: 1,
                removed: 0
            }
        );
        assert_eq!(*reads.lock().unwrap(), vec!["b.py".to_string()]);
        let r = table.refresh(&[src("a.rs", 1)], 100, 2, read);
        assert_eq!(r.removed, 1);
        let q = NameQuery::new("gamma");
        assert_eq!(table.search(&q, |_, _| true, 0, 10).total, 0);
    }

    #[test]
    fn exact_names_come_first_then_folded_then_parts_then_fuzzy() {
        let mut table = Table::new(Limits::default());
        let files: HashMap<&str, &str> = [
            (
                "deep/er/x.rs",
                "fn parse_query() {}\nfn parse_query_fast() {}\n",
            ),
            ("y.rs", "fn ParseQuery() {}\nfn reparse_query() {}\n"),
            (
                "z.rs",
                "fn pars_e_quxery() {}\nfn unrelated() {}\nfn prase_query() {}\n",
            ),
        ]
        .into_iter()
        .collect();
        let sources: Vec<Source> = files.keys().map(|p| src(p, 1)).collect();
        table.refresh(&sources, 100, 1, |p| Some(files[p].as_bytes().to_vec()));
        let q = NameQuery::new("parse_query");
        let found = table.search(&q, |_, _| true, 0, 10);
        let names: Vec<(&str, Tier)> = found
            .hits
            .iter()
            .map(|h| (h.symbol.name.as_str(), h.tier))
            .collect();
        assert_eq!(
            names,
            vec![
                ("parse_query", Tier::Exact),
                ("ParseQuery", Tier::Folded),
                ("parse_query_fast", Tier::Prefix),
                ("reparse_query", Tier::Part),
                ("pars_e_quxery", Tier::Fuzzy),
                ("prase_query", Tier::Typo),
            ]
        );
        // A page past the plain matches.
        let page = table.search(&q, |_, _| true, 4, 10);
        assert_eq!(page.hits.len(), 2);
        // The caller's filter is applied.
        let only_y = table.search(&q, |p, _| p == "y.rs", 0, 10);
        assert!(only_y.hits.iter().all(|h| h.path == "y.rs"));
    }

    #[test]
    fn among_equal_names_code_comes_before_its_tests_and_its_own_file_first() {
        let mut table = Table::new(Limits::default());
        let files: HashMap<&str, &str> = [
            ("a/tests/io.rs", "struct State;\n"),
            (
                "a/src/fs/file.rs",
                "enum State { A }\nmod tests { struct State; }\n",
            ),
            ("a/src/runtime/task/state.rs", "struct State;\n"),
            ("a/web/state.test.ts", "class State {}\n"),
        ]
        .into_iter()
        .collect();
        let sources: Vec<Source> = files.keys().map(|p| src(p, 1)).collect();
        table.refresh(&sources, 100, 1, |p| Some(files[p].as_bytes().to_vec()));
        let found = table.search(&NameQuery::new("State"), |_, _| true, 0, 10);
        let order: Vec<(&str, Option<&str>)> = found
            .hits
            .iter()
            .map(|h| (h.path, h.symbol.container.as_deref()))
            .collect();
        assert_eq!(
            order,
            vec![
                ("a/src/runtime/task/state.rs", None),
                ("a/src/fs/file.rs", None),
                // Among tests, the same rules: its own file first.
                ("a/web/state.test.ts", None),
                ("a/tests/io.rs", None),
                ("a/src/fs/file.rs", Some("tests")),
            ]
        );
    }

    #[test]
    fn unreadable_files_are_counted_and_not_read_again_until_they_change() {
        let mut table = Table::new(Limits::default());
        table.refresh(&[src("secret.rs", 1)], 100, 1, |_| None);
        assert_eq!(table.stats().unreadable, 1);
        let r = table.refresh(&[src("secret.rs", 1)], 100, 1, |_| panic!("not read again"));
        assert_eq!(r.read, 0);
    }

    #[test]
    fn a_file_read_in_the_second_it_was_written_is_read_again() {
        let mut table = Table::new(Limits::default());
        let r = table.refresh(&[src("a.rs", 50)], 50, 1, |_| Some(b"fn a() {}".to_vec()));
        assert_eq!(r.read, 1);
        // Same time and size, but it may have changed within that second.
        let r = table.refresh(&[src("a.rs", 50)], 51, 1, |_| Some(b"fn b() {}".to_vec()));
        assert_eq!(r.read, 1);
        let r = table.refresh(&[src("a.rs", 50)], 53, 1, |_| Some(b"fn c() {}".to_vec()));
        assert_eq!(r.read, 1);
        let r = table.refresh(&[src("a.rs", 50)], 54, 1, |_| panic!("settled"));
        assert_eq!(r.read, 0);
        let q = NameQuery::new("c");
        assert_eq!(table.search(&q, |_, _| true, 0, 10).total, 1);
    }
}
