//! Evaluating a compiled query over the store: prefilter, match, page, group.

use std::{cmp::Ordering, collections::HashMap};

use ferret_query::Query;

use crate::store::{EntryId, Kind, NONE, Store, UNKNOWN_TIME};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    #[default]
    Name,
    Path,
    Size,
    Modified,
    Created,
    Extension,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    Extension,
    Kind,
    Folder,
}

/// What to look for, already compiled.
pub struct SearchRequest<'q> {
    pub query: &'q Query,
    /// Only entries at or below this folder (a root's record, or any folder).
    pub under: Option<EntryId>,
    pub sort: SortKey,
    pub descending: bool,
    pub offset: usize,
    pub limit: usize,
    pub group_by: Option<GroupBy>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    pub path: String,
    pub kind: &'static str,
    pub size: Option<u64>,
    pub modified: Option<String>,
    pub created: Option<String>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Group {
    pub group: String,
    pub count: u64,
}

#[derive(Debug, Default)]
pub struct SearchOutcome {
    pub hits: Vec<Hit>,
    pub groups: Option<Vec<Group>>,
    /// All matches (or all groups with `group_by`).
    pub total: u64,
}

pub fn rfc3339(secs: i64) -> Option<String> {
    if secs == UNKNOWN_TIME {
        return None;
    }
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// The path shown to agents: relative to the root, prefixed by the root's name
/// when there are several roots.
pub fn display_path(store: &Store, id: EntryId) -> String {
    let rel = store.rel_path(id);
    let rel = String::from_utf8_lossy(&rel);
    if store.roots().len() > 1 {
        let (_, root) = store.root_of(id);
        let name = String::from_utf8_lossy(store.name(root));
        if rel.is_empty() {
            name.into_owned()
        } else {
            format!("{name}/{rel}")
        }
    } else if rel.is_empty() {
        ".".into()
    } else {
        rel.into_owned()
    }
}

/// Below this many records a search runs on one thread (spawning costs more).
const PARALLEL_FROM: usize = 50_000;

/// The entries that match, in id order: the candidates (all live non-root entries,
/// or those whose lowercase name holds the query's longest literal) are split into
/// one contiguous range of ids per core and checked in parallel.
fn matching(store: &Store, query: &Query, under: Option<EntryId>) -> Vec<EntryId> {
    let literal = query
        .required_name_literals()
        .into_iter()
        .filter(|l| !l.is_empty() && l.is_ascii())
        .max_by_key(Vec::len);
    if literal.is_none()
        && let Some(piece) = path_piece(query)
    {
        return matching_under_anchors(store, query, under, &piece);
    }
    let n = store.records.len();
    let threads = if n < PARALLEL_FROM {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |p| p.get())
            .min(8)
    };
    let chunk = n.div_ceil(threads).max(1);
    let check = |id: EntryId, out: &mut Vec<EntryId>| {
        if let Some(under) = under
            && !store.is_within(id, under)
        {
            return;
        }
        if query.matches(&store.entry(id)) {
            out.push(id);
        }
    };
    let scan = |lo: usize, hi: usize| -> Vec<EntryId> {
        let mut out = Vec::new();
        match &literal {
            None => {
                for id in lo..hi {
                    let r = &store.records[id];
                    if r.kind != Kind::Free as u8 && r.parent != NONE {
                        check(id as EntryId, &mut out);
                    }
                }
            }
            Some(lit) => {
                let finder = memchr::memmem::Finder::new(lit);
                let start = store
                    .offsets
                    .get(lo)
                    .map_or(store.lower.len(), |&o| o as usize);
                let end = store
                    .offsets
                    .get(hi)
                    .map_or(store.lower.len(), |&o| o as usize);
                let hay = &store.lower[..end];
                let mut pos = start;
                let mut cursor = lo.min(n.saturating_sub(1)) as EntryId;
                while let Some(found) = finder.find(&hay[pos..]) {
                    let id = store.entry_at_offset_from(pos + found, cursor);
                    cursor = id;
                    let r = &store.records[id as usize];
                    pos = store.offsets[id as usize] as usize + r.name_len as usize + 1;
                    if r.kind != Kind::Free as u8
                        && r.parent != NONE
                        && !store.has_non_ascii_name(id)
                    {
                        check(id, &mut out);
                    }
                }
            }
        }
        out
    };
    let mut matched: Vec<EntryId> = if threads == 1 {
        scan(0, n)
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (lo, hi) = (t * chunk, ((t + 1) * chunk).min(n));
                    scope.spawn(move || scan(lo, hi))
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    };
    if literal.is_some() {
        // Non-ASCII names fold in ways an ASCII scan cannot see (`K` is a kelvin sign).
        for &id in &store.non_ascii {
            let r = &store.records[id as usize];
            if r.kind != Kind::Free as u8 && r.parent != NONE {
                check(id, &mut matched);
            }
        }
    }
    matched
}

