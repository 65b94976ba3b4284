//! Durations as a spec writes them (`"24h"`, `"1h30m"`, Slurm's `1:30:00`) and as a plan shows them.

/// The longest `time_limit` any backend runs: a longer one is refused when the spec is checked,
/// not when it is dispatched.
pub const MAX_TIME_LIMIT_S: u64 = 365 * 86_400;
/// The longest `time_limit` the local `onramp-runner` runs (`runner/src/wire.rs`).
pub const RUNNER_MAX_TIME_LIMIT_S: u64 = 7 * 86_400;

/// Reads durations such as `"24h"`, `"30m"`, `"90s"`, `"2d"`, `"1h30m"` or `"1:30:00"`, and
/// Slurm's days forms `"2-12"`, `"2-12:30"` and `"2-12:30:00"` (days, then hours).
pub fn parse_duration_s(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    if let Some((days, rest)) = t.split_once('-') {
        return slurm_days(days, rest);
    }
    if t.contains(':') {
        // Slurm's H:MM:SS / MM:SS.
        let parts: Vec<&str> = t.split(':').collect();
        if parts.len() > 3 {
            return None;
        }
        let mut total: u64 = 0;
        for p in parts {
            let n: u64 = p.parse().ok()?;
            total = total.checked_mul(60)?.checked_add(n)?;
        }
        return Some(total);
    }
    let mut total: u64 = 0;
    let mut num = String::new();
    let mut saw_unit = false;
    for c in t.chars() {
        if c.is_ascii_digit() {
            num.push(c);
        } else if c == ' ' {
            continue;
        } else {
            let mult: u64 = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86_400,
                _ => return None,
            };
            let n: u64 = num.parse().ok()?;
            total = total.checked_add(n.checked_mul(mult)?)?;
            num.clear();
            saw_unit = true;
        }
    }
    if !num.is_empty() {
        // A bare number means hours only if there was no unit at all ("24" → 24h is a guess
        // we refuse: the reader reports it instead).
        return None;
    }
    saw_unit.then_some(total)
}

/// Slurm's `D-HH`, `D-HH:MM` and `D-HH:MM:SS`: plain digits in every part.
fn slurm_days(days: &str, rest: &str) -> Option<u64> {
    let digits = |p: &str| -> Option<u64> {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        p.parse().ok()
    };
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.len() > 3 {
        return None;
    }
    let part = |i: usize| parts.get(i).map_or(Some(0), |p| digits(p));
    digits(days)?
        .checked_mul(24)?
        .checked_add(part(0)?)?
        .checked_mul(60)?
        .checked_add(part(1)?)?
        .checked_mul(60)?
        .checked_add(part(2)?)
}

/// [`format_duration`] for a Chinese text: years as 年 (d, h, m, s stay, as the spec writes them).
pub fn format_duration_zh(seconds: f64) -> String {
    format_duration(seconds).replace(" years", " 年")
}

/// Writes seconds the way a person reads them: `1d 2h`, `3h 20m`, `45m`, `30s`.
pub fn format_duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "∞".to_string();
    }
    let s = seconds.max(0.0);
    if s >= 86_400.0 * 365.0 {
        return format!("{:.1} years", s / (86_400.0 * 365.0));
    }
    let s = s.round() as u64;
    let (d, h, m, sec) = (s / 86_400, (s % 86_400) / 3600, (s % 3600) / 60, s % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {sec}s")
    } else {
        format!("{sec}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_s("24h"), Some(86_400));
        assert_eq!(parse_duration_s("30m"), Some(1800));
        assert_eq!(parse_duration_s("1h30m"), Some(5400));
        assert_eq!(parse_duration_s("2d"), Some(172_800));
        assert_eq!(parse_duration_s("1:30:00"), Some(5400));
        assert_eq!(parse_duration_s("24"), None);
        assert_eq!(parse_duration_s("h"), None);
        assert_eq!(parse_duration_s("99999999999999999999d"), None);
        // Slurm's days forms, as `#SBATCH --time` takes them.
        assert_eq!(parse_duration_s("2-00:00:00"), Some(172_800));
        assert_eq!(parse_duration_s(" 1-12 "), Some(129_600));
        assert_eq!(parse_duration_s("1-0:30"), Some(88_200));
        assert_eq!(parse_duration_s("0-0:0:45"), Some(45));
        for bad in [
            "-1:00",
            "1-",
            "1-:30",
            "1-2:3:4:5",
            "+1-2",
            "1-+2",
            "1-2h",
            "1--2",
            "1-2 :00",
        ] {
            assert_eq!(parse_duration_s(bad), None, "{bad}");
        }
        assert_eq!(parse_duration_s("999999999999999999-0"), None);
        assert_eq!(format_duration(5400.0), "1h 30m");
        assert_eq!(format_duration(f64::INFINITY), "∞");
    }
}
