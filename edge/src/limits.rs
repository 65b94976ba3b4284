//! Limits: the fixed rate window of a key, and the limits that do not trust a client's address:
//! the trial grant (once per verified account, and a global cap per hour so that many mailboxes
//! cannot farm it), and the login backoff keyed on email and client (failures from one client
//! never lock the owner out of another). Pure rules; the Coordinator objects apply them inside
//! one transaction each.

use crate::error::{ApiError, ErrorCode};
use crate::time::words_for_seconds;

/// The window of the trial cap.
pub const TRIAL_WINDOW_MS: i64 = 3600 * 1000;

/// The ledger reference of an account's trial grant: at most one row carries it.
pub fn trial_reference(user_id: &str) -> String {
    format!("trial:{user_id}")
}

/// The mailbox an address delivers to, as far as the trial is concerned: `+tags` cut
/// (`ada+1@…` and `ada+2@…` are one mailbox at most providers) and, at Gmail, dots ignored. One
/// trial per mailbox, so tags cannot farm it. Takes a normalised (lower-case) email.
pub fn trial_mailbox(email: &str) -> String {
    let (local, domain) = email.rsplit_once('@').unwrap_or((email, ""));
    let local = local.split('+').next().unwrap_or(local);
    match domain {
        "gmail.com" | "googlemail.com" => format!("{}@gmail.com", local.replace('.', "")),
        _ => format!("{local}@{domain}"),
    }
}

/// What the trials object knows when a verified account asks for its trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrialState {
    /// This account reserved its trial already (its grant, in the account's own object, is
    /// given at most once whatever this says).
    pub already_granted: bool,
    /// Another account with the same mailbox ([`trial_mailbox`]) has it.
    pub mailbox_taken: bool,
    /// Trial reservations of all accounts in the last hour.
    pub granted_in_window: i64,
    /// The oldest of those, epoch ms.
    pub oldest_in_window_ms: Option<i64>,
}

/// Whether to reserve the trial now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrialDecision {
    /// Reserved before (a replayed link, two tabs, a grant that stopped half-way): nothing is
    /// counted again, and the account's object grants only if it never did.
    Already,
    Grant,
}

/// Once per account; refused with the real wait while `cap_per_hour` grants were given in the
/// last hour (the email stays verified; opening the link again later gives the credit).
pub fn trial_decision(
    state: TrialState,
    cap_per_hour: i64,
    now_ms: i64,
) -> Result<TrialDecision, ApiError> {
    if state.already_granted {
        return Ok(TrialDecision::Already);
    }
    if state.mailbox_taken {
        return Err(ApiError::new(
            ErrorCode::TrialTaken,
            "your email is verified, but the trial credit of this mailbox went to another \
             account (an address of the same mailbox, e.g. with a +tag)",
        ));
    }
    if state.granted_in_window >= cap_per_hour {
        let oldest = state.oldest_in_window_ms.unwrap_or(now_ms);
        let retry = ((oldest + TRIAL_WINDOW_MS - now_ms + 999) / 1000).max(1);
        return Err(ApiError::new(
            ErrorCode::RateLimited,
            format!(
                "your email is verified, but the trial credit for new accounts is used up for \
                 this hour; open the link again in {} to receive it",
                words_for_seconds(retry)
            ),
        )
        .with_details(serde_json::json!({"retry_after_s": retry})));
    }
    Ok(TrialDecision::Grant)
}

/// Failures of one (email, client) that cost nothing; each one after them doubles the wait.
pub const FREE_LOGIN_FAILURES: i64 = 5;
/// The first wait after the free failures.
pub const FIRST_LOGIN_BACKOFF_S: i64 = 30;
/// The longest wait between two attempts of one (email, client).
pub const MAX_LOGIN_BACKOFF_S: i64 = 15 * 60;
/// A day without attempts forgets the failures.
pub const FORGET_LOGIN_FAILURES_MS: i64 = 24 * 3600 * 1000;

