//! Who may use the page and the JSON API: the Host and Origin rules MCP has
//! (so a page on another site, or a DNS-rebinding name, is refused), and the
//! same token.
//!
//! rmcp checks Host and Origin for the MCP routes but keeps its checker
//! private, so the same rules are applied here to the page's routes, read from
//! the same `--allowed-host` / `--allowed-origin` lists: a Host entry without a
//! port matches any port; an origin `scheme://host:*` any port, one without a
//! port any port, one with a port that port. The page's own origin (the
//! request's validated Host) is always allowed, since the page calls itself.
//!
//! Where a token is configured, a request carries it as `Authorization: Bearer
//! TOKEN` (scripts), as the password of HTTP Basic (Everything clients have a
//! user and password setting), or as the page's cookie: `HttpOnly`,
//! `SameSite=Strict`, holding a hash of the token rather than the token, set by
//! `/?token=TOKEN` (the URL ferret prints at startup) or by the page's form.

use axum::http::{
    HeaderMap, HeaderValue, StatusCode, Uri,
    header::{self, AUTHORIZATION, COOKIE, HOST, ORIGIN},
    uri::Authority,
};
use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// The lists and the secret, as `ferret serve` was given them.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Host names accepted (loopback names included for a loopback bind).
    pub hosts: Vec<String>,
    /// Browser origins accepted besides the page's own.
    pub origins: Vec<String>,
    pub token: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPort {
    host: String,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum AllowedOrigin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        /// `None`: any port (`:*`, or no port written).
        port: Option<u16>,
    },
}

pub struct Guard {
    hosts: Vec<HostPort>,
    origins: Vec<AllowedOrigin>,
    /// SHA-256 of the token: presented secrets are hashed and the hashes
    /// compared, so the comparison's timing says nothing about the token.
    token: Option<[u8; 32]>,
    cookie_name: String,
    cookie_value: String,
}

const COOKIE_MAX_AGE_SECS: u64 = 30 * 24 * 3600;

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `host[:port]`, strictly: a DNS name (letters, digits, `-`, `.`, `_`), an
/// IPv4 address or a bracketed IPv6 address, then nothing or `:` and a port
/// of digits. No userinfo (`a@host`), no path, no space, no empty part: what
/// is not exactly this is refused, never read as something else. The one
/// parser of Host headers, origins' hosts and the allowed lists, for MCP and
/// the page alike.
fn parse_host_port(text: &str) -> Option<HostPort> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        inside.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (inside.to_ascii_lowercase(), port)
    } else {
        let (host, port) = match text.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        };
        let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
        if host.is_empty() || !host.chars().all(name_char) {
            return None;
        }
        (host.to_ascii_lowercase(), port)
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse::<u16>().ok()?)
        }
        Some(_) => return None,
    };
    Some(HostPort { host, port })
}

/// An `--allowed-host` entry: [`parse_host_port`]'s form, or an IPv6
/// address written without brackets (`::1`).
fn parse_allowed_host(text: &str) -> Option<HostPort> {
    match text.parse::<std::net::Ipv6Addr>() {
        Ok(_) => Some(HostPort {
            host: text.to_ascii_lowercase(),
            port: None,
        }),
        Err(_) => parse_host_port(text),
    }
}

/// `scheme://host[:port]`, strictly (RFC 6454's serialised origin): a scheme,
/// `://`, [`parse_host_port`]'s authority, and nothing after it: no path, no
/// query, no userinfo.
fn parse_origin(text: &str) -> Option<(String, String, Option<u16>)> {
    let (scheme, authority) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return None;
    }
    let HostPort { host, port } = parse_host_port(authority)?;
    Some((scheme.to_ascii_lowercase(), host, port))
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

fn parse_allowed_origin(text: &str) -> Option<AllowedOrigin> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("null") {
        return Some(AllowedOrigin::Null);
    }
    let (base, any) = match text.strip_suffix(":*") {
        Some(base) => (base, true),
        None => (text, false),
    };
    let (scheme, host, port) = parse_origin(base)?;
    if any && port.is_some() {
        return None;
    }
    Some(AllowedOrigin::Tuple { scheme, host, port })
}

