//! `ferret doctor`: with the same flags, environment and file as `serve`, check
//! everything `serve` needs, one line each (`ok`, `warn`, `FAIL`) with the fix,
//! then print a client configuration ready to paste. Exit status 1 when a
//! check failed. Changes nothing, except a probe file it removes again.

use std::{io::Write, path::Path, process::ExitCode, sync::atomic::AtomicU64};

use ferret_fs::{Policy, RootSpec, Roots};
use ferret_index::{
    Index, IndexConfig,
    health::{self, JournalHealth, SnapshotHealth, TreeSize},
};
use ferret_server::{Ferret, Transport};
use serde_json::{Value, json};

use crate::{
    cli, progress, setup,
    token::{self, Token},
    units::mib,
};

/// The `tools/list` answer of a read-only server must stay under this many
/// bytes (agents pay for every byte of it in every conversation).
pub const TOOLS_LIST_BUDGET: usize = 6656;

/// The same bound with locate and the write tools offered as well
/// (docs/tools.md, "tools/list").
pub const TOOLS_LIST_BUDGET_ALL: usize = 10240;

/// The tools a read-only server without locate offers.
const READ_ONLY_TOOLS: &[&str] = &[
    "search",
    "grep",
    "symbols",
    "read",
    "list",
    "stat",
    "changes",
    "diagnostics",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        }
    }
}

struct Check {
    name: String,
    status: Status,
    message: String,
    fix: Option<String>,
}

#[derive(Default)]
struct Report {
    checks: Vec<Check>,
}

impl Report {
    fn add(
        &mut self,
        name: impl Into<String>,
        status: Status,
        message: impl Into<String>,
        fix: Option<String>,
    ) {
        self.checks.push(Check {
            name: name.into(),
            status,
            message: message.into(),
            fix,
        });
    }
    fn ok(&mut self, name: impl Into<String>, message: impl Into<String>) {
        self.add(name, Status::Ok, message, None);
    }
    fn warn(
        &mut self,
        name: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.add(name, Status::Warn, message, Some(fix.into()));
    }
    fn fail(
        &mut self,
        name: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.add(name, Status::Fail, message, Some(fix.into()));
    }
    fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.status == Status::Fail)
    }
}

/// A root error reads "what is wrong; what to do": split it into the two.
fn problem_and_fix(text: &str) -> (String, String) {
    match text.split_once("; ") {
        Some((problem, fix)) => (problem.to_string(), fix.to_string()),
        None => (
            text.to_string(),
            "correct --root (FERRET_ROOTS)".to_string(),
        ),
    }
}

