//! `resource_link` content items for the files a `search` or `grep` answer
//! names, so that a client that opens resources can fetch one
//! (`resources/read`) without the model calling `read`. Each carries the
//! file's `file://` URI (the one the resource templates give), its name, MIME
//! type, size and a `lastModified` annotation.
//!
//! They are content items, never structured fields, and few: at most
//! [`MAX_LINKS`] per answer and [`LINK_BYTES`] in all, so they add little to
//! the response budget; folders, sensitive files (which `resources/read`
//! refuses) and what is not a plain file get none. Clients of revisions
//! before 2025-06-18, which have no `resource_link`, get none either.

use ferret_fs::{Roots, Target};
use rmcp::{
    RoleServer,
    model::{Annotations, ContentBlock, ProtocolVersion, Resource},
    service::RequestContext,
};

/// Links in one answer, at most.
pub const MAX_LINKS: usize = 10;

/// Bytes the links of one answer may take, at most (as JSON).
pub const LINK_BYTES: usize = 4 * 1024;

/// Whether the request's protocol revision has `resource_link` (2025-06-18
/// on): from its `_meta` or the handshake, else (stateless HTTP in the
/// handshake era) its `MCP-Protocol-Version` header.
pub fn wanted(context: &RequestContext<RoleServer>) -> bool {
    let version = context
        .protocol_version()
        .map(|v| v.as_str().to_owned())
        .or_else(|| {
            context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|p| p.headers.get("mcp-protocol-version"))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        });
    version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2025_06_18.as_str())
}

/// A file an answer names, as shown, with what the answer already knows of it.
pub struct Named<'a> {
    pub shown: &'a str,
    /// Size and modification time, when the answer has them (`search`);
    /// otherwise they are looked up (metadata only).
    pub facts: Option<(u64, Option<String>)>,
}

/// The links for `files` (in their order, first [`MAX_LINKS`] that qualify).
pub fn links<'a>(roots: &Roots, files: impl IntoIterator<Item = Named<'a>>) -> Vec<ContentBlock> {
    let mut out = Vec::new();
    let mut bytes = 0;
    for file in files {
        if out.len() == MAX_LINKS {
            break;
        }
        let Some(link) = link(roots, file) else {
            continue;
        };
        let cost = serde_json::to_string(&link).map_or(usize::MAX, |s| s.len());
        if bytes + cost > LINK_BYTES {
            break;
        }
        bytes += cost;
        out.push(ContentBlock::resource_link(link));
    }
    out
}

fn link(roots: &Roots, file: Named<'_>) -> Option<Resource> {
    let Ok(Target::In(root, rel)) = roots.resolve(file.shown) else {
        return None;
    };
    let (size, modified) = match file.facts {
        Some(facts) if !roots.policy.deny.is_sensitive(&rel) => facts,
        Some(_) => return None,
        None => roots.file_facts(file.shown)?,
    };
    let path = root.path.join(rel.as_os_path());
    let uri = url::Url::from_file_path(&path).ok()?;
    // As paths show it (a name that is not UTF-8 escaped, `ferret_names`).
    let name =
        ferret_names::shown(std::os::unix::ffi::OsStrExt::as_bytes(path.file_name()?)).into_owned();
    let mut resource = Resource::new(uri.to_string(), name).with_size(size);
    if let Some(mime) = mime_guess::from_path(&path).first_raw() {
        resource = resource.with_mime_type(mime);
    }
    if let Some(at) = modified {
        let mut annotations = Annotations::default();
        annotations.last_modified = Some(at);
        resource.annotations = Some(annotations);
    }
    Some(resource)
}
