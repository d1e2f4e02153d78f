//! The one place where a failure becomes an HTTP answer: a status and
//! `{"error": {"code", "message", "hint"}}`, with the file layer's codes kept.

use axum::{
    Json,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use ferret_fs::{ErrorCode, FsError};
use serde_json::json;

use crate::assets::no_store;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub hint: Option<String>,
}

impl ApiError {
    /// A malformed request: the message names the parameter, the hint an example.
    pub fn bad_request(message: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code: "BAD_REQUEST",
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            hint: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> ApiError {
        self.hint = Some(hint.into());
        self
    }

    pub fn internal(what: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "IO_ERROR",
            format!("{what}"),
        )
    }
}

impl From<FsError> for ApiError {
    fn from(e: FsError) -> ApiError {
        let status = match e.code {
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::PathOutsideRoot | ErrorCode::PathDenied => StatusCode::FORBIDDEN,
            ErrorCode::IsDirectory | ErrorCode::NotDirectory => StatusCode::BAD_REQUEST,
            ErrorCode::BinaryContent => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::Timeout | ErrorCode::Cancelled => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError {
            status,
            code: e.code.as_str(),
            message: e.message,
            hint: e.hint,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body =
            json!({"error": {"code": self.code, "message": self.message, "hint": self.hint}});
        no_store((self.status, Json(body)).into_response())
    }
}
