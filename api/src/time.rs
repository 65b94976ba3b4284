//! Time, the one module: UTC times on the wire (RFC 3339) and in storage (epoch milliseconds),
//! as the edge, the runner, the app and the CLI write and read them, and durations in words.
//! No clock is read here: callers pass the time in.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Parses an RFC 3339 time (`YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)`) into epoch milliseconds.
/// Dates that do not exist (`2030-02-31`) are refused, not rolled into the next month.
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    let t = OffsetDateTime::parse(s, &Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos().div_euclid(1_000_000)).ok()
}

/// Epoch milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`. Times outside years 1–9999, which nothing
/// we store can hold, are shown clamped to that range.
pub fn format_rfc3339_ms(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    let t = OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(if ms < 0 {
        time::PrimitiveDateTime::MIN.assume_utc()
    } else {
        time::PrimitiveDateTime::MAX.assume_utc()
    });
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// An RFC 3339 time shortened for a table: `2026-11-29 18:02:03 UTC` (the fraction dropped).
pub fn short_utc(rfc3339: &str) -> String {
    let t = rfc3339.trim_end_matches('Z');
    let t = t.split('.').next().unwrap_or(t);
    format!("{} UTC", t.replacen('T', " ", 1))
}

/// A duration as people say it, rounded up: "45 s", "50 min", "2 h", "1 h 5 min".
pub fn words_for_seconds(s: i64) -> String {
    let s = s.max(0);
    if s < 60 {
        return format!("{s} s");
    }
    let minutes = (s + 59) / 60;
    match (minutes / 60, minutes % 60) {
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_words() {
        assert_eq!(words_for_seconds(-3), "0 s");
        assert_eq!(words_for_seconds(42), "42 s");
        assert_eq!(words_for_seconds(60), "1 min");
        assert_eq!(words_for_seconds(2973), "50 min");
        assert_eq!(words_for_seconds(3600), "1 h");
        assert_eq!(words_for_seconds(3601), "1 h 1 min");
        assert_eq!(words_for_seconds(86_400), "24 h");
    }
    use proptest::prelude::*;

    #[test]
    fn known_times() {
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339_ms("2030-01-01T00:00:00Z"),
            Some(1_893_456_000_000)
        );
        assert_eq!(
            parse_rfc3339_ms("2030-01-01T08:00:00.5+08:00"),
            Some(1_893_456_000_500)
        );
        assert_eq!(
            parse_rfc3339_ms("2030-01-01T00:00:00.123456Z"),
            Some(1_893_456_000_123)
        );
        assert_eq!(
            parse_rfc3339_ms("2032-02-29T00:00:00Z"),
            Some(1_961_625_600_000),
            "a leap day exists"
        );
        assert_eq!(
            format_rfc3339_ms(1_893_456_000_123),
            "2030-01-01T00:00:00.123Z"
        );
        assert_eq!(
            short_utc("2026-11-29T18:02:03.456Z"),
            "2026-11-29 18:02:03 UTC"
        );
        for bad in [
            "",
            "2030-01-01",
            "2030-13-01T00:00:00Z",
            "2030-01-01T00:00:00",
            "2030-01-01T00:00:00.Z",
            "2030-02-31T00:00:00Z",
            "2031-02-29T00:00:00Z",
            "2030-04-31T12:00:00Z",
            "2030-01-01T24:00:00Z",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn round_trips(ms in 0i64..8_000_000_000_000) {
            prop_assert_eq!(parse_rfc3339_ms(&format_rfc3339_ms(ms)), Some(ms));
        }

        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse_rfc3339_ms(&s);
        }
    }
}
