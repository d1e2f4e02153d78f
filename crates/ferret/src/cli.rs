//! Command-line flags, defined once: `--help` comes from here, and every flag
//! can also come from a `FERRET_*` environment variable for MCP client configs.

use std::{ffi::OsString, net::SocketAddr, path::PathBuf};

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use ferret_fs::RootSpec;

use crate::config::{self, ConfigFile};

const EXAMPLES: &str = "\
Examples:
  ferret serve --root ~/projects                 HTTP on 127.0.0.1:8031/mcp
  ferret serve --stdio --root ~/notes            for a client that launches ferret
  ferret serve --root code=~/src --root notes=~/notes --bind 127.0.0.1:9000
  FERRET_ROOTS=~/a,~/b ferret serve --stdio      roots from the environment";

#[derive(Debug, Parser)]
#[command(
    name = "ferret",
    version,
    about = "Everything-class file search and safe file access for AI agents, over MCP",
    after_help = EXAMPLES
)]
pub struct Cli {
    /// Configuration file: the long flags of `serve` as keys [default: $XDG_CONFIG_HOME/ferret/ferret.toml].
    #[arg(long, global = true, value_name = "PATH", env = "FERRET_CONFIG")]
    pub config: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the roots over MCP (Streamable HTTP by default, or stdio).
    #[command(after_help = EXAMPLES)]
    Serve(ServeArgs),
    /// Build the index of the roots and save it, so that `serve` and `search` start at once.
    #[command(after_help = "Example:\n  ferret index --root ~/projects")]
    Index(IndexCommand),
    /// Search the saved index from the command line, like Everything's es.exe.
    #[command(after_help = SEARCH_EXAMPLES)]
    Search(SearchCommand),
    /// Search inside the files of the roots (ripgrep's engine, candidates from the index).
    #[command(after_help = GREP_EXAMPLES)]
    Grep(GrepCommand),
    /// Check what `serve` would need with these flags, one line each, with the fix.
    #[command(after_help = DOCTOR_EXAMPLES)]
    Doctor(DoctorArgs),
    /// Print the configuration `serve` would run with, and where each value comes from.
    #[command(after_help = "Example:\n  ferret config --root ~/src --config ./ferret.toml")]
    Config(ConfigArgs),
    /// Print the bearer token HTTP clients send to `serve` with these flags (generated into the state folder at first use).
    #[command(after_help = TOKEN_EXAMPLES)]
    Token(TokenArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Example:\n  ferret completions bash > ~/.local/share/bash-completion/completions/ferret"
    )]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `ferret man | man -l -`.
    Man,
}

const DOCTOR_EXAMPLES: &str = "\
Examples:
  ferret doctor --root ~/projects
  ferret doctor --stdio --root code=~/src:rw --json";

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Print the checks as JSON.
    #[arg(long)]
    pub json: bool,
}

const TOKEN_EXAMPLES: &str = "\
Examples:
  ferret token
  curl -H \"Authorization: Bearer $(ferret token)\" 'http://127.0.0.1:8031/?search=ext:md&json=1'
  ferret token --rotate          a new token (restart serve; reconfigure clients)";

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Replace the kept token with a new one (clients need the new one; restart serve).
    #[arg(long)]
    pub rotate: bool,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
}

const GREP_EXAMPLES: &str = "\
Examples:
  ferret grep 'fn main' --root ~/src --filter 'ext:rs !target/'
  ferret grep -i -F 'todo(' --root ~/notes --json";

const SEARCH_EXAMPLES: &str = "\
Examples:
  ferret search 'ext:rs main' --root ~/src
  ferret search 'dm:today' --root ~/notes --sort modified --descending --limit 20
  ferret search '*.pdf size:>10mb' --root ~/docs --json";

