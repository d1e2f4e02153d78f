//! What a search answers with: each match as a path shown to agents, with its
//! kind, size and times.

use crate::store::{EntryId, Kind, Store, UNKNOWN_TIME};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    pub path: String,
    pub kind: ferret_query::Kind,
    pub size: Option<u64>,
    pub modified: Option<String>,
    pub created: Option<String>,
    /// With relevance and fuzzy orders: how good the match is (higher is better).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
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

/// The entry a path as [`display_path`] spells it names, if the index has it.
pub fn find_display_path(store: &Store, path: &str) -> Option<EntryId> {
    let roots = store.roots();
    if roots.len() > 1 {
        let (root, rel) = path.split_once('/').unwrap_or((path, ""));
        let &id = roots.iter().find(|&&r| store.name(r) == root.as_bytes())?;
        store.lookup(id, rel.as_bytes())
    } else {
        let rel = if path == "." { "" } else { path };
        store.lookup(*roots.first()?, rel.as_bytes())
    }
}

pub fn hit(store: &Store, id: EntryId) -> Hit {
    let kind = store.kind(id);
    let meta = store.meta(id);
    Hit {
        path: display_path(store, id),
        kind: crate::store::query_kind(kind),
        size: (kind != Kind::Dir).then_some(meta.size),
        modified: rfc3339(meta.mtime),
        created: rfc3339(meta.btime),
        score: None,
    }
}