impl Guard {
    pub fn new(access: &Access) -> Guard {
        let token = access.token.as_deref().filter(|t| !t.is_empty());
        let seed = token.unwrap_or("");
        Guard {
            hosts: access
                .hosts
                .iter()
                .filter_map(|h| parse_allowed_host(h.trim()))
                .collect(),
            origins: access
                .origins
                .iter()
                .filter_map(|o| parse_allowed_origin(o))
                .collect(),
            token: token.map(|t| sha256(&[t.as_bytes()])),
            // Named after the token, so that two ferrets on one host (cookies
            // ignore ports) do not overwrite each other's.
            cookie_name: format!(
                "ferret_{}",
                &hex(&sha256(&[b"ferret-ui-cookie-name\n", seed.as_bytes()]))[..12]
            ),
            cookie_value: hex(&sha256(&[b"ferret-ui-session\n", seed.as_bytes()])),
        }
    }

    /// Refuse a foreign Host (DNS rebinding) or a foreign Origin (another
    /// site's page) with 403, a missing, doubled or malformed Host with 400.
    /// Both are parsed strictly (`parse_host_port`, `parse_origin`); an Origin
    /// that is not exactly `scheme://host[:port]` or `null` is foreign. The
    /// one rule for every route: the page's, Everything's, `/health` and MCP's.
    pub fn check_host_and_origin(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), ApiError> {
        let bad_host = || {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "BAD_HOST",
                "the request needs exactly one valid Host header",
            )
        };
        if headers.get_all(HOST).iter().count() > 1 {
            return Err(bad_host());
        }
        // The Host header, else (HTTP/2) the request's authority; either
        // parsed strictly, a malformed one refused rather than guessed at.
        let text = match headers.get(HOST) {
            Some(h) => h.to_str().ok(),
            None => uri.authority().map(Authority::as_str),
        };
        let host = text.and_then(parse_host_port).ok_or_else(bad_host)?;
        let known = self
            .hosts
            .iter()
            .any(|a| a.host == host.host && a.port.is_none_or(|p| host.port == Some(p)));
        if !known {
            tracing::warn!("http: refused a request for a Host that is not allowed");
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "FORBIDDEN_HOST",
                "this Host is not one ferret answers to (a DNS-rebinding guard)",
            )
            .hint("start ferret with --allowed-host NAME for each name browsers use to reach it"));
        }
        let mut origins = headers.get_all(ORIGIN).iter();
        let Some(origin) = origins.next() else {
            return Ok(());
        };
        if origins.next().is_none() && self.origin_allowed(origin.to_str().unwrap_or(""), &host) {
            return Ok(());
        }
        tracing::warn!("http: refused a request from an Origin that is not allowed");
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "FORBIDDEN_ORIGIN",
            "requests from another site's pages are refused",
        )
        .hint("start ferret with --allowed-origin SCHEME://HOST:PORT to trust that site"))
    }

    fn origin_allowed(&self, origin: &str, host: &HostPort) -> bool {
        if origin.eq_ignore_ascii_case("null") {
            return self.origins.contains(&AllowedOrigin::Null);
        }
        let Some((scheme, o_host, o_port)) = parse_origin(origin) else {
            return false;
        };
        let effective = o_port.or_else(|| default_port(&scheme));
        let own = o_host == host.host && effective == host.port.or_else(|| default_port(&scheme));
        own || self.origins.iter().any(|a| match a {
            AllowedOrigin::Null => false,
            AllowedOrigin::Tuple {
                scheme: s,
                host: h,
                port,
            } => *s == scheme && *h == o_host && port.is_none_or(|p| effective == Some(p)),
        })
    }

    pub fn needs_token(&self) -> bool {
        self.token.is_some()
    }

    /// Whether `presented` is the token.
    pub fn accepts(&self, presented: &str) -> bool {
        self.token
            .is_some_and(|t| sha256(&[presented.as_bytes()]) == t)
    }

    /// Whether the request's `Authorization: Bearer` header holds the token
    /// (MCP requests take no other form). False when no token is configured.
    pub fn accepts_bearer(&self, headers: &HeaderMap) -> bool {
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        presented.is_some_and(|p| self.accepts(p.trim()))
    }

    /// No token configured, or the request carries it (bearer, Basic password,
    /// or the page's cookie).
    pub fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(token) = self.token else {
            return true;
        };
        if let Some(auth) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) {
            if auth.starts_with("Bearer ") {
                return self.accepts_bearer(headers);
            }
            if let Some(basic) = auth.strip_prefix("Basic ") {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(basic.trim())
                    .unwrap_or_default();
                let text = String::from_utf8_lossy(&decoded);
                let password = text.split_once(':').map_or("", |(_, p)| p);
                return sha256(&[password.as_bytes()]) == token;
            }
        }
        headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .any(|(name, value)| {
                name == self.cookie_name
                    && sha256(&[value.as_bytes()]) == sha256(&[self.cookie_value.as_bytes()])
            })
    }

    /// The `Set-Cookie` value that signs a browser in.
    pub fn session_cookie(&self) -> HeaderValue {
        HeaderValue::from_str(&format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={COOKIE_MAX_AGE_SECS}",
            self.cookie_name, self.cookie_value
        ))
        .expect("the cookie is ASCII")
    }

    /// 401, with the ways in.
    pub fn unauthorized() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "this ferret needs its token",
        )
        .hint("open the URL ferret printed at startup (it carries ?token=…), or enter the token on the page; scripts send Authorization: Bearer TOKEN")
    }
}

