//! `edit`: exact-text and line-range edits, all or nothing, that keep the file's
//! encoding, byte-order mark and line endings.

use crate::{
    codec::Codec,
    error::{ErrorCode, FsError, FsResult},
    facts::Kind,
    near::nearest_lines,
    read::{checksum, read_up_to},
    replace::{
        FileChange, Keep, mismatch, open_real, replace_atomically, unified_diff, write_failed,
    },
    roots::Roots,
    sniff::{self, Content},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineAction {
    Replace,
    InsertBefore,
    InsertAfter,
    Delete,
}

#[derive(Debug, Clone)]
pub enum EditOp {
    /// Replace `old_text` (exactly once unless `replace_all`) by `new_text`.
    Text {
        old_text: String,
        new_text: String,
        replace_all: bool,
    },
    /// Act on lines `start..=end` (1-based) of the text as it stands after the
    /// edits before this one. `insert_before` line `n + 1` appends at the end.
    Lines {
        start: u64,
        end: u64,
        action: LineAction,
        content: String,
    },
}

#[derive(Debug, Clone)]
pub struct EditRequest {
    pub edits: Vec<EditOp>,
    pub expected_checksum: Option<String>,
    pub dry_run: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct EditOutcome {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_path: Option<String>,
    pub diff: String,
    pub diff_truncated: bool,
    pub replacements: u64,
    pub changed: bool,
    pub checksum: String,
    pub previous_checksum: String,
    pub size: u64,
    pub encoding: String,
    pub line_endings: &'static str,
    pub dry_run: bool,
    #[serde(skip)]
    pub changes: Vec<FileChange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endings {
    Lf,
    Crlf,
    Mixed { crlf_dominant: bool },
}

impl Endings {
    fn of(text: &str) -> Endings {
        let crlf = text.matches("\r\n").count();
        let lf = text.matches('\n').count() - crlf;
        match (crlf, lf) {
            (0, _) => Endings::Lf,
            (_, 0) => Endings::Crlf,
            (c, l) => Endings::Mixed {
                crlf_dominant: c >= l,
            },
        }
    }

    fn name(self) -> &'static str {
        match self {
            Endings::Lf => "lf",
            Endings::Crlf => "crlf",
            Endings::Mixed { .. } => "mixed",
        }
    }

    fn newline(self) -> &'static str {
        match self {
            Endings::Crlf
            | Endings::Mixed {
                crlf_dominant: true,
            } => "\r\n",
            _ => "\n",
        }
    }
}

/// `s` with every line ending made `nl`.
fn with_endings(s: &str, nl: &str) -> String {
    let lf = s.replace("\r\n", "\n");
    if nl == "\n" { lf } else { lf.replace('\n', nl) }
}

/// 1-based line number of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// A JSON string literal (for quoting text in error details).
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn nth(i: usize) -> String {
    format!("edit {} ", i + 1)
}

/// Apply one text edit to `text`; returns the number of replacements.
fn apply_text(
    text: &mut String,
    i: usize,
    old_text: &str,
    new_text: &str,
    replace_all: bool,
    endings: Endings,
    shown: &str,
) -> FsResult<u64> {
    if old_text.is_empty() {
        return Err(FsError::new(
            ErrorCode::NoMatch,
            format!("{}has an empty old_text; nothing was written", nth(i)),
        )
        .hint(
            "to insert text, use a line edit: {lines: \"N\", action: \"insert_before\", content}",
        ));
    }
    // The agent usually sends `\n`; the file may use `\r\n`.
    let candidates: Vec<(String, String)> = match endings {
        Endings::Crlf => vec![(
            with_endings(old_text, "\r\n"),
            with_endings(new_text, "\r\n"),
        )],
        Endings::Lf => vec![(with_endings(old_text, "\n"), with_endings(new_text, "\n"))],
        Endings::Mixed { .. } => vec![
            (old_text.to_string(), new_text.to_string()),
            (
                with_endings(old_text, "\r\n"),
                with_endings(new_text, "\r\n"),
            ),
            (with_endings(old_text, "\n"), with_endings(new_text, "\n")),
        ],
    };
    for (old, new) in &candidates {
        let positions: Vec<usize> = text.match_indices(old.as_str()).map(|(p, _)| p).collect();
        match positions.len() {
            0 => continue,
            1 => {}
            n if !replace_all => {
                let lines: Vec<String> = positions
                    .iter()
                    .take(10)
                    .map(|p| line_of(text, *p).to_string())
                    .collect();
                return Err(FsError::new(
                    ErrorCode::NotUnique,
                    format!(
                        "{}: old_text occurs {n} times in `{shown}` (at lines {}); nothing was written",
                        nth(i).trim_end(),
                        lines.join(", ")
                    ),
                )
                .hint("add surrounding lines to old_text so that it occurs once, or set replace_all: true")
                .detail("count", n.to_string())
                .detail("lines", format!("[{}]", lines.join(","))));
            }
            _ => {}
        }
        let count = positions.len() as u64;
        *text = if replace_all {
            text.replace(old.as_str(), new)
        } else {
            text.replacen(old.as_str(), new, 1)
        };
        return Ok(count);
    }
    let nearest = nearest_lines(text, old_text, 3);
    let mut message = format!(
        "{}: old_text was not found in `{shown}`; nothing was written",
        nth(i).trim_end()
    );
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let whitespace_only = squeeze(text).contains(&squeeze(old_text));
    if whitespace_only {
        message.push_str(
            " (it matches when whitespace is ignored: check indentation, tabs and line breaks)",
        );
    }
    if !nearest.is_empty() {
        message.push_str(". Nearest lines:");
        for (n, l) in &nearest {
            message.push_str(&format!("\n  {n}: {l}"));
        }
    }
    let json: Vec<String> = nearest
        .iter()
        .map(|(n, l)| format!("{{\"line\":{n},\"text\":{}}}", json_string(l)))
        .collect();
    Err(FsError::new(ErrorCode::NoMatch, message)
        .hint("old_text must match the file exactly; `read` the nearest lines shown and copy them, or use a line edit with expected_checksum")
        .detail("nearest", format!("[{}]", json.join(",")))
        .detail("edit", (i + 1).to_string()))
}

/// Apply one line edit to `text`.
fn apply_lines(
    text: &mut String,
    i: usize,
    (start, end): (u64, u64),
    action: LineAction,
    content: &str,
    endings: Endings,
) -> FsResult<()> {
    let nl = endings.newline();
    let mut pieces: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    let n = pieces.len() as u64;
    let max_start = if action == LineAction::InsertBefore {
        n + 1
    } else {
        n
    };
    if start < 1
        || end < start
        || start > max_start
        || (action != LineAction::InsertBefore && end > n)
    {
        return Err(FsError::new(
            ErrorCode::NoMatch,
            format!(
                "{}: lines {start}-{end} are not in the file, which has {n} lines; nothing was written",
                nth(i).trim_end()
            ),
        )
        .hint("`read` the file again for its current line numbers (edits apply in order, so earlier edits move later lines)")
        .detail("edit", (i + 1).to_string()));
    }
    let last_unterminated = !text.is_empty() && !text.ends_with('\n');
    let touches_end = match action {
        LineAction::InsertBefore => start == n + 1,
        _ => end == n,
    };
    let strip_final = last_unterminated && touches_end;
    if strip_final && let Some(last) = pieces.last_mut() {
        last.push_str(nl);
    }
    let mut block = with_endings(content, nl);
    if !block.is_empty() && !block.ends_with('\n') {
        block.push_str(nl);
    }
    let (s, e) = (start as usize - 1, end as usize);
    let mut out: Vec<String> = Vec::with_capacity(pieces.len() + 1);
    match action {
        LineAction::Replace => {
            out.extend_from_slice(&pieces[..s]);
            out.push(block);
            out.extend_from_slice(&pieces[e..]);
        }
        LineAction::Delete => {
            out.extend_from_slice(&pieces[..s]);
            out.extend_from_slice(&pieces[e..]);
        }
        LineAction::InsertBefore => {
            out.extend_from_slice(&pieces[..s]);
            out.push(block);
            out.extend_from_slice(&pieces[s..]);
        }
        LineAction::InsertAfter => {
            out.extend_from_slice(&pieces[..e]);
            out.push(block);
            out.extend_from_slice(&pieces[e..]);
        }
    }
    let mut joined = out.concat();
    if strip_final && joined.ends_with(nl) {
        joined.truncate(joined.len() - nl.len());
    }
    pieces.clear();
    *text = joined;
    Ok(())
}

/// `edit`: apply every edit in order to the file's text, or none of them.
pub(crate) fn edit(roots: &Roots, input: &str, request: &EditRequest) -> FsResult<EditOutcome> {
    let shown = input.trim();
    let (root, rel) = crate::replace::write_target(roots, input)?;
    let landing = crate::replace::land(roots, root, &rel, shown, true)?;
    let meta = match &landing.existing {
        None => {
            return Err(FsError::not_found(shown)
                .hint("`edit` changes existing files; create it with `write`")
                .suggest("write"));
        }
        Some(m) if m.is_dir() => {
            return Err(
                FsError::new(ErrorCode::IsDirectory, format!("`{shown}` is a folder"))
                    .hint("`edit` changes files; `list` shows what the folder holds")
                    .suggest("list"),
            );
        }
        Some(m) if !m.is_file() => {
            return Err(FsError::new(
                ErrorCode::IoError,
                format!("`{shown}` is not a regular file (a device, socket or FIFO)"),
            ));
        }
        Some(m) => m.clone(),
    };
    crate::replace::check_writable(root, &landing.real, shown)?;
    let limit = roots.policy.limits.max_file_bytes;
    if meta.len() > limit {
        return Err(FsError::new(
            ErrorCode::TooLarge,
            format!(
                "`{shown}` is {} bytes, over the {limit} byte limit for editing; nothing was written",
                meta.len()
            ),
        )
        .hint("the operator can raise --max-file-bytes"));
    }
    let io_err = |e: std::io::Error| FsError::from_io(&e, shown);
    let (mut file, _) = open_real(root, &landing.real).map_err(io_err)?;
    let bytes = read_up_to(&mut file, limit as usize + 1).map_err(io_err)?;
    drop(file);
    match sniff::classify(&bytes) {
        Content::Text => {}
        Content::Image(f) => {
            return Err(FsError::new(
                ErrorCode::BinaryContent,
                format!("`{shown}` is a {} image, not text", f.name()),
            )
            .suggest("stat"));
        }
        Content::Binary(kind) => {
            return Err(FsError::new(
                ErrorCode::BinaryContent,
                format!("`{shown}` is binary ({kind}), not text; nothing was written"),
            )
            .hint("binary files cannot be edited; replace them with `write` mode overwrite")
            .suggest("stat")
            .detail("type", kind));
        }
    }
    let previous_checksum = checksum(&bytes);
    match &request.expected_checksum {
        Some(expected) if *expected != previous_checksum => {
            return Err(mismatch(shown, expected, Some(&previous_checksum)));
        }
        None if request
            .edits
            .iter()
            .any(|e| matches!(e, EditOp::Lines { .. })) =>
        {
            return Err(FsError::new(
                ErrorCode::ChecksumMismatch,
                "line edits need expected_checksum (line numbers are only meaningful for the version you read); nothing was written",
            )
            .hint("`read` the file and pass its checksum as expected_checksum")
            .suggest("read"));
        }
        _ => {}
    }
    let codec = Codec::detect(&bytes);
    let old_text = codec.decode(&bytes, shown)?;
    let endings = Endings::of(&old_text);
    let mut text = old_text.clone();
    let mut replacements = 0;
    for (i, op) in request.edits.iter().enumerate() {
        match op {
            EditOp::Text {
                old_text,
                new_text,
                replace_all,
            } => {
                replacements += apply_text(
                    &mut text,
                    i,
                    old_text,
                    new_text,
                    *replace_all,
                    endings,
                    shown,
                )?;
            }
            EditOp::Lines {
                start,
                end,
                action,
                content,
            } => {
                apply_lines(&mut text, i, (*start, *end), *action, content, endings)?;
                replacements += 1;
            }
        }
    }
    let mut new_bytes = codec.bom.clone();
    new_bytes.extend_from_slice(&codec.encode(&text, shown)?);
    if new_bytes.len() as u64 > limit {
        return Err(FsError::new(
            ErrorCode::TooLarge,
            format!(
                "`{shown}` would grow to {} bytes, over the {limit} byte limit; nothing was written",
                new_bytes.len()
            ),
        ));
    }
    let path = roots.display(root, &rel);
    let real_shown = roots.display(root, &landing.real);
    let (diff, diff_truncated) = unified_diff(
        &path,
        &old_text,
        &text,
        roots.policy.limits.answer_bytes() / 2,
    );
    let changed = new_bytes != bytes;
    let mut outcome = EditOutcome {
        real_path: (real_shown != path).then(|| real_shown.clone()),
        path,
        diff,
        diff_truncated,
        replacements,
        changed,
        checksum: checksum(&new_bytes),
        previous_checksum,
        size: new_bytes.len() as u64,
        encoding: codec.label.clone(),
        line_endings: endings.name(),
        dry_run: request.dry_run,
        changes: Vec::new(),
    };
    if request.dry_run || !changed {
        return Ok(outcome);
    }
    replace_atomically(
        root,
        &landing.real,
        &mut &new_bytes[..],
        Keep::of(&meta),
        false,
    )
    .map_err(|e| write_failed(&e, shown))?;
    outcome.changes = vec![FileChange::new("modified", real_shown, Kind::File)];
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_round_trip() {
        for (bytes, label) in [
            (b"\xff\xfeh\0i\0\r\0\n\0".to_vec(), "utf-16le"),
            (b"\xfe\xff\0h\0i".to_vec(), "utf-16be"),
            (b"\xef\xbb\xbfbom\n".to_vec(), "utf-8-bom"),
        ] {
            let c = Codec::detect(&bytes);
            assert_eq!(c.label, label);
            let text = c.decode(&bytes, "x").unwrap();
            let mut again = c.bom.clone();
            again.extend(c.encode(&text, "x").unwrap());
            assert_eq!(again, bytes);
        }
        let (gbk, _, _) = encoding_rs::GBK
            .encode("中文编码检测需要足够长的文本才能可靠地判断，这是一段测试文字。");
        let c = Codec::detect(&gbk);
        assert_eq!(c.label, "gbk");
        assert!(c.encode("ümlaut ☃", "x").is_err(), "GBK has no ☃");
    }

    #[test]
    fn line_edits_keep_endings_and_the_missing_final_newline() {
        let mut t = "a\r\nb\r\nc".to_string();
        apply_lines(
            &mut t,
            0,
            (3, 3),
            LineAction::InsertAfter,
            "d\n",
            Endings::Crlf,
        )
        .unwrap();
        assert_eq!(t, "a\r\nb\r\nc\r\nd");
        apply_lines(&mut t, 0, (1, 2), LineAction::Delete, "", Endings::Crlf).unwrap();
        assert_eq!(t, "c\r\nd");
        apply_lines(
            &mut t,
            0,
            (3, 3),
            LineAction::InsertBefore,
            "e",
            Endings::Crlf,
        )
        .unwrap();
        assert_eq!(t, "c\r\nd\r\ne");
        assert!(apply_lines(&mut t, 0, (5, 5), LineAction::Replace, "x", Endings::Crlf).is_err());
    }

    #[test]
    fn text_edits_adapt_line_endings_and_count() {
        let mut t = "one\r\ntwo\r\none\r\n".to_string();
        let e = apply_text(&mut t, 0, "one\n", "1\n", false, Endings::Crlf, "f").unwrap_err();
        assert_eq!(e.code, ErrorCode::NotUnique);
        assert_eq!(
            apply_text(
                &mut t,
                0,
                "one\ntwo\n",
                "uno\ndos\n",
                false,
                Endings::Crlf,
                "f"
            )
            .unwrap(),
            1
        );
        assert_eq!(t, "uno\r\ndos\r\none\r\n");
        let e = apply_text(&mut t, 1, "dox", "x", false, Endings::Crlf, "f").unwrap_err();
        assert_eq!(e.code, ErrorCode::NoMatch);
        assert!(e.message.contains("2: dos"), "{}", e.message);
    }
}
