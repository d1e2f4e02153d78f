//! Resources: every file under the roots is a `file://` resource on its real
//! path, reached through one template per root (`file:///srv/docs/{+path}`).
//! `resources/list` gives the roots themselves, never their millions of files.
//!
//! `file://` rather than a private scheme because clients already know what a
//! file URI is (they show it, open it, and `resource_link`s elsewhere use it).
//! A URI is only ever turned into an absolute path and handed to the same
//! `Roots` calls the tools use, so confinement, the denylist, decoding and the
//! response budget are the tools' own: a URI outside the roots (including one
//! whose `..` or `%2e%2e` the URL parser folds away) is not found.

use base64::Engine;
use ferret_fs::{ErrorCode, FsError, ListRequest, ReadOutcome, ReadRequest, Root, Roots};
use rmcp::{
    ErrorData,
    model::{
        ListResourceTemplatesResult, ListResourcesResult, MetaObject, ReadResourceResult, Resource,
        ResourceContents, ResourceTemplate,
    },
};
use serde_json::{Value, json};

/// The URI of a root's folder: `file:///srv/docs/` (percent-encoded).
pub fn root_uri(root: &Root) -> String {
    url::Url::from_directory_path(&root.path)
        .map(String::from)
        .unwrap_or_else(|()| format!("file://{}/", root.path.display()))
}

/// The URI template of a root's files.
pub fn template_of(root: &Root) -> String {
    format!("{}{{+path}}", root_uri(root))
}

pub fn list(roots: &Roots) -> ListResourcesResult {
    let resources = roots
        .roots()
        .iter()
        .map(|root| {
            Resource::new(root_uri(root), root.name.clone())
                .with_title(format!("{} (folder)", root.name))
                .with_description(format!(
                    "Served root {}{}. Reading it lists its entries; its files are resources through the template {}",
                    root.path.display(),
                    if root.writable { ", writable" } else { "" },
                    template_of(root)
                ))
                .with_mime_type("inode/directory")
        })
        .collect();
    ListResourcesResult::with_all_items(resources)
}

pub fn templates(roots: &Roots) -> ListResourceTemplatesResult {
    let templates = roots
        .roots()
        .iter()
        .map(|root| {
            ResourceTemplate::new(template_of(root), format!("{}-files", root.name))
                .with_title(format!("Files in {}", root.name))
                .with_description(
                    "A file (its text, or an image) or a folder (its listing) below this root; `path` is relative to the root. Text over the response budget is cut at a line; _meta.ferret says where `read` continues.",
                )
        })
        .collect();
    ListResourceTemplatesResult::with_all_items(templates)
}

/// Where the template of `uri_template` points: the index of its root.
pub fn root_of_template(roots: &Roots, uri_template: &str) -> Option<usize> {
    roots
        .roots()
        .iter()
        .position(|r| template_of(r) == uri_template || root_uri(r) == uri_template)
}

