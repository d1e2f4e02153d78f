//! How entries are described to agents: their kind and their times.

pub use ferret_query::Kind;

/// What a file type is, a symlink never followed (shown by its
/// [`Kind::as_str`] name: `file`, `dir`, `symlink` or `other`).
pub fn kind_of(file_type: cap_std::fs::FileType) -> Kind {
    if file_type.is_symlink() {
        Kind::Symlink
    } else if file_type.is_dir() {
        Kind::Dir
    } else if file_type.is_file() {
        Kind::File
    } else {
        Kind::Other
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
