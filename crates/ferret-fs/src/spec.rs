//! What an operator asks for: the roots (`[NAME=]DIR[:rw]`), the rules that
//! apply to all of them, and the limits that keep every answer bounded.

use std::path::PathBuf;

use crate::deny::Denylist;

/// How an operator named a root on the command line: `[NAME=]DIR[:rw]`; the
/// `:rw` suffix makes it writable (`:ro`, the default, keeps it read-only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootSpec {
    pub name: Option<String>,
    pub path: PathBuf,
    pub writable: bool,
}

impl std::str::FromStr for RootSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (s, writable) = if let Some(rest) = s.strip_suffix(":rw") {
            (rest, true)
        } else {
            (s.strip_suffix(":ro").unwrap_or(s), false)
        };
        if s.is_empty() {
            return Err("a root cannot be empty; give a folder, e.g. --root ~/notes".into());
        }
        let (name, dir) = match s.split_once('=') {
            Some((name, dir)) if !name.is_empty() && !name.contains('/') => {
                (Some(name.trim().to_string()), dir)
            }
            _ => (None, s),
        };
        if let Some(name) = &name
            && (name == "." || name == ".." || name.contains('\\'))
        {
            return Err(format!(
                "root name `{name}` is not allowed; use letters, digits, `-` or `_`, e.g. --root notes=~/notes"
            ));
        }
        Ok(RootSpec {
            name,
            path: expand_home(dir),
            writable,
        })
    }
}

fn expand_home(dir: &str) -> PathBuf {
    match (dir.strip_prefix("~"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            PathBuf::from(home).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(dir),
    }
}

/// Limits that keep every answer bounded.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Files larger than this are never loaded whole: `read` streams the window
    /// asked for (its lines counted in a streaming pass, its checksum only when
    /// asked for; a tail is read from the end), `stat` skips content facts.
    pub max_file_bytes: u64,
    /// Payload budget of one answer (the text of a `read` window, a page of `list`).
    pub max_response_bytes: usize,
    /// What a client may be shown of one answer, in characters: its
    /// structured content as JSON and its text, each on its own (Claude
    /// Code hands the model an answer whole only up to about 50,000).
    pub max_response_chars: usize,
    /// Lines longer than this many characters are clipped in `read` (and reported).
    pub max_line_chars: usize,
    /// Images larger than this are refused rather than sent as image content.
    pub max_image_bytes: u64,
    /// A `list` walk stops after this many entries (and says so).
    pub max_walk_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 10 * 1024 * 1024,
            max_response_bytes: 128 * 1024,
            max_response_chars: 40_000,
            max_line_chars: 2000,
            max_image_bytes: 5 * 1024 * 1024,
            max_walk_entries: 100_000,
        }
    }
}

impl Limits {
    /// The payload budget of one answer: the smaller of the two bounds (a
    /// character is at least a byte, so this many bytes of text are at most
    /// this many characters).
    pub fn answer_bytes(&self) -> usize {
        self.max_response_bytes.min(self.max_response_chars)
    }
}

/// Rules that apply to every root.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Show hidden entries by default (each call may still choose).
    pub hidden: bool,
    /// Ignore `.gitignore`/`.ignore` rules by default (each call may still choose).
    pub no_ignore: bool,
    pub deny: Denylist,
    pub limits: Limits,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_names_and_home() {
        let s: RootSpec = "docs=/srv/docs".parse().unwrap();
        assert_eq!(s.name.as_deref(), Some("docs"));
        assert_eq!(s.path, PathBuf::from("/srv/docs"));
        let s: RootSpec = "/srv/a=b".parse().unwrap();
        assert_eq!(s.name, None, "a `=` after a slash belongs to the path");
        assert!("".parse::<RootSpec>().is_err());
        assert!("..=/x".parse::<RootSpec>().is_err());
        let s: RootSpec = "code=/srv/code:rw".parse().unwrap();
        assert_eq!((s.name.as_deref(), s.writable), (Some("code"), true));
        assert_eq!(s.path, PathBuf::from("/srv/code"));
        let s: RootSpec = "/srv/docs:ro".parse().unwrap();
        assert_eq!((s.path, s.writable), (PathBuf::from("/srv/docs"), false));
    }
}
