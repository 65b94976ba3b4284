//! Money as people read it. Amounts are integer fen (1/100 yuan) everywhere; this is the one
//! place that writes them as yuan, for the app, the CLI and jobspec's own reports.

/// `fen` as yuan with two decimals and thousands separators, a minus sign (U+2212) before the
/// `¥` when negative: `¥1,234.56`, `¥0.05`, `−¥12.00`.
pub fn yuan(fen: impl Into<i128>) -> String {
    let fen: i128 = fen.into();
    let sign = if fen < 0 { "\u{2212}" } else { "" };
    let fen = fen.unsigned_abs();
    let digits = (fen / 100).to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{sign}¥{grouped}.{:02}", fen % 100)
}

/// Fen for `cards` cards for `seconds` at a price per card-hour, rounded up:
/// cards × seconds × price / 3600, in integers. The edge settles holds with this.
pub fn cost_fen(price_fen_per_hour: u64, cards: u32, seconds: u64) -> u64 {
    let numer = u128::from(cards) * u128::from(seconds) * u128::from(price_fen_per_hour);
    u64::try_from(numer.div_ceil(3600)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::yuan;

    #[test]
    fn fen_read_as_yuan() {
        assert_eq!(yuan(0u64), "¥0.00");
        assert_eq!(yuan(5u64), "¥0.05");
        assert_eq!(yuan(1234i64), "¥12.34");
        assert_eq!(yuan(100_000i64), "¥1,000.00");
        assert_eq!(yuan(123_456u64), "¥1,234.56");
        assert_eq!(yuan(99_999_999i64), "¥999,999.99");
        assert_eq!(yuan(-5i64), "\u{2212}¥0.05");
        assert_eq!(yuan(-123_456_789i64), "\u{2212}¥1,234,567.89");
        assert_eq!(yuan(i64::MIN), "\u{2212}¥92,233,720,368,547,758.08");
        assert_eq!(yuan(u64::MAX), "¥184,467,440,737,095,516.15");
    }
}
