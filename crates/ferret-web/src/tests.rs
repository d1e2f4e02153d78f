//! The page's routes end to end in-process: a real tree on disk, real roots
//! and index, requests through the same router `ferret serve` mounts.

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    body::{Body, to_bytes},
    http::{Request, StatusCode, header},
    response::Response,
    routing::any,
};
use ferret_fs::{Policy, Roots};
use ferret_index::{Action, Change, Index, IndexConfig, IndexRoot};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use super::*;

const SECRET: &str = "API_KEY=never-shown";

struct Tree {
    roots: Arc<Roots>,
    index: Index,
}

impl Source for Tree {
    fn roots(&self) -> Arc<Roots> {
        self.roots.clone()
    }
    fn index(&self) -> Index {
        self.index.clone()
    }
}

fn png() -> Vec<u8> {
    // A 1×1 PNG.
    let hex = "89504e470d0a1a0a0000000d4948445200000001000000010806000000\
1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082";
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

struct Fixture {
    _dir: tempfile::TempDir,
    app: Router,
    index: Index,
}

fn fixture(token: Option<&str>, downloads: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, data: &[u8]| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    };
    w(
        "src/main.rs",
        b"fn main() {\n    println!(\"hello main\");\n}\n",
    );
    w("src/lib.rs", b"pub fn add() {}\n");
    w(
        "docs/report.md",
        "# Report\n\nnaïve café report\n".repeat(3).as_bytes(),
    );
    w("docs/big.bin", &[0u8; 3000]);
    w("img/dot.png", &png());
    w(".env", SECRET.as_bytes());
    let roots = Roots::open(
        &[dir.path().to_str().unwrap().parse().unwrap()],
        Policy {
            hidden: true,
            ..Policy::default()
        },
    )
    .unwrap();
    let r = &roots.roots()[0];
    let mut config = IndexConfig::new(vec![IndexRoot {
        name: r.name.clone(),
        path: r.path.clone(),
        walk_path: r.handle_path(),
    }]);
    config.rules.hidden = true;
    config.watch = false;
    let index = Index::open(config).unwrap();
    index.build_now(None);
    let source = Arc::new(Tree {
        roots: Arc::new(roots),
        index: index.clone(),
    });
    let access = Access {
        hosts: vec!["127.0.0.1".into(), "localhost".into()],
        origins: vec!["http://localhost:*".into()],
        token: token.map(str::to_string),
    };
    // What MCP would answer: everything the page does not claim.
    let mcp = Router::new()
        .route("/", any(|| async { "mcp" }))
        .route("/mcp", any(|| async { "mcp" }));
    let app = Web::new(
        source,
        WebOptions { downloads },
        &access,
        CancellationToken::new(),
    )
    .in_front_of(mcp);
    Fixture {
        _dir: dir,
        app,
        index,
    }
}

async fn send(app: &Router, method: &str, uri: &str, headers: &[(&str, &str)]) -> Response {
    let mut b = Request::builder().method(method).uri(uri);
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        b = b.header(header::HOST, "127.0.0.1:8031");
    }
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    app.clone()
        .oneshot(b.body(Body::empty()).unwrap())
        .await
        .unwrap()
}

async fn get(app: &Router, uri: &str) -> Response {
    send(app, "GET", uri, &[]).await
}

async fn body(r: Response) -> String {
    String::from_utf8(to_bytes(r.into_body(), usize::MAX).await.unwrap().to_vec()).unwrap()
}

async fn json(r: Response) -> Value {
    serde_json::from_str(&body(r).await).unwrap()
}

