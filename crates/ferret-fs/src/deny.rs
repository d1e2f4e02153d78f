//! Sensitive files: names whose content ferret never returns, whatever tool asks.
//!
//! The built-in rules come from the tool contract and cannot be removed; operators
//! may add glob patterns (`--deny`). Names still show in listings: only content is
//! refused, and it is refused before the file is opened.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::path::RelPath;

const SECRET_NAMES: &[&str] = &[
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    "credentials.json",
];
const SECRET_EXTENSIONS: &[&str] = &["pem", "key", "p12", "pfx", "jks", "keystore", "ppk"];
const SECRET_FOLDERS: &[&str] = &[".ssh", ".gnupg", ".aws"];
const HARMLESS_ENV_SUFFIXES: &[&str] = &["example", "sample", "template", "dist"];

/// The set of sensitive-file rules in force.
#[derive(Debug, Clone)]
pub struct Denylist {
    extra: GlobSet,
    extra_patterns: Vec<String>,
}

impl Default for Denylist {
    fn default() -> Self {
        Denylist {
            extra: GlobSet::empty(),
            extra_patterns: Vec::new(),
        }
    }
}

impl Denylist {
    /// The built-in rules plus the operator's glob patterns. A pattern without `/`
    /// matches a name at any depth; one with `/` matches the path from the root.
    pub fn with_patterns(patterns: &[String]) -> Result<Self, String> {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            let full = if pattern.contains('/') {
                pattern.trim_start_matches('/').to_string()
            } else {
                format!("**/{pattern}")
            };
            let glob = GlobBuilder::new(&full)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("--deny `{pattern}` is not a valid glob: {e}"))?;
            builder.add(glob);
        }
        let extra = builder
            .build()
            .map_err(|e| format!("--deny patterns could not be compiled: {e}"))?;
        Ok(Denylist {
            extra,
            extra_patterns: patterns.to_vec(),
        })
    }

    pub fn extra_patterns(&self) -> &[String] {
        &self.extra_patterns
    }

    /// Whether the content of `path` (relative to its root) must never be returned.
    pub fn is_sensitive(&self, path: &RelPath) -> bool {
        let parts: Vec<String> = path.components().map(|c| c.to_ascii_lowercase()).collect();
        let Some((name, folders)) = parts.split_last() else {
            return false;
        };
        if folders.iter().any(|f| SECRET_FOLDERS.contains(&f.as_str())) {
            return true;
        }
        if folders
            .windows(2)
            .any(|w| w[0] == ".git" && w[1] == "objects")
        {
            return true;
        }
        if is_secret_name(name) {
            return true;
        }
        !self.extra.is_empty() && self.extra.is_match(path.as_str())
    }
}

impl Denylist {
    /// Whether every file below a folder moved from `from` to `to` (paths
    /// relative to their roots) is sensitive at its new path exactly when it
    /// was at its old one. Only the rules that read folders can differ: a
    /// secret folder or `.git/objects` on the way, or an operator's pattern
    /// with a `/` (matched against the whole path). Answered from the two
    /// paths alone, so `false` whenever one of them could matter (a folder
    /// moved into or out of `.ssh`, or a tree with such patterns), never for
    /// two paths those rules cannot tell apart.
    pub fn same_below(&self, from: &RelPath, to: &RelPath) -> bool {
        let plain = |p: &RelPath| {
            p.components().all(|c| {
                let c = c.to_ascii_lowercase();
                !SECRET_FOLDERS.contains(&c.as_str()) && c != ".git" && c != "objects"
            })
        };
        plain(from) && plain(to) && self.extra_patterns.iter().all(|p| !p.contains('/'))
    }
}

fn is_secret_name(name: &str) -> bool {
    if SECRET_NAMES.contains(&name) {
        return true;
    }
    if name == ".env" {
        return true;
    }
    if let Some(suffix) = name.strip_prefix(".env.") {
        return !HARMLESS_ENV_SUFFIXES.contains(&suffix);
    }
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => SECRET_EXTENSIONS.contains(&ext),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> RelPath {
        RelPath::from_components(s.split('/'))
    }

    #[test]
    fn a_move_keeps_sensitivity_unless_a_folder_rule_can_tell_the_paths_apart() {
        let d = Denylist::default();
        assert!(d.same_below(&p("src/old"), &p("lib/new")));
        for (from, to) in [
            ("src/a", "home/.ssh"),
            (".SSH/x", "y"),
            ("a/.git", "b"),
            ("a", "objects/b"),
        ] {
            assert!(!d.same_below(&p(from), &p(to)), "{from} -> {to}");
        }
        let named = Denylist::with_patterns(&["*.secret".into()]).unwrap();
        assert!(named.same_below(&p("a"), &p("b")));
        let pathed = Denylist::with_patterns(&["private/**".into()]).unwrap();
        assert!(!pathed.same_below(&p("a"), &p("b")));
        // What the rule promises, file by file, for names of every kind.
        for name in ["id_rsa", "x.pem", ".env", "a.txt", "objects", "config"] {
            for (from, to) in [("src/old", "lib/new"), ("a", "b/c/d")] {
                let file = |f: &str| p(&format!("{f}/{name}"));
                assert_eq!(
                    named.is_sensitive(&file(from)),
                    named.is_sensitive(&file(to))
                );
            }
        }
    }

    #[test]
    fn contract_rules_hold() {
        let d = Denylist::default();
        for s in [
            "id_rsa",
            "home/.ssh/id_ed25519",
            ".ssh/config",
            ".ssh/id_rsa.pub",
            ".env",
            "app/.env.local",
            ".env.production",
            ".netrc",
            ".git-credentials",
            ".npmrc",
            ".pypirc",
            "cfg/credentials.json",
            "tls/server.pem",
            "tls/server.KEY",
            "a.p12",
            "a.pfx",
            "a.jks",
            "a.keystore",
            "putty.ppk",
            ".git/objects/ab/cdef",
            "sub/.git/objects/pack/x.pack",
            ".gnupg/pubring.kbx",
            ".aws/credentials",
        ] {
            assert!(d.is_sensitive(&p(s)), "{s} should be sensitive");
        }
    }

    #[test]
    fn harmless_neighbours_are_allowed() {
        let d = Denylist::default();
        for s in [
            "id_rsa.pub",
            ".env.example",
            ".env.sample",
            ".env.template",
            ".env.dist",
            "environment.md",
            "keys.txt",
            "src/key.rs",
            ".key",
            ".git/config",
            ".git/objects",
            "docs/ssh.md",
            "credentials.json.md",
        ] {
            assert!(!d.is_sensitive(&p(s)), "{s} should be allowed");
        }
    }

    #[test]
    fn operator_patterns_add_to_the_rules() {
        let d = Denylist::with_patterns(&["*.secret".into(), "private/**".into()]).unwrap();
        assert!(d.is_sensitive(&p("a/b/x.secret")));
        assert!(d.is_sensitive(&p("private/notes.md")));
        assert!(!d.is_sensitive(&p("public/private/notes.md")));
        assert!(d.is_sensitive(&p(".env")), "built-ins cannot be removed");
        assert!(Denylist::with_patterns(&["a[".into()]).is_err());
    }
}
