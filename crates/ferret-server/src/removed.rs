//! What to say when a client calls a method the 2026-07-28 revision removed.
//!
//! rmcp answers such a call (`ping`, `logging/setLevel`, `resources/subscribe`
//! … sent with modern `_meta`) with `-32601` and the bare method name as the
//! message, before any handler of ours runs. The code and the HTTP status stay
//! as the revision wants them; only the message is replaced by one that says
//! the method was removed and what to use instead. Applied to what goes out on
//! stdio (a transport wrapper) and over HTTP (a response mapper).

use axum::{body::Body, http::StatusCode, response::Response};
use rmcp::{
    ErrorData, RoleServer,
    model::{ErrorCode, JsonRpcMessage},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};

/// The replacement message for a method 2026-07-28 removed, if `method` is one.
fn instead(method: &str) -> Option<&'static str> {
    Some(match method {
        "ping" => {
            "`ping` is not part of MCP 2026-07-28 (the revision removed it): every request stands on its own; send server/discover to check that the server answers"
        }
        "initialize" => {
            "`initialize` is not part of MCP 2026-07-28 (the revision removed the handshake): send server/discover, and _meta with every request"
        }
        "logging/setLevel" => {
            "`logging/setLevel` is not part of MCP 2026-07-28 (the revision removed it): put io.modelcontextprotocol/logLevel in the _meta of each request"
        }
        "resources/subscribe" | "resources/unsubscribe" => {
            "`resources/subscribe` and `resources/unsubscribe` are not part of MCP 2026-07-28 (the revision removed them): use subscriptions/listen with resourceSubscriptions"
        }
        _ => return None,
    })
}

/// Replace the bare-name message of a removed method's `-32601`.
pub(crate) fn explain(error: &mut ErrorData) {
    if error.code == ErrorCode::METHOD_NOT_FOUND
        && let Some(message) = instead(&error.message)
    {
        error.message = message.into();
    }
}

/// A transport that explains removed methods in what it sends.
pub(crate) struct Explaining<T>(pub T);

impl<T: Transport<RoleServer>> Transport<RoleServer> for Explaining<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Error(e) = &mut item {
            explain(&mut e.error);
        }
        self.0.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.0.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close()
    }
}

/// The largest answer the HTTP mapper reads to look for such an error: a
/// JSON-RPC error is a few hundred bytes.
const ERROR_BODY_LIMIT: usize = 1 << 20;

/// Over HTTP, 2026-07-28 answers an unknown method with 404 and the JSON-RPC
/// error; explain it there too. Every other response passes untouched.
pub(crate) async fn explain_http(response: Response) -> Response {
    if response.status() != StatusCode::NOT_FOUND {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, ERROR_BODY_LIMIT).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let mut parts = parts;
    let body = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(mut value) => {
            let explained = value
                .pointer("/error/message")
                .and_then(|m| m.as_str())
                .filter(|_| value.pointer("/error/code").and_then(|c| c.as_i64()) == Some(-32601))
                .and_then(instead);
            match explained {
                Some(message) => {
                    value["error"]["message"] = message.into();
                    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
                    serde_json::to_vec(&value).unwrap_or_else(|_| bytes.to_vec())
                }
                None => bytes.to_vec(),
            }
        }
        Err(_) => bytes.to_vec(),
    };
    Response::from_parts(parts, Body::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_methods_say_what_to_use_instead() {
        let mut e = ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "ping", None);
        explain(&mut e);
        assert!(e.message.contains("removed") && e.message.contains("server/discover"));
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
        let mut other = ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "tools/frobnicate", None);
        explain(&mut other);
        assert_eq!(other.message, "tools/frobnicate");
        let mut params = ErrorData::new(ErrorCode::INVALID_PARAMS, "ping", None);
        explain(&mut params);
        assert_eq!(params.message, "ping");
    }
}
