//! The `diagnostics` tool: what this server is, serves and has done, for an
//! agent or an operator asking why something is missing or slow.

use std::sync::atomic::Ordering;

use ferret_fs::Roots;
use rmcp::model::{CallToolResult, ProtocolVersion};
use serde_json::json;

use crate::{Ferret, VERSION, render, resources};

impl Ferret {
    pub(crate) fn diagnostics(&self) -> CallToolResult {
        let inner = &self.inner;
        let stack = self.stack();
        let task_counts = inner.tasks.counts();
        let settings = self.settings();
        let policy = &stack.roots.policy;
        let limits = &policy.limits;
        let roots: Vec<_> = stack
            .roots
            .roots()
            .iter()
            .map(|r| json!({"name": r.name, "path": r.path, "writable": r.writable, "resource": resources::root_uri(r)}))
            .collect();
        let index = stack.index.status();
        let versions: Vec<String> = ProtocolVersion::KNOWN_VERSIONS
            .iter()
            .map(|v| v.to_string())
            .collect();
        let locate = match self.locate_roots().as_deref() {
            None => {
                json!({"policy": "off", "roots": [], "note": "no --locate-root given; the locate tool is not listed"})
            }
            Some(l) => {
                let s = l.index.status();
                json!({
                    "policy": l.policy.as_str(),
                    "roots": l.root_paths(),
                    "index": {"entries": s.entries, "ready": s.ready, "watcher": s.watcher},
                })
            }
        };
        let structured = json!({
            "version": VERSION,
            "protocol_versions": versions,
            "transport": inner.transport.describe(),
            "uptime_s": inner.started.elapsed().as_secs(),
            "roots": roots,
            "roots_from": self.roots_from().as_str(),
            "index": {
                "state": if index.ready { if index.reconciling { "ready (reconciling with disk)" } else { "ready" } } else { "building" },
                "entries": index.entries,
                "build_ms": index.build_ms,
                "loaded_from_snapshot": index.loaded_from_snapshot,
                "snapshot_load_ms": index.snapshot_load_ms,
                "updated_at": index.updated_at,
                "watcher": index.watcher,
                "watch_limit_reached": index.watch_limit_reached,
                "overflow_rescans": index.overflow_rescans,
                "unreadable_folders": index.unreadable_folders,
                "walk_races": index.walk_races,
                "missing_roots": index.missing_roots,
                "network_folders": index.network_folders,
                "state_dir": stack.index.config().state_dir,
                "last_snapshot": index.last_snapshot,
                "snapshot_error": index.snapshot_error,
                "journal_entries": stack.index.journal_len(),
                "journal_error": index.journal_error,
                "hidden_indexed": stack.index.config().rules.hidden,
                "ignore_files_honoured": !stack.index.config().rules.no_ignore,
                "carried": index.carried,
            },
            "settings": {
                "file": settings.file,
                "file_exists": settings.file_exists,
                "reloads": settings.reloads,
                "last_reload": settings.last_reload,
            },
            "stale_temp_files": inner.stale_temps.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            "limits": {
                "max_file_bytes": limits.max_file_bytes,
                "max_response_bytes": limits.max_response_bytes,
                "max_response_chars": limits.max_response_chars,
                "max_line_chars": limits.max_line_chars,
                "max_image_bytes": limits.max_image_bytes,
                "max_walk_entries": limits.max_walk_entries,
            },
            "rules": {
                "hidden_shown_by_default": policy.hidden,
                "ignore_files_honoured_by_default": !policy.no_ignore,
                "extra_deny_patterns": policy.deny.extra_patterns(),
            },
            "writing": writing_state(&stack.roots),
            "grep": match &stack.content {
                Some(_) => "in-process (ripgrep's engine), candidates from the index, narrowed by the content index",
                None => "in-process (ripgrep's engine), candidates from the index (content index off)",
            },
            "content_index": stack.content.as_ref().map(|c| c.status()),
            "symbols": crate::symbols_tool::diagnostics(&self.inner.symbols),
            "documents": documents_state(&stack.roots),
            "locate": locate,
            "subscriptions": inner.hub.count(),
            "tasks": {
                "running": task_counts.0,
                "kept": task_counts.1,
                "after_ms": inner.task_after_ms.load(Ordering::Relaxed),
                "kept_for_s": inner.tasks.limits().retention.as_secs(),
                "running_per_client": inner.tasks.limits().running_per_client,
            },
            "tools": inner.stats.snapshot(),
        });
        let text = serde_json::to_string_pretty(&structured).unwrap_or_default();
        render::ok(structured, text)
    }
}

/// Whether documents are read as text, and how often their text came from
/// the cache, for `diagnostics`.
fn documents_state(roots: &Roots) -> serde_json::Value {
    match roots.documents() {
        None => json!({"enabled": false}),
        Some(d) => {
            let (extracted, from_cache) = d.counts();
            let limits = d.limits();
            json!({
                "enabled": true,
                "extracted": extracted,
                "from_cache": from_cache,
                "cache_dir": d.cache().dir(),
                "max_document_bytes": limits.max_input_bytes,
                "max_memory_bytes": limits.max_memory_bytes,
                "timeout_s": limits.timeout.as_secs(),
            })
        }
    }
}

/// Whether writing is on, and for which roots, for `diagnostics`.
fn writing_state(roots: &Roots) -> String {
    let writable: Vec<&str> = roots
        .roots()
        .iter()
        .filter(|r| r.writable)
        .map(|r| r.name.as_str())
        .collect();
    if writable.is_empty() {
        "disabled (no writable root; --writable or a `:rw` root enables write, edit, manage)".into()
    } else {
        format!("enabled for roots: {}", writable.join(", "))
    }
}