/// The folders and the rules shared by every command.
#[derive(Debug, Clone, Args)]
pub struct RootArgs {
    /// A folder to serve, as DIR or NAME=DIR; repeat for several roots.
    #[arg(
        long = "root",
        short = 'r',
        value_name = "[NAME=]DIR",
        env = "FERRET_ROOTS",
        value_delimiter = ','
    )]
    pub roots: Vec<RootSpec>,

    /// Show and index hidden (dot) files by default.
    #[arg(long, env = "FERRET_HIDDEN")]
    pub hidden: bool,

    /// Do not apply .gitignore/.ignore rules (listing and index).
    #[arg(long, env = "FERRET_NO_IGNORE")]
    pub no_ignore: bool,
}

/// Where the index lives and how much history it keeps.
#[derive(Debug, Clone, Args)]
pub struct IndexArgs {
    /// Folder for the index snapshot and the change journal [default: $XDG_STATE_HOME/ferret, else ~/.local/state/ferret].
    #[arg(long, value_name = "DIR", env = "FERRET_STATE_DIR")]
    pub state_dir: Option<PathBuf>,

    /// Keep the index and the journal in memory only.
    #[arg(long, env = "FERRET_NO_PERSIST")]
    pub no_persist: bool,

    /// Forget journal entries older than this (s, m, h, d suffix).
    #[arg(long, value_name = "AGE", env = "FERRET_JOURNAL_MAX_AGE", default_value = "30d",
          value_parser = parse_age)]
    pub journal_max_age: std::time::Duration,

    /// Keep at most this many journal entries.
    #[arg(
        long,
        value_name = "N",
        env = "FERRET_JOURNAL_MAX_ENTRIES",
        default_value_t = 1_000_000
    )]
    pub journal_max_entries: u64,

    /// Where inotify cannot hear every change (its watch limit is reached or it is unavailable; folders on network or FUSE file systems; a folder at two paths, a bind mount), rescan those folders this often (s, m, h suffix).
    #[arg(long, value_name = "AGE", env = "FERRET_RESCAN_EVERY", default_value = "60s",
          value_parser = parse_age)]
    pub rescan_every: std::time::Duration,
}

/// The content index: a trigram index of the files' text, so that `grep`
/// reads only the files that can match.
#[derive(Debug, Clone, Args)]
pub struct ContentArgs {
    /// Keep a content index (trigrams of every text file, memory-mapped in the state dir) so that grep reads only the files that can match: on or off.
    #[arg(long = "content-index", value_name = "on|off", env = "FERRET_CONTENT_INDEX",
          default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pub content_index: bool,

    /// Text the content index holds in all; the files past it are searched directly.
    #[arg(long, value_name = "BYTES", env = "FERRET_CONTENT_INDEX_MAX_BYTES", default_value = "2G",
          value_parser = parse_bytes)]
    pub content_index_max_bytes: u64,

    /// Files larger than this are not in the content index (grep reads them) [default: --max-file-bytes].
    #[arg(long, value_name = "BYTES", env = "FERRET_CONTENT_INDEX_MAX_FILE_BYTES",
          value_parser = parse_bytes)]
    pub content_index_max_file_bytes: Option<u64>,
}

/// What may be read, shared by every command that reads files (`serve`,
/// `index`, `grep`), so that each reads (and indexes) what `serve` would.
#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// Files above this size are never loaded whole (read streams a window; no checksum).
    #[arg(long, value_name = "BYTES", env = "FERRET_MAX_FILE_BYTES", default_value = "10M",
          value_parser = parse_bytes)]
    pub max_file_bytes: u64,

    /// Extra sensitive-file glob (content never returned); repeatable. The built-in list always applies.
    #[arg(
        long = "deny",
        value_name = "GLOB",
        env = "FERRET_DENY",
        value_delimiter = ','
    )]
    pub deny: Vec<String>,
}

#[derive(Debug, Args)]
pub struct IndexCommand {
    #[command(flatten)]
    pub roots: RootArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub index: IndexArgs,
    #[command(flatten)]
    pub content: ContentArgs,
}

