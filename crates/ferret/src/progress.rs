//! Long work shown on a terminal: a line of entries walked (count, rate,
//! time) or a bar of the text read; quiet when stderr is not a terminal.

use std::{
    io::IsTerminal,
    sync::atomic::AtomicU64,
    time::{Duration, Instant},
};

use ferret_index::Index;

/// Build with a progress line on a terminal (entries, rate, elapsed); quiet otherwise.
pub(crate) fn build_with_progress(index: &Index) {
    let counter = AtomicU64::new(0);
    with_progress("indexing", &counter, || index.build_now(Some(&counter)));
}

/// Run `work`, showing on a terminal how far `counter` (entries walked) has got:
/// the count, the rate and the time. Quiet when stderr is not a terminal.
pub(crate) fn with_progress<T>(what: &str, counter: &AtomicU64, work: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(100));
        bar
    });
    let done = std::sync::atomic::AtomicBool::new(false);
    let result = std::thread::scope(|scope| {
        if let Some(bar) = &bar {
            let done = &done;
            scope.spawn(move || {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let n = counter.load(std::sync::atomic::Ordering::Relaxed);
                    let secs = started.elapsed().as_secs_f64().max(0.001);
                    bar.set_message(format!(
                        "{what}: {n} entries, {:.0}/s, {:.1}s",
                        n as f64 / secs,
                        secs
                    ));
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
        let result = work();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        result
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result
}

/// Run `work` (a content index build), showing on a terminal a bar of the
/// text read so far; quiet otherwise.
pub(crate) fn with_content_progress<T>(
    content: &ferret_content::ContentIndex,
    work: impl FnOnce() -> T,
) -> T {
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "content index {bar:30} {bytes}/{total_bytes} {msg} ({eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        if let Some(bar) = &bar {
            let done = &done;
            scope.spawn(move || {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Some(p) = content.progress() {
                        bar.set_length(p.bytes_total);
                        bar.set_position(p.bytes_done);
                        bar.set_message(format!("{} of {} files", p.files_done, p.files_total));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                bar.finish_and_clear();
            });
        }
        let result = work();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        result
    })
}
