//! Which files to search: the live index answers the `filter` query (ANDed with
//! `exclude`, `path` and `file:`), newest first; folders whose modification time
//! moved since the index last saw them are listed again through the root handle,
//! so a file created a millisecond ago (before the watcher applied it) is found.

use std::borrow::Cow;

use ferret_fs::{ErrorCode, FsError, KindFilter, ListRequest, Roots, Target};
use ferret_index::{EntryId, Index, SearchRequest, SortKey, Stop};
use ferret_query::{Clock, Entry, Kind, Options as QueryOptions, Query};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A file to search, as shown to agents, with its modification time (Unix s)
/// and size as the index (or a listing) last saw them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub path: String,
    pub mtime: i64,
    pub size: u64,
    /// Where a match can be, from the content index's segments of a large
    /// file (`ferret_content::Hit::windows`), for the file at this size:
    /// when none of these byte ranges holds a match, the file holds none
    /// and is not read whole. Empty: read it.
    pub windows: Vec<(u64, u64)>,
}

impl Candidate {
    /// A file to read whole.
    pub fn new(path: String, mtime: i64, size: u64) -> Candidate {
        Candidate {
            path,
            mtime,
            size,
            windows: Vec::new(),
        }
    }
}

/// `glob` patterns: a pattern with `/` matches the path below the root, one
/// without matches the file name. As in ripgrep, a pattern starting with
/// `!` excludes what it matches; a file is kept when it matches a pattern
/// that includes (or none is given) and none that excludes. A pattern may
/// list several, split at commas outside braces (`*.rs,*.md`).
#[derive(Debug, Clone, Default)]
pub struct Globs {
    include: GlobSide,
    exclude: GlobSide,
}

/// One side of [`Globs`]: its patterns with `/` and without.
#[derive(Debug, Clone, Default)]
struct GlobSide {
    by_path: Option<GlobSet>,
    by_name: Option<GlobSet>,
}

impl GlobSide {
    fn new(patterns: &[&str]) -> Result<GlobSide, String> {
        let mut path = GlobSetBuilder::new();
        let mut name = GlobSetBuilder::new();
        let (mut np, mut nn) = (0, 0);
        for p in patterns {
            let has_slash = p.contains('/');
            let glob = GlobBuilder::new(p)
                .literal_separator(has_slash)
                .build()
                .map_err(|e| format!("glob `{p}` is invalid: {}", e.kind()))?;
            if has_slash {
                path.add(glob);
                np += 1;
            } else {
                name.add(glob);
                nn += 1;
            }
        }
        let build = |b: GlobSetBuilder, n: usize| -> Result<Option<GlobSet>, String> {
            if n == 0 {
                Ok(None)
            } else {
                b.build().map(Some).map_err(|e| e.to_string())
            }
        };
        Ok(GlobSide {
            by_path: build(path, np)?,
            by_name: build(name, nn)?,
        })
    }

    fn is_empty(&self) -> bool {
        self.by_path.is_none() && self.by_name.is_none()
    }

    fn matches(&self, rel: &str, name: &str) -> bool {
        self.by_name.as_ref().is_some_and(|g| g.is_match(name))
            || self
                .by_path
                .as_ref()
                .is_some_and(|g| g.is_match(rel) || g.is_match(format!("/{rel}")))
    }
}

/// `text` split at commas outside braces (`{a,b}` is one glob's choice).
pub(crate) fn split_at_commas(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

impl Globs {
    pub fn new(patterns: &[String]) -> Result<Globs, String> {
        let (mut include, mut exclude) = (Vec::new(), Vec::new());
        for p in patterns.iter().flat_map(|p| split_at_commas(p)) {
            let p = p.trim();
            let (side, p) = match p.strip_prefix('!') {
                Some(rest) => (&mut exclude, rest.trim_start()),
                None => (&mut include, p),
            };
            let p = p.trim_start_matches("./");
            if p.is_empty() {
                continue;
            }
            side.push(p);
        }
        Ok(Globs {
            include: GlobSide::new(&include)?,
            exclude: GlobSide::new(&exclude)?,
        })
    }

    fn is_empty(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty()
    }

    /// `rel` is the path below its root.
    pub fn matches(&self, rel: &str) -> bool {
        if self.is_empty() {
            return true;
        }
        let name = rel.rsplit('/').next().unwrap_or(rel);
        (self.include.is_empty() || self.include.matches(rel, name))
            && !self.exclude.matches(rel, name)
    }
}

/// Where to look.
pub struct Scope<'a> {
    /// A folder or a file (as an agent typed it); `None`: every root.
    pub path: Option<&'a str>,
    /// The `filter` query with `exclude` terms already ANDed in.
    pub query: Query,
    pub globs: Globs,
    /// The grep's cancel flag and deadline: gathering stops with them too.
    pub stop: Stop<'a>,
}

