//! The page's own JSON routes under `/ui/api/`: status, search, preview,
//! image, download, grep and the journal's event stream. Each parses its
//! query string, calls the index or the file layer on the blocking pool, and
//! answers JSON (errors through [`ApiError`]).

use std::{
    io::Read,
    sync::{Arc, atomic::AtomicBool},
    time::{Duration, Instant},
};

use axum::{
    body::{Body, Bytes},
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, Uri, header},
    response::{IntoResponse, Json, Response},
};
use ferret_fs::{ReadOutcome, ReadRequest, Target};
use ferret_grep::Pattern;
use ferret_query::Options;
use serde_json::{Value, json};

use crate::{
    Source, Web,
    assets::no_store,
    error::ApiError,
    journal,
    marks::Marker,
    params::Params,
    preview::{self, PreviewRequest},
    search::{self, SearchSpec},
};

/// A page of results at most (the page asks for 100 at a time).
const MAX_PAGE: u64 = 1000;
/// A grep from the page stops after this long, with what it found.
const GREP_TIMEOUT: Duration = Duration::from_secs(20);
/// Bytes per chunk of a download.
const DOWNLOAD_CHUNK: usize = 64 * 1024;

fn ok(value: Value) -> Response {
    no_store(Json(value).into_response())
}

/// Run file or index work off the async threads.
async fn blocking<T: Send + 'static>(
    web: &Web,
    work: impl FnOnce(&dyn Source) -> T + Send + 'static,
) -> Result<T, ApiError> {
    let source = web.source();
    tokio::task::spawn_blocking(move || work(source.as_ref()))
        .await
        .map_err(ApiError::internal)
}

fn required<'p>(p: &'p Params, name: &str, example: &str) -> Result<&'p str, ApiError> {
    p.get(&[name])
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::bad_request(format!("`{name}` is required"), example))
}

/// The name-search switches: `case`, `ww`, `regex`, `mpath` (match paths).
fn query_options(p: &Params) -> Result<Options, ApiError> {
    Ok(Options {
        match_case: p.flag(&["case"], false)?,
        whole_word: p.flag(&["ww"], false)?,
        regex: p.flag(&["regex"], false)?,
        match_path: p.flag(&["mpath"], false)?,
    })
}

/// A grep pattern under `name`, with `literal`, `case` (match case) and `ww`.
fn grep_pattern(p: &Params, name: &str) -> Result<Option<Pattern>, ApiError> {
    let Some(text) = p.get(&[name]).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    Ok(Some(Pattern {
        text: text.to_string(),
        literal: p.flag(&["literal"], false)?,
        case_insensitive: !p.flag(&["case"], false)?,
        whole_word: p.flag(&["ww"], false)?,
        multiline: false,
    }))
}

fn bad_pattern(e: String) -> ApiError {
    ApiError::bad_request(
        format!("`pattern`: {e}"),
        "tick Literal to search for the text as written",
    )
}

pub async fn status(State(web): State<Web>) -> Result<Response, ApiError> {
    let downloads = web.inner.options.downloads;
    let token = web.inner.guard.needs_token();
    let value = blocking(&web, move |s| {
        let roots: Vec<Value> = s
            .roots()
            .roots()
            .iter()
            .map(|r| json!({"name": r.name, "path": r.path}))
            .collect();
        json!({
            "name": "ferret",
            "version": env!("CARGO_PKG_VERSION"),
            "roots": roots,
            "index": journal::status_json(&s.index()),
            "journal_entries": s.index().journal_len(),
            "features": {"downloads": downloads, "token": token, "fuzzy": true, "grep": true},
        })
    })
    .await?;
    Ok(ok(value))
}

/// `GET /ui/api/settings`: the settings ferret runs with, each with where
/// it came from (read-only: they are changed in ferret.toml).
pub async fn settings(State(web): State<Web>) -> Result<Response, ApiError> {
    let value = blocking(&web, |s| s.settings()).await?;
    Ok(ok(value))
}

