//! The HTTP bearer token: where `serve` gets it, and where it is kept.
//!
//! Over HTTP every request needs the token unless the operator says otherwise
//! (`--no-token`, loopback only), so that other accounts and processes on the
//! machine cannot read the served folders through loopback. In order:
//! `--no-token` (none), `--token` / `FERRET_TOKEN` (the value), `--token-file
//! PATH` (its first line), else `<state dir>/token`, generated at the first
//! start (32 random bytes, URL-safe base64) with mode 0600 and kept, so that
//! client configurations keep working across restarts. `ferret token` prints
//! the one `serve` would use with the same flags. Stdio needs none: whoever
//! talks to stdin already runs the process.
//!
//! The token is never logged. It is printed on a terminal (the startup lines,
//! `ferret token`, `ferret doctor`'s client configurations) and nowhere else.

use std::{
    fs,
    io::{self, Read, Write},
    os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt},
    path::{Path, PathBuf},
};

use base64::Engine as _;

use crate::cli;

/// The token file's name in the state folder.
pub const FILE_NAME: &str = "token";
/// A token file longer than this is not a token.
const MAX_FILE_BYTES: u64 = 4096;

/// Where the token in use came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `--token` on the command line (visible in `ps`), or the config file.
    Flag,
    /// `FERRET_TOKEN`.
    Environment,
    /// `--token-file PATH`.
    File(PathBuf),
    /// `<state dir>/token`; `created`: generated just now.
    State { path: PathBuf, created: bool },
}

#[derive(Clone)]
pub struct Token {
    pub secret: String,
    pub origin: Origin,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("secret", &"…")
            .field("origin", &self.origin)
            .finish()
    }
}

impl Token {
    /// Where it is kept, for messages ("kept in …").
    pub fn describe(&self) -> String {
        match &self.origin {
            Origin::Flag => "given with --token".into(),
            Origin::Environment => "given in FERRET_TOKEN".into(),
            Origin::File(p) => format!("read from {}", p.display()),
            Origin::State { path, created } => format!(
                "{} {}",
                if *created {
                    "generated into"
                } else {
                    "kept in"
                },
                path.display()
            ),
        }
    }
}

/// `<state dir>/token`, where `serve` keeps a generated token.
pub fn state_path(state_dir: Option<&Path>) -> Option<PathBuf> {
    state_dir.map(|d| d.join(FILE_NAME))
}

/// The token `serve` uses over HTTP with these flags: `None` with `--no-token`;
/// the state folder's token is generated when there is none yet.
pub fn resolve(args: &cli::ServeArgs) -> anyhow::Result<Option<Token>> {
    if args.no_token {
        return Ok(None);
    }
    if let Some(secret) = args.token.as_deref() {
        let secret = secret.trim();
        if secret.is_empty() {
            anyhow::bail!(
                "the token is empty; set FERRET_TOKEN to a long random secret, drop it (a token is then generated and kept in the state folder), or allow tokenless loopback with --no-token"
            );
        }
        let from_env = std::env::var("FERRET_TOKEN").is_ok_and(|v| v.trim() == secret);
        return Ok(Some(Token {
            secret: secret.to_string(),
            origin: if from_env && !args.token_on_command_line {
                Origin::Environment
            } else {
                Origin::Flag
            },
        }));
    }
    if let Some(path) = &args.token_file {
        let secret = read(path).map_err(|e| {
            anyhow::anyhow!(
                "--token-file {}: {e}; write the token into that file (chmod 600), or drop --token-file",
                path.display()
            )
        })?;
        return Ok(Some(Token {
            secret,
            origin: Origin::File(path.clone()),
        }));
    }
    let state_dir = args.index.state_dir_or_default();
    let Some(path) = state_path(state_dir.as_deref()) else {
        anyhow::bail!(
            "there is no state folder to keep the HTTP token in (neither XDG_STATE_HOME nor HOME is set); give one with --state-dir DIR, a token with --token-file PATH or FERRET_TOKEN, or allow tokenless loopback with --no-token"
        );
    };
    let cannot = |e: io::Error| {
        anyhow::anyhow!(
            "cannot keep the HTTP token in {}: {e}; choose a writable --state-dir, give a token with --token-file PATH or FERRET_TOKEN, or allow tokenless loopback with --no-token",
            path.display()
        )
    };
    let (secret, created) = load_or_create(&path).map_err(cannot)?;
    Ok(Some(Token {
        secret,
        origin: Origin::State { path, created },
    }))
}

/// A new token: 32 bytes from the operating system's generator, as URL-safe
/// base64 (43 characters; safe in headers, URLs and shells).
pub fn generate() -> io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(io::Error::other)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The first line of a token file, which must be a regular file. A file that
/// other accounts may read is used with a warning naming the fix.
pub fn read(path: &Path) -> io::Result<String> {
    let mut file = fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.mode() & 0o077 != 0 {
        tracing::warn!(
            path = %path.display(),
            "the token file can be read by other accounts; chmod 600 it"
        );
    }
    let mut text = String::new();
    (&mut file)
        .take(MAX_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not text"))?;
    let secret = text.lines().next().unwrap_or("").trim().to_string();
    if secret.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the file is empty (delete it and ferret generates a new token)",
        ));
    }
    Ok(secret)
}

