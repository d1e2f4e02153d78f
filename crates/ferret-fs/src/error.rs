//! The error vocabulary of the file layer. Codes are the ones of the tool contract
//! (`docs/tools.md` §Errors); the server layer only renders them.

use std::{fmt, io};

/// What went wrong, in the words agents branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    NotFound,
    PathOutsideRoot,
    PathDenied,
    IsDirectory,
    NotDirectory,
    BinaryContent,
    TooLarge,
    ReadOnly,
    AlreadyExists,
    ChecksumMismatch,
    NoMatch,
    NotUnique,
    DirectoryNotEmpty,
    /// `locate` under policy `deny`, or under `ask` with no way to ask.
    LocateDisabled,
    /// The user said no when asked for consent.
    Declined,
    /// The request (or the user's question) was cancelled.
    Cancelled,
    /// Work on one file ran past its time bound (a document's extraction).
    Timeout,
    /// Nothing is served: the client named no folder (roots from the client).
    NoRoots,
    IoError,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::PathOutsideRoot => "PATH_OUTSIDE_ROOT",
            ErrorCode::PathDenied => "PATH_DENIED",
            ErrorCode::IsDirectory => "IS_DIRECTORY",
            ErrorCode::NotDirectory => "NOT_DIRECTORY",
            ErrorCode::BinaryContent => "BINARY_CONTENT",
            ErrorCode::TooLarge => "TOO_LARGE",
            ErrorCode::ReadOnly => "READ_ONLY",
            ErrorCode::AlreadyExists => "ALREADY_EXISTS",
            ErrorCode::ChecksumMismatch => "CHECKSUM_MISMATCH",
            ErrorCode::NoMatch => "NO_MATCH",
            ErrorCode::NotUnique => "NOT_UNIQUE",
            ErrorCode::DirectoryNotEmpty => "DIRECTORY_NOT_EMPTY",
            ErrorCode::LocateDisabled => "LOCATE_DISABLED",
            ErrorCode::Declined => "DECLINED",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::NoRoots => "NO_ROOTS",
            ErrorCode::IoError => "IO_ERROR",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure of one file operation: a code, a message for the agent, a hint that
/// names the way forward, and optionally the tool that fits better.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsError {
    pub code: ErrorCode,
    pub message: String,
    pub hint: Option<String>,
    pub suggested_tool: Option<&'static str>,
    /// Extra facts about the failure (size and detected type for binaries, …).
    pub details: Vec<(&'static str, String)>,
}

impl FsError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        FsError {
            code,
            message: message.into(),
            hint: None,
            suggested_tool: None,
            details: Vec::new(),
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn suggest(mut self, tool: &'static str) -> Self {
        self.suggested_tool = Some(tool);
        self
    }

    pub fn detail(mut self, key: &'static str, value: impl Into<String>) -> Self {
        self.details.push((key, value.into()));
        self
    }

    pub fn outside(shown: &str) -> Self {
        FsError::new(
            ErrorCode::PathOutsideRoot,
            format!("`{shown}` leads outside the served roots and is refused"),
        )
        .hint("use a path relative to a root, without `..`; call `list` with path `.` to see the roots")
    }

    pub fn not_found(shown: &str) -> Self {
        FsError::new(ErrorCode::NotFound, format!("`{shown}` does not exist"))
            .hint("check the spelling; `list` shows what a folder holds")
            .suggest("list")
    }

    pub fn denied(shown: &str) -> Self {
        FsError::new(
            ErrorCode::PathDenied,
            format!("`{shown}` is a sensitive file (keys, credentials, secrets); its content is never returned"),
        )
        .hint("its name and size still show in `list`; ask the user for the value you need")
    }

    /// Classify an OS error met while working on `shown`.
    pub fn from_io(err: &io::Error, shown: &str) -> Self {
        if is_escape(err) {
            return FsError::outside(shown);
        }
        match err.kind() {
            io::ErrorKind::NotFound => FsError::not_found(shown),
            io::ErrorKind::NotADirectory => FsError::new(
                ErrorCode::NotDirectory,
                format!("a component of `{shown}` is not a folder"),
            )
            .hint("`read` opens files; `list` opens folders")
            .suggest("read"),
            io::ErrorKind::IsADirectory => {
                FsError::new(ErrorCode::IsDirectory, format!("`{shown}` is a folder"))
                    .hint("call `list` to see what it holds")
                    .suggest("list")
            }
            _ if crate::open::not_regular(err).is_some() => {
                FsError::new(ErrorCode::IoError, format!("`{shown}`: {err}"))
                    .hint("only regular files have content to read; `stat` describes it")
            }
            io::ErrorKind::PermissionDenied => FsError::new(
                ErrorCode::IoError,
                format!("permission denied on `{shown}`: {err}"),
            )
            .hint("the operator's account cannot read it; ask the user to change its permissions"),
            _ => match err.raw_os_error() {
                // ELOOP: a symlink loop, or a final symlink opened without following.
                Some(40) => FsError::new(
                    ErrorCode::IoError,
                    format!("`{shown}` is a symlink loop or changed while it was opened"),
                ),
                _ => FsError::new(ErrorCode::IoError, format!("`{shown}`: {err}")),
            },
        }
    }
}

/// cap-std reports an attempt to leave the directory handle as `PermissionDenied`
/// with this message (and the kernel's `openat2(RESOLVE_BENEATH)` as `EXDEV`).
pub(crate) fn is_escape(err: &io::Error) -> bool {
    err.raw_os_error() == Some(18)
        || err
            .to_string()
            .contains("a path led outside of the filesystem")
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for FsError {}

pub type FsResult<T> = Result<T, FsError>;
