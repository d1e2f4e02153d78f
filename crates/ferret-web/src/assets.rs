//! The page's files, embedded in the binary (hand-written HTML, CSS and
//! JavaScript: no build step, no CDN), and the headers every answer of the page
//! carries: a Content-Security-Policy that lets the page load and call only
//! itself, so no file content can be sent to another origin.

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");
/// ferret's icon (a magnifier over lines): the page's favicon, and the
/// icon MCP clients show for the server.
pub const ICON_SVG: &str = include_str!("../assets/icon.svg");

/// Scripts, styles, images and connections from this origin only; no inline
/// script or style, no frames, forms posting only here.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Every file of the page, with its type.
pub fn file(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "index.html" => (INDEX_HTML, "text/html; charset=utf-8"),
        "app.js" => (APP_JS, "text/javascript; charset=utf-8"),
        "app.css" => (APP_CSS, "text/css; charset=utf-8"),
        "icon.svg" => (ICON_SVG, "image/svg+xml"),
        _ => return None,
    })
}

/// A page file, or 404.
pub fn serve(name: &str) -> Response {
    match file(name) {
        Some((body, kind)) => {
            let mut r = (StatusCode::OK, body).into_response();
            let h = r.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
            // Small, and changed by every upgrade: revalidate rather than cache.
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            r
        }
        None => (StatusCode::NOT_FOUND, "no such file\n").into_response(),
    }
}

/// The headers of every answer of the page and the JSON API.
pub fn secure(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Not `no-referrer`: under it the browser sends `Origin: null` with the
    // sign-in form, which the Origin check must refuse.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    response
}

/// Answers built from files are never stored by the browser or a proxy.
pub fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_from_itself() {
        let (html, _) = file("index.html").unwrap();
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "no third-party URL"
        );
        assert!(
            !html.contains("<script>") && !html.contains("style="),
            "no inline script or style (CSP forbids them)"
        );
        for name in ["app.js", "app.css", "icon.svg"] {
            assert!(
                html.contains(&format!("/ui/{name}")),
                "index.html loads {name}"
            );
        }
        let (js, _) = file("app.js").unwrap();
        assert!(
            !js.contains("innerHTML"),
            "file text and names go in as text, never as HTML"
        );
        let total: usize = ["index.html", "app.js", "app.css", "icon.svg"]
            .iter()
            .map(|n| file(n).unwrap().0.len())
            .sum();
        assert!(
            total <= 150 * 1024,
            "the page is {total} bytes, over the 150 KB budget"
        );
    }
}
