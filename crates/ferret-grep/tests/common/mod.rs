//! What the integration tests share.

use std::sync::atomic::AtomicBool;

use ferret_fs::Roots;
use ferret_grep::{Candidate, Options, Outcome, Output, Scope, grep};
use ferret_query::{Clock, Query};

/// Every file of every root, as a grep without `path` or `filter` asks.
#[allow(dead_code, reason = "each test binary uses its own part")]
pub fn whole_tree() -> Scope<'static> {
    Scope {
        path: None,
        query: Query::compile("", &Default::default(), &Clock::system()).unwrap(),
        globs: Default::default(),
        stop: Default::default(),
    }
}

/// Grep `candidates` with no limit that could cut the answer short.
#[allow(dead_code, reason = "each test binary uses its own part")]
pub fn grep_all(
    roots: &Roots,
    matcher: &grep_regex::RegexMatcher,
    multiline: bool,
    candidates: &[Candidate],
    output: Output,
    context: usize,
) -> Outcome {
    grep_all_with(
        roots, matcher, multiline, candidates, output, context, false,
    )
}

/// [`grep_all`], searching documents as their text (`documents`) or not.
pub fn grep_all_with(
    roots: &Roots,
    matcher: &grep_regex::RegexMatcher,
    multiline: bool,
    candidates: &[Candidate],
    output: Output,
    context: usize,
    documents: bool,
) -> Outcome {
    let options = Options {
        output,
        before: context,
        after: context,
        limit: 100_000,
        max_output_bytes: usize::MAX,
        threads: 2,
        documents,
        ..Options::default()
    };
    grep(
        roots,
        matcher,
        multiline,
        candidates,
        &options,
        &AtomicBool::new(false),
        None,
    )
}

/// xorshift: the same run every time for a seed.
pub struct Rng(pub u64);

#[allow(dead_code, reason = "each test binary uses its own part")]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}
