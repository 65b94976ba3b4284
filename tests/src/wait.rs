//! Waiting on a condition with a deadline, never a fixed sleep.

use std::time::{Duration, Instant};

/// Polls `check` until it returns `Some`, or fails after `timeout` with the last reason given.
pub fn until<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<Option<T>, String>,
) -> Result<T, String> {
    let deadline = Instant::now() + timeout;
    let mut last = String::from("no attempt finished");
    let mut pause = Duration::from_millis(20);
    loop {
        match check() {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last = e,
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "timed out after {timeout:?} waiting for {what}: {last}"
            ));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(250));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_first_success_and_reports_the_last_failure() {
        let mut n = 0;
        let v = until("three tries", Duration::from_secs(5), || {
            n += 1;
            Ok((n == 3).then_some(n))
        })
        .unwrap();
        assert_eq!(v, 3);
        let e = until::<()>("never", Duration::from_millis(50), || Err("nope".into())).unwrap_err();
        assert!(e.contains("never") && e.contains("nope"), "{e}");
    }
}