/// Gathering was stopped: cancelled, or the grep's time ran out before any
/// file was searched.
fn stopped(stop: &Stop) -> FsError {
    if stop.flagged() {
        FsError::new(ErrorCode::Cancelled, "the search was cancelled")
            .hint("run it again if you still need it")
    } else {
        FsError::new(
            ErrorCode::Timeout,
            "the time ran out while choosing which files to search, before any was searched",
        )
        .hint("narrow `filter`, `path` or `glob`, or give more `timeout_ms`")
    }
}

/// The candidates, in no order until [`Gathered::newest_first`].
#[derive(Debug, Default)]
pub struct Gathered {
    pub candidates: Vec<Candidate>,
    /// Candidates found by listing folders the index had not caught up with.
    pub from_walk: u64,
    /// The index was known to hold every change made before the call (its
    /// watcher hears every folder and its barrier was passed), so it alone
    /// named the candidates; otherwise changed folders were listed too.
    pub caught_up: bool,
    /// Not `caught_up` only because of these folders of the scope (as
    /// agents see them), which the watcher cannot hear (on a network or
    /// FUSE file system, or reached at two paths: a bind mount): it hears
    /// every other folder and its barrier was passed. The changed folders
    /// among them were listed; the content index judges the files outside
    /// them, and those inside are read whatever it holds.
    pub unheard: Vec<String>,
    /// A folder the index does not hold was listed, and the listing stopped
    /// at the list limit (`max_walk_entries` files): files past it are not
    /// among the candidates.
    pub walk_capped: bool,
    /// `path` named this one file: the agent asked for it, whatever its
    /// size (see [`Options::max_file_bytes`](crate::Options)).
    pub named_file: bool,
}

/// How long the first build of the index is waited for.
const FIRST_BUILD_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// A folder modified this recently is listed again even when the index saw the
/// same second (the index keeps whole seconds).
const SAME_SECOND_SLACK: i64 = 2;

pub fn gather(index: &Index, roots: &Roots, scope: &Scope) -> Result<Gathered, FsError> {
    match begin(index, roots, scope)? {
        Begun::One(gathered) => Ok(gathered),
        Begun::Folder {
            query,
            under,
            heard,
            ..
        } => from_index(index, roots, scope, &query, under, heard),
        Begun::Unindexed { query, folder } => Ok(walked(roots, scope, &query, &folder)),
    }
}

/// How much of a scope the index vouches for, its barrier passed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Heard {
    /// Every change made before the call (`Gathered::caught_up`).
    All,
    /// Every change but in these folders of the scope
    /// (`Gathered::unheard`).
    AllBut(Vec<String>),
    /// None: it may be behind anywhere.
    Nothing,
}

impl Heard {
    /// What the index vouches for in every root, its barrier passed.
    fn of(index: &Index) -> Heard {
        match index.caught_up_but(ferret_index::CATCH_UP_WAIT) {
            None => Heard::Nothing,
            Some(unheard) if unheard.is_empty() => Heard::All,
            Some(unheard) => Heard::AllBut(unheard),
        }
    }

    /// What it vouches for within the scope `shown` (a folder or a file as
    /// agents see it): the unheard folders that overlap it.
    fn within_scope(self, shown: &str) -> Heard {
        match self {
            Heard::AllBut(folders) => {
                let inside: Vec<String> = folders
                    .into_iter()
                    .filter(|u| within(shown, u) || within(u, shown))
                    .collect();
                if inside.is_empty() {
                    Heard::All
                } else {
                    Heard::AllBut(inside)
                }
            }
            other => other,
        }
    }