#[derive(Debug, Args)]
pub struct SearchCommand {
    /// The query, in ferret's Everything-style syntax ("" matches everything).
    pub query: String,
    #[command(flatten)]
    pub roots: RootArgs,
    #[command(flatten)]
    pub index: IndexArgs,
    /// Only under this folder.
    #[arg(long)]
    pub path: Option<String>,
    /// relevance, name, path, size, modified, created or extension [default:
    /// relevance when the query names something (then, when no name holds
    /// every word, fuzzy matches, as the `search` tool answers), else name].
    #[arg(long)]
    pub sort: Option<String>,
    #[arg(long)]
    pub descending: bool,
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    /// Print JSON lines instead of paths.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct GrepCommand {
    /// What to look for: a regex (Rust syntax) unless --literal.
    pub pattern: String,
    #[command(flatten)]
    pub roots: RootArgs,
    #[command(flatten)]
    pub index: IndexArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// The saved content index (written by `ferret index` or `serve`), used
    /// when there is one; never built here.
    #[command(flatten)]
    pub content: ContentArgs,
    /// Everything-style query that picks the files first, e.g. 'ext:rs !target/'.
    #[arg(long, value_name = "QUERY")]
    pub filter: Option<String>,
    /// Only this folder or file.
    #[arg(long)]
    pub path: Option<String>,
    /// The pattern is a fixed string.
    #[arg(long, short = 'F')]
    pub literal: bool,
    #[arg(long, short = 'i')]
    pub case_insensitive: bool,
    #[arg(long, short = 'w')]
    pub whole_word: bool,
    /// Matches may span lines.
    #[arg(long, short = 'U')]
    pub multiline: bool,
    /// Lines of context around each match.
    #[arg(long, short = 'C', default_value_t = 0)]
    pub context: usize,
    /// Print matching files only.
    #[arg(long, short = 'l', conflicts_with = "count")]
    pub files: bool,
    /// Print the number of matching lines per file.
    #[arg(long, short = 'c')]
    pub count: bool,
    #[arg(long, default_value_t = 100_000)]
    pub limit: usize,
    /// Search documents (PDF, Office, OpenDocument, EPUB) as their text: `--documents`, `--documents=off` [default: on when --filter or --path names them, e.g. ext:pdf].
    #[arg(long, value_name = "on|off", num_args = 0..=1, default_missing_value = "on",
          require_equals = true, value_parser = parse_on_off)]
    pub documents: Option<bool>,
    /// Print JSON lines.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub root_args: RootArgs,

    /// More folders to serve, taken exactly as given (no NAME=, no :rw, no comma
    /// splitting), each named after its last component (`docs`, `docs-2` …).
    #[arg(value_name = "DIR")]
    pub folders: Vec<PathBuf>,

    #[command(flatten)]
    pub index: IndexArgs,

    #[command(flatten)]
    pub content: ContentArgs,

    /// Speak MCP over stdin/stdout instead of HTTP.
    #[arg(long, env = "FERRET_STDIO", conflicts_with = "bind")]
    pub stdio: bool,

    /// Make every root writable (offers write, edit, manage); per root: --root NAME=DIR:rw.
    #[arg(long, env = "FERRET_WRITABLE")]
    pub writable: bool,

    /// With --stdio and no root: serve the folder ferret starts in, never the client's roots.
    #[arg(long, env = "FERRET_NO_CLIENT_ROOTS")]
    pub no_client_roots: bool,

    /// Address for Streamable HTTP (MCP at /mcp and /, the search page at /, probes at /health).
    #[arg(
        long,
        value_name = "ADDR",
        env = "FERRET_BIND",
        default_value = "127.0.0.1:8031"
    )]
    pub bind: SocketAddr,

    #[command(flatten)]
    pub policy: PolicyArgs,

    /// Payload budget of one answer (an upper bound; --max-response-chars is the one clients feel).
    #[arg(long, value_name = "BYTES", env = "FERRET_MAX_RESPONSE_BYTES", default_value = "128K",
          value_parser = parse_bytes)]
    pub max_response_bytes: u64,

    /// What a client is shown of one answer, at most, in characters (its structured JSON and its text, each); lowered to MAX_MCP_OUTPUT_TOKENS x 3 when that is set.
    #[arg(
        long,
        value_name = "CHARS",
        env = "FERRET_MAX_RESPONSE_CHARS",
        default_value_t = 40_000
    )]
    pub max_response_chars: usize,

    /// Lines longer than this many characters are clipped in `read`.
    #[arg(
        long,
        value_name = "CHARS",
        env = "FERRET_MAX_LINE_CHARS",
        default_value_t = 2000
    )]
    pub max_line_chars: usize,

    /// Images above this size are refused instead of returned.
    #[arg(long, value_name = "BYTES", env = "FERRET_MAX_IMAGE_BYTES", default_value = "5M",
          value_parser = parse_bytes)]
    pub max_image_bytes: u64,

    /// Host name clients use to reach ferret (needed for a non-loopback --bind); repeatable.
    #[arg(
        long = "allowed-host",
        value_name = "HOST",
        env = "FERRET_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,

    /// Browser origin to accept, e.g. https://app.example:443; repeatable.
    #[arg(
        long = "allowed-origin",
        value_name = "ORIGIN",
        env = "FERRET_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub allowed_origins: Vec<String>,

    /// Bearer token HTTP clients must send [default: generated into <state dir>/token; `ferret token` prints it]. Prefer FERRET_TOKEN or --token-file: the command line is visible in `ps`.
    #[arg(
        long,
        value_name = "SECRET",
        env = "FERRET_TOKEN",
        hide_env_values = true,
        conflicts_with_all = ["token_file", "no_token"]
    )]
    pub token: Option<String>,

    /// Read the bearer token from the first line of this file (chmod 600).
    #[arg(
        long,
        value_name = "PATH",
        env = "FERRET_TOKEN_FILE",
        conflicts_with = "no_token"
    )]
    pub token_file: Option<PathBuf>,

    /// Serve HTTP without a token (loopback only): for a single-user machine, where no other account or process must be kept out.
    #[arg(long, env = "FERRET_NO_TOKEN")]
    pub no_token: bool,

    /// Set by `main`: `--token` was typed on the command line (visible in `ps`).
    #[arg(skip)]
    pub token_on_command_line: bool,

    /// Give handshake-era HTTP clients a session (Mcp-Session-Id), so that resource
    /// subscriptions, logging/setLevel and consent questions work for them;
    /// 2026-07-28 clients are stateless either way.
    #[arg(long, env = "FERRET_HTTP_SESSIONS", conflicts_with = "stdio")]
    pub http_sessions: bool,

    /// Do not serve the search page and Everything's JSON API at GET / (MCP stays at /mcp and /).
    #[arg(long, env = "FERRET_NO_UI")]
    pub no_ui: bool,

    /// Let the search page download whole files (it only previews them otherwise).
    #[arg(long, env = "FERRET_UI_DOWNLOADS")]
    pub ui_downloads: bool,

    /// A folder `locate` may search by name (never read, listed or grepped); repeatable.
    #[arg(
        long = "locate-root",
        value_name = "DIR",
        env = "FERRET_LOCATE_ROOTS",
        value_delimiter = ','
    )]
    pub locate_roots: Vec<RootSpec>,

    /// Whether `locate` runs: deny, ask (the user is asked before each search) or allow.
    #[arg(long = "locate", value_name = "POLICY", env = "FERRET_LOCATE", default_value = "ask",
          value_parser = parse_locate_policy)]
    pub locate_policy: ferret_server::LocatePolicy,

    /// Largest HTTP request body accepted.
    #[arg(long, value_name = "BYTES", env = "FERRET_MAX_REQUEST_BYTES", default_value = "1M",
          value_parser = parse_bytes)]
    pub max_request_bytes: u64,

    /// Write logs to this file instead of stderr.
    #[arg(long, value_name = "PATH", env = "FERRET_LOG_FILE")]
    pub log_file: Option<PathBuf>,

    /// Log lines as text, or as one JSON object per line.
    #[arg(long, value_name = "FORMAT", env = "FERRET_LOG_FORMAT", default_value = "text",
          value_parser = ["text", "json"])]
    pub log_format: String,

    /// After SIGINT/SIGTERM, how long calls in flight may take to finish (a second signal exits at once).
    #[arg(long, value_name = "AGE", env = "FERRET_SHUTDOWN_GRACE", default_value = "10s",
          value_parser = parse_age)]
    pub shutdown_grace: std::time::Duration,

    /// Build the symbols table (every source file's definitions, saved in the state dir) in the background once the index is ready: on or off (off: the first symbols call builds it, or reads back the saved one). Off by default: the build's peak memory is several times what the table keeps.
    #[arg(long = "symbols-early", value_name = "on|off", env = "FERRET_SYMBOLS_EARLY",
          default_value = "off", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pub symbols_early: bool,

    /// How long a grep, list, search, locate or manage call runs before it answers
    /// with an MCP task, for clients that declare the tasks extension (0: at once).
    #[arg(long, value_name = "TIME", env = "FERRET_TASK_AFTER", default_value = "1s",
          value_parser = parse_delay)]
    pub task_after: std::time::Duration,
}

