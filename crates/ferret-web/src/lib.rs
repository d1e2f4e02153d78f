//! ferret's face for people and scripts, served beside MCP on the same port:
//! the search page at `GET /`, and Everything's HTTP JSON API at
//! `GET /?search=…&json=1`.
//!
//! The page is a client of the same functions as the tools, never a second
//! path to the disk: names come from [`Index::search`], previews from
//! [`Roots::read`] and [`Roots::list`], content matches from `ferret_grep`,
//! the journal from [`Index::changes`]. Nothing here opens a path, so
//! confinement, the denylist and decoding are the file layer's.
//!
//! [`Web::in_front_of`] puts the page in front of a router (the MCP one):
//! it answers `GET /` (unless the request is an MCP client opening its event
//! stream), `/ui/…` and `/favicon.ico`, after the Host and Origin checks of
//! [`access`]; everything else passes through untouched.
//!
//! ```no_run
//! # fn demo(source: std::sync::Arc<dyn ferret_web::Source>, mcp: axum::Router) {
//! use ferret_web::{Access, Web, WebOptions};
//! let access = Access { hosts: vec!["127.0.0.1".into()], ..Access::default() };
//! let stop = tokio_util::sync::CancellationToken::new();
//! let app = Web::new(source, WebOptions::default(), &access, stop).in_front_of(mcp);
//! # }
//! ```
//!
//! Invariants: knows nothing of MCP; every file-system call goes through
//! `ferret_fs::Roots`; logs name the route and the outcome, never a query,
//! a path or file content.

pub mod access;
mod api;
mod assets;
mod error;
pub mod everything;
mod journal;
mod marks;
mod params;
mod preview;
mod search;

use std::{sync::Arc, time::Instant};

use axum::{
    Router,
    body::Bytes,
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header},
    middleware::{self, Next},
    response::{IntoResponse, Json, Redirect, Response},
    routing::{get, post},
};
use ferret_fs::Roots;
use ferret_index::Index;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

pub use access::Access;
pub use assets::ICON_SVG;
pub use error::ApiError;

use crate::{access::Guard, journal::Feed, params::Params};