    fn caught_up(&self) -> bool {
        *self == Heard::All
    }

    fn unheard(&self) -> Vec<String> {
        match self {
            Heard::AllBut(folders) => folders.clone(),
            _ => Vec::new(),
        }
    }
}

/// Whether the shown path `path` is `folder` or lies below it (`.` is a
/// single root's whole tree).
fn within(path: &str, folder: &str) -> bool {
    folder == "."
        || path
            .strip_prefix(folder)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether `path` lies in one of `folders` (see [`within`]).
fn within_any(path: &str, folders: &[String]) -> bool {
    folders.iter().any(|f| within(path, f))
}

/// What the scope is, once the index is ready and its barrier passed.
enum Begun {
    /// `path` names one file: searched as asked, whatever the filter says.
    One(Gathered),
    /// Every root (`under: None`), or a folder the index holds (`shown`).
    Folder {
        query: Query,
        under: Option<EntryId>,
        shown: Option<String>,
        heard: Heard,
    },
    /// A folder the index does not hold (hidden or ignored, or the index is
    /// still empty): listed.
    Unindexed { query: Query, folder: String },
}

fn begin(index: &Index, roots: &Roots, scope: &Scope) -> Result<Begun, FsError> {
    let waiting = std::time::Instant::now();
    while !index.wait_ready(std::time::Duration::from_millis(50))
        && waiting.elapsed() < FIRST_BUILD_WAIT
    {
        if scope.stop.is_set() {
            return Err(stopped(&scope.stop));
        }
    }
    // The barrier comes before the index is read: every change completed
    // before this call is then in it, new folders read to the bottom.
    let heard = Heard::of(index);
    let clock = Clock::system();
    let files =
        Query::compile("file:", &QueryOptions::default(), &clock).expect("`file:` compiles");
    let query = scope.query.clone().and(files);
    let Some(path) = scope.path.filter(|p| !p.trim().is_empty()) else {
        return Ok(Begun::Folder {
            query,
            under: None,
            shown: None,
            heard,
        });
    };
    let (root, rel) = match roots.resolve(path)? {
        Target::AllRoots => {
            return Ok(Begun::Folder {
                query,
                under: None,
                shown: None,
                heard,
            });
        }
        Target::In(root, rel) => (root, rel),
    };
    let shown = roots.display(root, &rel);
    let heard = heard.within_scope(&shown);
    let real = roots.real_path(root, &rel, path)?;
    let meta = if real.is_root() {
        root.dir().dir_metadata()
    } else {
        root.dir().metadata(real.as_os_path())
    }
    .map_err(|e| FsError::from_io(&e, path))?;
    if !meta.is_dir() {
        return Ok(Begun::One(Gathered {
            candidates: vec![Candidate::new(shown, mtime_of(&meta), meta.len())],
            from_walk: 0,
            caught_up: heard.caught_up(),
            unheard: heard.unheard(),
            walk_capped: false,
            named_file: true,
        }));
    }
    Ok(match index.folder(&shown) {
        Some(id) => Begun::Folder {
            query,
            under: Some(id),
            shown: Some(shown),
            heard,
        },
        None => Begun::Unindexed {
            query,
            folder: shown,
        },
    })
}

/// The files of a folder the index does not hold, listed.
fn walked(roots: &Roots, scope: &Scope, query: &Query, folder: &str) -> Gathered {
    // The listing, not the index, named them: not `caught_up`.
    let mut out = Gathered::default();
    walk_into(
        roots,
        folder,
        64,
        query,
        &scope.globs,
        roots.is_multi(),
        &mut out,
    );
    out
}

/// The files of the scope the index names, plus (when it may be behind)
/// those of folders changed on disk since it saw them.
fn from_index(
    index: &Index,
    roots: &Roots,
    scope: &Scope,
    query: &Query,
    under: Option<EntryId>,
    heard: Heard,
) -> Result<Gathered, FsError> {
    let multi = roots.is_multi();
    let mut out = Gathered {
        caught_up: heard.caught_up(),
        unheard: heard.unheard(),
        ..Gathered::default()
    };
    // One string per file (a whole-tree grep gathers every file): facts,
    // not hits, in no order (only the files left after narrowing are
    // ordered), and the glob matched on a slice of the shown path.
    let facts = index
        .matching_facts_until(&every_match(query, under), scope.stop)
        .map_err(|_| stopped(&scope.stop))?;
    out.candidates.reserve(facts.len());
    for f in facts {
        if !scope.globs.matches(rel_of(multi, &f.path)) {
            continue;
        }
        out.candidates.push(Candidate::new(f.path, f.mtime, f.size));
    }
    if !out.caught_up {
        walk_changed(index, roots, scope, query, under, &mut out)?;
    }
    Ok(out)
}

/// The files of the folders changed on disk since the index saw them (only
/// those in `out.unheard` when it names any), added to `out` where it does
/// not name them yet.
fn walk_changed(
    index: &Index,
    roots: &Roots,
    scope: &Scope,
    query: &Query,
    under: Option<EntryId>,
    out: &mut Gathered,
) -> Result<(), FsError> {
    let multi = roots.is_multi();
    // The index may be behind (no watcher, the watch limit reached, or
    // the watcher busy past the wait): folders changed on disk since the
    // index saw them are listed, and what the search above did not name
    // is judged here. By path, not by asking the index: the watcher may
    // apply a create between the search and this listing, and the file
    // would then be in neither.
    let named: std::collections::HashSet<&str> =
        out.candidates.iter().map(|c| c.path.as_str()).collect();
    let mut walked = Gathered::default();
    let mut dirs = index.folders_below(under);
    // Where the index hears every folder but some, only those are looked at.
    if !out.unheard.is_empty() {
        dirs.retain(|(shown, _, _)| within_any(shown, &out.unheard));
    }
    let listed_dirs: std::collections::HashSet<&str> =
        dirs.iter().map(|(shown, _, _)| shown.as_str()).collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    for (shown, indexed, _) in &dirs {
        if scope.stop.is_set() {
            return Err(stopped(&scope.stop));
        }
        let indexed = *indexed;
        let Ok(Target::In(root, rel)) = roots.resolve(shown) else {
            continue;
        };
        let meta = if rel.is_root() {
            root.dir().dir_metadata()
        } else {
            root.dir().symlink_metadata(rel.as_os_path())
        };
        let Ok(meta) = meta else { continue };
        let disk = mtime_of(&meta);
        if disk < indexed || (disk == indexed && now - disk > SAME_SECOND_SLACK) {
            continue;
        }
        let Ok(listed) = roots.list(shown, &list_request(1, KindFilter::Any)) else {
            continue;
        };
        for e in listed.entries {
            if e.kind == Kind::File {
                push_walked(&e, query, &scope.globs, multi, &mut walked);
            } else if e.kind == Kind::Dir {
                // A folder the index held is listed on its own when it
                // changed; one it did not hold yet is read whole.
                if !listed_dirs.contains(e.path.as_str()) {
                    walk_into(roots, &e.path, 64, query, &scope.globs, multi, &mut walked);
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    walked
        .candidates
        .retain(|c| !named.contains(c.path.as_str()) && seen.insert(c.path.clone()));
    drop(named);
    drop(listed_dirs);
    out.walk_capped |= walked.walk_capped;
    out.from_walk = walked.candidates.len() as u64;
    out.candidates.append(&mut walked.candidates);
    Ok(())
}

impl Gathered {
    /// Put the candidates in the order they are searched and shown: newest
    /// first, then by path. [`gather`] leaves them in no order, so that a
    /// grep the content index narrows orders only the files it keeps;
    /// [`narrow`] calls this, and a caller that does not narrow must.
    pub fn newest_first(&mut self) {
        self.candidates
            .sort_unstable_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| a.path.cmp(&b.path)));
    }
}

/// What the content index did for a search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Narrowing {
    /// The index picked the files to read.
    pub used: bool,
    /// Why it did not (off, building, a pattern it cannot narrow …).
    pub unused: Option<String>,
    /// Every file of the scope was listed and each looked up in the index
    /// ([`narrow`]): `before` and `answered` count them. Otherwise the index
    /// named the files that may match ([`gather_narrowed`]) and only those
    /// were looked up in the name index: `before` and `answered` are 0.
    pub listed: bool,
    /// Candidates before and after the index.
    pub before: u64,
    pub after: u64,
    /// Of those before, the files the index answered for (the others are
    /// read whatever it holds: not indexed, or changed since it read them).
    pub answered: u64,
    /// Of those after, the files the index could not answer for (read
    /// whatever they hold: not indexed, not checked yet, or changed since
    /// it read them).
    pub not_indexed: u64,
    /// Of those left out, binary files (grep would have skipped them).
    pub binary: u64,
    /// Of those left out, large files that hold every trigram of the
    /// pattern but never close enough together for a match.
    pub apart: u64,
    /// Of those after, large files read only where a match can be (unless
    /// one is found there).
    pub windowed: u64,
}

/// The most bytes a match of `pattern` spans, when bounded (not multi-line).
fn reach_of(pattern: &crate::Pattern) -> Option<usize> {
    ferret_content::pattern::reach(&ferret_content::PatternSpec {
        text: &pattern.text,
        literal: pattern.literal,
        case_insensitive: pattern.case_insensitive,
        multiline: pattern.multiline,
    })
}

/// The trigram query every match of `pattern` satisfies.
fn grams_of(pattern: &crate::Pattern) -> ferret_content::Grams {
    ferret_content::pattern::query(&ferret_content::PatternSpec {
        text: &pattern.text,
        literal: pattern.literal,
        case_insensitive: pattern.case_insensitive,
        multiline: pattern.multiline,
    })
}

/// Keep the candidates that may hold a match of `pattern`, by the content
/// index: those it answers for and finds the pattern's trigrams in, and every
/// one it cannot answer for. Without an index, or for a pattern it cannot
/// narrow, every candidate stays (a full scan). Those kept are then put
/// newest first ([`Gathered::newest_first`]).
pub fn narrow(
    content: Option<&ferret_content::ContentIndex>,
    pattern: &crate::Pattern,
    gathered: &mut Gathered,
) -> Narrowing {
    let before = gathered.candidates.len() as u64;
    let mut out = Narrowing {
        listed: true,
        before,
        after: before,
        ..Narrowing::default()
    };
    let Some(content) = content else {
        gathered.newest_first();
        return out;
    };
    let query = grams_of(pattern);
    // In folders the watcher cannot hear, the index's trigrams may be of
    // another version than the file's, with the same size and time: those
    // files are read whatever it holds, and it judges the rest.
    let unheard = &gathered.unheard;
    let asked: Vec<bool> = gathered
        .candidates
        .iter()
        .map(|c| !within_any(&c.path, unheard))
        .collect();
    let files: Vec<(&str, i64, u64)> = gathered
        .candidates
        .iter()
        .zip(&asked)
        .filter(|(_, asked)| **asked)
        .map(|(c, _)| (c.path.as_str(), c.mtime, c.size))
        .collect();
    let synced = gathered.caught_up || !unheard.is_empty();
    match content.narrow(&query, &files, synced) {
        Err(why) => out.unused = Some(why.to_string()),
        Ok(n) => {
            let mut keep = n.keep.into_iter();
            let mut asked = asked.into_iter();
            gathered
                .candidates
                .retain(|_| !asked.next().unwrap_or(false) || keep.next().unwrap_or(true));
            out.used = true;
            out.after = gathered.candidates.len() as u64;
            out.answered = n.answered;
            out.not_indexed = before - n.answered;
            out.binary = n.binary;
        }
    }
    gathered.newest_first();
    out
}

/// The files to search for `pattern` in `scope`, newest first, and what the
/// content index did: [`gather`] then [`narrow`], unless the index can name
/// the files itself. It can when the name index was caught up (its barrier
/// passed: every change made before the call is in it and on its change
/// feed; or all but some folders, whose files are then read whatever the
/// indexes hold and whose changed folders are listed) and the scope is the
/// index's (every root or a folder it holds):
/// the content index's answer ([`ferret_content::ContentIndex::answer`]:
/// the files whose trigrams hold the pattern's, those it cannot answer for,
/// and the paths changed since it read them) is then looked up in the name
/// index, which keeps those that exist and are in scope (`filter`, `glob`,
/// `path`), with the size and time it holds. The work is in proportion to
/// that answer, not to the scope. The files found are those [`gather`] then
/// [`narrow`] would keep, save a file whose version the name index holds
/// and whose change never reached its feed, which `narrow` also keeps when
/// the two differ in size or time (checked by `tests/index_equality.rs`
/// against full scans).
pub fn gather_narrowed(
    index: &Index,
    roots: &Roots,
    content: Option<&ferret_content::ContentIndex>,
    scope: &Scope,
    pattern: &crate::Pattern,
) -> Result<(Gathered, Narrowing), FsError> {
    let begun = begin(index, roots, scope)?;
    if let (
        Some(content),
        Begun::Folder {
            query,
            under,
            shown,
            heard,
        },
    ) = (content, &begun)
    {
        // Where only some folders are not heard, the index names the files
        // elsewhere: its claims inside them are dropped, every file the
        // name index holds there is read (as below a pending path), and
        // their changed folders are listed. (Not for a whole root unheard,
        // which the listing below covers alike.)
        let unheard = match heard {
            Heard::All => Some(&[][..]),
            Heard::AllBut(u)
                if !u
                    .iter()
                    .any(|u| u == "." || (roots.is_multi() && !u.contains('/'))) =>
            {
                Some(u.as_slice())
            }
            _ => None,
        };
        // The binaries' paths only for a scope narrower than the index
        // (else they are counted, not listed), or to leave out those in
        // unheard folders.
        let list_binaries = unheard.is_some_and(|u| !u.is_empty())
            || shown.as_deref().is_some_and(|s| s != ".")
            || !scope.globs.is_empty()
            // (`query` is the caller's and `file:`: the index holds files
            // only, so the caller's alone says whether each is in scope.)
            || !scope.query.is_match_all();
        if let Some(unheard) = unheard
            && let Ok(Some(mut answer)) =
                content.answer(&grams_of(pattern), reach_of(pattern), true, list_binaries)
        {
            if unheard.is_empty() {
                return from_answer(index, roots, scope, query, *under, shown.as_deref(), answer);
            }
            let inside = |p: &str| within_any(p, unheard);
            answer.hits.retain(|h| !inside(&h.path));
            answer.unvouched.retain(|p| !inside(p));
            answer.binary.retain(|p| !inside(p));
            answer
                .pending
                .extend(unheard.iter().map(|u| std::sync::Arc::from(u.as_str())));
            let (mut gathered, mut narrowing) =
                from_answer(index, roots, scope, query, *under, shown.as_deref(), answer)?;
            gathered.caught_up = false;
            gathered.unheard = unheard.to_vec();
            walk_changed(index, roots, scope, query, *under, &mut gathered)?;
            gathered.newest_first();
            narrowing.after = gathered.candidates.len() as u64;
            // What the listing found is read whatever the index holds.
            narrowing.not_indexed += gathered.from_walk;
            return Ok((gathered, narrowing));
        }
    }
    let mut gathered = match begun {
        Begun::One(gathered) => gathered,
        Begun::Folder {
            query,
            under,
            heard,
            ..
        } => from_index(index, roots, scope, &query, under, heard)?,
        Begun::Unindexed { query, folder } => walked(roots, scope, &query, &folder),
    };
    let narrowing = narrow(content, pattern, &mut gathered);
    Ok((gathered, narrowing))
}

/// The content index's answer, looked up in the name index: the files of it
/// that exist and are in scope.
fn from_answer(
    index: &Index,
    roots: &Roots,
    scope: &Scope,
    query: &Query,
    under: Option<EntryId>,
    shown: Option<&str>,
    answer: ferret_content::Answer,
) -> Result<(Gathered, Narrowing), FsError> {
    let multi = roots.is_multi();
    // A file outside the folder or not matching a glob is passed over
    // before it is looked up (a pending path may be a folder: never).
    let prefix = shown.filter(|s| *s != ".").map(|s| format!("{s}/"));
    let in_scope = |p: &&str| {
        prefix.as_deref().is_none_or(|pre| p.starts_with(pre))
            && scope.globs.matches(rel_of(multi, p))
    };
    let request = every_match(query, under);
    let facts = |paths: Vec<&str>| {
        index
            .matching_facts_at(&request, &paths, scope.stop)
            .map_err(|_| stopped(&scope.stop))
    };
    // Read whatever they hold: the files the index cannot answer for, and
    // those below the paths changed since it read them.
    let unsure: Vec<&str> = answer
        .unvouched
        .iter()
        .map(|p| &**p)
        .filter(in_scope)
        .chain(answer.pending.iter().map(|p| &**p))
        .collect();
    let mut candidates: Vec<Candidate> = facts(unsure)?
        .into_iter()
        .filter(|f| scope.globs.matches(rel_of(multi, &f.path)))
        .map(|f| Candidate::new(f.path, f.mtime, f.size))
        .collect();
    let not_indexed = candidates.len() as u64;
    let unsure: std::collections::HashSet<String> =
        candidates.iter().map(|c| c.path.clone()).collect();
    let hits: Vec<&str> = answer
        .hits
        .iter()
        .map(|h| &*h.path)
        .filter(in_scope)
        .collect();
    // The windows of the large files among them, by path (few).
    let windows: std::collections::HashMap<&str, &ferret_content::Hit> = answer
        .hits
        .iter()
        .filter(|h| !h.windows.is_empty())
        .map(|h| (&*h.path, h))
        .collect();
    let mut windowed = 0;
    candidates.extend(
        facts(hits)?
            .into_iter()
            .filter(|f| !unsure.contains(&f.path))
            .map(|f| {
                let mut c = Candidate::new(f.path, f.mtime, f.size);
                // Windows of the version the name index holds, or none.
                if let Some(h) = windows.get(c.path.as_str()).filter(|h| h.size == c.size) {
                    c.windows = h.windows.clone();
                    windowed += 1;
                }
                c
            }),
    );
    let binary: Vec<&str> = answer
        .binary
        .iter()
        .map(|p| &**p)
        .filter(in_scope)
        .collect();
    let binary = if !answer.binary_listed {
        // The whole index's scope: the index counted them.
        answer.binary_count
    } else if scope.query.is_match_all() {
        // Nothing to match but the path: counted as they are (the index
        // holds every file, and what changed since is pending), without
        // looking each up (a tree of binaries would build every path twice).
        let pending: std::collections::HashSet<&str> =
            answer.pending.iter().map(|p| &**p).collect();
        // The path or a folder above it is pending.
        let changed = |p: &str| {
            !pending.is_empty()
                && (pending.contains(p)
                    || p.match_indices('/').any(|(i, _)| pending.contains(&p[..i])))
        };
        binary
            .iter()
            .filter(|p| !unsure.contains(**p) && !changed(p))
            .count() as u64
    } else {
        facts(binary)?
            .iter()
            .filter(|f| !unsure.contains(&f.path))
            .count() as u64
    };
    drop(windows);
    let mut gathered = Gathered {
        candidates,
        caught_up: true,
        ..Gathered::default()
    };
    gathered.newest_first();
    let narrowing = Narrowing {
        used: true,
        after: gathered.candidates.len() as u64,
        not_indexed,
        binary,
        apart: answer.apart,
        windowed,
        ..Narrowing::default()
    };
    Ok((gathered, narrowing))
}

/// Every match of `query` below `under` (facts come in no order; the
/// fields of order are not read).
fn every_match(query: &Query, under: Option<EntryId>) -> SearchRequest<'_> {
    SearchRequest {
        query,
        under,
        sort: SortKey::Modified,
        descending: true,
        offset: 0,
        limit: usize::MAX,
        group_by: None,
    }
}

fn list_request(depth: u32, kind: KindFilter) -> ListRequest {
    ListRequest {
        depth,
        kind,
        limit: usize::MAX,
        ..ListRequest::default()
    }
}

#[allow(clippy::too_many_arguments)]
fn walk_into(
    roots: &Roots,
    folder: &str,
    depth: u32,
    query: &Query,
    globs: &Globs,
    multi: bool,
    out: &mut Gathered,
) {
    let Ok(listed) = roots.list(folder, &list_request(depth, KindFilter::File)) else {
        return;
    };
    out.walk_capped |= listed.walk_capped;
    for e in listed.entries {
        if e.kind == Kind::File {
            push_walked(&e, query, globs, multi, out);
        }
    }
}

fn push_walked(
    e: &ferret_fs::ListEntry,
    query: &Query,
    globs: &Globs,
    multi: bool,
    out: &mut Gathered,
) {
    let rel = rel_of(multi, &e.path);
    let mtime = e.modified.as_deref().map_or(0, parse_time);
    let entry = Walked {
        // Its bytes as the index holds them, escaped names given back
        // (`ferret_names`), so the query language sees it as the index's.
        rel: ferret_names::path_bytes(rel),
        size: e.size.unwrap_or(0),
        mtime,
    };
    if globs.matches(rel) && query.matches(&entry) {
        out.candidates
            .push(Candidate::new(e.path.clone(), mtime, e.size.unwrap_or(0)));
        out.from_walk += 1;
    }
}

/// A shown path below its root: with several roots, without the root's name.
fn rel_of(multi: bool, shown: &str) -> &str {
    if multi {
        shown.split_once('/').map_or("", |(_, r)| r)
    } else {
        shown
    }
}

fn parse_time(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s).map_or(0, |t| t.timestamp())
}