/// The longest `/`-free piece of the query's required path literals: every match
/// has a path component (its own name or a folder above it) whose lowercase name
/// contains it.
fn path_piece(query: &Query) -> Option<Vec<u8>> {
    query
        .required_path_literals()
        .iter()
        .flat_map(|lit| lit.split(|&b| b == b'/'))
        .filter(|p| !p.is_empty() && p.is_ascii())
        .max_by_key(|p| p.len())
        .map(<[u8]>::to_vec)
}

/// Path terms without a name literal: find the entries whose own name holds
/// `piece` (anchors, by scanning the name arena), then check the anchors and
/// everything below anchor folders. This replaces building the path of every
/// entry with work proportional to the part of the tree the term can match.
fn matching_under_anchors(
    store: &Store,
    query: &Query,
    under: Option<EntryId>,
    piece: &[u8],
) -> Vec<EntryId> {
    let mut anchors: Vec<EntryId> = Vec::new();
    let finder = memchr::memmem::Finder::new(piece);
    let mut pos = 0;
    let mut cursor: EntryId = 0;
    while let Some(found) = finder.find(&store.lower[pos..]) {
        let id = store.entry_at_offset_from(pos + found, cursor);
        cursor = id;
        let r = &store.records[id as usize];
        pos = store.offsets[id as usize] as usize + r.name_len as usize + 1;
        if r.kind != Kind::Free as u8 && r.parent != NONE && !store.has_non_ascii_name(id) {
            anchors.push(id);
        }
    }
    // Folded non-ASCII names may hold the piece where the ASCII scan cannot see it.
    anchors.extend(
        store
            .non_ascii
            .iter()
            .copied()
            .filter(|&id| store.is_live(id)),
    );
    let mut seen = vec![false; store.records.len()];
    let mut matched = Vec::new();
    let mut stack = Vec::new();
    for anchor in anchors {
        stack.push(anchor);
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut seen[id as usize], true) {
                continue;
            }
            let r = &store.records[id as usize];
            if r.parent != NONE
                && under.is_none_or(|u| store.is_within(id, u))
                && query.matches(&store.entry(id))
            {
                matched.push(id);
            }
            if r.kind == Kind::Dir as u8 {
                stack.extend(store.children(id));
            }
        }
    }
    matched.sort_unstable();
    matched
}

fn extension(name: &[u8]) -> &[u8] {
    match memchr::memrchr(b'.', name) {
        Some(i) if i > 0 => &name[i + 1..],
        _ => &[],
    }
}

