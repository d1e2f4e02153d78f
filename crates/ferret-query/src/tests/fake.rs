//! A made-up index entry and helpers.

use std::borrow::Cow;
use std::cell::Cell;

use crate::{Clock, Entry, Kind, Options, Query};

/// Wednesday 2026-03-18 14:30:00 UTC; local time is UTC+1 (15:30).
pub const CLOCK: Clock = Clock {
    now_utc: 1_773_844_200,
    utc_offset_secs: 3600,
};

/// Unix seconds of a local (UTC+1) wall-clock time.
pub fn local(y: i32, m: u32, d: u32, h: u32, mi: u32, s: u32) -> i64 {
    chrono::NaiveDate::from_ymd_opt(y, m, d)
        .unwrap()
        .and_hms_opt(h, mi, s)
        .unwrap()
        .and_utc()
        .timestamp()
        - 3600
}

#[derive(Debug, Clone)]
pub struct FakeEntry {
    /// Relative path, `/`-separated; the name is its last component.
    pub path: Vec<u8>,
    pub kind: Kind,
    pub size: u64,
    pub modified: Option<i64>,
    pub created: Option<i64>,
    pub mode: u32,
    pub children: Vec<(Vec<u8>, Kind)>,
    /// How many times `rel_path` was called.
    pub path_calls: Cell<u32>,
}

impl FakeEntry {
    pub fn new(path: impl AsRef<[u8]>, kind: Kind) -> FakeEntry {
        FakeEntry {
            path: path.as_ref().to_vec(),
            kind,
            size: if kind == Kind::Dir { 0 } else { 100 },
            modified: Some(CLOCK.now_utc - 3600),
            created: None,
            mode: if kind == Kind::Dir { 0o755 } else { 0o644 },
            children: Vec::new(),
            path_calls: Cell::new(0),
        }
    }

    pub fn file(path: impl AsRef<[u8]>) -> FakeEntry {
        FakeEntry::new(path, Kind::File)
    }

    pub fn dir(path: impl AsRef<[u8]>) -> FakeEntry {
        FakeEntry::new(path, Kind::Dir)
    }

    pub fn symlink(path: impl AsRef<[u8]>) -> FakeEntry {
        let mut e = FakeEntry::new(path, Kind::Symlink);
        e.mode = 0o777;
        e
    }

    pub fn size(mut self, size: u64) -> Self {
        self.size = size;
        self
    }

    pub fn modified(mut self, t: Option<i64>) -> Self {
        self.modified = t;
        self
    }

    pub fn created(mut self, t: Option<i64>) -> Self {
        self.created = t;
        self
    }

    pub fn mode(mut self, mode: u32) -> Self {
        self.mode = mode;
        self
    }

    pub fn child(mut self, name: &str, kind: Kind) -> Self {
        self.children.push((name.as_bytes().to_vec(), kind));
        self
    }
}

impl Entry for FakeEntry {
    fn name(&self) -> &[u8] {
        match memchr::memrchr(b'/', &self.path) {
            Some(i) => &self.path[i + 1..],
            None => &self.path,
        }
    }

    fn rel_path(&self) -> Cow<'_, [u8]> {
        self.path_calls.set(self.path_calls.get() + 1);
        Cow::Borrowed(&self.path)
    }

    fn kind(&self) -> Kind {
        self.kind
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn modified(&self) -> Option<i64> {
        self.modified
    }

    fn created(&self) -> Option<i64> {
        self.created
    }

    fn mode(&self) -> u32 {
        self.mode
    }

    fn depth(&self) -> u32 {
        if self.path.is_empty() {
            0
        } else {
            self.path.iter().filter(|&&b| b == b'/').count() as u32 + 1
        }
    }

    fn for_each_child(&self, f: &mut dyn FnMut(&[u8], Kind) -> bool) {
        if self.kind != Kind::Dir {
            return;
        }
        for (name, kind) in &self.children {
            if !f(name, *kind) {
                return;
            }
        }
    }
}

/// Compiles with default options and [`CLOCK`], panicking with the rendered error.
pub fn q(query: &str) -> Query {
    q_with(query, &Options::default())
}

pub fn q_with(query: &str, options: &Options) -> Query {
    Query::compile(query, options, &CLOCK).unwrap_or_else(|e| panic!("{}", e.render(query)))
}

/// Whether `query` matches `entry`.
pub fn m(query: &str, entry: &FakeEntry) -> bool {
    q(query).matches(entry)
}

/// Asserts which of `paths` (files unless they end with `/`) `query` matches.
#[track_caller]
pub fn check(query: &str, yes: &[&str], no: &[&str]) {
    let compiled = q(query);
    let entry = |p: &str| match p.strip_suffix('/') {
        Some(d) => FakeEntry::dir(d),
        None => FakeEntry::file(p),
    };
    for p in yes {
        assert!(compiled.matches(&entry(p)), "`{query}` should match {p}");
    }
    for p in no {
        assert!(
            !compiled.matches(&entry(p)),
            "`{query}` should not match {p}"
        );
    }
}