fn mtime_of(meta: &cap_std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.into_std().duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs() as i64)
}

/// A file found by listing, seen by the query language.
struct Walked<'a> {
    /// Its path below the root, as the index holds it (bytes).
    rel: Cow<'a, [u8]>,
    size: u64,
    mtime: i64,
}

impl Entry for Walked<'_> {
    fn name(&self) -> &[u8] {
        self.rel.rsplit(|&b| b == b'/').next().unwrap_or(&self.rel)
    }
    fn rel_path(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.rel)
    }
    fn kind(&self) -> ferret_query::Kind {
        Kind::File
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn modified(&self) -> Option<i64> {
        Some(self.mtime)
    }
    fn created(&self) -> Option<i64> {
        None
    }
    fn mode(&self) -> u32 {
        0o644
    }
    fn depth(&self) -> u32 {
        self.rel.split(|&b| b == b'/').count() as u32
    }
    fn for_each_child(&self, _: &mut dyn FnMut(&[u8], ferret_query::Kind) -> bool) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder holds itself and what lies below it, not a sibling whose
    /// name starts with its own; `.` (a single root) holds everything.
    #[test]
    fn a_path_lies_within_a_folder_by_whole_names() {
        assert!(within("a", "a") && within("a/b/c.txt", "a") && within("a/b", "."));
        assert!(!within("ab/c.txt", "a") && !within("a", "a/b") && !within("b", "a"));
        let folders = ["mnt/nfs".to_string(), "one/b".to_string()];
        assert!(within_any("one/b/x", &folders) && !within_any("one/bx", &folders));
        assert!(!within_any("x", &[]));
    }

    /// A listed file is seen by the query language as the index sees it:
    /// an escaped name as its bytes. `len:8` is the name `caf\xe9.txt`'s
    /// length in bytes (its shown form, `caf%E9.txt`, is 10 long): the
    /// listing keeps it only when it hands over the bytes.
    #[test]
    fn a_listed_path_is_queried_by_its_names_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(std::ffi::OsStr::from_bytes(b"d\xff"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt")), "x").unwrap();
        let roots = Roots::open(
            &[tmp.path().to_str().unwrap().parse().unwrap()],
            ferret_fs::Policy::default(),
        )
        .unwrap();
        let found = |q: &str| {
            let query = Query::compile(
                q,
                &ferret_query::Options::default(),
                &ferret_query::Clock::system(),
            )
            .unwrap();
            let mut out = Gathered::default();
            walk_into(&roots, ".", 8, &query, &Globs::default(), false, &mut out);
            out.candidates.len()
        };
        assert_eq!(found("len:8"), 1);
        assert_eq!(found("len:10"), 0);
        assert_eq!(found("depth:2 caf%E9.txt"), 1);
    }
}