/// The absolute path a resource URI names, as a string the tools' path rules
/// accept. Anything that is not a local `file://` URI is not one of ours.
pub fn path_of(uri: &str) -> Result<String, ErrorData> {
    let not_ours = |why: &str| {
        ErrorData::resource_not_found(
            format!("`{uri}` is not a resource of this server: {why}"),
            Some(
                json!({"uri": uri, "hint": "resources are file:// URIs below the roots; resources/templates/list gives their form"}),
            ),
        )
    };
    let url = url::Url::parse(uri).map_err(|e| not_ours(&format!("not a URI ({e})")))?;
    if url.scheme() != "file" {
        return Err(not_ours("only file:// URIs are served"));
    }
    if url
        .host_str()
        .is_some_and(|h| !h.is_empty() && h != "localhost")
    {
        return Err(not_ours("the host must be empty or localhost"));
    }
    let path = url
        .to_file_path()
        .map_err(|()| not_ours("not a local file path"))?;
    // A name that is not UTF-8 (`%E9` in the URI) as paths show it
    // (`ferret_names`), which the file layer reads back.
    Ok(
        ferret_names::shown_path(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
            .into_owned(),
    )
}

/// A file-layer failure as the JSON-RPC error of `resources/read`: a path that
/// is not there (or not ours) is "resource not found" (-32002 before
/// 2026-07-28, -32602 from it, both with `data.uri`); a path refused by the
/// rules is invalid params; the OS failing is an internal error.
pub fn error_for(err: &FsError, uri: &str) -> ErrorData {
    let mut data = json!({"uri": uri, "code": err.code.as_str()});
    if let Some(hint) = &err.hint {
        data["hint"] = json!(hint);
    }
    let message = format!("{}: {}", err.code, err.message);
    match err.code {
        ErrorCode::NotFound | ErrorCode::PathOutsideRoot => {
            ErrorData::resource_not_found(message, Some(data))
        }
        ErrorCode::IoError => ErrorData::internal_error(message, Some(data)),
        _ => ErrorData::invalid_params(message, Some(data)),
    }
}

/// `_meta` with ferret's own key, for what a result's fields cannot say.
pub(crate) fn ferret_meta(value: Value) -> MetaObject {
    let mut meta = MetaObject::new();
    meta.0.insert("ferret".into(), value);
    meta
}

/// The MIME type of a text file, from its name; text/plain when unsure.
fn text_mime(path: &str) -> String {
    match mime_guess::from_path(path).first() {
        Some(m)
            if m.type_() == "text"
                || matches!(
                    m.subtype().as_str(),
                    "json" | "xml" | "javascript" | "x-sh" | "toml" | "yaml" | "x-yaml"
                )
                || m.suffix().is_some_and(|s| s == "json" || s == "xml") =>
        {
            m.essence_str().to_string()
        }
        _ => "text/plain".into(),
    }
}

/// Read one resource: a text file whole (up to the response budget), an image
/// as a blob, a folder as its listing.
pub fn read(roots: &Roots, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let path = path_of(uri)?;
    let request = ReadRequest {
        start_line: 1,
        max_lines: u64::MAX,
        ..ReadRequest::default()
    };
    let content = match roots.read(&path, &request) {
        Ok(ReadOutcome::Text(w)) => {
            let meta = json!({
                "encoding": w.encoding,
                "line_endings": w.line_endings,
                "checksum": w.checksum,
                "total_lines": w.total_lines,
                "truncated": w.truncated,
                "next_start_line": w.next_start_line,
                "hint": w.truncated.then(|| format!(
                    "cut at line {} by the response budget; `read` {{\"path\":\"{}\",\"start_line\":{}}} continues",
                    w.end_line, w.path, w.next_start_line.unwrap_or(w.end_line + 1)
                )),
            });
            ResourceContents::text(w.text, uri)
                .with_mime_type(text_mime(&w.path))
                .with_meta(ferret_meta(meta))
        }
        Ok(ReadOutcome::Image(img)) => {
            let data = base64::engine::general_purpose::STANDARD.encode(&img.bytes);
            ResourceContents::blob(data, uri)
                .with_mime_type(img.format.mime())
                .with_meta(ferret_meta(json!({
                    "width": img.width,
                    "height": img.height,
                    "checksum": img.checksum,
                })))
        }
        Err(e) if e.code == ErrorCode::IsDirectory => folder_listing(roots, &path, uri)?,
        Err(e) => return Err(error_for(&e, uri)),
    };
    Ok(ReadResourceResult::new(vec![content]))
}

/// How many entries a folder resource lists before saying "use `list`".
const FOLDER_ENTRIES: usize = 2000;

fn folder_listing(roots: &Roots, path: &str, uri: &str) -> Result<ResourceContents, ErrorData> {
    let outcome = roots
        .list(
            path,
            &ListRequest {
                limit: FOLDER_ENTRIES,
                ..ListRequest::default()
            },
        )
        .map_err(|e| error_for(&e, uri))?;
    let mut text = String::new();
    for e in &outcome.entries {
        text.push_str(&e.name);
        if e.kind == ferret_query::Kind::Dir {
            text.push('/');
        }
        text.push('\n');
    }
    Ok(ResourceContents::text(text, uri).with_meta(ferret_meta(json!({
        "kind": "dir",
        "summary": outcome.summary,
        "total": outcome.total,
        "truncated": outcome.truncated,
        "hint": outcome.truncated.then_some("more entries than shown: the `list` tool pages through them"),
    }))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots_of(dir: &std::path::Path) -> Roots {
        Roots::open(
            &[dir.to_str().unwrap().parse().unwrap()],
            ferret_fs::Policy::default(),
        )
        .unwrap()
    }

    #[test]
    fn uris_round_trip_through_paths_with_odd_names() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::write(dir.join("a b#c%.txt"), "x\n").unwrap();
        let roots = roots_of(&dir);
        let uri = String::from(url::Url::from_file_path(dir.join("a b#c%.txt")).unwrap());
        assert!(
            uri.starts_with("file:///") && uri.contains("a%20b%23c%25.txt"),
            "{uri}"
        );
        assert_eq!(
            path_of(&uri).unwrap(),
            dir.join("a b#c%.txt").to_str().unwrap()
        );
        let read = read(&roots, &uri).unwrap();
        match &read.contents[0] {
            ResourceContents::TextResourceContents {
                text, mime_type, ..
            } => {
                assert_eq!(text, "x\n");
                assert_eq!(mime_type.as_deref(), Some("text/plain"));
            }
            other => panic!("{other:?}"),
        }
        // A name that is not UTF-8: its URI holds the byte (`%E9`), its
        // path is shown escaped, and the file is read.
        use std::os::unix::ffi::OsStrExt;
        let latin = dir.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt"));
        std::fs::write(&latin, "latin\n").unwrap();
        let uri = String::from(url::Url::from_file_path(&latin).unwrap());
        assert!(uri.ends_with("/caf%E9.txt"), "{uri}");
        let shown = format!("{}/caf%E9.txt", dir.to_str().unwrap());
        assert_eq!(path_of(&uri).unwrap(), shown);
        match &super::read(&roots, &uri).unwrap().contents[0] {
            ResourceContents::TextResourceContents { text, .. } => assert_eq!(text, "latin\n"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn escapes_are_not_found_and_secrets_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir(dir.join("in")).unwrap();
        std::fs::write(dir.join("outside.txt"), "secret").unwrap();
        std::fs::write(dir.join("in/.env"), "KEY=1").unwrap();
        let roots = roots_of(&dir.join("in"));
        let base = root_uri(&roots.roots()[0]);
        for uri in [
            format!("{base}../outside.txt"),
            format!("{base}%2e%2e/outside.txt"),
            format!("file://{}", dir.join("outside.txt").display()),
            "file:///etc/passwd".to_string(),
            "https://example.com/x".to_string(),
            "file://evil.example/etc/passwd".to_string(),
            "not a uri".to_string(),
        ] {
            let err = read(&roots, &uri).unwrap_err();
            assert_eq!(
                err.code,
                rmcp::model::ErrorCode::RESOURCE_NOT_FOUND,
                "{uri}: {err:?}"
            );
            assert_eq!(err.data.as_ref().unwrap()["uri"], json!(uri));
        }
        let err = read(&roots, &format!("{base}.env")).unwrap_err();
        assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert_eq!(err.data.unwrap()["code"], "PATH_DENIED");
    }

    #[test]
    fn a_folder_reads_as_its_listing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("f.rs"), "fn main() {}\n").unwrap();
        let roots = roots_of(&dir);
        let read = read(&roots, &root_uri(&roots.roots()[0])).unwrap();
        match &read.contents[0] {
            ResourceContents::TextResourceContents { text, .. } => {
                assert_eq!(text, "f.rs\nsub/\n")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            root_of_template(&roots, &template_of(&roots.roots()[0])),
            Some(0)
        );
    }
}
