//! The time forms `changes` accepts for `since` and `until`.

use chrono::{Local, NaiveDate, NaiveDateTime, TimeZone};

/// Parse `since`/`until` into Unix milliseconds: RFC 3339, `YYYY-MM-DD[ HH:MM[:SS]]`
/// (local time), Unix seconds, or a span back from `now_ms` (`90s`, `10m`, `2h`, `3d`, `1w`).
pub fn parse_when(text: &str, now_ms: i64) -> Result<i64, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{t}` is not a time; use RFC 3339 (2026-11-29T10:00:00Z), a date (2026-11-29 or 2026-11-29 10:00), Unix seconds, or a span like 10m, 2h, 3d"
        )
    };
    if t.is_empty() {
        return Err(bad());
    }
    if let Some(unit) = t.chars().last().filter(char::is_ascii_alphabetic) {
        let digits = &t[..t.len() - 1];
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            let n: i64 = digits.parse().map_err(|_| bad())?;
            let secs = match unit {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86_400,
                'w' => 7 * 86_400,
                _ => return Err(bad()),
            };
            return Ok(now_ms - n.saturating_mul(secs).saturating_mul(1000));
        }
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        let secs: i64 = t.parse().map_err(|_| bad())?;
        return Ok(secs.saturating_mul(1000));
    }
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(t) {
        return Ok(dt.timestamp_millis());
    }
    for format in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(t, format) {
            return local_ms(naive).ok_or_else(bad);
        }
    }
    if let Ok(date) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return local_ms(date.and_hms_opt(0, 0, 0).ok_or_else(bad)?).ok_or_else(bad);
    }
    Err(bad())
}

fn local_ms(naive: NaiveDateTime) -> Option<i64> {
    Local
        .from_local_datetime(&naive)
        .earliest()
        .map(|d| d.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses() {
        let now = 1_800_000_000_000;
        assert_eq!(parse_when("10m", now), Ok(now - 600_000));
        assert_eq!(parse_when("2h", now), Ok(now - 7_200_000));
        assert_eq!(parse_when("3d", now), Ok(now - 3 * 86_400_000));
        assert_eq!(parse_when("1700000000", now), Ok(1_700_000_000_000));
        assert_eq!(
            parse_when("2026-11-29T10:00:00Z", now),
            Ok(1_795_946_400_000)
        );
        assert!(parse_when("2026-11-29", now).is_ok());
        assert!(parse_when("2026-11-29 10:00", now).is_ok());
        assert!(parse_when("2026-11-29 10:00:30", now).is_ok());
        for bad in ["", "yesterday", "10x", "2026-13-01", "m"] {
            assert!(parse_when(bad, now).is_err(), "{bad}");
        }
    }
}