pub async fn search(State(web): State<Web>, uri: Uri) -> Result<Response, ApiError> {
    let p = Params::parse(uri.query());
    let spec = SearchSpec {
        text: p.get(&["q"]).unwrap_or("").to_string(),
        options: query_options(&p)?,
        sort: p
            .choice(
                &["sort"],
                &["name", "path", "size", "modified", "created", "extension"],
            )?
            .and_then(search::sort_key)
            .unwrap_or_default(),
        descending: p.flag(&["desc"], false)?,
        offset: p.number(&["offset"], u32::MAX as u64)?.unwrap_or(0) as usize,
        limit: p.number(&["limit"], MAX_PAGE)?.unwrap_or(100) as usize,
        fuzzy: p.flag(&["fuzzy"], false)?,
        // Asked by the page once typing pauses on an empty answer (a word
        // half typed matches nothing, and its fuzzy pass is the slow one).
        fall_back: p.flag(&["fallback"], false)?,
    };
    let marker = Marker::for_query(&spec.text, &spec.options);
    let offset = spec.offset;
    let search::Searched {
        outcome,
        ms,
        fell_back,
    } = search::run(web.source(), spec).await?;
    let roots = web.inner.source.roots();
    let results: Vec<Value> = outcome
        .hits
        .iter()
        .map(|h| {
            let (dir, name) = search::split(&h.path);
            let mut row = json!({
                "path": h.path,
                "name": name,
                "dir": dir,
                "kind": h.kind,
                "size": h.size,
                "modified": h.modified,
                "abs": search::absolute(&roots, &h.path),
            });
            if let Some(m) = marker
                .as_ref()
                .map(|m| m.marks(name))
                .filter(|m| !m.is_empty())
            {
                row["nm"] = json!(m);
            }
            row
        })
        .collect();
    Ok(ok(json!({
        "total": outcome.total,
        "offset": offset,
        "results": results,
        "ms": (ms * 100.0).round() / 100.0,
        "fuzzy_fallback": fell_back,
    })))
}

pub async fn preview(State(web): State<Web>, uri: Uri) -> Result<Response, ApiError> {
    let p = Params::parse(uri.query());
    let path = required(&p, "path", "path=src/main.rs")?.to_string();
    let marker = match grep_pattern(&p, "grep")? {
        Some(pattern) => Some(Marker::for_pattern(&pattern).map_err(bad_pattern)?),
        None => Marker::for_query(p.get(&["q"]).unwrap_or(""), &query_options(&p)?),
    };
    let request = PreviewRequest {
        path,
        start_line: p.number(&["line"], u32::MAX as u64)?.unwrap_or(1),
        marker,
        downloads: web.inner.options.downloads,
    };
    let value = blocking(&web, move |s| preview::preview(&s.roots(), &request)).await??;
    Ok(ok(value))
}

/// An image's bytes, as `read` returns images (PNG, JPEG, GIF, WebP under the
/// image limit), for the preview's `<img>`.
pub async fn image(State(web): State<Web>, uri: Uri) -> Result<Response, ApiError> {
    let p = Params::parse(uri.query());
    let path = required(&p, "path", "path=img/logo.png")?.to_string();
    let (mime, bytes) = blocking(&web, move |s| {
        match s.roots().read(&path, &ReadRequest::default()) {
            Ok(ReadOutcome::Image(image)) => Ok((image.format.mime(), image.bytes)),
            Ok(_) => Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "NOT_AN_IMAGE",
                format!("`{path}` is not an image"),
            )),
            Err(e) => Err(ApiError::from(e)),
        }
    })
    .await??;
    let mut response = (StatusCode::OK, Bytes::from(bytes)).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    Ok(no_store(response))
}

/// A whole file, only with `--ui-downloads`, through the same open as every
/// tool (confined, secrets refused), streamed in chunks.
pub async fn download(State(web): State<Web>, uri: Uri) -> Result<Response, ApiError> {
    if !web.inner.options.downloads {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "DOWNLOADS_OFF",
            "downloading whole files is off on this ferret",
        )
        .hint("the operator can start ferret with --ui-downloads (FERRET_UI_DOWNLOADS)"));
    }
    let p = Params::parse(uri.query());
    let path = required(&p, "path", "path=docs/report.pdf")?.to_string();
    let opened = blocking(&web, move |s| {
        let roots = s.roots();
        let shown = path.trim();
        match roots.resolve(shown)? {
            Target::AllRoots => Err(ApiError::bad_request(
                "`.` is the list of roots, not a file",
                "path=docs/report.pdf",
            )),
            Target::In(root, rel) => {
                let name = search::split(&roots.display(root, &rel)).1.to_string();
                Ok((roots.open_for_content(root, &rel, shown)?, name))
            }
        }
    })
    .await??;
    let (file, name) = opened;
    let size = file.metadata.len();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let mut reader = file.file;
    tokio::task::spawn_blocking(move || {
        let mut buf = vec![0u8; DOWNLOAD_CHUNK];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    if tx
                        .blocking_send(Ok(Bytes::copy_from_slice(&buf[..n])))
                        .is_err()
                    {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
        }
    });
    let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    let mut response = (StatusCode::OK, body).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    h.insert(header::CONTENT_DISPOSITION, crate::attachment(&name));
    Ok(no_store(response))
}

