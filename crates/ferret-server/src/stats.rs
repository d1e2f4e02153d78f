//! Per-tool call counters for `diagnostics`.

use std::{
    collections::{BTreeMap, VecDeque},
    sync::Mutex,
    time::Duration,
};

use serde_json::{Value, json};

/// How many recent durations feed the p95.
const RECENT: usize = 1000;

#[derive(Default)]
struct ToolStats {
    calls: u64,
    ok: u64,
    err: u64,
    total_ms: f64,
    recent_ms: VecDeque<f64>,
}

#[derive(Default)]
pub struct Stats {
    tools: Mutex<BTreeMap<&'static str, ToolStats>>,
}

impl Stats {
    pub fn record(&self, tool: &'static str, elapsed: Duration, ok: bool) {
        let ms = elapsed.as_secs_f64() * 1000.0;
        let mut tools = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        let s = tools.entry(tool).or_default();
        s.calls += 1;
        if ok {
            s.ok += 1;
        } else {
            s.err += 1;
        }
        s.total_ms += ms;
        if s.recent_ms.len() == RECENT {
            s.recent_ms.pop_front();
        }
        s.recent_ms.push_back(ms);
    }

    pub fn snapshot(&self) -> Value {
        let tools = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = serde_json::Map::new();
        for (name, s) in tools.iter() {
            let mut sorted: Vec<f64> = s.recent_ms.iter().copied().collect();
            sorted.sort_by(f64::total_cmp);
            let p95 = sorted
                .get(((sorted.len() as f64 * 0.95).ceil() as usize).saturating_sub(1))
                .copied()
                .unwrap_or(0.0);
            out.insert(
                name.to_string(),
                json!({
                    "calls": s.calls,
                    "ok": s.ok,
                    "err": s.err,
                    "avg_ms": round(s.total_ms / s.calls.max(1) as f64),
                    "p95_ms": round(p95),
                }),
            );
        }
        Value::Object(out)
    }
}

fn round(ms: f64) -> f64 {
    (ms * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_percentiles() {
        let s = Stats::default();
        for i in 1..=100 {
            s.record("read", Duration::from_millis(i), i % 10 != 0);
        }
        let snap = s.snapshot();
        assert_eq!(snap["read"]["calls"], 100);
        assert_eq!(snap["read"]["err"], 10);
        assert_eq!(snap["read"]["p95_ms"], 95.0);
        assert_eq!(snap["read"]["avg_ms"], 50.5);
    }
}