/// What the page reads from: the served roots and their index (the MCP
/// server's own). Both can be replaced while ferret runs (`ferret.toml`
/// changed): each request takes them once.
pub trait Source: Send + Sync + 'static {
    fn roots(&self) -> Arc<Roots>;
    fn index(&self) -> Index;
    /// Changes whenever the roots and index are replaced (the journal's
    /// feed then follows the new index).
    fn generation(&self) -> u64 {
        0
    }
    /// The settings ferret runs with and where each came from, shown
    /// read-only on the page (`null`: none to show).
    fn settings(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

#[derive(Debug, Clone, Default)]
pub struct WebOptions {
    /// Offer whole files for download (`--ui-downloads`); off, files are only
    /// previewed.
    pub downloads: bool,
}

/// The page and the JSON API. Cheap to clone.
#[derive(Clone)]
pub struct Web {
    inner: Arc<Inner>,
}

struct Inner {
    source: Arc<dyn Source>,
    options: WebOptions,
    guard: Guard,
    feed: Arc<Feed>,
    /// Cancelled when the server stops: event streams end, so that a graceful
    /// shutdown does not wait on them.
    stop: CancellationToken,
}

impl Web {
    pub fn new(
        source: Arc<dyn Source>,
        options: WebOptions,
        access: &Access,
        stop: CancellationToken,
    ) -> Web {
        let feed = Feed::new(source.clone());
        Web {
            inner: Arc::new(Inner {
                source,
                options,
                guard: Guard::new(access),
                feed,
                stop,
            }),
        }
    }

    /// `app` with the page in front of it.
    pub fn in_front_of(self, app: Router) -> Router {
        let front = Front {
            pages: routes(self.clone()),
            web: self,
        };
        app.layer(middleware::from_fn_with_state(front, front_door))
    }

    fn source(&self) -> Arc<dyn Source> {
        self.inner.source.clone()
    }

    /// Sign a browser in with `token` (the startup URL's, or the page's form):
    /// the cookie, and back to the page (with `#wrong-token` when it is not).
    fn sign_in(&self, token: &str) -> Response {
        let guard = &self.inner.guard;
        if !guard.needs_token() {
            return Redirect::to("/").into_response();
        }
        if !guard.accepts(token) {
            tracing::info!("page: a sign-in with a wrong token was refused");
            return Redirect::to("/#wrong-token").into_response();
        }
        let mut response = Redirect::to("/").into_response();
        response
            .headers_mut()
            .insert(header::SET_COOKIE, guard.session_cookie());
        response
    }
}

/// Where browsers reach the page: the bound address on loopback; on an
/// exposed bind (`0.0.0.0`, a LAN address) the first allowed Host name, with
/// the bound port unless the name carries one.
pub fn page_base(local: std::net::SocketAddr, allowed_hosts: &[String]) -> String {
    match allowed_hosts.first() {
        Some(host) if !local.ip().is_loopback() => {
            let has_port = host
                .parse::<axum::http::uri::Authority>()
                .is_ok_and(|a| a.port_u16().is_some());
            if has_port {
                format!("http://{host}")
            } else {
                format!("http://{host}:{}", local.port())
            }
        }
        _ => format!("http://{local}"),
    }
}

/// The line `ferret serve` prints beside its MCP address: where the page is,
/// and (only on a terminal, as Jupyter does; never into a log) the URL that
/// signs a browser in with the token.
pub fn startup_line(base: &str, token: Option<&str>, on_terminal: bool) -> String {
    let base = base.trim_end_matches('/');
    match token.filter(|t| !t.is_empty()) {
        None => format!("ferret search page: {base}/"),
        Some(t) if on_terminal => format!(
            "ferret search page: {base}/?token={} (this link signs a browser in)",
            preview::encode(t)
        ),
        Some(_) => format!(
            "ferret search page: {base}/ (sign in once with {base}/?token=YOUR_TOKEN; the token is printed only on a terminal)"
        ),
    }
}

#[derive(Clone)]
struct Front {
    web: Web,
    pages: Router,
}

async fn front_door(State(front): State<Front>, request: Request, next: Next) -> Response {
    if !claims(&request) {
        return next.run(request).await;
    }
    let guard = &front.web.inner.guard;
    if let Err(e) = guard.check_host_and_origin(request.uri(), request.headers()) {
        return assets::secure(e.into_response());
    }
    if cross_site(&request) && is_api(&request) {
        tracing::warn!("page: refused an API request another site's page made");
        return assets::secure(
            ApiError::new(
                StatusCode::FORBIDDEN,
                "CROSS_SITE",
                "requests made by another site's pages are refused (Sec-Fetch-Site: cross-site)",
            )
            .hint("open the search page itself, or call the API from a script (which sends no Sec-Fetch-Site)")
            .into_response(),
        );
    }
    match front.pages.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Whether a request is the page's: `GET /` from a browser or a script (not
/// an MCP client opening its event stream), `/ui/…`, `/favicon.ico`.
fn claims(request: &Request) -> bool {
    let path = request.uri().path();
    if path == "/ui" || path.starts_with("/ui/") || path == "/favicon.ico" {
        return true;
    }
    path == "/"
        && matches!(*request.method(), Method::GET | Method::HEAD)
        && !mcp_stream(request.headers())
}

/// Whether a browser says another site's page made the request: an `<img>`,
/// a form or a script there (a GET without Origin gets past the Origin
/// check, and `--no-token` leaves nothing else).
fn cross_site(request: &Request) -> bool {
    request
        .headers()
        .get_all("sec-fetch-site")
        .iter()
        .any(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site"))
}

/// The page's API: `/ui/api/…`, the sign-in form, and `/` with a query
/// (Everything's JSON, a sign-in link): everything but the page and its files,
/// which another site may link to.
fn is_api(request: &Request) -> bool {
    let path = request.uri().path();
    path.starts_with("/ui/api/")
        || path == "/ui/login"
        || (path == "/" && request.uri().query().is_some_and(|q| !q.is_empty()))
}

/// An MCP client's `GET`: it asks for an event stream, or belongs to a session.
fn mcp_stream(headers: &HeaderMap) -> bool {
    headers.contains_key("mcp-session-id")
        || headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("text/event-stream"))
}

fn routes(web: Web) -> Router {
    let api = Router::new()
        .route("/status", get(api::status))
        .route("/settings", get(api::settings))
        .route("/search", get(api::search))
        .route("/preview", get(api::preview))
        .route("/image", get(api::image))
        .route("/download", get(api::download))
        .route("/grep", get(api::grep))
        .route("/events", get(api::events))
        .route_layer(middleware::from_fn_with_state(web.clone(), require_token))
        .route_layer(middleware::from_fn(log_request));
    Router::new()
        .route("/", get(root))
        .route("/ui", get(|| async { assets::serve("index.html") }))
        .route("/ui/login", post(login))
        .route(
            "/ui/{file}",
            get(
                |axum::extract::Path(file): axum::extract::Path<String>| async move {
                    assets::serve(&file)
                },
            ),
        )
        .route("/favicon.ico", get(|| async { assets::serve("icon.svg") }))
        .nest("/ui/api", api)
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", "no such page")
                .hint("the search page is at /")
        })
        .layer(middleware::map_response(|r: Response| async {
            assets::secure(r)
        }))
        .with_state(web)
}

