//! `ferret.toml`: the flags of `ferret serve`, written down.
//!
//! Keys are the long flag names (`root`, `bind`, `max-file-bytes`, ...); lists
//! are TOML arrays. Precedence: flags > environment (`FERRET_*`) > the file >
//! built-in defaults. That order falls out of clap itself: each file value
//! becomes the default of its argument before the command line is parsed, so
//! a flag or a variable still wins. Values are checked here, with the value
//! parser of their own flag, so a bad value is reported with its line.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use clap::{ArgMatches, Command, parser::ValueSource};

/// One `key = value` of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub key: String,
    pub values: Vec<String>,
    pub line: usize,
}

/// A configuration file, read and checked.
#[derive(Debug, Clone, Default)]
pub struct ConfigFile {
    pub path: Option<PathBuf>,
    pub settings: Vec<Setting>,
}

impl ConfigFile {
    pub fn setting(&self, key: &str) -> Option<&Setting> {
        self.settings.iter().find(|s| s.key == key)
    }
}

/// `$XDG_CONFIG_HOME/ferret/ferret.toml`, else `~/.config/ferret/ferret.toml`.
pub fn default_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("ferret/ferret.toml"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config/ferret/ferret.toml"))
}

/// The file asked for with `--config PATH` (or `FERRET_CONFIG`), with whether it
/// was asked for (then it must exist), else the default location.
pub fn requested_path(argv: &[OsString]) -> Option<(PathBuf, bool)> {
    let mut args = argv.iter().skip(1);
    while let Some(a) = args.next() {
        if a == "--" {
            break;
        }
        if a == "--config" {
            return args.next().map(|p| (PathBuf::from(p), true));
        }
        if let Some(p) = a.to_str().and_then(|s| s.strip_prefix("--config=")) {
            return Some((PathBuf::from(p), true));
        }
    }
    if let Some(p) = std::env::var_os("FERRET_CONFIG").filter(|p| !p.is_empty()) {
        return Some((PathBuf::from(p), true));
    }
    default_path().map(|p| (p, false))
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Read `path` (absent and not asked for: no settings).
pub fn load(path: &Path, explicit: bool) -> Result<ConfigFile, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            return Ok(ConfigFile::default());
        }
        Err(e) => {
            return Err(format!(
                "cannot read the configuration file {}: {e}; fix --config (FERRET_CONFIG) or create the file",
                path.display()
            ));
        }
    };
    let mut file = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    file.path = Some(path.to_path_buf());
    Ok(file)
}

/// Parse the text of a configuration file (no checking against the flags yet).
pub fn parse(text: &str) -> Result<ConfigFile, String> {
    let doc = toml_edit::Document::parse(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        format!("line {line}: {}", e.message())
    })?;
    let mut settings = Vec::new();
    for (key, item) in doc.as_table().iter() {
        let line = doc
            .as_table()
            .key(key)
            .and_then(|k| k.span())
            .map(|s| line_of(text, s.start))
            .unwrap_or(1);
        let bad = || {
            format!(
                "line {line}: `{key}` must be a string, a number, true/false, or a list of those (e.g. root = [\"~/src\", \"notes=~/notes\"])"
            )
        };
        let scalar = |v: &toml_edit::Value| -> Option<String> {
            match v {
                toml_edit::Value::String(s) => Some(s.value().clone()),
                toml_edit::Value::Integer(i) => Some(i.value().to_string()),
                toml_edit::Value::Boolean(b) => Some(b.value().to_string()),
                _ => None,
            }
        };
        let values = match item.as_value() {
            Some(toml_edit::Value::Array(items)) => items
                .iter()
                .map(scalar)
                .collect::<Option<Vec<_>>>()
                .ok_or_else(bad)?,
            Some(v) => vec![scalar(v).ok_or_else(bad)?],
            None => return Err(bad()),
        };
        settings.push(Setting {
            key: key.to_string(),
            values,
            line,
        });
    }
    Ok(ConfigFile {
        path: None,
        settings,
    })
}