/// The folder of `path`, created for this account only (0700) when missing.
fn private_folder_of(path: &Path) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// A new token at `path` in place of the old one (`ferret token --rotate`),
/// its folder made as [`load_or_create`] makes it.
pub fn rotate(path: &Path) -> io::Result<String> {
    private_folder_of(path)?;
    let secret = generate()?;
    replace(path, &secret, true)?;
    Ok(secret)
}

/// Read the token at `path`, or generate one there: written whole to a
/// temporary file (0600) and linked into place, so a reader never sees half a
/// token and two ferrets starting together end up with the same one.
pub fn load_or_create(path: &Path) -> io::Result<(String, bool)> {
    match read(path) {
        Ok(secret) => return Ok((secret, false)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    private_folder_of(path)?;
    let secret = generate()?;
    replace(path, &secret, false)?;
    // Another process may have won the race: use what is there.
    let kept = read(path)?;
    let created = kept == secret;
    Ok((kept, created))
}

/// Write `secret` to `path` (0600) atomically; `overwrite`: replace an
/// existing token (`ferret token --rotate`), else keep it.
pub fn replace(path: &Path, secret: &str, overwrite: bool) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let temp = dir.join(format!(
        ".{FILE_NAME}-{}-{}",
        std::process::id(),
        &generate()?[..8]
    ));
    let result = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(secret.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        if overwrite {
            fs::rename(&temp, path)
        } else {
            match fs::hard_link(&temp, path) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
                other => other,
            }
        }
    })();
    let _ = fs::remove_file(&temp);
    if result.is_ok()
        && let Ok(d) = fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
    result
}

/// The lines `serve` prints (not logs) about the token before it listens: on
/// a terminal the token itself, as Jupyter does; elsewhere how to get it.
pub fn startup_lines(token: Option<&Token>, url: &str, on_terminal: bool) -> String {
    let Some(token) = token else {
        return "ferret: no token (--no-token): every local account and process can use this server".into();
    };
    if on_terminal {
        format!(
            "ferret: HTTP clients send the header \"Authorization: Bearer {0}\" ({1}; `ferret token` prints it)\n  e.g. claude mcp add --transport http ferret {url} --header \"Authorization: Bearer {0}\"",
            token.secret,
            token.describe()
        )
    } else {
        format!(
            "ferret: HTTP clients send the header \"Authorization: Bearer TOKEN\"; the token is {} (`ferret token` with the same --state-dir prints it)",
            token.describe()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_token_is_kept_private_and_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("state/ferret/token");
        let (first, created) = load_or_create(&path).unwrap();
        assert!(created);
        assert_eq!(first.len(), 43, "32 bytes of URL-safe base64");
        assert!(
            first
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600, "only the owner reads it");
        assert_eq!(
            fs::metadata(path.parent().unwrap()).unwrap().mode() & 0o777,
            0o700
        );
        let (again, created) = load_or_create(&path).unwrap();
        assert_eq!((again.as_str(), created), (first.as_str(), false));
        assert_ne!(generate().unwrap(), first, "tokens are random");
        let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, [std::ffi::OsString::from("token")]);
    }

    #[test]
    fn rotating_replaces_and_bad_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("token");
        let (old, _) = load_or_create(&path).unwrap();
        let new = generate().unwrap();
        replace(&path, &new, true).unwrap();
        assert_eq!(read(&path).unwrap(), new);
        assert_ne!(old, new);
        fs::write(&path, "\n").unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("empty"));
        let folder = tmp.path().join("folder");
        fs::create_dir(&folder).unwrap();
        assert!(read(&folder).is_err());
    }

    #[test]
    fn a_fifo_named_token_is_refused_without_waiting() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("token");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let started = std::time::Instant::now();
        assert!(read(&path).unwrap_err().to_string().contains("regular"));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn the_startup_lines_show_the_token_only_on_a_terminal() {
        let token = Token {
            secret: "s3cret-value".into(),
            origin: Origin::State {
                path: "/st/token".into(),
                created: true,
            },
        };
        let url = "http://127.0.0.1:8031/mcp";
        let shown = startup_lines(Some(&token), url, true);
        assert!(shown.contains("Authorization: Bearer s3cret-value") && shown.contains(url));
        let piped = startup_lines(Some(&token), url, false);
        assert!(!piped.contains("s3cret") && piped.contains("/st/token"));
        assert!(startup_lines(None, url, false).contains("--no-token"));
        assert!(!format!("{token:?}").contains("s3cret"));
    }
}