/// `GET /`: the page, Everything's JSON (`json=1`), or a sign-in
/// (`?token=…`).
async fn root(State(web): State<Web>, uri: Uri, headers: HeaderMap) -> Response {
    let params = Params::parse(uri.query());
    if let Some(token) = params.get(&["token"]) {
        return web.sign_in(token);
    }
    match everything::asks_for_json(&params) {
        Err(e) => e.into_response(),
        Ok(false) => assets::serve("index.html"),
        Ok(true) => everything_json(&web, &params, &headers)
            .await
            .unwrap_or_else(|e| e.into_response()),
    }
}

async fn everything_json(
    web: &Web,
    params: &Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    if !web.inner.guard.authorized(headers) {
        return Ok(access::challenge(Guard::unauthorized().into_response()));
    }
    let (spec, columns) = everything::parse(params)?;
    let outcome = search::run(web.source(), spec).await?.outcome;
    let body = everything::answer(&web.inner.source.roots(), &outcome, columns);
    Ok(assets::no_store(Json(body).into_response()))
}

/// `POST /ui/login` from the page's form (`token=…`).
async fn login(State(web): State<Web>, body: Bytes) -> Response {
    let token = form_urlencoded::parse(&body)
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    web.sign_in(&token)
}

async fn require_token(State(web): State<Web>, request: Request, next: Next) -> Response {
    if web.inner.guard.authorized(request.headers()) {
        return next.run(request).await;
    }
    access::challenge(Guard::unauthorized().into_response())
}

/// One debug line per API request: the route and the outcome, never the query
/// string (it holds what the user searched for and the paths opened).
async fn log_request(request: Request, next: Next) -> Response {
    // Only on the API's matched routes, whose paths are fixed words.
    let route = request.uri().path().to_string();
    let method = request.method().clone();
    let started = Instant::now();
    let response = next.run(request).await;
    tracing::debug!(
        %method,
        route = %route,
        status = response.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
        "page request"
    );
    response
}

/// `HeaderValue` for a `Content-Disposition: attachment` of `name`.
fn attachment(name: &str) -> HeaderValue {
    let encoded = preview::encode(name).replace('+', "%20");
    HeaderValue::from_str(&format!("attachment; filename*=UTF-8''{encoded}"))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment"))
}

#[cfg(test)]
mod tests;