/// `WWW-Authenticate: Bearer` on a 401 (not Basic: a browser would pop up its
/// own password dialog over the page).
pub fn challenge(mut response: axum::response::Response) -> axum::response::Response {
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(hosts: &[&str], origins: &[&str], token: Option<&str>) -> Guard {
        Guard::new(&Access {
            hosts: hosts.iter().map(|s| s.to_string()).collect(),
            origins: origins.iter().map(|s| s.to_string()).collect(),
            token: token.map(str::to_string),
        })
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn check(g: &Guard, pairs: &[(&'static str, &str)]) -> Result<(), &'static str> {
        g.check_host_and_origin(&Uri::from_static("/"), &headers(pairs))
            .map_err(|e| e.code)
    }

    #[test]
    fn hosts_are_matched_by_name_and_optional_port() {
        let g = guard(
            &["localhost", "127.0.0.1", "::1", "files.lan:8443"],
            &[],
            None,
        );
        assert_eq!(check(&g, &[("host", "127.0.0.1:8031")]), Ok(()));
        assert_eq!(check(&g, &[("host", "[::1]:8031")]), Ok(()));
        assert_eq!(check(&g, &[("host", "LOCALHOST")]), Ok(()));
        assert_eq!(check(&g, &[("host", "files.lan:8443")]), Ok(()));
        assert_eq!(
            check(&g, &[("host", "files.lan:80")]),
            Err("FORBIDDEN_HOST")
        );
        assert_eq!(
            check(&g, &[("host", "evil.example:8031")]),
            Err("FORBIDDEN_HOST")
        );
        assert_eq!(check(&g, &[]), Err("BAD_HOST"));
        assert_eq!(
            check(&g, &[("host", "127.0.0.1"), ("host", "evil.example")]),
            Err("BAD_HOST"),
            "two Host headers"
        );
    }

    #[test]
    fn the_pages_own_origin_and_listed_ones_pass() {
        let g = guard(
            &["127.0.0.1", "files.lan"],
            &["https://app.example:*", "http://tool.example:9000"],
            None,
        );
        let at = |origin: &str| check(&g, &[("host", "127.0.0.1:8031"), ("origin", origin)]);
        assert_eq!(at("http://127.0.0.1:8031"), Ok(()), "same origin");
        assert_eq!(
            at("http://127.0.0.1:9999"),
            Err("FORBIDDEN_ORIGIN"),
            "another port is another origin"
        );
        assert_eq!(at("http://evil.example"), Err("FORBIDDEN_ORIGIN"));
        assert_eq!(at("null"), Err("FORBIDDEN_ORIGIN"));
        assert_eq!(at("https://app.example:4443"), Ok(()));
        assert_eq!(at("http://tool.example:9000"), Ok(()));
        assert_eq!(at("http://tool.example:9001"), Err("FORBIDDEN_ORIGIN"));
        assert_eq!(
            check(&g, &[("host", "files.lan"), ("origin", "http://files.lan")]),
            Ok(()),
            "default ports on both sides"
        );
    }

    /// Every malformed form is refused, never read as the loopback name it
    /// holds: userinfo, a non-numeric or empty port, a path, a name that only
    /// starts like an allowed one.
    #[test]
    fn malformed_hosts_and_origins_are_refused() {
        let g = guard(
            &["localhost", "127.0.0.1", "::1"],
            &[
                "http://127.0.0.1:*",
                "http://[::1]:*",
                "https://localhost:*",
            ],
            None,
        );
        for host in [
            "127.0.0.1:abc",
            "127.0.0.1:8031x",
            "127.0.0.1:",
            "127.0.0.1:99999",
            "127.0.0.1:+80",
            "user@127.0.0.1",
            "user:pw@127.0.0.1:8031",
            "evil.example@127.0.0.1",
            "127.0.0.1/path",
            "127.0.0.1:8031/x",
            "127.0.0.1 8031",
            " 127.0.0.1",
            "[::1",
            "[::1]x",
            "[::1]:",
            "[not-v6]:8031",
            "::1:8031",
            "",
        ] {
            assert_eq!(
                check(&g, &[("host", host)]),
                Err("BAD_HOST"),
                "Host {host:?}"
            );
        }
        assert_eq!(check(&g, &[("host", "[::1]:8031")]), Ok(()));
        let at = |origin: &str| check(&g, &[("host", "127.0.0.1:18931"), ("origin", origin)]);
        assert_eq!(at("http://127.0.0.1:18931"), Ok(()));
        assert_eq!(at("http://[::1]:18931"), Ok(()));
        for origin in [
            "http://127.0.0.1:18931.evil.example",
            "http://127.0.0.1.evil.example:18931",
            "http://user@127.0.0.1:18931",
            "http://evil.example@127.0.0.1:18931",
            "http://user:pw@127.0.0.1:18931",
            "http://127.0.0.1:18931/",
            "http://127.0.0.1:18931/path",
            "http://127.0.0.1:18931?q",
            "http://127.0.0.1:18931#f",
            "http://127.0.0.1:abc",
            "http://127.0.0.1:",
            "http://",
            "127.0.0.1:18931",
            "//127.0.0.1:18931",
            "http:/127.0.0.1:18931",
            "1http://127.0.0.1:18931",
            "http://127.0.0.1:18931 ",
            "http://[::1:18931",
            "",
        ] {
            assert_eq!(at(origin), Err("FORBIDDEN_ORIGIN"), "Origin {origin:?}");
        }
        assert_eq!(
            check(
                &g,
                &[
                    ("host", "127.0.0.1:18931"),
                    ("origin", "http://127.0.0.1:18931"),
                    ("origin", "http://evil.example"),
                ]
            ),
            Err("FORBIDDEN_ORIGIN"),
            "two Origin headers"
        );
    }

    #[test]
    fn tokens_come_as_bearer_basic_or_cookie() {
        let open = guard(&[], &[], None);
        assert!(!open.needs_token() && open.authorized(&HeaderMap::new()));
        let g = guard(&[], &[], Some("s3cret"));
        assert!(g.needs_token() && !g.authorized(&HeaderMap::new()));
        assert!(g.authorized(&headers(&[("authorization", "Bearer s3cret")])));
        assert!(!g.authorized(&headers(&[("authorization", "Bearer s3cre")])));
        let basic = base64::engine::general_purpose::STANDARD.encode("anyone:s3cret");
        assert!(g.authorized(&headers(&[("authorization", &format!("Basic {basic}"))])));
        let cookie = g.session_cookie().to_str().unwrap().to_string();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
        assert!(
            !cookie.contains("s3cret"),
            "the cookie holds a hash, not the token"
        );
        let pair = cookie.split(';').next().unwrap();
        assert!(g.authorized(&headers(&[("cookie", &format!("theme=dark; {pair}"))])));
        let other = guard(&[], &[], Some("another"));
        assert!(
            !other.authorized(&headers(&[("cookie", pair)])),
            "a cookie is bound to its token"
        );
        assert!(g.accepts("s3cret") && !g.accepts("") && !open.accepts(""));
    }
}
