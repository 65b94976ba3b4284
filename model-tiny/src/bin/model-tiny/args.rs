//! C-style number parsing (`atoi`, `atof`) for the run.c-compatible options.

/// C's `atoi`: optional leading spaces and sign, then digits; anything else ends the number.
pub fn atoi(s: &str) -> i32 {
    let s = s.trim_start();
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        v = (v * 10 + (b - b'0') as i64).min(i64::from(u32::MAX) + 1);
    }
    (if neg { -v } else { v }) as i32
}

/// C's `atof`: the longest prefix that is a number, 0 if none.
pub fn atof(s: &str) -> f64 {
    let s = s.trim_start();
    (1..=s.len())
        .rev()
        .filter(|&i| s.is_char_boundary(i))
        .find_map(|i| s[..i].parse::<f64>().ok())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_parsing() {
        assert_eq!(atoi("42"), 42);
        assert_eq!(atoi("-3x"), -3);
        assert_eq!(atoi("abc"), 0);
        assert_eq!(atof("0.9"), 0.9);
        assert_eq!(atof("1e-1z"), 0.1);
        assert_eq!(atof("x"), 0.0);
    }
}