/// The command line, with `ferret.toml` (when there is one) as the defaults of
/// the flags it names.
pub struct Parsed {
    pub cli: Cli,
    /// The command as parsed (with the file's defaults), for `ferret config`.
    pub command: clap::Command,
    pub matches: ArgMatches,
    pub file: ConfigFile,
}

/// Parse `argv`. Help, version and flag errors print and exit as clap does;
/// a bad configuration file is an error naming the key and the line.
pub fn parse(argv: Vec<OsString>) -> Result<Parsed, String> {
    parse_with(argv, |e| e.exit())
}

/// Parse `argv` again while ferret runs (`ferret.toml` changed): every
/// error, the command line's included, is returned, never printed.
pub fn parse_again(argv: Vec<OsString>) -> Result<Parsed, String> {
    parse_with(argv, |e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or("invalid command line");
        Err(first.trim_start_matches("error: ").to_string())
    })
}

/// `clap_error` exits, or says what was wrong.
fn parse_with(
    argv: Vec<OsString>,
    clap_error: impl Fn(clap::Error) -> Result<std::convert::Infallible, String>,
) -> Result<Parsed, String> {
    let file = match config::requested_path(&argv) {
        Some((path, explicit)) => config::load(&path, explicit)?,
        None => ConfigFile::default(),
    };
    let command = boolean_env(config::apply(Cli::command(), &file)?)?;
    let matches = match command.clone().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => match clap_error(e)? {},
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => match clap_error(e)? {},
    };
    Ok(Parsed {
        cli,
        command,
        matches,
        file,
    })
}