pub fn run(args: cli::DoctorArgs) -> anyhow::Result<ExitCode> {
    let serve = &args.serve;
    let mut report = Report::default();
    let root_args = setup::served_root_args(serve);

    // Every root on its own, so that each problem is named.
    let mut usable: Vec<RootSpec> = Vec::new();
    for spec in &root_args.roots {
        let label = format!("root {}", spec.path.display());
        match Roots::open(std::slice::from_ref(spec), Policy::default()) {
            Err(e) => {
                let (problem, fix) = problem_and_fix(&e.0);
                report.fail(label, problem, fix);
            }
            Ok(one) => {
                let root = &one.roots()[0];
                let label = format!("root {}", root.name);
                let entries = root.dir().entries().map(|e| e.count()).unwrap_or(0);
                if spec.writable {
                    match probe_write(&root.path) {
                        Ok(()) => report.ok(label, format!("{}: a readable folder ({entries} entries at the top), writable (a probe file was written and removed)", root.path.display())),
                        Err(e) => report.fail(
                            label,
                            format!("{} is served writable but a probe file cannot be written: {e}", root.path.display()),
                            format!("give the account running ferret write permission (chmod u+w {}) or serve it read-only (drop :rw / --writable)", root.path.display()),
                        ),
                    }
                } else {
                    report.ok(
                        label,
                        format!(
                            "{}: a readable folder ({entries} entries at the top), read-only",
                            root.path.display()
                        ),
                    );
                }
                usable.push(spec.clone());
            }
        }
    }
    let (deny, limits) = setup::serve_policy(serve)?;
    let roots = if usable.len() == root_args.roots.len() {
        match Roots::open(
            &usable,
            Policy {
                hidden: root_args.hidden,
                no_ignore: root_args.no_ignore,
                deny,
                limits,
            },
        ) {
            Ok(r) => Some(r),
            Err(e) => {
                let (problem, fix) = problem_and_fix(&e.0);
                report.fail("roots", problem, fix);
                None
            }
        }
    } else {
        None
    };

    let mut sizes: Vec<TreeSize> = Vec::new();
    if let Some(roots) = &roots {
        let config = setup::index_config(roots, &root_args, &serve.index);
        check_state(&mut report, &config);
        check_content_index(&mut report, serve, &config, roots);
        let size = measure_roots("measuring the roots", &config);
        sizes.push(size.clone());
        report.ok(
            "index",
            format!(
                "{} entries ({} folders) under the roots; the index will take about {} of memory",
                size.entries,
                size.folders,
                mib(size.index_bytes())
            ),
        );
        let (two_paths, network): (Vec<_>, Vec<_>) = size
            .network
            .iter()
            .partition(|(_, fs)| *fs == ferret_index::walk::TWO_PATHS);
        if !two_paths.is_empty() {
            let list: Vec<&str> = two_paths.iter().map(|(at, _)| at.as_str()).collect();
            report.warn(
                "folders at two paths",
                format!(
                    "{}: each shares its device and inode with another folder under the root (a bind mount); inotify watches a folder once, so a change there is heard at one of its paths only: ferret reads them again every --rescan-every ({}s), and grep reads their files instead of trusting the content index",
                    list.join(", "),
                    serve.index.rescan_every.as_secs()
                ),
                "serve the folder at one path: unmount the bind mount inside the root (a running ferret notices), or name one of its paths in the root's .ignore file",
            );
        }
        if !network.is_empty() {
            let list: Vec<String> = network
                .iter()
                .map(|(at, fs)| format!("{at} ({fs})"))
                .collect();
            report.warn(
                "network file systems",
                format!(
                    "{} on network or FUSE file systems, where inotify does not hear changes other machines make: ferret reads them again every --rescan-every ({}s), and grep reads their files instead of trusting the content index",
                    list.join(", "),
                    serve.index.rescan_every.as_secs()
                ),
                "lower --rescan-every for fresher answers there, or serve a local copy",
            );
        }
        check_free_space(&mut report, &config, size);
    }
    let locate_size = check_locate(&mut report, serve, &root_args);
    let folders =
        sizes.iter().map(|s| s.folders).sum::<u64>() + locate_size.map_or(0, |s| s.folders);
    if roots.is_some() {
        check_watches(&mut report, folders);
    }
    let token = check_http(&mut report, serve);
    if let Some(roots) = roots {
        check_tools_list(&mut report, roots, serve)?;
    }

    let client = client_config(serve, token.as_ref());
    print(&report, &client, args.json)?;
    Ok(if report.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The content index file these roots and rules would use: present and sound,
/// missing, or to be discarded (read and checked, never changed).
fn check_content_index(
    report: &mut Report,
    serve: &cli::ServeArgs,
    config: &IndexConfig,
    roots: &Roots,
) {
    let Some(content) = setup::content_config(&serve.content, config, serve.policy.max_file_bytes)
    else {
        report.ok(
            "content index",
            "off (--content-index off): grep reads every candidate file",
        );
        return;
    };
    let budget = format!(
        "budget {} of text, files up to {}",
        mib(content.budget.max_total_bytes),
        mib(content.budget.max_file_bytes)
    );
    match ferret_content::inspect(config, &content, roots) {
        Ok(None) if content.state_dir.is_none() => report.ok(
            "content index",
            format!("kept in memory (--no-persist): built in the background at every start; {budget}"),
        ),
        Ok(None) => report.ok(
            "content index",
            format!("none saved yet: built in the background after the name index at the first start (`ferret index` builds it ahead); {budget}"),
        ),
        Ok(Some(s)) => {
            let age = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
                .saturating_sub(s.built_at);
            // A write through another hard link is heard by no watcher of
            // this one: such files are read by every grep, which an
            // operator with many of them (a tree of hard-linked copies)
            // should know.
            let linked = match s.linked_files {
                0 => String::new(),
                1 => "; 1 file with more than one hard link is read by every grep that reaches it (no watcher hears a write through another link)".to_string(),
                n => format!(
                    "; {n} files with more than one hard link are read by every grep that reaches them (no watcher hears a write through another link)"
                ),
            };
            report.ok(
                "content index",
                format!(
                    "usable: {} of {} files indexed, {} of text, {} on disk ({}), written {} ago; {budget}{linked}",
                    s.indexed_files,
                    s.files,
                    mib(s.text_bytes),
                    mib(s.size_bytes),
                    s.path.display(),
                    age_text(age),
                ),
            )
        }
        Err(why) => report.warn(
            "content index",
            format!("{why}: it will be discarded and rebuilt"),
            "nothing to do (the next start rebuilds it); `ferret index` rebuilds it now",
        ),
    }
}

fn age_text(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// Walk every root of `config` as the index would (a progress line on a
/// terminal); each root counts as a folder, since it is watched too.
fn measure_roots(what: &str, config: &IndexConfig) -> TreeSize {
    let counter = AtomicU64::new(0);
    progress::with_progress(what, &counter, || {
        config
            .roots
            .iter()
            .map(|r| health::measure(r, config.rules, &counter))
            .zip(&config.roots)
            .fold(TreeSize::default(), |mut a, (b, r)| {
                a.entries += b.entries;
                a.folders += b.folders + 1;
                a.name_bytes += b.name_bytes;
                a.network.extend(b.network.into_iter().map(|(rel, fs)| {
                    let at = if rel.is_empty() {
                        r.path.display().to_string()
                    } else {
                        r.path.join(rel).display().to_string()
                    };
                    (at, fs)
                }));
                a
            })
    })
}

/// Write and remove a probe file in `dir`.
fn probe_write(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".ferret-doctor-probe-{}", std::process::id()));
    std::fs::write(&probe, b"ferret doctor probe\n")?;
    std::fs::remove_file(&probe)
}

fn check_state(report: &mut Report, config: &IndexConfig) {
    let Some(dir) = config.state_dir.as_ref() else {
        report.ok("state dir", "none (--no-persist): the index is rebuilt at every start and the journal is kept in memory");
        return;
    };
    let existed = dir.exists();
    match std::fs::create_dir_all(dir).and_then(|()| probe_write(dir)) {
        Ok(()) => report.ok(
            "state dir",
            format!(
                "{} is writable{}",
                dir.display(),
                if existed { "" } else { " (created)" }
            ),
        ),
        Err(e) => {
            report.fail(
                "state dir",
                format!("{} is not writable: {e}", dir.display()),
                "choose a writable folder with --state-dir (FERRET_STATE_DIR), or --no-persist",
            );
            return;
        }
    }
    match health::snapshot_health(config) {
        SnapshotHealth::Off => {}
        SnapshotHealth::Missing => report.ok(
            "snapshot",
            "none saved yet: the first start walks the roots (ferret index saves one ahead)",
        ),
        SnapshotHealth::Usable { entries, bytes } => report.ok(
            "snapshot",
            format!(
                "usable: {entries} entries, {} ({})",
                mib(bytes),
                config.snapshot_path().unwrap_or_default().display()
            ),
        ),
        SnapshotHealth::Unusable(why) => report.warn(
            "snapshot",
            format!(
                "{} will be discarded and rebuilt: {why}",
                config.snapshot_path().unwrap_or_default().display()
            ),
            "nothing to do (the next start rebuilds it); `ferret index` rebuilds it now",
        ),
    }
    let journal = config.journal_path().unwrap_or_default();
    match health::journal_health(config) {
        JournalHealth::Off => {}
        JournalHealth::Missing => {
            report.ok("journal", "none yet: it is created at the first start")
        }
        JournalHealth::Sound { changes } => report.ok(
            "journal",
            format!(
                "sound (integrity check passed): {changes} changes in {}",
                journal.display()
            ),
        ),
        JournalHealth::Broken(why) => report.fail(
            "journal",
            format!("{} is damaged: {why}", journal.display()),
            format!(
                "move it aside (mv {0} {0}.broken); ferret starts a new journal",
                journal.display()
            ),
        ),
    }
}

fn check_free_space(report: &mut Report, config: &IndexConfig, size: TreeSize) {
    let Some(dir) = config.state_dir.as_ref() else {
        return;
    };
    let Ok(stat) = rustix::fs::statvfs(dir) else {
        return;
    };
    let free = stat.f_bavail * stat.f_frsize;
    // The snapshot is about the size of the index in memory; the journal is
    // bounded by its row limit.
    let snapshot = size.index_bytes();
    let journal = 64 * 1024 * 1024;
    if free < snapshot {
        report.fail(
            "free space",
            format!(
                "{} free in {}, the snapshot needs about {}",
                mib(free),
                dir.display(),
                mib(snapshot)
            ),
            "free some space, or put the state elsewhere with --state-dir",
        );
    } else if free < snapshot + journal {
        report.warn(
            "free space",
            format!(
                "{} free in {}: room for the snapshot ({}) but little for the journal",
                mib(free),
                dir.display(),
                mib(snapshot)
            ),
            "free some space, lower --journal-max-entries, or use --state-dir",
        );
    } else {
        report.ok(
            "free space",
            format!("{} free in {}", mib(free), dir.display()),
        );
    }
}

fn check_locate(
    report: &mut Report,
    serve: &cli::ServeArgs,
    root_args: &cli::RootArgs,
) -> Option<TreeSize> {
    if serve.locate_roots.is_empty() {
        return None;
    }
    let roots = match Roots::open(&serve.locate_roots, Policy::default()) {
        Ok(r) => r,
        Err(e) => {
            let (problem, fix) = problem_and_fix(&e.0);
            report.fail(
                "locate roots",
                problem,
                format!("{fix} (--locate-root, FERRET_LOCATE_ROOTS)"),
            );
            return None;
        }
    };
    let config = setup::index_config(&roots, root_args, &serve.index);
    let size = measure_roots("measuring the locate roots", &config);
    report.ok(
        "locate roots",
        format!(
            "{}: {} entries (about {} of memory); policy {}",
            roots
                .roots()
                .iter()
                .map(|r| r.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            size.entries,
            mib(size.index_bytes()),
            serve.locate_policy.as_str()
        ),
    );
    Some(size)
}

fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn check_watches(report: &mut Report, folders: u64) {
    let Some(limit) = read_number("/proc/sys/fs/inotify/max_user_watches") else {
        report.warn(
            "inotify",
            "cannot read /proc/sys/fs/inotify/max_user_watches",
            "on Linux ferret watches every folder; without inotify the index is refreshed by rescans every minute (--rescan-every)",
        );
        return;
    };
    // Room for growth and for the user's other watchers (editors, sync tools).
    let wanted = (folders * 2).max(65_536).next_power_of_two();
    let raise = format!(
        "sudo sysctl fs.inotify.max_user_watches={wanted} (and keep it: echo fs.inotify.max_user_watches={wanted} | sudo tee /etc/sysctl.d/90-ferret.conf)"
    );
    if folders > limit {
        report.warn(
            "inotify",
            format!("{folders} folders to watch but the limit is {limit}: past it the index is refreshed by rescans every minute (--rescan-every) instead of live"),
            raise,
        );
    } else if folders * 10 > limit * 8 {
        report.warn(
            "inotify",
            format!("{folders} folders to watch, close to the limit of {limit} shared with every other program of this user"),
            raise,
        );
    } else {
        report.ok(
            "inotify",
            format!("{folders} folders to watch, limit {limit}"),
        );
    }
}

/// The HTTP checks; the token clients will need (generated into the state
/// folder when there is none yet, as `serve` would).
fn check_http(report: &mut Report, serve: &cli::ServeArgs) -> Option<Token> {
    if serve.stdio {
        report.ok(
            "http",
            "skipped: --stdio (the client launches ferret and talks over stdin/stdout; no token needed)",
        );
        return None;
    }
    let token = match token::resolve(serve) {
        Ok(Some(t)) => {
            report.ok(
                "token",
                format!(
                    "HTTP clients send \"Authorization: Bearer …\": the token is {}; the configurations below carry it (keep them private)",
                    t.describe()
                ),
            );
            if t.origin == token::Origin::Flag && serve.token_on_command_line {
                report.warn(
                    "token",
                    "--token on the command line is visible to every account in `ps`",
                    "pass it in FERRET_TOKEN or with --token-file PATH",
                );
            }
            Some(t)
        }
        Ok(None) => {
            report.warn(
                "token",
                "none (--no-token): every account and process on this machine can use the HTTP server",
                "drop --no-token unless this is a single-user machine",
            );
            None
        }
        Err(e) => {
            report.fail(
                "token",
                format!("{e:#}"),
                "see ferret serve --help for --token-file and --state-dir",
            );
            None
        }
    };
    let options = setup::http_options(serve, token.as_ref())?;
    if let Err(e) = options.check() {
        report.fail(
            "http",
            e,
            "see ferret serve --help for --bind, --allowed-host and FERRET_TOKEN",
        );
        return token;
    }
    match std::net::TcpListener::bind(options.bind) {
        Ok(listener) => {
            drop(listener);
            report.ok(
                "http",
                format!(
                    "{} is free: MCP will be at http://{}/mcp{}",
                    options.bind,
                    options.bind,
                    if options.sessions {
                        " (handshake-era sessions on)"
                    } else {
                        " (stateless: handshake-era HTTP clients get no subscriptions, setLevel or consent questions; --http-sessions gives them sessions)"
                    }
                ),
            );
            report.ok(
                "page",
                match &options.ui {
                    Some(ui) => format!(
                        "the search page and Everything's JSON API at http://{}/ (downloads {}; --no-ui turns both off)",
                        options.bind,
                        if ui.downloads { "on" } else { "off: --ui-downloads" }
                    ),
                    None => "off (--no-ui): GET / is MCP's alone".into(),
                },
            );
        }
        Err(e) => report.fail(
            "http",
            format!("cannot listen on {}: {e}", options.bind),
            format!(
                "stop the program using it (ss -ltnp 'sport = :{}'), or choose another address with --bind (FERRET_BIND)",
                options.bind.port()
            ),
        ),
    }
    token
}

fn check_tools_list(
    report: &mut Report,
    roots: Roots,
    serve: &cli::ServeArgs,
) -> anyhow::Result<()> {
    // The same server serve would build, on an index that never walks.
    let mut config = IndexConfig::new(Vec::new());
    config.watch = false;
    let index = Index::open(config).map_err(anyhow::Error::msg)?;
    let locate = if serve.locate_roots.is_empty() {
        None
    } else {
        Roots::open(&serve.locate_roots, Policy::default())
            .ok()
            .map(|lroots| ferret_server::Locate {
                roots: lroots,
                index: index.clone(),
                policy: serve.locate_policy,
            })
    };
    let server = Ferret::with_locate(roots, index, Transport::Stdio, locate);
    let listed = rmcp::model::ListToolsResult::with_all_items(server.tools().to_vec());
    let bytes = serde_json::to_vec(&listed)?.len();
    let names: Vec<&str> = server.tools().iter().map(|t| t.name.as_ref()).collect();
    let read_only = names.iter().all(|n| READ_ONLY_TOOLS.contains(n));
    let budget = if read_only {
        TOOLS_LIST_BUDGET
    } else {
        TOOLS_LIST_BUDGET_ALL
    };
    if bytes > budget {
        report.warn(
            "tools/list",
            format!("{bytes} bytes for {} tools ({}), over the {budget}-byte budget", names.len(), names.join(", ")),
            "every agent pays for these bytes in every conversation; locate and the write tools add to them: offer only what you need",
        );
    } else {
        report.ok(
            "tools/list",
            format!(
                "{bytes} of {budget} bytes for {} tools: {}",
                names.len(),
                names.join(", ")
            ),
        );
    }
    Ok(())
}

fn spec_arg(spec: &RootSpec) -> String {
    let mut s = match &spec.name {
        Some(name) => format!("{name}={}", spec.path.display()),
        None => spec.path.display().to_string(),
    };
    if spec.writable {
        s.push_str(":rw");
    }
    s
}

/// A configuration for MCP clients with these flags: stdio for clients that
/// launch ferret, the URL for a running HTTP server.
fn client_config(serve: &cli::ServeArgs, token: Option<&Token>) -> Value {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "ferret".into());
    let mut args: Vec<String> = vec!["serve".into(), "--stdio".into()];
    for spec in &serve.root_args.roots {
        let absolute = RootSpec {
            path: std::path::absolute(&spec.path).unwrap_or_else(|_| spec.path.clone()),
            ..spec.clone()
        };
        args.push("--root".into());
        args.push(spec_arg(&absolute));
    }
    let flag = |on: bool, name: &str, args: &mut Vec<String>| {
        if on {
            args.push(name.into());
        }
    };
    flag(serve.writable, "--writable", &mut args);
    let folders: Vec<String> = serve
        .folders
        .iter()
        .map(|f| {
            std::path::absolute(f)
                .unwrap_or_else(|_| f.clone())
                .display()
                .to_string()
        })
        .collect();
    flag(serve.root_args.hidden, "--hidden", &mut args);
    flag(serve.root_args.no_ignore, "--no-ignore", &mut args);
    flag(serve.index.no_persist, "--no-persist", &mut args);
    if let Some(dir) = &serve.index.state_dir {
        args.extend(["--state-dir".into(), dir.display().to_string()]);
    }
    for d in &serve.policy.deny {
        args.extend(["--deny".into(), d.clone()]);
    }
    for l in &serve.locate_roots {
        args.extend(["--locate-root".into(), spec_arg(l)]);
    }
    if !serve.locate_roots.is_empty() {
        args.extend(["--locate".into(), serve.locate_policy.as_str().into()]);
    }
    if !folders.is_empty() {
        // Plain folders last, after `--`: taken as given, commas and all.
        args.push("--".into());
        args.extend(folders);
    }
    let mut out = json!({
        "claude_desktop_config.json": {"mcpServers": {"ferret": {"command": exe, "args": args}}},
        "claude_code": format!("claude mcp add ferret -- {exe} {}", args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ")),
    });
    if !serve.stdio {
        let url = format!("http://{}/mcp", serve.bind);
        let (claude, vscode) = match token {
            Some(t) => {
                let header = format!("Authorization: Bearer {}", t.secret);
                (
                    format!(
                        "claude mcp add --transport http ferret {url} --header {}",
                        shell_quote(&header)
                    ),
                    json!({"type": "http", "url": url, "headers": {"Authorization": format!("Bearer {}", t.secret)}}),
                )
            }
            None => (
                format!("claude mcp add --transport http ferret {url}"),
                json!({"type": "http", "url": url}),
            ),
        };
        out["http"] = json!({
            "url": url,
            "claude_code": claude,
            "vscode_mcp.json": {"servers": {"ferret": vscode}},
        });
    }
    out
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/-_.=:,@+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn print(report: &Report, client: &Value, json_out: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json_out {
        let checks: Vec<Value> = report
            .checks
            .iter()
            .map(|c| json!({"check": c.name, "status": c.status.label(), "message": c.message, "fix": c.fix}))
            .collect();
        let doc = json!({"ok": !report.failed(), "checks": checks, "client_config": client});
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    writeln!(out, "ferret {} doctor", ferret_server::VERSION)?;
    let width = report
        .checks
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(0);
    for c in &report.checks {
        write!(
            out,
            "{:<4}  {:<width$}  {}",
            c.status.label(),
            c.name,
            c.message
        )?;
        if let Some(fix) = &c.fix {
            write!(out, "\n      {:<width$}  fix: {fix}", "")?;
        }
        writeln!(out)?;
    }
    let count = |s: Status| report.checks.iter().filter(|c| c.status == s).count();
    writeln!(
        out,
        "\n{} ok, {} warn, {} FAIL{}",
        count(Status::Ok),
        count(Status::Warn),
        count(Status::Fail),
        if report.failed() {
            ": serve would not run as asked"
        } else {
            ""
        }
    )?;
    writeln!(out, "\nClaude Desktop (claude_desktop_config.json):")?;
    writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(&client["claude_desktop_config.json"])?
    )?;
    writeln!(
        out,
        "\nClaude Code:\n  {}",
        client["claude_code"].as_str().unwrap_or_default()
    )?;
    if let Some(http) = client.get("http") {
        writeln!(
            out,
            "\nOr, with `ferret serve` running over HTTP:\n  {}",
            http["claude_code"].as_str().unwrap_or_default()
        )?;
    }
    Ok(())
}
