//! Turning date values into spans of Unix seconds, given a [`Clock`].
//!
//! Every date value denotes a period `[start, end]` (both in Unix seconds, end
//! included): an ISO date as precise as written (`2026-11` is the whole month, in the
//! clock's local offset), a calendar constant (`thisweek` = Monday 00:00 to Sunday
//! 23:59:59), or a rolling window `last<N><unit>` = from N units before now on, with
//! no upper bound (so files stamped slightly in the future still count as recent).

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, NaiveDateTime, NaiveTime};

use crate::Clock;
use crate::ast::{DateConst, DateSpec, DateUnit, DateValue};

/// The local wall-clock time of `clock`'s now.
fn local_now(clock: &Clock) -> NaiveDateTime {
    let utc = DateTime::from_timestamp(clock.now_utc, 0)
        .unwrap_or_default()
        .naive_utc();
    utc.checked_add_signed(chrono::TimeDelta::seconds(i64::from(clock.utc_offset_secs)))
        .unwrap_or(utc)
}

/// Local wall-clock time to Unix seconds.
fn to_utc(local: NaiveDateTime, clock: &Clock) -> i64 {
    local
        .and_utc()
        .timestamp()
        .saturating_sub(i64::from(clock.utc_offset_secs))
}

fn midnight(d: NaiveDate) -> NaiveDateTime {
    d.and_time(NaiveTime::MIN)
}

/// `[start, next)` in local time → `[start, next - 1]` in Unix seconds. `None` for
/// `next` (beyond chrono's calendar) means "no end".
fn period(start: NaiveDateTime, next: Option<NaiveDateTime>, clock: &Clock) -> (i64, i64) {
    let lo = to_utc(start, clock);
    let hi = next.map_or(i64::MAX, |n| to_utc(n, clock).saturating_sub(1));
    (lo, hi)
}

/// The period a date value denotes, both ends included, in Unix seconds.
pub(crate) fn resolve(value: &DateValue, clock: &Clock) -> (i64, i64) {
    let now = local_now(clock);
    let today = now.date();
    match *value {
        DateValue::At(spec) => at(spec, clock),
        DateValue::Named(c) => {
            let (start, next) = match c {
                DateConst::Today => (Some(today), today.checked_add_days(Days::new(1))),
                DateConst::Yesterday => (today.checked_sub_days(Days::new(1)), Some(today)),
                DateConst::ThisWeek | DateConst::LastWeek => {
                    let monday = today
                        .checked_sub_days(Days::new(u64::from(
                            today.weekday().num_days_from_monday(),
                        )))
                        .unwrap_or(today);
                    if c == DateConst::ThisWeek {
                        (Some(monday), monday.checked_add_days(Days::new(7)))
                    } else {
                        (monday.checked_sub_days(Days::new(7)), Some(monday))
                    }
                }
                DateConst::ThisMonth | DateConst::LastMonth => {
                    let first = today.with_day(1).unwrap_or(today);
                    if c == DateConst::ThisMonth {
                        (Some(first), first.checked_add_months(Months::new(1)))
                    } else {
                        (first.checked_sub_months(Months::new(1)), Some(first))
                    }
                }
                DateConst::ThisYear | DateConst::LastYear => {
                    let first = NaiveDate::from_ymd_opt(today.year(), 1, 1).unwrap_or(today);
                    if c == DateConst::ThisYear {
                        (Some(first), NaiveDate::from_ymd_opt(today.year() + 1, 1, 1))
                    } else {
                        (NaiveDate::from_ymd_opt(today.year() - 1, 1, 1), Some(first))
                    }
                }
            };
            let lo = start.map_or(i64::MIN, |s| to_utc(midnight(s), clock));
            let hi = next.map_or(i64::MAX, |n| to_utc(midnight(n), clock).saturating_sub(1));
            (lo, hi)
        }
        DateValue::Last { n, unit } => {
            let secs = |per: i64| {
                clock
                    .now_utc
                    .saturating_sub(i64::from(n).saturating_mul(per))
            };
            let lo = match unit {
                DateUnit::Minute => secs(60),
                DateUnit::Hour => secs(3600),
                DateUnit::Day => secs(86_400),
                DateUnit::Week => secs(7 * 86_400),
                DateUnit::Month | DateUnit::Year => {
                    let months = if unit == DateUnit::Year {
                        n.checked_mul(12)
                    } else {
                        Some(n)
                    };
                    months
                        .and_then(|m| now.checked_sub_months(Months::new(m)))
                        .map_or(i64::MIN, |t| to_utc(t, clock))
                }
            };
            (lo, i64::MAX)
        }
    }
}