/// Boolean flags read their environment variable as people write booleans
/// (`1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`), not only as `true`/`false`,
/// and a value that is none of these is refused naming the variable, which is
/// what the user set (clap's own error names the flag).
fn boolean_env(command: clap::Command) -> Result<clap::Command, String> {
    use clap::builder::{BoolishValueParser, TypedValueParser};
    fn is_switch_with_env(arg: &clap::Arg) -> bool {
        arg.get_env().is_some() && matches!(arg.get_action(), clap::ArgAction::SetTrue)
    }
    fn check(command: &clap::Command) -> Result<(), String> {
        for arg in command.get_arguments().filter(|a| is_switch_with_env(a)) {
            let name = arg.get_env().expect("filtered on env");
            let Some(value) = std::env::var_os(name) else {
                continue;
            };
            if BoolishValueParser::new()
                .parse_ref(command, Some(arg), &value)
                .is_err()
            {
                return Err(format!(
                    "{}={} is not a boolean: set it to 1 or 0 (also true/false, yes/no, on/off), or unset it",
                    name.to_string_lossy(),
                    value.to_string_lossy()
                ));
            }
        }
        command.get_subcommands().try_for_each(check)
    }
    fn boolish(command: clap::Command) -> clap::Command {
        command
            .mut_args(|arg| {
                if is_switch_with_env(&arg) {
                    arg.value_parser(BoolishValueParser::new())
                } else {
                    arg
                }
            })
            .mut_subcommands(boolish)
    }
    let command = boolish(command);
    // The parser reports through the built argument.
    let mut built = command.clone();
    built.build();
    check(&built)?;
    Ok(command)
}

