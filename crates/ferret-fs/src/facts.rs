//! How entries are described to agents: their kind and their times.

/// `file`, `dir`, `symlink` or `other`, as the contract names kinds.
pub fn kind_name(file_type: cap_std::fs::FileType) -> &'static str {
    if file_type.is_symlink() {
        "symlink"
    } else if file_type.is_dir() {
        "dir"
    } else if file_type.is_file() {
        "file"
    } else {
        "other"
    }
}

/// RFC 3339 in UTC, to the second.
pub fn rfc3339(time: std::io::Result<cap_std::time::SystemTime>) -> Option<String> {
    let time: std::time::SystemTime = time.ok()?.into_std();
    Some(
        chrono::DateTime::<chrono::Utc>::from(time)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    )
}
