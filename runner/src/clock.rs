//! The runner's clock: the system time, written by the contract's one time module
//! (`api::time`).

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// `t` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, milliseconds: a job stopped and run again within a
/// second still has attempts that took time; times before 1970 print as the epoch).
pub fn rfc3339(t: SystemTime) -> String {
    let ms = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    api::time::format_rfc3339_ms(i64::try_from(ms).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_known_instants() {
        let at = |s: u64| rfc3339(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(1_709_251_199), "2024-02-29T23:59:59.000Z");
        assert_eq!(at(4_102_444_800), "2100-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_millis(1_709_251_199_042)),
            "2024-02-29T23:59:59.042Z"
        );
    }
}