fn parse_locate_policy(s: &str) -> Result<ferret_server::LocatePolicy, String> {
    s.parse()
}

/// `90s`, `30m`, `12h`, `30d`.
pub fn parse_age(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let bad = || format!("`{s}` is not an age; write e.g. 12h or 30d");
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    Ok(std::time::Duration::from_secs(n * secs))
}

/// `on` or `off` (also `1`/`0`, `true`/`false`, `yes`/`no`, as booleans are
/// written elsewhere).
fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        other => Err(format!("`{other}` is neither on nor off; write on or off")),
    }
}

/// `0`, `250ms`, `2s`, `1m`: a short delay.
pub fn parse_delay(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let bad = || format!("`{s}` is not a delay; write e.g. 0, 250ms, 2s or 1m");
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let ms = match unit {
        "" if n == 0 => 0,
        "ms" => n,
        "s" => n.saturating_mul(1000),
        "m" => n.saturating_mul(60_000),
        _ => return Err(bad()),
    };
    Ok(std::time::Duration::from_millis(ms))
}

/// `4096`, `64K`, `10M`, `1G` (powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a size; write e.g. 4096, 64K, 10M or 1G"))?;
    let scale = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{s}`; use K, M or G"
            ));
        }
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("`{s}` is too large"))
}

impl IndexArgs {
    /// `--state-dir`, else `$XDG_STATE_HOME/ferret`, else
    /// `~/.local/state/ferret`: where the snapshot, the journal and the HTTP
    /// token live (the token even with `--no-persist`).
    pub fn state_dir_or_default(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.state_dir {
            return Some(dir.clone());
        }
        if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir).join("ferret"));
        }
        std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state/ferret"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn flags_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("64K"), Ok(65536));
        assert_eq!(parse_bytes("10m"), Ok(10 << 20));
        assert!(parse_bytes("ten").is_err());
        assert!(parse_bytes("5X").is_err());
        assert_eq!(parse_age("30d").unwrap().as_secs(), 30 * 86_400);
        assert!(parse_age("30").is_err() && parse_age("x").is_err());
        assert_eq!(parse_delay("0").unwrap().as_millis(), 0);
        assert_eq!(parse_delay("250ms").unwrap().as_millis(), 250);
        assert_eq!(parse_delay("2s").unwrap().as_millis(), 2000);
        assert!(parse_delay("2").is_err() && parse_delay("2h").is_err());
    }

    #[test]
    fn roots_and_names_parse() {
        let cli = Cli::try_parse_from(["ferret", "serve", "--stdio", "-r", "a=/x", "--root", "/y"])
            .unwrap();
        let Command::Serve(s) = cli.command else {
            panic!("serve expected")
        };
        assert_eq!(s.root_args.roots.len(), 2);
        assert_eq!(s.root_args.roots[0].name.as_deref(), Some("a"));
        assert!(s.stdio);
        let cli =
            Cli::try_parse_from(["ferret", "serve", "--stdio", "--", "/a,b", "/c:rw"]).unwrap();
        let Command::Serve(s) = cli.command else {
            panic!("serve expected")
        };
        assert_eq!(
            s.folders,
            [PathBuf::from("/a,b"), PathBuf::from("/c:rw")],
            "taken verbatim"
        );
    }
}
