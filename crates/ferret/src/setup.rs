//! What the subcommands build from the flags: the roots, the index's and
//! the content index's settings, documents, the policy, the HTTP options and
//! the locate roots (`serve`, `doctor`, `index`, `search` and `grep` share
//! them, so that each means the same by a flag).

use std::time::Duration;

use ferret_fs::{Denylist, Limits, Policy, RootSpec, Roots};
use ferret_index::{Index, IndexConfig, IndexRoot, Rules};
use ferret_server::HttpOptions;

use crate::{cli, token};

pub(crate) fn open_roots(
    args: &cli::RootArgs,
    deny: Denylist,
    limits: Limits,
) -> anyhow::Result<Roots> {
    let policy = Policy {
        hidden: args.hidden,
        no_ignore: args.no_ignore,
        deny,
        limits,
    };
    Ok(Roots::open(&args.roots, policy)?)
}

pub(crate) fn index_config(
    roots: &Roots,
    args: &cli::RootArgs,
    index: &cli::IndexArgs,
) -> IndexConfig {
    let mut config = IndexConfig::new(
        roots
            .roots()
            .iter()
            .map(|r| IndexRoot {
                name: r.name.clone(),
                path: r.path.clone(),
                walk_path: r.handle_path(),
            })
            .collect(),
    );
    config.rules = Rules {
        hidden: args.hidden,
        no_ignore: args.no_ignore,
    };
    config.state_dir = if index.no_persist {
        None
    } else {
        index.state_dir_or_default()
    };
    config.journal_max_age = index.journal_max_age;
    config.journal_max_rows = index.journal_max_entries;
    config.limit_rescan_every = index.rescan_every.max(Duration::from_secs(1));
    config
}

/// The content index's settings, or `None` with `--content-index off`.
pub(crate) fn content_config(
    args: &cli::ContentArgs,
    index: &IndexConfig,
    max_file_bytes: u64,
) -> Option<ferret_content::Config> {
    if !args.content_index {
        return None;
    }
    let mut config = ferret_content::Config::new(index.state_dir.clone());
    config.budget.max_total_bytes = args.content_index_max_bytes;
    config.budget.max_file_bytes = args
        .content_index_max_file_bytes
        .map_or(max_file_bytes, |n| n.min(max_file_bytes));
    Some(config)
}

/// Read documents as text: extracted by this same binary started as an
/// extractor process, cached under `<state dir>/documents/` (memory only
/// without a state dir). Without a path to this binary, documents stay binary.
pub(crate) fn read_documents(roots: Roots, state_dir: Option<&std::path::Path>) -> Roots {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            tracing::warn!("documents are not read as text: cannot find this binary ({e})");
            return roots;
        }
    };
    let cache = ferret_docs::CacheConfig {
        dir: state_dir.map(|d| d.join("documents")),
        ..ferret_docs::CacheConfig::default()
    };
    let docs = ferret_docs::Documents::new(
        ferret_docs::Isolation::Process { exe },
        ferret_docs::Limits::default(),
        cache,
    );
    roots.with_documents(std::sync::Arc::new(docs))
}

/// The roots as `serve` takes them: `--root`s, then the plain folders (named
/// after their last component, with `-2`, `-3` … where a name is taken, since
/// whoever passed them cannot name them), `--writable` applied to every one.
pub(crate) fn served_root_args(args: &cli::ServeArgs) -> cli::RootArgs {
    let mut roots = args.root_args.roots.clone();
    name_folders(&mut roots, &args.folders);
    let mut root_args = cli::RootArgs {
        roots,
        hidden: args.root_args.hidden,
        no_ignore: args.root_args.no_ignore,
    };
    if args.writable {
        for spec in &mut root_args.roots {
            spec.writable = true;
        }
    }
    root_args
}