/// The wait after `failures` consecutive failures: none for the first few, then 30 s, 1 min,
/// 2 min… up to [`MAX_LOGIN_BACKOFF_S`].
pub fn login_backoff_s(failures: i64) -> i64 {
    if failures < FREE_LOGIN_FAILURES {
        return 0;
    }
    let doublings = (failures - FREE_LOGIN_FAILURES).min(20);
    (FIRST_LOGIN_BACKOFF_S << doublings).min(MAX_LOGIN_BACKOFF_S)
}

/// The login key of one email from one client (a normalised email has no spaces, so the first
/// space separates the two unambiguously).
pub fn login_key(email: &str, client: &str) -> String {
    format!("login:{email} {client}")
}

/// The login key of every browser that proves an earlier sign-in to `email`
/// (`crate::login_device`): of another form than any [`login_key`], whatever a client sends as
/// its address.
pub fn known_device_login_key(email: &str) -> String {
    format!("login-known:{email}")
}

/// Before a password is checked: given the stored `(attempts since the last success, time of
/// the last attempt)` of this email from this client, refuses while its backoff runs, else
/// counts this attempt as a failure until it succeeds (so parallel guesses cannot all slip
/// through one gap) and returns what to store.
pub fn login_attempt(stored: Option<(i64, i64)>, now_ms: i64) -> Result<(i64, i64), ApiError> {
    let failures = match stored {
        Some((f, last)) if now_ms - last < FORGET_LOGIN_FAILURES_MS => (f, last),
        _ => (0, now_ms),
    };
    let (failures, last) = failures;
    let wait_ms = login_backoff_s(failures) * 1000;
    if now_ms - last < wait_ms {
        let retry = ((last + wait_ms - now_ms + 999) / 1000).max(1);
        return Err(ApiError::new(
            ErrorCode::RateLimited,
            format!(
                "{failures} failed sign-ins for this email from this client; try again in {}",
                words_for_seconds(retry)
            ),
        )
        .with_details(serde_json::json!({"retry_after_s": retry})));
    }
    Ok((failures + 1, now_ms))
}