#[tokio::test]
async fn browsers_get_the_page_and_mcp_keeps_the_rest() {
    let f = fixture(None, false);
    let page = get(&f.app, "/").await;
    assert_eq!(page.status(), StatusCode::OK);
    let csp = page.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"));
    assert!(body(page).await.contains("<title>ferret</title>"));
    let stream = send(&f.app, "GET", "/", &[("accept", "text/event-stream")]).await;
    assert_eq!(
        body(stream).await,
        "mcp",
        "an MCP client's GET stream is MCP's"
    );
    assert_eq!(body(send(&f.app, "POST", "/", &[]).await).await, "mcp");
    assert_eq!(body(get(&f.app, "/mcp").await).await, "mcp");
    let js = get(&f.app, "/ui/app.js").await;
    assert_eq!(
        js.headers()[header::CONTENT_TYPE],
        "text/javascript; charset=utf-8"
    );
    assert_eq!(
        get(&f.app, "/ui/nothing.js").await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn everything_json_has_its_shape_and_formats() {
    let f = fixture(None, false);
    let v = json(
        get(
            &f.app,
            "/?search=main&json=1&path_column=1&size_column=1&date_modified_column=1",
        )
        .await,
    )
    .await;
    assert_eq!(v["totalResults"], 1);
    let row = &v["results"][0];
    assert_eq!(row["type"], "file");
    assert_eq!(row["name"], "main.rs");
    assert!(row["path"].as_str().unwrap().ends_with("/src"), "{row}");
    assert_eq!(row["size"], "42");
    let ticks: u64 = row["date_modified"].as_str().unwrap().parse().unwrap();
    let now = (chrono::Utc::now().timestamp() as u64 + 11_644_473_600) * 10_000_000;
    assert!(
        ticks <= now && now - ticks < 3600 * 10_000_000,
        "FILETIME {ticks}, now {now}"
    );

    // Sorted by size, largest first; paged.
    let v = json(
        get(
            &f.app,
            "/?s=file:&j=1&sort=size&ascending=0&c=2&size_column=1",
        )
        .await,
    )
    .await;
    assert_eq!(v["totalResults"], 6);
    let names: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["big.bin", "report.md"]);
    let v = json(get(&f.app, "/?s=file:&j=1&sort=size&ascending=0&c=2&o=2").await).await;
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
    assert!(v["results"][0].get("size").is_none(), "no column, no field");

    let bad = get(&f.app, "/?search=x&json=1&sort=run_count").await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert!(
        json(bad).await["error"]["message"]
            .as_str()
            .unwrap()
            .contains("date_modified")
    );
    let bad = get(&f.app, "/?search=size:%3E1zb&json=1").await;
    assert_eq!(json(bad).await["error"]["code"], "BAD_QUERY");
    // Without json=1 a search link opens the page.
    assert!(
        body(get(&f.app, "/?search=main").await)
            .await
            .contains("<html")
    );
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused() {
    let f = fixture(None, false);
    for uri in ["/", "/?search=&json=1", "/ui/api/search?q=", "/ui/app.js"] {
        let r = send(&f.app, "GET", uri, &[("host", "evil.example:8031")]).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{uri}");
        assert_eq!(json(r).await["error"]["code"], "FORBIDDEN_HOST");
        let r = send(&f.app, "GET", uri, &[("origin", "http://evil.example")]).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{uri}");
    }
    let own = send(
        &f.app,
        "GET",
        "/ui/api/search?q=",
        &[("origin", "http://127.0.0.1:8031")],
    )
    .await;
    assert_eq!(own.status(), StatusCode::OK);
    let listed = send(
        &f.app,
        "GET",
        "/ui/api/search?q=",
        &[("origin", "http://localhost:9999")],
    )
    .await;
    assert_eq!(listed.status(), StatusCode::OK);
}

/// Another site's `<img src>` or form reaches no API route, even with no
/// token and no Origin; links to the page itself still open it.
#[tokio::test]
async fn cross_site_requests_reach_no_api_route() {
    let f = fixture(None, false);
    let cross = [("sec-fetch-site", "cross-site")];
    for uri in [
        "/?search=main&json=1",
        "/ui/api/search?q=main",
        "/ui/api/status",
        "/ui/api/grep?q=main",
        "/?token=x",
    ] {
        let r = send(&f.app, "GET", uri, &cross).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{uri}");
        assert_eq!(json(r).await["error"]["code"], "CROSS_SITE", "{uri}");
    }
    let r = send(&f.app, "POST", "/ui/login", &cross).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    for uri in ["/", "/ui/app.js", "/favicon.ico"] {
        let r = send(&f.app, "GET", uri, &cross).await;
        assert_eq!(r.status(), StatusCode::OK, "{uri}");
    }
    for site in ["same-origin", "same-site", "none"] {
        let r = send(
            &f.app,
            "GET",
            "/ui/api/search?q=main",
            &[("sec-fetch-site", site)],
        )
        .await;
        assert_eq!(r.status(), StatusCode::OK, "{site}");
    }
}

#[tokio::test]
async fn a_token_is_asked_for_and_kept_in_a_cookie() {
    let f = fixture(Some("t0ken"), false);
    assert_eq!(
        get(&f.app, "/").await.status(),
        StatusCode::OK,
        "the page itself holds no data"
    );
    let r = get(&f.app, "/ui/api/search?q=").await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(r.headers()[header::WWW_AUTHENTICATE], "Bearer");
    assert_eq!(
        get(&f.app, "/?search=&json=1").await.status(),
        StatusCode::UNAUTHORIZED
    );
    let bearer = send(
        &f.app,
        "GET",
        "/?search=main&json=1",
        &[("authorization", "Bearer t0ken")],
    )
    .await;
    assert_eq!(json(bearer).await["totalResults"], 1);

    let wrong = get(&f.app, "/?token=nope").await;
    assert_eq!(wrong.headers()[header::LOCATION], "/#wrong-token");
    assert!(wrong.headers().get(header::SET_COOKIE).is_none());
    let signed = get(&f.app, "/?token=t0ken").await;
    assert_eq!(signed.status(), StatusCode::SEE_OTHER);
    assert_eq!(signed.headers()[header::LOCATION], "/");
    let cookie = signed.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict")
            && !cookie.contains("t0ken")
    );
    let pair = cookie.split(';').next().unwrap();
    let r = send(&f.app, "GET", "/ui/api/search?q=main", &[("cookie", pair)]).await;
    assert_eq!(json(r).await["total"], 1);

    let form = Request::builder()
        .method("POST")
        .uri("/ui/login")
        .header(header::HOST, "127.0.0.1:8031")
        .header(header::ORIGIN, "http://127.0.0.1:8031")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from("token=t0ken"))
        .unwrap();
    let r = f.app.clone().oneshot(form).await.unwrap();
    assert_eq!(r.headers()[header::SET_COOKIE].to_str().unwrap(), cookie);
    let csrf = Request::builder()
        .method("POST")
        .uri("/ui/login")
        .header(header::HOST, "127.0.0.1:8031")
        .header(header::ORIGIN, "http://evil.example")
        .body(Body::from("token=t0ken"))
        .unwrap();
    assert_eq!(
        f.app.clone().oneshot(csrf).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn the_page_search_sorts_pages_and_marks_names() {
    let f = fixture(None, false);
    let v = json(get(&f.app, "/ui/api/search?q=report").await).await;
    assert_eq!(v["total"], 1);
    let row = &v["results"][0];
    assert_eq!(
        (
            row["path"].as_str(),
            row["name"].as_str(),
            row["dir"].as_str()
        ),
        (Some("docs/report.md"), Some("report.md"), Some("docs"))
    );
    assert_eq!(row["nm"], serde_json::json!([[0, 6]]));
    assert!(row["abs"].as_str().unwrap().ends_with("/docs/report.md"));
    let v = json(
        get(
            &f.app,
            "/ui/api/search?q=file:&sort=size&desc=1&limit=1&offset=1",
        )
        .await,
    )
    .await;
    assert_eq!(
        (v["total"].as_u64(), v["results"][0]["name"].as_str()),
        (Some(6), Some("report.md"))
    );
    let bad = get(&f.app, "/ui/api/search?q=&limit=5000").await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    // Fuzzy: a guess finds the file, best fit first, filters still apply.
    let fuzzy = json(get(&f.app, "/ui/api/search?q=rprt&fuzzy=1").await).await;
    assert_eq!(
        fuzzy["results"][0]["name"].as_str(),
        Some("report.md"),
        "{fuzzy}"
    );
    let none = json(get(&f.app, "/ui/api/search?q=rprt%20ext:zzz&fuzzy=1").await).await;
    assert_eq!(none["total"].as_u64(), Some(0), "{none}");
    // Asked to (`fallback`), a plain query no name holds answers with its
    // fuzzy matches, and says so; one some name holds answers as asked.
    let exact = json(get(&f.app, "/ui/api/search?q=rprt").await).await;
    assert_eq!(exact["total"].as_u64(), Some(0), "{exact}");
    let guessed = json(get(&f.app, "/ui/api/search?q=rprt&fallback=1").await).await;
    assert_eq!(
        (
            guessed["results"][0]["name"].as_str(),
            guessed["fuzzy_fallback"].as_bool()
        ),
        (Some("report.md"), Some(true)),
        "{guessed}"
    );
    let plain = json(get(&f.app, "/ui/api/search?q=report&fallback=1").await).await;
    assert_eq!(plain["fuzzy_fallback"].as_bool(), Some(false), "{plain}");
    // Not with a switch that asks for the words as typed, nor in
    // Everything's API, which answers exactly what was asked.
    for asked in [
        "q=rprt&fallback=1&case=1",
        "q=rprt&fallback=1&ww=1",
        "q=rprt&fallback=1&regex=1",
    ] {
        let v = json(get(&f.app, &format!("/ui/api/search?{asked}")).await).await;
        assert_eq!(v["total"].as_u64(), Some(0), "{asked}: {v}");
    }
    let everything = json(get(&f.app, "/?search=rprt&json=1").await).await;
    assert_eq!(everything["totalResults"].as_u64(), Some(0), "{everything}");
    // Fuzzy letters match in either case and inside words: the switches
    // saying otherwise are refused, not ignored.
    for switch in ["case", "ww"] {
        let refused = get(&f.app, &format!("/ui/api/search?q=rprt&fuzzy=1&{switch}=1")).await;
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{switch}");
    }
}

#[tokio::test]
async fn previews_mark_text_show_images_describe_binaries_list_folders() {
    let f = fixture(None, false);
    let v = json(get(&f.app, "/ui/api/preview?path=src/main.rs&q=main").await).await;
    assert_eq!(v["kind"], "text");
    assert_eq!(
        v["lines"][1],
        serde_json::json!({"n": 2, "t": "    println!(\"hello main\");", "m": [[20, 24]]})
    );
    assert_eq!(v["matches"], 2);
    let v = json(
        get(
            &f.app,
            "/ui/api/preview?path=docs/report.md&grep=caf%C3%A9&line=2",
        )
        .await,
    )
    .await;
    assert_eq!(v["start_line"], 2);
    assert_eq!(
        v["lines"][1]["m"],
        serde_json::json!([[6, 10]]),
        "UTF-16 offsets: {}",
        v["lines"][1]
    );

    let v = json(get(&f.app, "/ui/api/preview?path=img/dot.png").await).await;
    assert_eq!(
        (v["kind"].as_str(), v["width"].as_u64()),
        (Some("image"), Some(1))
    );
    let img = get(&f.app, v["src"].as_str().unwrap()).await;
    assert_eq!(img.headers()[header::CONTENT_TYPE], "image/png");
    assert_eq!(
        to_bytes(img.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec(),
        png()
    );

    let v = json(get(&f.app, "/ui/api/preview?path=docs/big.bin").await).await;
    assert_eq!(
        (v["kind"].as_str(), v["size"].as_u64()),
        (Some("binary"), Some(3000))
    );
    let v = json(get(&f.app, "/ui/api/preview?path=docs").await).await;
    assert_eq!(v["kind"], "folder");
    let names: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["big.bin", "report.md"]);

    for uri in [
        "/ui/api/preview?path=.env",
        "/ui/api/image?path=.env",
        "/ui/api/preview?path=../etc/passwd",
    ] {
        let r = get(&f.app, uri).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{uri}");
        let text = body(r).await;
        assert!(
            !text.contains(SECRET) && !text.contains("root:"),
            "{uri}: {text}"
        );
    }
    assert_eq!(
        get(&f.app, "/ui/api/preview?path=nope.txt").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&f.app, "/ui/api/preview").await.status(),
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn downloads_only_when_the_operator_allows_them() {
    let off = fixture(None, false);
    let r = get(&off.app, "/ui/api/download?path=src/main.rs").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(
        json(r).await["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--ui-downloads")
    );
    let v = json(get(&off.app, "/ui/api/preview?path=src/main.rs").await).await;
    assert!(v["download"].is_null());

    let on = fixture(None, true);
    let r = get(&on.app, "/ui/api/download?path=src/main.rs").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        r.headers()[header::CONTENT_DISPOSITION],
        "attachment; filename*=UTF-8''main.rs"
    );
    assert!(body(r).await.starts_with("fn main()"));
    let r = get(&on.app, "/ui/api/download?path=.env").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(!body(r).await.contains(SECRET));
}

#[tokio::test]
async fn grep_finds_lines_with_context_and_marks() {
    let f = fixture(None, false);
    let v = json(get(&f.app, "/ui/api/grep?pattern=HELLO&filter=ext:rs&context=1").await).await;
    assert_eq!(v["total"], 1);
    let file = &v["files"][0];
    assert_eq!(file["path"], "src/main.rs");
    let lines = file["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 3, "the match and a line each side: {lines:?}");
    assert_eq!(
        (lines[0]["c"].as_bool(), lines[1]["m"].clone()),
        (Some(true), serde_json::json!([[14, 19]]))
    );
    let v = json(get(&f.app, "/ui/api/grep?pattern=HELLO&case=1").await).await;
    assert_eq!(v["total"], 0, "case=1 matches case");
    let v = json(get(&f.app, "/ui/api/grep?pattern=API_KEY").await).await;
    assert_eq!(v["total"], 0, "secrets are not searched");
    assert!(v["skipped"]["sensitive"].as_u64().unwrap() >= 1);
    let bad = get(&f.app, "/ui/api/grep?pattern=(").await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_journal_streams_changes_as_they_are_recorded() {
    let f = fixture(None, false);
    let r = get(&f.app, "/ui/api/events?action=created").await;
    assert_eq!(r.headers()[header::CONTENT_TYPE], "text/event-stream");
    let mut stream = r.into_body().into_data_stream();
    let mut seen = String::new();
    // The first status event arrives before any change.
    while !seen.contains("event: status") {
        seen.push_str(&next_chunk(&mut stream).await.expect("a status event"));
    }
    let now = chrono::Utc::now().timestamp_millis();
    let change = move |action, path: &str| Change {
        action,
        path: path.into(),
        old_path: None,
        kind: ferret_query::Kind::File,
        at_ms: now,
        by: "external",
    };
    let index = f.index.clone();
    tokio::task::spawn_blocking(move || {
        // Let the stream's follower register with the index first.
        std::thread::sleep(Duration::from_millis(150));
        index.record(&[
            change(Action::Modified, "src/lib.rs"),
            change(Action::Created, "notes.txt"),
        ]);
    });
    while !seen.contains("notes.txt") {
        seen.push_str(&next_chunk(&mut stream).await.expect("the change"));
    }
    assert!(seen.contains("event: change") && seen.contains(&format!("id: {now}")));
    assert!(
        !seen.contains("src/lib.rs"),
        "filtered out by action=created: {seen}"
    );
    let bad = get(&f.app, "/ui/api/events?action=exploded").await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
}

/// The next chunk of a body stream, as text; `None` after 5 s.
async fn next_chunk(stream: &mut axum::body::BodyDataStream) -> Option<String> {
    use tokio_stream::StreamExt as _;
    match tokio::time::timeout(Duration::from_secs(5), stream.next()).await {
        Ok(Some(Ok(bytes))) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => None,
    }
}

#[test]
fn the_startup_line_carries_the_token_only_on_a_terminal() {
    assert_eq!(
        startup_line("http://127.0.0.1:8031", None, true),
        "ferret search page: http://127.0.0.1:8031/"
    );
    let on = startup_line("http://127.0.0.1:8031/", Some("a b&c"), true);
    assert!(on.contains("http://127.0.0.1:8031/?token=a+b%26c"), "{on}");
    let off = startup_line("http://127.0.0.1:8031", Some("a b&c"), false);
    assert!(
        !off.contains("a b") && off.contains("?token=YOUR_TOKEN"),
        "{off}"
    );
}

#[test]
fn the_page_is_announced_by_the_name_browsers_use() {
    let lo = "127.0.0.1:8031".parse().unwrap();
    assert_eq!(page_base(lo, &[]), "http://127.0.0.1:8031");
    let any = "0.0.0.0:8031".parse().unwrap();
    assert_eq!(
        page_base(any, &["files.lan".into()]),
        "http://files.lan:8031"
    );
    assert_eq!(
        page_base(any, &["files.lan:443".into()]),
        "http://files.lan:443"
    );
}