/// Add `folders` to `roots`, each named after its last component, with
/// `-2`, `-3` … where a name is taken.
fn name_folders(roots: &mut Vec<RootSpec>, folders: &[std::path::PathBuf]) {
    let mut taken: Vec<String> = roots.iter().map(root_name).collect();
    for folder in folders {
        let spec = RootSpec {
            name: None,
            path: folder.clone(),
            writable: false,
        };
        let base = root_name(&spec);
        let mut name = base.clone();
        let mut n = 1;
        while taken.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        taken.push(name.clone());
        roots.push(RootSpec {
            name: Some(name),
            ..spec
        });
    }
}

/// Opens the folders a stdio client names (or the current folder) as
/// `serve` opens operator roots: the same policy, index and content index
/// settings, documents read as text, each root named after its folder.
pub(crate) struct ClientRootOpener {
    pub root_args: cli::RootArgs,
    pub index_args: cli::IndexArgs,
    pub content_args: cli::ContentArgs,
    pub deny: Denylist,
    pub limits: Limits,
    pub writable: bool,
}

impl ferret_server::OpenServed for ClientRootOpener {
    fn open(
        &self,
        folders: &[(Option<String>, std::path::PathBuf)],
    ) -> Result<ferret_server::Served, String> {
        let mut specs = Vec::new();
        let paths = outermost(folders.iter().map(|(_, p)| p.clone()).collect());
        name_folders(&mut specs, &paths);
        for spec in &mut specs {
            spec.writable = self.writable;
        }
        let root_args = cli::RootArgs {
            roots: specs,
            ..self.root_args.clone()
        };
        let roots = open_roots(&root_args, self.deny.clone(), self.limits.clone())
            .map_err(|e| e.to_string())?;
        let config = index_config(&roots, &root_args, &self.index_args);
        let content_config =
            content_config(&self.content_args, &config, self.limits.max_file_bytes);
        let roots = std::sync::Arc::new(read_documents(roots, config.state_dir.as_deref()));
        let index = Index::open(config)?;
        index.start();
        let content = content_config.map(|c| {
            let content = ferret_content::ContentIndex::new(c, roots.clone(), index.clone());
            content.start();
            content
        });
        Ok(ferret_server::Served {
            roots,
            index,
            content,
        })
    }
}

/// The folders a client named, without those inside another of them (or
/// named twice): `Roots::open` refuses a folder served twice (its copies
/// would share one watch, and one would go stale), and the outer folder
/// serves the inner one's files already. A client's workspace may well nest
/// folders, so they are dropped here, with a log line, not refused.
fn outermost(folders: Vec<std::path::PathBuf>) -> Vec<std::path::PathBuf> {
    let real: Vec<std::path::PathBuf> = folders
        .iter()
        .map(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()))
        .collect();
    let kept: Vec<std::path::PathBuf> = folders
        .iter()
        .enumerate()
        .filter(|&(i, _)| {
            !real.iter().enumerate().any(|(j, other)| {
                j != i && real[i].starts_with(other) && (real[i] != *other || j < i)
            })
        })
        .map(|(_, f)| f.clone())
        .collect();
    if kept.len() < folders.len() {
        tracing::warn!(
            dropped = folders.len() - kept.len(),
            "folders the client named lie inside others it named: each is served once, under the outer one"
        );
    }
    kept
}

/// The name a root will be served under: its own, or its folder's (as
/// `Roots::open` names it).
pub(crate) fn root_name(spec: &RootSpec) -> String {
    if let Some(name) = &spec.name {
        return name.clone();
    }
    let path = std::fs::canonicalize(&spec.path).unwrap_or_else(|_| spec.path.clone());
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
}

