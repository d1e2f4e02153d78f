//! Streamable HTTP: rmcp's service mounted in axum at `/mcp` and `/`, with
//! `/health`, DNS-rebinding checks (Host and Origin, `/health` included), a
//! body limit, and the bearer token on every MCP request whenever one is
//! configured (the binary configures one by default; it is required whenever
//! the bind address is not loopback). `/health` needs no token, so probes and
//! load balancers can call it, and says nothing about the files. Unless `ui` is
//! `None`, the search page and Everything's JSON API (`ferret-web`) answer
//! browsers' and scripts' `GET /` in front of MCP, with the same Host and
//! Origin lists and token.
//!
//! Stateless by default: no `Mcp-Session-Id`, so any replica can answer any
//! request. `sessions: true` gives handshake-era clients a session (needed for
//! what outlives one request in that era: `resources/subscribe`,
//! `logging/setLevel`, asking the user with `elicitation/create`); 2026-07-28
//! requests are stateless either way.
//!
//! The router is generic over the handler so that the conformance fixture
//! (`examples/conformance_fixture.rs`) is served by exactly the same layer.

use std::{net::SocketAddr, sync::Arc};

use axum::{
    Router,
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
};
use rmcp::{
    ServerHandler,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
        session::{SessionManager, local::LocalSessionManager, never::NeverSessionManager},
    },
};

use ferret_web::access::Guard;

use crate::Ferret;

pub use ferret_web::WebOptions;

#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub bind: SocketAddr,
    /// Extra Host names to accept (required for a non-loopback bind).
    pub allowed_hosts: Vec<String>,
    /// Extra browser origins to accept, e.g. `https://app.example:443`.
    pub allowed_origins: Vec<String>,
    /// Bearer token every MCP request must carry; `None`: none (`--no-token`,
    /// loopback only).
    pub token: Option<String>,
    pub max_request_bytes: usize,
    /// Give handshake-era clients a session (`Mcp-Session-Id`).
    pub sessions: bool,
    /// The search page and Everything's JSON API at `GET /`; `None`: off (`--no-ui`).
    pub ui: Option<WebOptions>,
}

const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

impl HttpOptions {
    /// Refuse configurations that would expose files without protection.
    pub fn check(&self) -> Result<(), String> {
        if self.bind.ip().is_loopback() {
            return Ok(());
        }
        if self.allowed_hosts.is_empty() {
            return Err(format!(
                "binding {} (not loopback) needs --allowed-host NAME for each name clients use to reach it (FERRET_ALLOWED_HOSTS)",
                self.bind
            ));
        }
        if self.token.as_deref().is_none_or(str::is_empty) {
            return Err(format!(
                "binding {} (not loopback) needs a bearer token: drop --no-token (FERRET_NO_TOKEN), which is for loopback only",
                self.bind
            ));
        }
        Ok(())
    }

    /// The Host names and browser origins accepted: the configured ones, plus
    /// the loopback ones for a loopback bind.
    fn hosts_and_origins(&self) -> (Vec<String>, Vec<String>) {
        let mut hosts: Vec<String> = self.allowed_hosts.clone();
        let mut origins: Vec<String> = self.allowed_origins.clone();
        if self.bind.ip().is_loopback() {
            hosts.extend(LOOPBACK_HOSTS.iter().map(|h| h.to_string()));
            origins.extend(LOOPBACK_ORIGINS.iter().map(|o| o.to_string()));
        }
        (hosts, origins)
    }

    /// The Host, Origin and token rules, as the page applies them (its
    /// checker is used for `/health` and the token, since rmcp's is private).
    fn access(&self) -> ferret_web::Access {
        let (hosts, origins) = self.hosts_and_origins();
        ferret_web::Access {
            hosts,
            origins,
            token: self.token.clone(),
        }
    }

    fn guard(&self) -> Guard {
        Guard::new(&self.access())
    }

    /// rmcp's own Host and Origin checks are off: its parser takes a
    /// malformed Host or Origin (userinfo, a non-numeric port, a path) for the
    /// name in it, and the first of two Host headers. [`check_host_and_origin`]
    /// applies the page's strict rules (`ferret_web::access`) to every MCP
    /// request instead, so MCP and the page answer alike.
    fn config(&self) -> StreamableHttpServerConfig {
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(self.sessions)
            .with_json_response(true)
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(self.max_request_bytes)
    }
}

/// The MCP routes (`/mcp` and `/`) for handlers made by `make_handler` (called
/// once per session, or once per request when stateless), behind the token check.
pub fn mcp_router<S, F>(make_handler: F, options: &HttpOptions) -> Router
where
    S: ServerHandler,
    F: Fn() -> S + Send + Sync + 'static,
{
    let factory = move || Ok(make_handler());
    let mut app = if options.sessions {
        mount(StreamableHttpService::new(
            factory,
            Arc::new(LocalSessionManager::default()),
            options.config(),
        ))
    } else {
        mount(StreamableHttpService::new(
            factory,
            Arc::new(NeverSessionManager::default()),
            options.config(),
        ))
    };
    app = app
        .layer(middleware::map_response(crate::removed::explain_http))
        .layer(middleware::map_response(session_ended));
    let guard = Arc::new(options.guard());
    if options.token.as_deref().is_some_and(|t| !t.is_empty()) {
        app = app.layer(middleware::from_fn_with_state(guard.clone(), require_token));
    }
    // Outermost: a foreign or malformed Host or Origin is refused before
    // anything else is looked at.
    app.layer(middleware::from_fn_with_state(guard, check_host_and_origin))
}

