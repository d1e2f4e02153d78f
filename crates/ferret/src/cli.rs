//! Command-line flags, defined once: `--help` comes from here, and every flag
//! can also come from a `FERRET_*` environment variable for MCP client configs.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand};
use ferret_fs::RootSpec;

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
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the roots over MCP (Streamable HTTP by default, or stdio).
    #[command(after_help = EXAMPLES)]
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A folder to serve, as DIR or NAME=DIR; repeat for several roots.
    #[arg(
        long = "root",
        short = 'r',
        value_name = "[NAME=]DIR",
        env = "FERRET_ROOTS",
        value_delimiter = ',',
        required = true
    )]
    pub roots: Vec<RootSpec>,

    /// Speak MCP over stdin/stdout instead of HTTP.
    #[arg(long, env = "FERRET_STDIO", conflicts_with = "bind")]
    pub stdio: bool,

    /// Address for Streamable HTTP (MCP at /mcp and /, probes at /health).
    #[arg(
        long,
        value_name = "ADDR",
        env = "FERRET_BIND",
        default_value = "127.0.0.1:8031"
    )]
    pub bind: SocketAddr,

    /// Show hidden (dot) files in listings by default.
    #[arg(long, env = "FERRET_HIDDEN")]
    pub hidden: bool,

    /// Do not apply .gitignore/.ignore rules by default.
    #[arg(long, env = "FERRET_NO_IGNORE")]
    pub no_ignore: bool,

    /// Files above this size are never loaded whole (read streams a window; no checksum).
    #[arg(long, value_name = "BYTES", env = "FERRET_MAX_FILE_BYTES", default_value = "10M",
          value_parser = parse_bytes)]
    pub max_file_bytes: u64,

    /// Payload budget of one answer.
    #[arg(long, value_name = "BYTES", env = "FERRET_MAX_RESPONSE_BYTES", default_value = "128K",
          value_parser = parse_bytes)]
    pub max_response_bytes: u64,

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

    /// Extra sensitive-file glob (content never returned); repeatable. The built-in list always applies.
    #[arg(
        long = "deny",
        value_name = "GLOB",
        env = "FERRET_DENY",
        value_delimiter = ','
    )]
    pub deny: Vec<String>,

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

    /// Bearer token clients must send (required for a non-loopback --bind). Prefer the variable.
    #[arg(
        long,
        value_name = "SECRET",
        env = "FERRET_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,

    /// Largest HTTP request body accepted.
    #[arg(long, value_name = "BYTES", env = "FERRET_MAX_REQUEST_BYTES", default_value = "1M",
          value_parser = parse_bytes)]
    pub max_request_bytes: u64,

    /// Write logs to this file instead of stderr.
    #[arg(long, value_name = "PATH", env = "FERRET_LOG_FILE")]
    pub log_file: Option<PathBuf>,
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
    }

    #[test]
    fn roots_and_names_parse() {
        let cli = Cli::try_parse_from(["ferret", "serve", "--stdio", "-r", "a=/x", "--root", "/y"])
            .unwrap();
        let Command::Serve(s) = cli.command;
        assert_eq!(s.roots.len(), 2);
        assert_eq!(s.roots[0].name.as_deref(), Some("a"));
        assert!(s.stdio);
        assert!(
            Cli::try_parse_from(["ferret", "serve"]).is_err(),
            "a root is required"
        );
    }
}
