//! `write`: create, overwrite or append to a file, through the atomic
//! replacement of `replace.rs` (which says how a file is replaced).

use std::io;

use crate::{
    error::{ErrorCode, FsError, FsResult},
    facts::Kind,
    read::{checksum, read_up_to},
    replace::{
        FileChange, Keep, check_writable, checksum_stream, create_missing, land, mismatch,
        open_real, replace_atomically, text_for_diff, unified_diff, write_failed, write_target,
    },
    roots::Roots,
    sniff::{self, Content},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    Create,
    Overwrite,
    Append,
}

impl WriteMode {
    pub fn as_str(self) -> &'static str {
        match self {
            WriteMode::Create => "create",
            WriteMode::Overwrite => "overwrite",
            WriteMode::Append => "append",
        }
    }
}

#[derive(Debug, Clone)]
pub struct WriteRequest {
    pub content: String,
    pub mode: WriteMode,
    pub expected_checksum: Option<String>,
    pub create_dirs: bool,
    pub dry_run: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct WriteOutcome {
    pub path: String,
    /// The path actually written when `path` goes through a symlink.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_path: Option<String>,
    pub mode: &'static str,
    pub created: bool,
    pub bytes_written: u64,
    pub size: u64,
    pub checksum: String,
    pub previous_checksum: Option<String>,
    /// Unified diff of the old and new text (overwrite and append of text files).
    pub diff: Option<String>,
    pub diff_truncated: bool,
    /// Encoding the appended text was written in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    pub dry_run: bool,
    #[serde(skip)]
    pub changes: Vec<FileChange>,
}

/// `write`: create, overwrite or append to a file, atomically.
pub(crate) fn write(roots: &Roots, input: &str, request: &WriteRequest) -> FsResult<WriteOutcome> {
    let shown = input.trim();
    let (root, rel) = write_target(roots, input)?;
    let landing = land(roots, root, &rel, shown, true)?;
    if !landing.missing_dirs.is_empty() && !request.create_dirs {
        return Err(FsError::new(
            ErrorCode::NotFound,
            format!(
                "the folder of `{shown}` does not exist and create_dirs is false; nothing was written"
            ),
        )
        .hint("pass create_dirs: true, or create it with manage op mkdir"));
    }
    let limit = roots.policy.limits.max_file_bytes;
    let too_large = |size: u64| {
        FsError::new(
            ErrorCode::TooLarge,
            format!("`{shown}` would be {size} bytes, over the {limit} byte file limit; nothing was written"),
        )
        .hint("write smaller files; the operator can raise --max-file-bytes")
    };
    if request.content.len() as u64 > limit {
        return Err(too_large(request.content.len() as u64));
    }
    let existing = match &landing.existing {
        Some(m) if m.is_dir() => {
            return Err(
                FsError::new(ErrorCode::IsDirectory, format!("`{shown}` is a folder"))
                    .hint("write to a file path inside it"),
            );
        }
        Some(m) if !m.is_file() => {
            return Err(FsError::new(
                ErrorCode::IoError,
                format!("`{shown}` is not a regular file (a device, socket or FIFO)"),
            ));
        }
        other => other.clone(),
    };
    if existing.is_some() && request.mode == WriteMode::Create {
        return Err(FsError::new(
            ErrorCode::AlreadyExists,
            format!("`{shown}` already exists; nothing was written"),
        )
        .hint("use mode `overwrite` (with expected_checksum from `read`) or `append`, or `edit` to change part of it")
        .suggest("edit"));
    }
    if existing.is_some() {
        check_writable(root, &landing.real, shown)?;
    }
    let io_err = |e: io::Error| FsError::from_io(&e, shown);
    // The old content, when there is one and it is small enough to hold.
    let mut old: Option<Vec<u8>> = None;
    let mut previous_checksum = None;
    if existing.is_some() {
        // Sizes from the open file, not from the path looked at before.
        let (mut file, meta) = open_real(root, &landing.real).map_err(io_err)?;
        if meta.len() <= limit {
            let bytes = read_up_to(&mut file, limit as usize + 1).map_err(io_err)?;
            previous_checksum = Some(checksum(&bytes));
            old = Some(bytes);
        } else if request.mode == WriteMode::Append {
            return Err(too_large(meta.len() + request.content.len() as u64));
        } else if request.expected_checksum.is_some() {
            previous_checksum = Some(checksum_stream(&mut file).map_err(io_err)?);
        }
    }
    if let Some(expected) = &request.expected_checksum
        && request.mode != WriteMode::Create
        && previous_checksum.as_deref() != Some(expected.as_str())
    {
        return Err(mismatch(shown, expected, previous_checksum.as_deref()));
    }
    let mut encoding = None;
    let new_bytes: Vec<u8> = match (request.mode, &old) {
        (WriteMode::Append, Some(old)) if !old.is_empty() => {
            if !matches!(sniff::classify(old), Content::Text) {
                return Err(FsError::new(
                    ErrorCode::BinaryContent,
                    format!("`{shown}` is binary; text is not appended to it"),
                )
                .hint("use mode `overwrite` to replace it"));
            }
            let codec = crate::codec::Codec::detect(old);
            let added = codec.encode(&request.content, shown)?;
            encoding = Some(codec.label.clone());
            let mut all = old.clone();
            all.extend_from_slice(&added);
            all
        }
        _ => request.content.as_bytes().to_vec(),
    };
    if new_bytes.len() as u64 > limit {
        return Err(too_large(new_bytes.len() as u64));
    }
    let path = roots.display(root, &rel);
    let real_shown = roots.display(root, &landing.real);
    let (diff, diff_truncated) = match &old {
        Some(old_bytes) if request.mode != WriteMode::Create => {
            match (text_for_diff(old_bytes), text_for_diff(&new_bytes)) {
                (Some(a), Some(b)) => {
                    let (d, t) =
                        unified_diff(&path, &a, &b, roots.policy.limits.answer_bytes() / 2);
                    (Some(d), t)
                }
                _ => (None, false),
            }
        }
        _ => (None, false),
    };
    let new_checksum = checksum(&new_bytes);
    let created = existing.is_none();
    let mut outcome = WriteOutcome {
        real_path: (real_shown != path).then(|| real_shown.clone()),
        path,
        mode: request.mode.as_str(),
        created,
        bytes_written: if request.mode == WriteMode::Append {
            (new_bytes.len() - old.as_ref().map_or(0, |o| o.len())) as u64
        } else {
            new_bytes.len() as u64
        },
        size: new_bytes.len() as u64,
        checksum: new_checksum,
        previous_checksum,
        diff,
        diff_truncated,
        encoding,
        dry_run: request.dry_run,
        changes: Vec::new(),
    };
    if request.dry_run {
        return Ok(outcome);
    }
    let mut changes = create_missing(roots, root, &landing, shown)?;
    let keep = existing.as_ref().map(Keep::of).unwrap_or_default();
    match replace_atomically(root, &landing.real, &mut &new_bytes[..], keep, created) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(FsError::new(
                ErrorCode::AlreadyExists,
                format!("`{shown}` was created by someone else meanwhile; nothing was written"),
            )
            .hint("read it, then use mode `overwrite` with its expected_checksum"));
        }
        Err(e) => return Err(write_failed(&e, shown)),
    }
    changes.push(FileChange::new(
        if created { "created" } else { "modified" },
        real_shown,
        Kind::File,
    ));
    outcome.changes = changes;
    Ok(outcome)
}