/// The page's Host and Origin rules (one function for every route): a
/// foreign Host (DNS rebinding) or Origin (another site's page) is 403, a
/// malformed or doubled Host 400.
async fn check_host_and_origin(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    match guard.check_host_and_origin(request.uri(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refused) => refused.into_response(),
    }
}

/// The same service at `/mcp` and at `/`.
fn mount<S, M>(mcp: StreamableHttpService<S, M>) -> Router
where
    S: ServerHandler,
    M: SessionManager,
{
    Router::new()
        .route_service("/mcp", mcp.clone())
        .route_service("/", mcp)
}

/// What the page reads from: what the server serves now (replaced when the
/// operator's settings change), and the settings themselves.
struct PageSource {
    server: Ferret,
}

impl ferret_web::Source for PageSource {
    fn roots(&self) -> Arc<ferret_fs::Roots> {
        self.server.roots()
    }
    fn index(&self) -> ferret_index::Index {
        self.server.index()
    }
    fn generation(&self) -> u64 {
        self.server.generation()
    }
    fn settings(&self) -> serde_json::Value {
        serde_json::to_value(self.server.settings()).unwrap_or_default()
    }
}

/// ferret's application: MCP at `/mcp` and `/`, the page in front of it,
/// probes at `/health`.
pub fn router(server: Ferret, options: &HttpOptions) -> Router {
    let factory_server = server.clone();
    let mut app = mcp_router(move || factory_server.for_new_connection(), options);
    if let Some(ui) = &options.ui {
        let access = options.access();
        let stop = server.inner.shutdown.clone();
        app = ferret_web::Web::new(
            Arc::new(PageSource {
                server: server.clone(),
            }),
            ui.clone(),
            &access,
            stop,
        )
        .in_front_of(app);
    }
    let guard = Arc::new(options.guard());
    app.route(
        "/health",
        get(
            move |uri: axum::http::Uri, headers: axum::http::HeaderMap| {
                // A foreign Host or Origin is refused here as everywhere (DNS rebinding).
                let checked = guard.check_host_and_origin(&uri, &headers);
                async move {
                    match checked {
                        Err(refused) => refused.into_response(),
                        // That ferret is up, and nothing more: no token is
                        // asked, so neither its version nor its roots.
                        Ok(()) => axum::Json(serde_json::json!({
                            "status": "ok",
                            "name": "ferret",
                        }))
                        .into_response(),
                    }
                }
            },
        ),
    )
}

/// A session ended by `DELETE` answers 204: rmcp says 202 Accepted, which
/// clients read as a failed termination (the Python SDK logs "Session
/// termination failed: 202"); the session is gone once the answer is sent.
async fn session_ended(method: axum::http::Method, mut response: Response) -> Response {
    if method == axum::http::Method::DELETE && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
        *response.body_mut() = axum::body::Body::empty();
    }
    response
}

async fn require_token(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    // Hashes compared, so the time taken says nothing about the token.
    if guard.accepts_bearer(request.headers()) {
        return next.run(request).await;
    }
    tracing::info!("http: refused an MCP request without the right bearer token");
    let mut response = (
        StatusCode::UNAUTHORIZED,
        "missing or wrong bearer token: send \"Authorization: Bearer TOKEN\"; `ferret token` (with serve's --state-dir) prints it\n",
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// Serve ferret until `shutdown` resolves.
pub async fn serve_http(
    server: Ferret,
    options: HttpOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let app = router(server, &options);
    serve_router(app, &options, shutdown).await
}

/// Bind, say where (port 0 picks one), and serve `app` until `shutdown` resolves.
pub async fn serve_router(
    app: Router,
    options: &HttpOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    options.check().map_err(anyhow::Error::msg)?;
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot listen on {}: {e}; choose another address with --bind (FERRET_BIND) or stop the program using it",
                options.bind
            )
        })?;
    let local = listener.local_addr()?;
    tracing::info!("ferret listening on http://{local}/mcp");
    eprintln!("ferret {} listening on http://{local}/mcp", crate::VERSION);
    if options.ui.is_some() {
        // Not a log line: on a terminal it carries the token.
        use std::io::IsTerminal;
        let base = ferret_web::page_base(local, &options.allowed_hosts);
        let terminal = std::io::stderr().is_terminal();
        let line = ferret_web::startup_line(&base, options.token.as_deref(), terminal);
        eprintln!("{line}");
    }
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposed_binds_need_hosts_and_a_token() {
        let mut o = HttpOptions {
            bind: "0.0.0.0:8031".parse().unwrap(),
            allowed_hosts: vec![],
            allowed_origins: vec![],
            token: None,
            max_request_bytes: 1 << 20,
            sessions: false,
            ui: None,
        };
        assert!(o.check().unwrap_err().contains("--allowed-host"));
        o.allowed_hosts = vec!["files.lan".into()];
        assert!(o.check().unwrap_err().contains("--no-token"));
        o.token = Some("t0ken".into());
        assert!(o.check().is_ok());
        o.bind = "127.0.0.1:0".parse().unwrap();
        o.allowed_hosts.clear();
        o.token = None;
        assert!(o.check().is_ok());
    }
}
