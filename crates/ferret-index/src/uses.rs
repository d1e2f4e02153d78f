//! How much each file was used lately: read, edited or matched through ferret.
//!
//! A score per path, decaying by half every week, kept for the most used few
//! thousand paths, and saved beside the snapshot (a small JSON file) so that it
//! survives restarts. Relevance and fuzzy search boost what an agent has been
//! working with.

use std::{collections::HashMap, path::Path};

/// A use halves in weight every this many seconds.
const HALF_LIFE_SECS: f64 = 7.0 * 24.0 * 3600.0;
/// Paths kept (the least used go first).
const KEEP: usize = 5_000;

#[derive(Debug, Default, Clone)]
pub struct Uses {
    /// Path as shown to agents → (score at `at`, `at` in Unix seconds).
    map: HashMap<String, (f64, i64)>,
}

fn decayed(score: f64, at: i64, now: i64) -> f64 {
    score * 0.5f64.powf((now - at).max(0) as f64 / HALF_LIFE_SECS)
}

impl Uses {
    /// Count one use of `path` (a read or an edit weighs 1, a grep match less).
    pub fn record(&mut self, path: &str, weight: f64, now: i64) {
        let entry = self.map.entry(path.to_string()).or_insert((0.0, now));
        *entry = (decayed(entry.0, entry.1, now) + weight, now);
        if self.map.len() > KEEP + KEEP / 4 {
            self.prune(now);
        }
    }

    /// The decayed score of `path` now (0 for paths never used).
    pub fn score(&self, path: &str, now: i64) -> f64 {
        self.map
            .get(path)
            .map_or(0.0, |&(s, at)| decayed(s, at, now))
    }

    /// Every path with its decayed score now.
    pub fn scores(&self, now: i64) -> impl Iterator<Item = (&str, f64)> + '_ {
        self.map
            .iter()
            .map(move |(p, &(s, at))| (p.as_str(), decayed(s, at, now)))
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn prune(&mut self, now: i64) {
        let mut all: Vec<(String, f64)> = self
            .map
            .iter()
            .map(|(p, &(s, at))| (p.clone(), decayed(s, at, now)))
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1));
        all.truncate(KEEP);
        self.map = all.into_iter().map(|(p, s)| (p, (s, now))).collect();
    }

    /// Read a saved file; anything unreadable is an empty record (uses are a
    /// hint, never worth failing over).
    pub fn load(path: &Path) -> Uses {
        let Ok(text) = std::fs::read_to_string(path) else {
            return Uses::default();
        };
        let parsed: Result<Vec<(String, f64, i64)>, _> = serde_json::from_str(&text);
        match parsed {
            Ok(rows) => Uses {
                map: rows
                    .into_iter()
                    .filter(|(_, s, _)| s.is_finite() && *s >= 0.0)
                    .map(|(p, s, at)| (p, (s, at)))
                    .collect(),
            },
            Err(e) => {
                tracing::warn!("use scores {} discarded: {e}", path.display());
                Uses::default()
            }
        }
    }

    pub fn to_json(&self) -> String {
        let rows: Vec<(&String, f64, i64)> =
            self.map.iter().map(|(p, &(s, at))| (p, s, at)).collect();
        serde_json::to_string(&rows).unwrap_or_else(|_| "[]".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uses_add_up_and_fade() {
        let mut u = Uses::default();
        u.record("a.rs", 1.0, 1000);
        u.record("a.rs", 1.0, 1000);
        assert!((u.score("a.rs", 1000) - 2.0).abs() < 1e-9);
        let week = HALF_LIFE_SECS as i64;
        assert!((u.score("a.rs", 1000 + week) - 1.0).abs() < 1e-6);
        assert_eq!(u.score("b.rs", 1000), 0.0);
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("uses.json");
        std::fs::write(&file, u.to_json()).unwrap();
        assert!((Uses::load(&file).score("a.rs", 1000) - 2.0).abs() < 1e-9);
        std::fs::write(&file, "not json").unwrap();
        assert!(Uses::load(&file).is_empty());
        for i in 0..(KEEP * 2) {
            u.record(&format!("f{i}"), 1.0 + i as f64, 2000);
        }
        assert!(u.map.len() <= KEEP + KEEP / 4);
        assert!(
            u.score(&format!("f{}", KEEP * 2 - 1), 2000) > 0.0,
            "the most used stay"
        );
    }
}