/// A fixed-window rate limit: given the stored `(window_start_ms, count)` for a key, counts one
/// more attempt and returns what to store, or refuses with the seconds left in the window.
pub fn rate_window(
    stored: Option<(i64, i64)>,
    limit: i64,
    window_s: i64,
    now_ms: i64,
) -> Result<(i64, i64), ApiError> {
    let window_ms = window_s.saturating_mul(1000);
    let (start, count) = match stored {
        Some((start, count)) if now_ms - start < window_ms => (start, count),
        _ => (now_ms, 0),
    };
    if count >= limit {
        let retry = ((start + window_ms - now_ms) / 1000).max(1);
        return Err(ApiError::new(
            ErrorCode::RateLimited,
            format!(
                "too many attempts; try again in {}",
                words_for_seconds(retry)
            ),
        )
        .with_details(serde_json::json!({"retry_after_s": retry})));
    }
    Ok((start, count + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_767_225_600_000;

    fn state(already: bool, n: i64, oldest: Option<i64>) -> TrialState {
        TrialState {
            already_granted: already,
            mailbox_taken: false,
            granted_in_window: n,
            oldest_in_window_ms: oldest,
        }
    }

    #[test]
    fn the_trial_is_given_once() {
        assert_eq!(
            trial_decision(state(false, 0, None), 100, NOW),
            Ok(TrialDecision::Grant)
        );
        // Granted before: nothing more, even when the cap is reached.
        assert_eq!(
            trial_decision(state(true, 100, Some(NOW)), 100, NOW),
            Ok(TrialDecision::Already)
        );
    }

    #[test]
    fn one_trial_per_mailbox() {
        assert_eq!(trial_mailbox("ada+lab1@example.cn"), "ada@example.cn");
        assert_eq!(trial_mailbox("ada@example.cn"), "ada@example.cn");
        assert_eq!(trial_mailbox("a.d.a+x@googlemail.com"), "ada@gmail.com");
        assert_eq!(trial_mailbox("a.da@example.cn"), "a.da@example.cn");
        assert_eq!(trial_mailbox("+x@example.cn"), "@example.cn");
        let taken = TrialState {
            mailbox_taken: true,
            ..state(false, 0, None)
        };
        let e = trial_decision(taken, 100, NOW).unwrap_err();
        assert_eq!((e.code, e.status), (ErrorCode::TrialTaken, 409));
        // The account that has it is answered as before.
        let mine = TrialState {
            mailbox_taken: true,
            ..state(true, 0, None)
        };
        assert_eq!(trial_decision(mine, 100, NOW), Ok(TrialDecision::Already));
    }

    #[test]
    fn the_cap_refuses_with_the_real_wait() {
        let oldest = NOW - 10 * 60 * 1000;
        let e = trial_decision(state(false, 100, Some(oldest)), 100, NOW).unwrap_err();
        assert_eq!(e.code, ErrorCode::RateLimited);
        assert_eq!(e.details["retry_after_s"], 50 * 60);
        assert!(e.message.contains("50 min"), "{}", e.message);
        assert_eq!(
            trial_decision(state(false, 99, Some(oldest)), 100, NOW),
            Ok(TrialDecision::Grant)
        );
        let e = trial_decision(state(false, 0, None), 0, NOW).unwrap_err();
        assert_eq!(e.details["retry_after_s"], 3600);
    }

    #[test]
    fn backoff_doubles_after_the_free_failures_up_to_a_ceiling() {
        let waits: Vec<i64> = (0..11).map(login_backoff_s).collect();
        assert_eq!(waits, [0, 0, 0, 0, 0, 30, 60, 120, 240, 480, 900]);
        assert_eq!(login_backoff_s(30), MAX_LOGIN_BACKOFF_S);
        assert_eq!(login_backoff_s(i64::MAX), MAX_LOGIN_BACKOFF_S);
    }

    #[test]
    fn attempts_count_until_the_backoff_refuses() {
        let mut stored = None;
        for i in 1..=FREE_LOGIN_FAILURES {
            stored = Some(login_attempt(stored, NOW).unwrap());
            assert_eq!(stored, Some((i, NOW)));
        }
        let e = login_attempt(stored, NOW + 200).unwrap_err();
        assert_eq!(e.code, ErrorCode::RateLimited);
        assert_eq!(e.details["retry_after_s"], 30);
        assert!(e.message.contains("try again in 30 s"), "{}", e.message);
        // After the wait, one more attempt; then the wait doubles.
        let stored = Some(login_attempt(stored, NOW + 30_000).unwrap());
        let e = login_attempt(stored, NOW + 30_000).unwrap_err();
        assert_eq!(e.details["retry_after_s"], 60);
        // A day later the failures are forgotten.
        let later = NOW + 30_000 + FORGET_LOGIN_FAILURES_MS;
        assert_eq!(login_attempt(stored, later), Ok((1, later)));
    }

    #[test]
    fn keys_separate_clients() {
        assert_ne!(
            login_key("ada@example.cn", "10.0.0.1"),
            login_key("ada@example.cn", "10.0.0.2")
        );
        // No address a client sends names the known browsers' key.
        for client in ["known-device", "", " ", "x login-known:ada@example.cn"] {
            assert_ne!(
                login_key("ada@example.cn", client),
                known_device_login_key("ada@example.cn")
            );
        }
        assert_eq!(trial_reference("u1"), "trial:u1");
    }

    #[test]
    fn the_rate_window_counts_refuses_and_reopens() {
        assert_eq!(rate_window(None, 2, 60, 1_000), Ok((1_000, 1)));
        assert_eq!(rate_window(Some((1_000, 1)), 2, 60, 2_000), Ok((1_000, 2)));
        let e = rate_window(Some((1_000, 2)), 2, 60, 31_000).unwrap_err();
        assert_eq!(e.code, ErrorCode::RateLimited);
        assert_eq!(e.details["retry_after_s"], 30);
        // Under a second left still says one second, never zero.
        let e = rate_window(Some((1_000, 2)), 2, 60, 60_900).unwrap_err();
        assert_eq!(e.details["retry_after_s"], 1);
        // A new window starts afresh.
        assert_eq!(
            rate_window(Some((1_000, 2)), 2, 60, 61_000),
            Ok((61_000, 1))
        );
    }
}