pub async fn grep(State(web): State<Web>, uri: Uri) -> Result<Response, ApiError> {
    let p = Params::parse(uri.query());
    let pattern = grep_pattern(&p, "pattern")?
        .ok_or_else(|| ApiError::bad_request("`pattern` is required", "pattern=TODO"))?;
    let matcher = ferret_grep::compile(&pattern).map_err(bad_pattern)?;
    let marker = Marker::new(matcher.clone());
    let filter = p.get(&["filter"]).unwrap_or("");
    let query = search::compile(filter, &Options::default())?;
    // Documents are searched as their text when the filter names them, as
    // the grep tool does; otherwise they are counted (`skipped.documents`).
    let documents = ferret_grep::names_documents(filter, &[], None);
    let context = p.number(&["context"], 10)?.unwrap_or(2) as usize;
    let offset = p.number(&["offset"], u32::MAX as u64)?.unwrap_or(0) as usize;
    let limit = p.number(&["limit"], MAX_PAGE)?.unwrap_or(100).max(1) as usize;
    let cancel = Arc::new(AtomicBool::new(false));
    let _stop = search::CancelOnDrop(cancel.clone());
    let started = Instant::now();
    let outcome = blocking(&web, move |s| {
        let roots = s.roots();
        let deadline = Instant::now() + GREP_TIMEOUT;
        let scope = ferret_grep::Scope {
            path: None,
            query,
            globs: Default::default(),
            // The page's timeout covers choosing the files too.
            stop: ferret_index::Stop::on(&cancel).until(Some(deadline)),
        };
        let gathered = ferret_grep::gather(&s.index(), &roots, &scope)?;
        let limits = &roots.policy.limits;
        let options = ferret_grep::Options {
            before: context,
            after: context,
            offset,
            limit,
            max_file_bytes: limits.max_file_bytes,
            max_line_chars: limits.max_line_chars,
            max_output_bytes: limits.max_response_bytes,
            deadline: Some(deadline),
            documents,
            ..ferret_grep::Options::default()
        };
        Ok::<_, ApiError>(ferret_grep::grep(
            &roots,
            &matcher,
            false,
            &gathered.candidates,
            &options,
            &cancel,
            None,
        ))
    })
    .await??;
    let roots = web.inner.source.roots();
    let mut files: Vec<Value> = Vec::new();
    for line in &outcome.lines {
        if files.last().is_none_or(|f| f["path"] != line.path.as_str()) {
            files.push(json!({
                "path": line.path,
                "abs": search::absolute(&roots, &line.path),
                "lines": [],
            }));
        }
        let mut row = json!({"n": line.line, "t": line.text});
        if line.context {
            row["c"] = json!(true);
        } else {
            row["m"] = json!(marker.marks(&line.text));
        }
        if line.clipped {
            row["clipped"] = json!(true);
        }
        // In a document: its page, slide, sheet and row, or chapter.
        if let Some(part) = &line.part {
            row["part"] = json!(part.describe());
        }
        if let Some(Value::Array(lines)) = files.last_mut().map(|f| &mut f["lines"]) {
            lines.push(row);
        }
    }
    let s = &outcome.skipped;
    Ok(ok(json!({
        "total": outcome.total,
        "count": outcome.count,
        "offset": offset,
        "truncated": outcome.truncated,
        "next_offset": outcome.next_offset,
        "candidates": outcome.candidates,
        "files_scanned": outcome.files_scanned,
        "files_matched": outcome.files_matched,
        "skipped": {"binary": s.binary, "too_large": s.too_large, "sensitive": s.sensitive, "changed": s.changed, "unreadable": s.unreadable, "documents": s.documents},
        "stopped": outcome.stopped.map(|st| match st {
            ferret_grep::Stopped::Timeout => "timeout",
            ferret_grep::Stopped::Cancelled => "cancelled",
        }),
        "ms": started.elapsed().as_millis() as u64,
        "files": files,
    })))
}

pub async fn events(
    State(web): State<Web>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let p = Params::parse(uri.query());
    let action = journal::action_param(&p)?;
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok());
    Ok(journal::stream(
        web.source(),
        &web.inner.feed,
        web.inner.stop.clone(),
        action,
        resume,
    ))
}
