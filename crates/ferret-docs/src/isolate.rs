//! The extractor process: ferret's own binary started again with
//! [`WORKER_ARG`], the document's open file as its standard input and the
//! result on its standard output. It caps its own memory (`RLIMIT_DATA`) and
//! CPU time before it reads a byte, and dies with ferret; the parent kills it
//! at the time bound or when the caller stops waiting.
//!
//! Why a process: the parsers allocate as the file tells them to (a
//! decompression bomb in a PDF stream, a sheet's declared dimension), recurse
//! on nested objects, and panic on surprises; none of that can be bounded or
//! caught from inside one process without changing those crates. A child
//! that runs out of memory or stack dies alone, and its death is an error for
//! that file. The child never opens a path: the parent opened the file
//! through its root's handle.

use std::{
    ffi::OsString,
    io::{Read, Seek, Write},
    os::unix::process::ExitStatusExt,
    path::Path,
    process::{Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use crate::{DocError, DocErrorKind, Extracted, Format, Limits, extract, extracted};

/// The first argument that makes the ferret binary an extractor.
pub const WORKER_ARG: &str = "__ferret-extract-document";

/// How often the parent checks whether the caller stopped waiting.
const POLL: Duration = Duration::from_millis(20);

/// Run `file` through an extractor process started from `exe`.
pub(crate) fn run(
    exe: &Path,
    mut file: std::fs::File,
    format: Format,
    limits: &Limits,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Extracted, DocError> {
    let io = |e: std::io::Error| {
        DocError::new(
            DocErrorKind::Io,
            format!("the extractor could not be started: {e}"),
        )
    };
    file.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
    let cpu_seconds = limits.timeout.as_secs() + 2;
    let mut child = Command::new(exe)
        .arg(WORKER_ARG)
        .arg(format.name())
        .arg(limits.max_memory_bytes.to_string())
        .arg(cpu_seconds.to_string())
        .arg(limits.max_input_bytes.to_string())
        .arg(limits.max_unpacked_bytes.to_string())
        .arg(limits.max_text_bytes.to_string())
        .stdin(Stdio::from(file))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env_clear()
        .spawn()
        .map_err(io)?;
    let pid = rustix::process::Pid::from_child(&child);
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let deadline = Instant::now() + limits.timeout;
    let (done, finished) = mpsc::channel::<()>();
    let mut output = Vec::new();
    let max_output = limits.max_text_bytes as u64 + (8 << 20);
    let why_killed = std::thread::scope(|s| {
        let watchdog = s.spawn(move || {
            loop {
                match finished.recv_timeout(POLL) {
                    Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return None,
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                }
                let why = if stop() {
                    DocErrorKind::Cancelled
                } else if Instant::now() >= deadline {
                    DocErrorKind::Timeout
                } else {
                    continue;
                };
                // Not yet reaped (the parent waits only after this thread
                // ends), so the pid is still the child's.
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                return Some(why);
            }
        });
        let _ = (&mut stdout).take(max_output).read_to_end(&mut output);
        let _ = done.send(());
        watchdog.join().unwrap_or(None)
    });
    drop(stdout);
    let status = child.wait().map_err(io)?;
    match why_killed {
        Some(DocErrorKind::Cancelled) => {
            return Err(DocError::new(
                DocErrorKind::Cancelled,
                "the request was cancelled",
            ));
        }
        Some(_) => return Err(timeout(limits)),
        None => {}
    }
    if let Some(result) = extracted::decode(&output, None) {
        return result;
    }
    Err(match status.signal() {
        // An allocation over RLIMIT_DATA fails, and Rust aborts.
        Some(6) => DocError::too_large(format!(
            "extracting it needs more than the {} MB memory bound",
            limits.max_memory_bytes >> 20
        )),
        // SIGXCPU: the CPU-time cap, should the parent's clock be late.
        Some(24) | Some(9) => timeout(limits),
        Some(11) => DocError::malformed(
            "it crashed the parser (too deeply nested?); the file is probably hostile or damaged",
        ),
        _ if output.len() as u64 >= max_output => DocError::too_large("its text is too long"),
        _ => DocError::malformed(format!("the extractor failed on it ({status})")),
    })
}

fn timeout(limits: &Limits) -> DocError {
    DocError::new(
        DocErrorKind::Timeout,
        format!(
            "extracting it took longer than {} s",
            limits.timeout.as_secs()
        ),
    )
}

/// Run as the extractor when the process was started as one (call this first
/// thing in `main`): `Some(exit code)` then, `None` for a normal start.
pub fn worker_main_if_asked() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != WORKER_ARG {
        return None;
    }
    Some(worker(args.collect()))
}

fn worker(args: Vec<OsString>) -> i32 {
    let args: Vec<String> = args
        .into_iter()
        .filter_map(|a| a.into_string().ok())
        .collect();
    let number = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    let (Some(format), Some(memory), Some(cpu), Some(input), Some(unpacked), Some(text)) = (
        args.first().and_then(|f| Format::parse(f)),
        number(1),
        number(2),
        number(3),
        number(4),
        number(5),
    ) else {
        eprintln!("usage: ferret {WORKER_ARG} FORMAT MEMORY CPU_S INPUT UNPACKED TEXT < document");
        return 2;
    };
    if let Err(e) = limit_self(memory, cpu) {
        eprintln!("ferret extractor: cannot set its limits: {e}");
        return 3;
    }
    // Panics are results (the parent reads them), not noise on a log.
    std::panic::set_hook(Box::new(|_| {}));
    let limits = Limits {
        max_input_bytes: input,
        max_unpacked_bytes: unpacked,
        max_text_bytes: text as usize,
        max_memory_bytes: memory,
        timeout: Duration::from_secs(cpu),
    };
    let mut bytes = Vec::new();
    let result = match std::io::stdin()
        .lock()
        .take(input + 1)
        .read_to_end(&mut bytes)
    {
        Err(e) => Err(DocError::new(
            DocErrorKind::Io,
            format!("it could not be read: {e}"),
        )),
        Ok(_) => extract::extract(&bytes, format, &limits),
    };
    drop(bytes);
    let encoded = extracted::encode(&result, None);
    let mut out = std::io::stdout().lock();
    if out.write_all(&encoded).and_then(|_| out.flush()).is_err() {
        return 1;
    }
    0
}

fn limit_self(memory: u64, cpu_seconds: u64) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    setrlimit(
        Resource::Data,
        Rlimit {
            current: Some(memory),
            maximum: Some(memory),
        },
    )?;
    setrlimit(
        Resource::Cpu,
        Rlimit {
            current: Some(cpu_seconds),
            maximum: Some(cpu_seconds + 1),
        },
    )?;
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
    Ok(())
}