/// The character budget of one answer: `--max-response-chars`, lowered to
/// what Claude Code's `MAX_MCP_OUTPUT_TOKENS` allows (at 3 characters a
/// token) when that is set in ferret's environment; never below 2,000.
fn response_chars(flag: usize) -> usize {
    let tokens = std::env::var("MAX_MCP_OUTPUT_TOKENS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok());
    match tokens {
        Some(t) => flag.min(t.saturating_mul(3)),
        None => flag,
    }
    .max(2_000)
}

/// The denylist and limits of `serve`'s flags.
pub(crate) fn serve_policy(args: &cli::ServeArgs) -> anyhow::Result<(Denylist, Limits)> {
    let (deny, limits) = read_policy(&args.policy)?;
    let limits = Limits {
        max_response_bytes: args.max_response_bytes as usize,
        max_response_chars: response_chars(args.max_response_chars),
        max_line_chars: args.max_line_chars.max(1),
        max_image_bytes: args.max_image_bytes,
        ..limits
    };
    Ok((deny, limits))
}

/// The denylist and limits of the flags every command that reads files
/// shares (`serve`, `index`, `grep`): the same files are sensitive and too
/// large for each.
pub(crate) fn read_policy(args: &cli::PolicyArgs) -> anyhow::Result<(Denylist, Limits)> {
    let deny = Denylist::with_patterns(&args.deny).map_err(anyhow::Error::msg)?;
    let limits = Limits {
        max_file_bytes: args.max_file_bytes,
        ..Limits::default()
    };
    Ok((deny, limits))
}

/// The HTTP options of `serve`'s flags and its token (`None` with --stdio).
pub(crate) fn http_options(
    args: &cli::ServeArgs,
    token: Option<&token::Token>,
) -> Option<HttpOptions> {
    (!args.stdio).then(|| HttpOptions {
        bind: args.bind,
        allowed_hosts: args.allowed_hosts.clone(),
        allowed_origins: args.allowed_origins.clone(),
        token: token.map(|t| t.secret.clone()),
        max_request_bytes: args.max_request_bytes as usize,
        sessions: args.http_sessions,
        ui: (!args.no_ui).then_some(ferret_server::http::WebOptions {
            downloads: args.ui_downloads,
        }),
    })
}

/// The locate roots, their own index (names only), and the policy.
pub(crate) fn open_locate(
    locate_roots: &[ferret_fs::RootSpec],
    policy: ferret_server::LocatePolicy,
    root_args: &cli::RootArgs,
    index_args: &cli::IndexArgs,
) -> anyhow::Result<Option<ferret_server::Locate>> {
    if locate_roots.is_empty() {
        return Ok(None);
    }
    let specs: Vec<_> = locate_roots
        .iter()
        .cloned()
        .map(|mut s| {
            s.writable = false;
            s
        })
        .collect();
    let roots = Roots::open(&specs, Policy::default())
        .map_err(|e| anyhow::anyhow!("--locate-root: {e}"))?;
    let config = index_config(&roots, root_args, index_args);
    let index = Index::open(config).map_err(anyhow::Error::msg)?;
    index.start();
    for root in roots.roots() {
        tracing::info!(path = %root.path.display(), policy = policy.as_str(), "locate root");
    }
    Ok(Some(ferret_server::Locate {
        roots,
        index,
        policy,
    }))
}

/// The subcommand `name` as defined (its flags in `--help`'s order, which
/// `ferret config` and the search page show them in).
pub(crate) fn as_defined(name: &str) -> clap::Command {
    use clap::CommandFactory;
    cli::Cli::command()
        .find_subcommand(name)
        .cloned()
        .unwrap_or_else(|| clap::Command::new("none"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_folder_inside_another_is_served_under_the_outer_one() {
        let tmp = tempfile::tempdir().unwrap();
        let at = |p: &str| tmp.path().join(p);
        for p in ["ws/sub", "ws2", "other"] {
            std::fs::create_dir_all(at(p)).unwrap();
        }
        let kept = outermost(vec![
            at("ws/sub"),
            at("ws"),
            at("ws2"),
            at("ws"),
            at("other"),
        ]);
        assert_eq!(kept, vec![at("ws"), at("ws2"), at("other")]);
    }
}