pub fn search(store: &Store, request: &SearchRequest) -> SearchOutcome {
    let matched = matching(store, request.query, request.under);
    if let Some(group_by) = request.group_by {
        return group(store, &matched, group_by, request);
    }
    let total = matched.len() as u64;
    let wanted = request
        .offset
        .saturating_add(request.limit)
        .min(matched.len());
    if wanted == 0 {
        return SearchOutcome {
            hits: Vec::new(),
            groups: None,
            total,
        };
    }
    let name_cmp = |a: EntryId, b: EntryId| {
        store
            .lower_name(a)
            .cmp(store.lower_name(b))
            .then_with(|| store.name(a).cmp(store.name(b)))
            .then_with(|| a.cmp(&b))
    };
    let page: Vec<EntryId> = if request.sort == SortKey::Path {
        let mut keyed: Vec<(Vec<u8>, EntryId)> = matched
            .iter()
            .map(|&id| (display_path(store, id).into_bytes(), id))
            .collect();
        let cmp = |a: &(Vec<u8>, EntryId), b: &(Vec<u8>, EntryId)| {
            let o = a.0.cmp(&b.0).then(a.1.cmp(&b.1));
            if request.descending { o.reverse() } else { o }
        };
        top_k(&mut keyed, wanted, cmp);
        page_ids(keyed, request)
    } else {
        // Compare on a u64 key read once per match (the first 8 bytes of the name,
        // or the number sorted by), so that selecting the page touches one
        // contiguous array; only equal keys look further.
        let key = |id: EntryId| -> u64 {
            let r = &store.records[id as usize];
            match request.sort {
                SortKey::Name | SortKey::Path => prefix_key(store.lower_name(id)),
                SortKey::Size => r.size,
                SortKey::Modified => r.mtime as u64,
                SortKey::Created => r.btime as u64,
                SortKey::Extension => prefix_key(extension(store.lower_name(id))),
            }
        };
        let mut keyed: Vec<(u64, EntryId)> = matched.iter().map(|&id| (key(id), id)).collect();
        let cmp = |a: &(u64, EntryId), b: &(u64, EntryId)| {
            let o = a.0.cmp(&b.0).then_with(|| {
                if request.sort == SortKey::Extension {
                    extension(store.lower_name(a.1))
                        .cmp(extension(store.lower_name(b.1)))
                        .then_with(|| name_cmp(a.1, b.1))
                } else {
                    name_cmp(a.1, b.1)
                }
            });
            if request.descending { o.reverse() } else { o }
        };
        top_k(&mut keyed, wanted, cmp);
        page_ids(keyed, request)
    };
    SearchOutcome {
        hits: page.into_iter().map(|id| hit(store, id)).collect(),
        groups: None,
        total,
    }
}

/// The ids of the requested page out of ordered `(key, id)` pairs.
fn page_ids<K>(ordered: Vec<(K, EntryId)>, request: &SearchRequest) -> Vec<EntryId> {
    ordered
        .into_iter()
        .skip(request.offset)
        .take(request.limit)
        .map(|(_, id)| id)
        .collect()
}

/// The first eight bytes, big-endian, zero-padded: orders like the bytes do.
fn prefix_key(bytes: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    let n = bytes.len().min(8);
    buf[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(buf)
}

/// Order only the first `k` items (selection, then a sort of those k).
fn top_k<T>(items: &mut Vec<T>, k: usize, mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if k == 0 {
        items.clear();
        return;
    }
    if k < items.len() {
        items.select_nth_unstable_by(k - 1, &mut cmp);
        items.truncate(k);
    }
    items.sort_unstable_by(cmp);
}

pub fn hit(store: &Store, id: EntryId) -> Hit {
    let kind = store.kind(id);
    let meta = store.meta(id);
    Hit {
        path: display_path(store, id),
        kind: kind.name(),
        size: (kind != Kind::Dir).then_some(meta.size),
        modified: rfc3339(meta.mtime),
        created: rfc3339(meta.btime),
    }
}

fn group(
    store: &Store,
    matched: &[EntryId],
    by: GroupBy,
    request: &SearchRequest,
) -> SearchOutcome {
    let mut counts: HashMap<String, u64> = HashMap::new();
    for &id in matched {
        let key = match by {
            GroupBy::Kind => store.kind(id).name().to_string(),
            GroupBy::Extension => {
                if store.kind(id) == Kind::Dir {
                    "(folder)".to_string()
                } else {
                    let ext = extension(store.lower_name(id));
                    if ext.is_empty() {
                        "(none)".to_string()
                    } else {
                        String::from_utf8_lossy(ext).into_owned()
                    }
                }
            }
            GroupBy::Folder => display_path(store, store.parent(id)),
        };
        *counts.entry(key).or_default() += 1;
    }
    page_groups(counts, request.offset, request.limit)
}

/// Groups ordered by count (largest first, then by name), one page of them.
pub fn page_groups(
    counts: impl IntoIterator<Item = (String, u64)>,
    offset: usize,
    limit: usize,
) -> SearchOutcome {
    let mut groups: Vec<Group> = counts
        .into_iter()
        .map(|(group, count)| Group { group, count })
        .collect();
    groups.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.group.cmp(&b.group)));
    let total = groups.len() as u64;
    let groups = groups.into_iter().skip(offset).take(limit).collect();
    SearchOutcome {
        hits: Vec::new(),
        groups: Some(groups),
        total,
    }
}
