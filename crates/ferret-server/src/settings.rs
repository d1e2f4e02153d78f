//! Settings changed while ferret runs: what the operator's settings are and
//! how they were last read (for `diagnostics` and the search page, both
//! read-only), and serving what the binary opened for new ones.
//!
//! The binary reads `ferret.toml` again (on SIGHUP, or when the file
//! changes), opens what the new settings serve, and hands it over here: a
//! new [`Stack`] replaces the old one whole, as a stdio client's new roots
//! do (`client_roots.rs`), so that a call keeps the one it took when it
//! began. Its parts were made from the old stack's where they could be
//! (`Index::open_adopting`, `ContentIndex::adopting`, the symbols table
//! carried over here), so the roots that did not change are not read
//! again. The lists of tools never change while ferret runs: write tools
//! and `locate` stay as listed at start, and a setting that would list
//! them is named as needing a restart.

use std::sync::{Arc, atomic::Ordering};

use serde::Serialize;

use crate::{Ferret, Locate, Stack};

/// The operator's settings as ferret runs with them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Settings {
    /// The configuration file (`None`: no location for one).
    pub file: Option<String>,
    /// It exists (else ferret reads it once it does).
    pub file_exists: bool,
    /// Times it was read again since ferret started.
    pub reloads: u64,
    pub last_reload: Option<Reload>,
    /// Every setting: its value and where it came from, in `--help`'s order.
    pub effective: Vec<Setting>,
}

/// One setting: its value (secrets not shown) and where it came from
/// (`command line`, `environment (FERRET_…)`, `file (path line N)`, `default`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Setting {
    pub key: String,
    pub value: String,
    pub source: String,
}

/// How the file was last read again.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Reload {
    /// When (RFC 3339).
    pub at: String,
    /// `SIGHUP` or `the file changed`.
    pub cause: String,
    /// The new settings are served (else the running ones were kept).
    pub applied: bool,
    /// Why they were not, with the fix.
    pub error: Option<String>,
    /// The settings that changed.
    pub changed: Vec<String>,
    /// Of those, the ones that take a restart (the address, the token …).
    pub restart_needed: Vec<String>,
    pub roots_added: Vec<String>,
    pub roots_removed: Vec<String>,
    /// Served before and after, not read again.
    pub roots_kept: Vec<String>,
    /// From the signal (or the change) until the new settings were served.
    pub ms: u64,
}

impl Ferret {
    /// What `diagnostics` and the page show of the settings.
    pub fn set_settings(&self, settings: Settings) {
        *self
            .inner
            .settings
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = settings;
    }

    pub fn settings(&self) -> Settings {
        self.inner
            .settings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Serve `served` from now on, in place of what is served (the
    /// operator's settings changed): calls that began keep what they took;
    /// the old stack's index and content index are shut down (their files
    /// saved) once it is replaced, unless `served` keeps them. The symbols
    /// table goes over when it holds the same files alike. For a server of
    /// operator roots (a server that follows client roots replaces its
    /// stack itself).
    pub fn replace_served(&self, served: crate::Served) {
        let new = Arc::new(served);
        let old = self.install(new.clone());
        crate::symbols_tool::carry_over(&self.inner.symbols, &old, &new);
        self.start_symbols();
        let keeps_index = new.index.same_as(&old.index);
        let keeps_content = match (&new.content, &old.content) {
            (Some(n), Some(o)) => n.same_as(o),
            _ => false,
        };
        let closing = move || {
            if let Some(c) = old.content.as_ref().filter(|_| !keeps_content) {
                c.shutdown();
            }
            if !keeps_index {
                old.index.shutdown();
            }
            // Its memory back to the system once nothing else holds it
            // (a call that took it may still: then at its end, by glibc).
            drop(old);
            ferret_index::Index::give_back_memory();
        };
        let _ = std::thread::Builder::new()
            .name("ferret-close".into())
            .spawn(closing);
    }

    /// Put `stack` in place; returns the one it replaces. Subscriptions
    /// and the page follow the new index.
    pub(crate) fn install(&self, stack: Arc<Stack>) -> Arc<Stack> {
        let index = stack.index.clone();
        let old = {
            let mut served = self.inner.stack.write().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut *served, stack)
        };
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
        self.inner.hub.follow(index);
        old
    }

    /// How many times the stack was replaced (the page's journal follows).
    pub(crate) fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::SeqCst)
    }

    /// The locate roots and policy from now on (`None`: no locate root).
    /// `locate` is listed only if it was at start: `Err` says so when new
    /// settings would need it listed (they are not applied then).
    pub fn replace_locate(&self, locate: Option<Locate>) -> Result<(), String> {
        if locate.is_some() && !self.inner.locate_listed {
            return Err(
                "`locate-root` was not set when ferret started, so the locate tool is not listed; restart ferret to offer it".into(),
            );
        }
        let kept = locate.as_ref().map(|l| l.index.clone());
        let old = std::mem::replace(
            &mut *self.inner.locate.write().unwrap_or_else(|p| p.into_inner()),
            locate.map(Arc::new),
        );
        if let Some(old) = old.filter(|o| !kept.is_some_and(|k| k.same_as(&o.index))) {
            let index = old.index.clone();
            let _ = std::thread::Builder::new()
                .name("ferret-close".into())
                .spawn(move || index.shutdown());
        }
        Ok(())
    }

    /// The locate roots served now, if any.
    pub fn locate_roots(&self) -> Option<Arc<Locate>> {
        self.inner
            .locate
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether the write tools are listed (they were at start: some root
    /// was writable). Roots made writable later need a restart to be
    /// offered them.
    pub fn writes_listed(&self) -> bool {
        self.writes()
    }

    /// Whether `locate` is listed (it was at start).
    pub fn locate_listed(&self) -> bool {
        self.inner.locate_listed
    }

    /// Build the symbols table early (in the background once the index is
    /// ready), or only in the first call that needs it.
    pub fn set_symbols_early(&self, early: bool) {
        if early {
            self.build_symbols_early();
        } else {
            self.inner.symbols_early.store(false, Ordering::Relaxed);
        }
    }
}
