//! C-style number parsing (`atoi`, `atof`) and `--flag value` lists for the subcommands.

use model_tiny::{Error, Result};

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

/// `--name value` pairs and bare `--switch`es after a subcommand.
pub struct Flags {
    pairs: Vec<(String, Option<String>)>,
}

impl Flags {
    /// Splits `args`; `switches` are the flags that take no value.
    pub fn parse(args: &[String], switches: &[&str]) -> Result<Self> {
        let mut pairs = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let Some(name) = a.strip_prefix("--") else {
                return Err(Error::Usage(format!("expected a --flag, found {a:?}")));
            };
            if switches.contains(&name) {
                pairs.push((name.to_string(), None));
            } else {
                let v = it
                    .next()
                    .ok_or_else(|| Error::Usage(format!("--{name} needs a value")))?;
                pairs.push((name.to_string(), Some(v.clone())));
            }
        }
        Ok(Flags { pairs })
    }

    /// Fails on any flag not in `known`.
    pub fn only(&self, known: &[&str]) -> Result<()> {
        match self
            .pairs
            .iter()
            .find(|(n, _)| !known.contains(&n.as_str()))
        {
            Some((n, _)) => Err(Error::Usage(format!(
                "unknown flag --{n}; known: --{}",
                known.join(", --")
            ))),
            None => Ok(()),
        }
    }

    /// Whether a switch is present.
    pub fn has(&self, name: &str) -> bool {
        self.pairs.iter().any(|(n, _)| n == name)
    }

    /// The last value of `--name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.as_deref())
    }

    /// The value of `--name` parsed, or `default`.
    pub fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| Error::Usage(format!("--{name}: {v:?} is not a valid number"))),
        }
    }
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