/// The closest known key, for "did you mean".
fn closest<'a>(key: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (edit_distance(key, k), k))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Check every setting against the flags of `serve` and make each one the
/// default of the flag of that name in every subcommand that has it.
pub fn apply(mut command: Command, file: &ConfigFile) -> Result<Command, String> {
    let where_ = |s: &Setting| match &file.path {
        Some(p) => format!("{} line {}", p.display(), s.line),
        None => format!("line {}", s.line),
    };
    let serve = command
        .find_subcommand("serve")
        .expect("ferret has a serve command")
        .clone();
    for setting in &file.settings {
        let Some(arg) = serve
            .get_arguments()
            .find(|a| a.get_long() == Some(setting.key.as_str()))
        else {
            let hint = closest(
                &setting.key,
                serve.get_arguments().filter_map(|a| a.get_long()),
            )
            .map(|k| format!(" (did you mean `{k}`?)"))
            .unwrap_or_default();
            return Err(format!(
                "{}: unknown key `{}`{hint}; keys are the long flags of `ferret serve` (see ferret serve --help)",
                where_(setting),
                setting.key
            ));
        };
        let multiple = arg.get_num_args().is_some_and(|n| n.max_values() > 1)
            || matches!(arg.get_action(), clap::ArgAction::Append);
        if setting.values.len() != 1 && !multiple {
            return Err(format!(
                "{}: `{}` takes one value, not a list",
                where_(setting),
                setting.key
            ));
        }
        for value in &setting.values {
            check_value(arg, value).map_err(|why| {
                format!(
                    "{}: `{}` = {value:?} is not valid: {why}",
                    where_(setting),
                    setting.key
                )
            })?;
        }
        let values = setting.values.clone();
        let names: Vec<String> = command
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        for name in names {
            command = command.mut_subcommand(&name, |sub| {
                let id = sub
                    .get_arguments()
                    .find(|a| a.get_long() == Some(setting.key.as_str()))
                    .map(|a| a.get_id().clone());
                match id {
                    Some(id) => {
                        sub.mut_arg(id, |a| a.default_values(values.clone()).required(false))
                    }
                    None => sub,
                }
            });
        }
    }
    Ok(command)
}

/// Check `value` with the flag's own parser (clap keeps the parser's entry point
/// private, so a one-flag command parses it).
fn check_value(arg: &clap::Arg, value: &str) -> Result<(), String> {
    if matches!(
        arg.get_action(),
        clap::ArgAction::SetTrue | clap::ArgAction::SetFalse
    ) {
        return match value {
            "true" | "false" => Ok(()),
            _ => Err("write true or false".into()),
        };
    }
    let long = arg.get_long().unwrap_or_default();
    // A fresh flag with the same parser: a clone would keep its conflicts and
    // requirements, which name flags the probe does not have (clap's debug
    // assertions panic on that: `token = …` did, found by the fuzz target).
    let mut probe_arg = clap::Arg::new(arg.get_id().clone())
        .long(long.to_string())
        .action(arg.get_action().clone())
        .value_parser(arg.get_value_parser().clone());
    if let Some(n) = arg.get_num_args() {
        probe_arg = probe_arg.num_args(n);
    }
    if let Some(d) = arg.get_value_delimiter() {
        probe_arg = probe_arg.value_delimiter(d);
    }
    let probe = Command::new("ferret.toml")
        .no_binary_name(true)
        .arg(probe_arg);
    probe
        .try_get_matches_from([format!("--{long}"), value.to_string()])
        .map(|_| ())
        .map_err(|e| {
            let text = e.to_string();
            text.lines()
                .next()
                .unwrap_or("invalid value")
                .trim_start_matches("error: ")
                .to_string()
        })
}

/// Where a value of the effective configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Flag,
    Environment(String),
    File(String),
    Default,
    Unset,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag => f.write_str("command line"),
            Source::Environment(v) => write!(f, "environment ({v})"),
            Source::File(at) => write!(f, "file ({at})"),
            Source::Default => f.write_str("default"),
            Source::Unset => f.write_str("not set"),
        }
    }
}

/// One line of `ferret config`.
#[derive(Debug, Clone)]
pub struct Effective {
    pub key: String,
    pub value: String,
    pub source: Source,
}

