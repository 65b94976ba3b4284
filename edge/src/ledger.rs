//! The credit ledger's rules: kinds of movement, promotion-code refusals, and how a hold settles.
//! Balance is the sum of the ledger; the Coordinator Durable Object applies these rules inside
//! one synchronous SQLite step, so no two requests interleave between a check and its write.

use crate::error::ApiError;
use serde::Serialize;

/// What a ledger row records. A hold subtracts the job's maximum cost; settling adds a
/// `release` of the whole hold and a `capture` of the real usage, so the ledger shows both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LedgerKind {
    Grant,
    Redeem,
    Hold,
    Capture,
    Release,
    Refund,
}

impl LedgerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LedgerKind::Grant => "grant",
            LedgerKind::Redeem => "redeem",
            LedgerKind::Hold => "hold",
            LedgerKind::Capture => "capture",
            LedgerKind::Release => "release",
            LedgerKind::Refund => "refund",
        }
    }
}

/// What the Coordinator knows about a code and this account when a redemption arrives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodeState {
    pub max_redemptions: i64,
    pub redeemed: i64,
    pub expires_at_ms: Option<i64>,
    pub already_by_account: bool,
}

/// Why a redemption is refused; each has its own error code so the page can say which.
pub fn check_redeem(state: Option<CodeState>, now_ms: i64) -> Result<(), ApiError> {
    let Some(s) = state else {
        return Err(ApiError::new(404, "code_unknown", "no such promotion code"));
    };
    if s.already_by_account {
        return Err(ApiError::new(
            409,
            "code_already_redeemed",
            "this account already redeemed this code",
        ));
    }
    if s.expires_at_ms.is_some_and(|e| now_ms >= e) {
        return Err(ApiError::new(
            410,
            "code_expired",
            "this promotion code has expired",
        ));
    }
    if s.redeemed >= s.max_redemptions {
        return Err(ApiError::new(
            409,
            "code_exhausted",
            "this promotion code has been fully redeemed",
        ));
    }
    Ok(())
}

/// The real cost of a finished job: card-time × price, rounded up to the fen, never above the hold.
pub fn capture_fen(hold_fen: i64, price_fen_per_hour: u64, cards: u32, elapsed_ms: i64) -> i64 {
    let seconds = u64::try_from(elapsed_ms.max(0)).unwrap_or(0).div_ceil(1000);
    let cost = jobspec::estimate::cost_fen(price_fen_per_hour, cards, seconds);
    i64::try_from(cost).unwrap_or(i64::MAX).min(hold_fen).max(0)
}

/// What a job that reached `state` pays: a job killed at its time limit ran for the whole limit
/// and pays the whole hold (its maximum cost, held for exactly that limit); any other job pays
/// its card time ([`capture_fen`]).
pub fn settle_fen(
    state: crate::jobs::JobState,
    hold_fen: i64,
    price_fen_per_hour: u64,
    cards: u32,
    elapsed_ms: i64,
) -> i64 {
    if state == crate::jobs::JobState::TimedOut {
        return hold_fen.max(0);
    }
    capture_fen(hold_fen, price_fen_per_hour, cards, elapsed_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn st(max: i64, redeemed: i64, exp: Option<i64>, already: bool) -> Option<CodeState> {
        Some(CodeState {
            max_redemptions: max,
            redeemed,
            expires_at_ms: exp,
            already_by_account: already,
        })
    }

    #[test]
    fn each_refusal_has_its_code() {
        assert!(check_redeem(st(2, 1, None, false), 0).is_ok());
        assert_eq!(check_redeem(None, 0).unwrap_err().code, "code_unknown");
        assert_eq!(
            check_redeem(st(2, 2, None, false), 0).unwrap_err().code,
            "code_exhausted"
        );
        assert_eq!(
            check_redeem(st(2, 0, Some(5), false), 5).unwrap_err().code,
            "code_expired"
        );
        assert_eq!(
            check_redeem(st(2, 0, None, true), 0).unwrap_err().code,
            "code_already_redeemed"
        );
    }

    #[test]
    fn capture_is_card_time_times_price_capped_by_the_hold() {
        // 1 card at 3600 fen/h for 10 s = 10 fen.
        assert_eq!(capture_fen(100, 3600, 1, 10_000), 10);
        // A partial second counts as a whole one.
        assert_eq!(capture_fen(100, 3600, 1, 9_001), 10);
        assert_eq!(capture_fen(5, 3600, 2, 3_600_000), 5);
        assert_eq!(capture_fen(5, 3600, 1, -10), 0);
    }

    #[test]
    fn a_timed_out_job_pays_to_its_limit() {
        use crate::jobs::JobState;
        // Clocks on two machines may make the run look a little shorter than the limit.
        assert_eq!(settle_fen(JobState::TimedOut, 50, 3600, 1, 49_000), 50);
        assert_eq!(settle_fen(JobState::Succeeded, 50, 3600, 1, 10_000), 10);
        assert_eq!(settle_fen(JobState::Cancelled, 50, 3600, 1, 0), 0);
    }

    proptest! {
        #[test]
        fn capture_never_exceeds_the_hold(hold in 0i64..1_000_000, price in 0u64..100_000, cards in 0u32..64, ms in any::<i64>()) {
            let c = capture_fen(hold, price, cards, ms);
            prop_assert!((0..=hold).contains(&c));
        }
    }
}