/// The period of an ISO date, as precise as it is written.
fn at(spec: DateSpec, clock: &Clock) -> (i64, i64) {
    let date = NaiveDate::from_ymd_opt(spec.year, spec.month.unwrap_or(1), spec.day.unwrap_or(1));
    let time = NaiveTime::from_hms_opt(
        spec.hour.unwrap_or(0),
        spec.minute.unwrap_or(0),
        spec.second.unwrap_or(0),
    );
    // The parser validated the fields; fall back to an empty period just in case.
    let (Some(date), Some(time)) = (date, time) else {
        return (1, 0);
    };
    let start = date.and_time(time);
    let next = if spec.second.is_some() {
        start.checked_add_signed(chrono::TimeDelta::seconds(1))
    } else if spec.minute.is_some() {
        start.checked_add_signed(chrono::TimeDelta::minutes(1))
    } else if spec.hour.is_some() {
        start.checked_add_signed(chrono::TimeDelta::hours(1))
    } else if spec.day.is_some() {
        start.checked_add_days(Days::new(1))
    } else if spec.month.is_some() {
        start.checked_add_months(Months::new(1))
    } else {
        NaiveDate::from_ymd_opt(spec.year + 1, 1, 1).map(midnight)
    };
    period(start, next, clock)
}

/// A point in time as `changes` takes it for `since` and `until`, in Unix
/// milliseconds: RFC 3339 (`2026-11-29T10:00:00Z`), a local date or time
/// (`2026-11-29`, `2026-11-29 10:00[:30]`, in `clock`'s offset, as dates in
/// queries are), Unix seconds, a span back from now (`90s`, `10m`, `2h`, `3d`,
/// `1w`), or a calendar constant of the query language (`today`, `thisweek`,
/// …: its start). The one home of date reading, beside the query's `dm:` values.
pub fn parse_time(text: &str, clock: &Clock) -> Result<i64, String> {
    let t = text.trim();
    let now_ms = clock.now_utc.saturating_mul(1000);
    let bad = || {
        format!(
            "`{t}` is not a time; use RFC 3339 (2026-11-29T10:00:00Z), a date (2026-11-29 or 2026-11-29 10:00), Unix seconds, a span like 10m, 2h, 3d, or today, yesterday, thisweek"
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
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(dt.timestamp_millis());
    }
    for format in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(t, format) {
            return Ok(to_utc(naive, clock).saturating_mul(1000));
        }
    }
    if let Ok(date) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(to_utc(midnight(date), clock).saturating_mul(1000));
    }
    let lower = t.to_ascii_lowercase();
    if let Some(c) = DateConst::ALL.iter().find(|c| c.name() == lower) {
        let (start, _) = resolve(&DateValue::Named(*c), clock);
        return Ok(start.saturating_mul(1000));
    }
    Err(bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wednesday 2026-03-18 14:30:00 UTC, local = UTC+1.
    const CLOCK: Clock = Clock {
        now_utc: 1_773_844_200,
        utc_offset_secs: 3600,
    };

    fn utc(y: i32, m: u32, d: u32, h: u32, mi: u32, s: u32) -> i64 {
        NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(h, mi, s)
            .unwrap()
            .and_utc()
            .timestamp()
    }

    #[test]
    fn clock_is_a_wednesday() {
        assert_eq!(CLOCK.now_utc, utc(2026, 3, 18, 14, 30, 0));
        assert_eq!(local_now(&CLOCK).weekday(), chrono::Weekday::Wed);
    }

    fn spec(year: i32, rest: &[u32]) -> DateValue {
        let g = |i: usize| rest.get(i).copied();
        DateValue::At(DateSpec {
            year,
            month: g(0),
            day: g(1),
            hour: g(2),
            minute: g(3),
            second: g(4),
        })
    }

    #[test]
    fn iso_periods_in_local_time() {
        // 2026-11 local (UTC+1) starts 2026-10-31 23:00 UTC.
        assert_eq!(
            resolve(&spec(2026, &[11]), &CLOCK),
            (utc(2026, 10, 31, 23, 0, 0), utc(2026, 11, 30, 22, 59, 59))
        );
        assert_eq!(
            resolve(&spec(2026, &[]), &CLOCK),
            (utc(2025, 12, 31, 23, 0, 0), utc(2026, 12, 31, 22, 59, 59))
        );
        assert_eq!(
            resolve(&spec(2026, &[2, 28]), &CLOCK),
            (utc(2026, 2, 27, 23, 0, 0), utc(2026, 2, 28, 22, 59, 59))
        );
        assert_eq!(
            resolve(&spec(2026, &[1, 1, 10, 30]), &CLOCK),
            (utc(2026, 1, 1, 9, 30, 0), utc(2026, 1, 1, 9, 30, 59))
        );
        assert_eq!(
            resolve(&spec(2026, &[1, 1, 10, 30, 5]), &CLOCK),
            (utc(2026, 1, 1, 9, 30, 5), utc(2026, 1, 1, 9, 30, 5))
        );
        assert_eq!(
            resolve(&spec(2026, &[12, 31, 23]), &CLOCK),
            (utc(2026, 12, 31, 22, 0, 0), utc(2026, 12, 31, 22, 59, 59))
        );
    }

    #[test]
    fn named_periods() {
        let r = |c| resolve(&DateValue::Named(c), &CLOCK);
        assert_eq!(
            r(DateConst::Today),
            (utc(2026, 3, 17, 23, 0, 0), utc(2026, 3, 18, 22, 59, 59))
        );
        assert_eq!(
            r(DateConst::Yesterday),
            (utc(2026, 3, 16, 23, 0, 0), utc(2026, 3, 17, 22, 59, 59))
        );
        // Monday 2026-03-16.
        assert_eq!(
            r(DateConst::ThisWeek),
            (utc(2026, 3, 15, 23, 0, 0), utc(2026, 3, 22, 22, 59, 59))
        );
        assert_eq!(
            r(DateConst::LastWeek),
            (utc(2026, 3, 8, 23, 0, 0), utc(2026, 3, 15, 22, 59, 59))
        );
        assert_eq!(
            r(DateConst::ThisMonth),
            (utc(2026, 2, 28, 23, 0, 0), utc(2026, 3, 31, 22, 59, 59))
        );
        assert_eq!(
            r(DateConst::LastMonth),
            (utc(2026, 1, 31, 23, 0, 0), utc(2026, 2, 28, 22, 59, 59))
        );
        assert_eq!(
            r(DateConst::ThisYear),
            (utc(2025, 12, 31, 23, 0, 0), utc(2026, 12, 31, 22, 59, 59))
        );
        assert_eq!(
            r(DateConst::LastYear),
            (utc(2024, 12, 31, 23, 0, 0), utc(2025, 12, 31, 22, 59, 59))
        );
    }

    #[test]
    fn rolling_windows() {
        let r = |n, unit| resolve(&DateValue::Last { n, unit }, &CLOCK);
        assert_eq!(r(30, DateUnit::Minute), (CLOCK.now_utc - 1800, i64::MAX));
        assert_eq!(r(2, DateUnit::Hour), (CLOCK.now_utc - 7200, i64::MAX));
        assert_eq!(r(1, DateUnit::Day), (CLOCK.now_utc - 86_400, i64::MAX));
        assert_eq!(
            r(2, DateUnit::Week),
            (CLOCK.now_utc - 14 * 86_400, i64::MAX)
        );
        assert_eq!(r(1, DateUnit::Month).0, utc(2026, 2, 18, 14, 30, 0));
        assert_eq!(r(2, DateUnit::Year).0, utc(2024, 3, 18, 14, 30, 0));
        assert_eq!(r(u32::MAX, DateUnit::Year).0, i64::MIN);
        assert_eq!(
            r(u32::MAX, DateUnit::Week).0,
            CLOCK.now_utc - u32::MAX as i64 * 7 * 86_400
        );
    }

    #[test]
    fn extreme_clocks_do_not_panic() {
        for now_utc in [i64::MIN, i64::MAX, 0] {
            let clock = Clock {
                now_utc,
                utc_offset_secs: i32::MAX,
            };
            for c in DateConst::ALL {
                let _ = resolve(&DateValue::Named(c), &clock);
            }
            let _ = resolve(&spec(9999, &[12, 31, 23, 59, 59]), &clock);
            let _ = resolve(&spec(0, &[]), &clock);
        }
    }

    #[test]
    fn every_time_form_parses() {
        let now = CLOCK.now_utc * 1000;
        assert_eq!(parse_time("10m", &CLOCK), Ok(now - 600_000));
        assert_eq!(parse_time("2h", &CLOCK), Ok(now - 7_200_000));
        assert_eq!(parse_time("3d", &CLOCK), Ok(now - 3 * 86_400_000));
        assert_eq!(parse_time("1700000000", &CLOCK), Ok(1_700_000_000_000));
        assert_eq!(
            parse_time("2026-11-29T10:00:00Z", &CLOCK),
            Ok(1_795_946_400_000)
        );
        // Local times in the clock's offset (UTC+1).
        assert_eq!(
            parse_time("2026-11-29 11:00", &CLOCK),
            Ok(1_795_946_400_000)
        );
        assert_eq!(
            parse_time("2026-11-29 11:00:30", &CLOCK),
            Ok(1_795_946_430_000)
        );
        assert_eq!(
            parse_time("2026-11-29", &CLOCK),
            Ok(1_795_946_400_000 - 11 * 3_600_000)
        );
        // A calendar constant is its start: today is 2026-03-18 00:00 local.
        let (today, _) = resolve(&DateValue::Named(DateConst::Today), &CLOCK);
        assert_eq!(parse_time("Today", &CLOCK), Ok(today * 1000));
        for bad in ["", "yesterdy", "10x", "2026-13-01", "m"] {
            assert!(parse_time(bad, &CLOCK).is_err(), "{bad}");
        }
    }
}