/// The value and source of every flag of `command` (a subcommand taking the
/// serve flags), given its matches.
pub fn effective(command: &Command, matches: &ArgMatches, file: &ConfigFile) -> Vec<Effective> {
    let mut out = Vec::new();
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if matches!(long, "help" | "version") {
            continue;
        }
        let id = arg.get_id().as_str();
        let secret = arg.is_hide_env_values_set();
        let raw: Vec<String> = matches
            .get_raw(id)
            .map(|vals| vals.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let value = if raw.is_empty() {
            String::new()
        } else if secret {
            "(set, not shown)".into()
        } else {
            raw.join(", ")
        };
        let source = match matches.value_source(id) {
            Some(ValueSource::CommandLine) => Source::Flag,
            Some(ValueSource::EnvVariable) => Source::Environment(
                arg.get_env()
                    .map(|e| e.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ),
            Some(ValueSource::DefaultValue) => match file.setting(long) {
                Some(s) => Source::File(match &file.path {
                    Some(p) => format!("{} line {}", p.display(), s.line),
                    None => format!("line {}", s.line),
                }),
                None => Source::Default,
            },
            _ => Source::Unset,
        };
        out.push(Effective {
            key: long.to_string(),
            value,
            source,
        });
    }
    out
}

/// `rows` in the order of `command`'s `--help` (a subcommand as defined,
/// before the file's keys were moved last by becoming defaults).
pub fn in_help_order(mut rows: Vec<Effective>, command: &Command) -> Vec<Effective> {
    let order: Vec<String> = command
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect();
    rows.sort_by_key(|r| order.iter().position(|k| *k == r.key).unwrap_or(usize::MAX));
    rows
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::cli::Cli;

    /// Found by the `config_file` fuzz target: a key whose flag conflicts with
    /// another (`token` with `token-file`) made the value check panic in clap's
    /// debug assertions instead of being checked.
    #[test]
    fn a_flag_with_conflicts_is_checked_without_its_relations() {
        let file = parse("token = \"2\"\n").unwrap();
        assert!(apply(Cli::command(), &file).is_ok());
        let file =
            parse("token-file = \"/nonexistent/token\"\nmax-file-bytes = \"lots\"\n").unwrap();
        let err = apply(Cli::command(), &file).unwrap_err();
        assert!(
            err.contains("line 2") && err.contains("max-file-bytes"),
            "{err}"
        );
    }

    fn parse_with(text: &str, argv: &[&str]) -> Result<(Command, ArgMatches, ConfigFile), String> {
        let file = parse(text)?;
        let command = apply(Cli::command(), &file)?;
        let matches = command
            .clone()
            .try_get_matches_from(argv)
            .map_err(|e| e.to_string())?;
        Ok((command, matches, file))
    }

    #[test]
    fn file_values_are_defaults_that_flags_override() {
        let text = "root = [\"/srv/a\", \"b=/srv/b:rw\"]\nbind = \"127.0.0.1:9000\"\nhidden = true\nmax-file-bytes = \"2M\"\n";
        let (command, matches, file) =
            parse_with(text, &["ferret", "serve", "--bind", "127.0.0.1:9100"]).unwrap();
        let serve = matches.subcommand_matches("serve").unwrap();
        let roots: Vec<&ferret_fs::RootSpec> = serve.get_many("roots").unwrap().collect();
        assert_eq!(roots.len(), 2);
        assert!(roots[1].writable);
        assert_eq!(
            serve
                .get_one::<std::net::SocketAddr>("bind")
                .unwrap()
                .port(),
            9100
        );
        assert!(serve.get_flag("hidden"));
        assert_eq!(*serve.get_one::<u64>("max_file_bytes").unwrap(), 2 << 20);
        let sub = command.find_subcommand("serve").unwrap();
        let rows = effective(sub, serve, &file);
        let row = |k: &str| rows.iter().find(|r| r.key == k).unwrap().clone();
        assert_eq!(row("bind").source, Source::Flag);
        assert_eq!(row("root").source, Source::File("line 1".into()));
        assert_eq!(row("root").value, "/srv/a, b=/srv/b:rw");
        assert_eq!(row("stdio").source, Source::Default);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key_and_the_line() {
        let e = parse_with(
            "root = \"/x\"\n\nmax-file-byte = \"1M\"\n",
            &["ferret", "serve"],
        )
        .unwrap_err();
        assert!(e.contains("line 3") && e.contains("`max-file-byte`"), "{e}");
        assert!(e.contains("did you mean `max-file-bytes`"), "{e}");
        let e = parse_with(
            "root = \"/x\"\nmax-file-bytes = \"ten\"\n",
            &["ferret", "serve"],
        )
        .unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("max-file-bytes") && e.contains("ten"),
            "{e}"
        );
        let e = parse_with("bind = [\"a\", \"b\"]\n", &["ferret", "serve"]).unwrap_err();
        assert!(e.contains("takes one value"), "{e}");
        let e = parse_with("locate = \"maybe\"\n", &["ferret", "serve"]).unwrap_err();
        assert!(e.contains("deny, ask or allow"), "{e}");
        let e = parse_with("[serve]\nroot = \"/x\"\n", &["ferret", "serve"]).unwrap_err();
        assert!(e.contains("line 1") && e.contains("`serve`"), "{e}");
        let e = parse("root = \n").unwrap_err();
        assert!(e.starts_with("line 1:"), "{e}");
    }

    #[test]
    fn the_config_path_comes_from_the_flag_first() {
        let argv: Vec<OsString> = ["ferret", "serve", "--config", "/etc/f.toml"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(
            requested_path(&argv),
            Some((PathBuf::from("/etc/f.toml"), true))
        );
        let argv: Vec<OsString> = ["ferret", "--config=/x.toml", "doctor"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(requested_path(&argv).unwrap().0, PathBuf::from("/x.toml"));
        assert!(
            load(Path::new("/nonexistent/ferret.toml"), false)
                .unwrap()
                .settings
                .is_empty()
        );
        assert!(load(Path::new("/nonexistent/ferret.toml"), true).is_err());
    }
}
