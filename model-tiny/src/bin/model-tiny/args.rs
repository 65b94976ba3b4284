//! C-style number parsing (`atoi`, `atof`) for the run.c-compatible options.

/// C's `atoi` as glibc has it, `(int) strtol(s, NULL, 10)`: optional leading spaces and sign,
/// then digits (anything else ends the number); past a `long` it saturates, and the `int` is the
/// low 32 bits of that.
pub fn atoi(s: &str) -> i32 {
    let s = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    // Up to 2^63, |LONG_MIN|: no sum of digits past it matters.
    let mut v: i128 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        v = (v * 10 + i128::from(b - b'0')).min(1 << 63);
    }
    let long = if neg {
        (-v).max(i128::from(i64::MIN))
    } else {
        v.min(i128::from(i64::MAX))
    } as i64;
    long as i32
}

/// C's `atof` (`strtod`): the longest prefix that is a number, decimal or hexadecimal
/// (`0x1p-3`), 0 if none.
pub fn atof(s: &str) -> f64 {
    let s = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if let Some(v) = hex_float(s) {
        return v;
    }
    (1..=s.len())
        .rev()
        .filter(|&i| s.is_char_boundary(i))
        .find_map(|i| s[..i].parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// A C hexadecimal float at the start of `s` (`[+-]0x` digits, an optional `.` and digits, an
/// optional binary exponent `p[+-]N`), if there is one with at least one digit.
fn hex_float(s: &str) -> Option<f64> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let rest = rest
        .strip_prefix("0x")
        .or_else(|| rest.strip_prefix("0X"))?;
    let (mut mantissa, mut shift, mut digits, mut seen_point) = (0f64, 0i64, 0, false);
    let mut bytes = rest.bytes().peekable();
    while let Some(&b) = bytes.peek() {
        match b {
            b'.' if !seen_point => seen_point = true,
            _ => match (b as char).to_digit(16) {
                Some(d) => {
                    mantissa = mantissa * 16.0 + f64::from(d);
                    digits += 1;
                    if seen_point {
                        shift -= 4;
                    }
                }
                None => break,
            },
        }
        bytes.next();
    }
    if digits == 0 {
        return None;
    }
    let tail: String = bytes.map(char::from).collect();
    if let Some(exp) = tail.strip_prefix(['p', 'P']) {
        let sign_len = usize::from(exp.starts_with(['+', '-']));
        let n = exp[sign_len..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if n > 0 {
            let e: i64 = exp[..sign_len + n].parse().unwrap_or(0);
            shift = shift.saturating_add(e);
        }
    }
    let v = mantissa * 2f64.powi(shift.clamp(-2000, 2000) as i32);
    Some(if neg { -v } else { v })
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

    #[test]
    fn numbers_past_an_int_are_what_glibc_makes_of_them() {
        // (int) strtol: the low 32 bits, and a long saturates first.
        assert_eq!(atoi("5000000000"), 705_032_704);
        assert_eq!(atoi("4294967297"), 1);
        assert_eq!(atoi("-4294967297"), -1);
        assert_eq!(atoi("99999999999999999999"), -1, "LONG_MAX's low 32 bits");
        assert_eq!(atoi("-99999999999999999999"), 0, "LONG_MIN's low 32 bits");
        assert_eq!(atoi("  +7"), 7);
    }

    #[test]
    fn hexadecimal_floats_are_read_as_strtod_reads_them() {
        assert_eq!(atof("0x1p-1"), 0.5);
        assert_eq!(atof("0x8"), 8.0);
        assert_eq!(atof("-0X.8"), -0.5);
        assert_eq!(atof("0x1.8p1z"), 3.0);
        assert_eq!(atof("0x1p"), 1.0, "an exponent without digits is not read");
        assert_eq!(atof("0x"), 0.0, "\"0\", then x ends the number");
        assert_eq!(atof("inf"), f64::INFINITY);
    }
}
