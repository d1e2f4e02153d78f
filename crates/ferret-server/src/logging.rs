//! MCP logging (`notifications/message`), never unsolicited.
//!
//! In the handshake era a connection opts in with `logging/setLevel`; in the
//! 2026-07-28 era each request opts in with `_meta["io.modelcontextprotocol/logLevel"]`
//! and its messages travel on that request's own response. Without either, no
//! message is sent. What is logged is derived from each answer (failures,
//! warnings, skipped files, how long it took): the client sees why a result
//! looks the way it does, never file contents.

#![expect(
    deprecated,
    reason = "MCP logging is deprecated by SEP-2577 but still served"
)]

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolResult, LoggingLevel, LoggingMessageNotificationParam, ProtocolVersion},
    service::{Peer, RequestContext},
};
use serde_json::{Value, json};

const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// RFC 5424 order: debug is the least severe.
pub fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Whether the request follows the stateless 2026-07-28 rules.
pub fn is_stateless_era(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The log of one request: where messages go and from which level.
pub struct RequestLog {
    peer: Peer<RoleServer>,
    threshold: Option<LoggingLevel>,
}

impl RequestLog {
    /// `connection_level` is what `logging/setLevel` chose for this connection
    /// (handshake era). A malformed per-request level is `-32602`.
    pub fn of(
        context: &RequestContext<RoleServer>,
        connection_level: Option<LoggingLevel>,
    ) -> Result<RequestLog, ErrorData> {
        let threshold = if is_stateless_era(context) {
            match context.meta.0.0.get(META_LOG_LEVEL) {
                None | Some(Value::Null) => None,
                Some(raw) => Some(serde_json::from_value::<LoggingLevel>(raw.clone()).map_err(
                    |_| {
                        ErrorData::invalid_params(
                            format!(
                                "`_meta.{META_LOG_LEVEL}` must be one of debug, info, notice, warning, error, critical, alert, emergency; got {raw}"
                            ),
                            Some(json!({"parameter": META_LOG_LEVEL, "received": raw})),
                        )
                    },
                )?),
            }
        } else {
            connection_level
        };
        Ok(RequestLog {
            peer: context.peer.clone(),
            threshold,
        })
    }

    pub fn wants(&self, level: LoggingLevel) -> bool {
        self.threshold
            .is_some_and(|t| severity(level) >= severity(t))
    }

    pub async fn send(&self, level: LoggingLevel, message: impl Into<String>) {
        if !self.wants(level) {
            return;
        }
        let param = LoggingMessageNotificationParam::new(level, Value::String(message.into()))
            .with_logger("ferret");
        let _ = self.peer.notify_logging_message(param).await;
    }
}

/// What is worth telling about one tool answer, most severe first.
pub fn notes_for(
    tool: &str,
    result: &CallToolResult,
    elapsed_ms: u64,
) -> Vec<(LoggingLevel, String)> {
    let mut notes = Vec::new();
    let structured = result.structured_content.as_ref();
    if result.is_error == Some(true) {
        let error = structured.and_then(|s| s.get("error"));
        let code = error
            .and_then(|e| e.get("code"))
            .and_then(Value::as_str)
            .unwrap_or("ERROR");
        let message = error
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("failed");
        notes.push((
            LoggingLevel::Warning,
            format!("`{tool}` failed: {code}: {message}"),
        ));
    }
    if let Some(s) = structured {
        if let Some(w) = s.get("warning").and_then(Value::as_str) {
            notes.push((LoggingLevel::Warning, format!("`{tool}`: {w}")));
        }
        if s.pointer("/index/ready") == Some(&Value::Bool(false)) {
            notes.push((
                LoggingLevel::Notice,
                "the index is still being built; results may be incomplete".into(),
            ));
        }
        if let Some(skipped) = s.get("skipped").and_then(Value::as_object) {
            let parts: Vec<String> = skipped
                .iter()
                .filter_map(|(k, v)| v.as_u64().filter(|n| *n > 0).map(|n| format!("{n} {k}")))
                .collect();
            if !parts.is_empty() {
                notes.push((
                    LoggingLevel::Info,
                    format!("`{tool}` skipped files: {}", parts.join(", ")),
                ));
            }
        }
    }
    notes.push((
        LoggingLevel::Debug,
        format!("`{tool}` answered in {elapsed_ms} ms"),
    ));
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_say_what_went_wrong_and_how_long_it_took() {
        let mut r = CallToolResult::success(vec![]);
        r.structured_content = Some(json!({
            "skipped": {"binary": 2, "too_large": 0, "sensitive": 1},
            "index": {"ready": false},
        }));
        let notes = notes_for("grep", &r, 12);
        let texts: Vec<&str> = notes.iter().map(|(_, t)| t.as_str()).collect();
        assert!(
            texts.contains(&"`grep` skipped files: 2 binary, 1 sensitive"),
            "{texts:?}"
        );
        assert!(texts.iter().any(|t| t.contains("still being built")));
        assert_eq!(notes.last().unwrap().1, "`grep` answered in 12 ms");

        let mut e = CallToolResult::error(vec![]);
        e.structured_content =
            Some(json!({"error": {"code": "NOT_FOUND", "message": "`x` does not exist"}}));
        assert_eq!(
            notes_for("read", &e, 1)[0],
            (
                LoggingLevel::Warning,
                "`read` failed: NOT_FOUND: `x` does not exist".into()
            )
        );
    }

    #[test]
    fn severity_follows_rfc_5424() {
        assert!(severity(LoggingLevel::Debug) < severity(LoggingLevel::Warning));
        assert!(severity(LoggingLevel::Error) < severity(LoggingLevel::Emergency));
    }
}
