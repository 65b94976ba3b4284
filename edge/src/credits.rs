//! The rules of credits and their ledger: kinds of movement, promotion-code claims and refusals,
//! the answer of a redemption that crosses two objects, the hold check, how a hold settles and
//! what a job pays. Balance is the sum of the ledger; the Coordinator Durable Objects apply these
//! rules inside one synchronous SQLite step each, so no two requests to one object interleave
//! between a check and its write.

use crate::error::{ApiError, ErrorCode};

/// What a ledger row records (the wire type, also the stored spelling).
pub use api::LedgerKind;

/// What a code's object knows about the code when a redemption arrives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodeState {
    pub amount_fen: i64,
    pub max_redemptions: i64,
    pub redeemed: i64,
    pub expires_at_ms: Option<i64>,
}

/// An account's earlier claim of a code, as the code's object keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub redemption_id: String,
    pub amount_fen: i64,
}

/// What the code's object does with a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimDecision {
    /// The account's first claim: count it under this id, for this amount.
    New(Claim),
    /// The account claimed the code before: answer that claim again and count nothing, so that
    /// a redemption whose credit never reached the account's object completes on a retry.
    Again(Claim),
}

/// The code's object is the one source of truth for "this account redeemed this code": its claim
/// row. An earlier claim is answered whatever the code's state is now (it may have expired or
/// run out since, and the retry must still complete); a new one passes [`check_redeem`].
pub fn claim_code(
    state: Option<CodeState>,
    earlier: Option<Claim>,
    redemption_id: &str,
    now_ms: i64,
) -> Result<ClaimDecision, ApiError> {
    if let Some(claim) = earlier {
        return Ok(ClaimDecision::Again(claim));
    }
    let s = check_redeem(state, now_ms)?;
    Ok(ClaimDecision::New(Claim {
        redemption_id: redemption_id.to_string(),
        amount_fen: s.amount_fen,
    }))
}

/// What the account's object does with a claim's credit: the ledger row is written once per
/// redemption id, however many times the credit is asked for.
pub fn credit_once(already_credited: bool) -> bool {
    !already_credited
}

/// The redemption's answer to the user, once the account's object has answered the credit:
/// success for exactly the request whose credit wrote the row, so of many parallel requests by
/// one account one succeeds and the others hear that the code was redeemed already.
pub fn redeem_answer(
    claim: &Claim,
    applied: bool,
    balance_fen: i64,
) -> Result<api::Redeemed, ApiError> {
    if !applied {
        return Err(ApiError::new(
            ErrorCode::CodeAlreadyRedeemed,
            "this account already redeemed this code",
        ));
    }
    Ok(api::Redeemed {
        amount_fen: claim.amount_fen,
        balance_fen,
    })
}

/// Whether a code's sweep credits a claim made at `created_ms`: only once its own request had
/// `grace_ms` to do it, so the sweep does not race every redemption's second half.
pub fn claim_due(created_ms: i64, now_ms: i64, grace_ms: i64) -> bool {
    now_ms.saturating_sub(created_ms) >= grace_ms
}

/// Why a new redemption is refused; each has its own error code so the page can say which.
pub fn check_redeem(state: Option<CodeState>, now_ms: i64) -> Result<CodeState, ApiError> {
    let Some(s) = state else {
        return Err(ApiError::new(
            ErrorCode::CodeUnknown,
            "no such promotion code",
        ));
    };
    if s.expires_at_ms.is_some_and(|e| now_ms >= e) {
        return Err(ApiError::new(
            ErrorCode::CodeExpired,
            "this promotion code has expired",
        ));
    }
    if s.redeemed >= s.max_redemptions {
        return Err(ApiError::new(
            ErrorCode::CodeExhausted,
            "this promotion code has been fully redeemed",
        ));
    }
    Ok(s)
}

/// A hold may be placed only when the balance covers it (balance never goes negative).
pub fn check_hold(balance_fen: i64, amount_fen: i64) -> Result<(), ApiError> {
    if balance_fen < amount_fen {
        return Err(ApiError::new(
            ErrorCode::InsufficientCredit,
            format!("this job may cost up to {amount_fen} fen; the balance is {balance_fen} fen"),
        )
        .with_details(
            serde_json::json!({"required_fen": amount_fen, "balance_fen": balance_fen}),
        ));
    }
    Ok(())
}

/// A job's hold as its owner's account object stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldState {
    pub amount_fen: i64,
    pub settled: bool,
    pub captured_fen: Option<i64>,
}

/// What settling a hold does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// Settled before (a report and a reconcile racing): nothing changes the second time.
    Already { captured_fen: i64 },
    /// Release the whole hold and capture this much of it.
    Capture { capture_fen: i64 },
}

/// Settling is idempotent, and never captures less than nothing or more than was held.
pub fn settle_hold(hold: HoldState, capture_fen: i64) -> Settlement {
    if hold.settled {
        return Settlement::Already {
            captured_fen: hold.captured_fen.unwrap_or(0),
        };
    }
    Settlement::Capture {
        capture_fen: capture_fen.clamp(0, hold.amount_fen.max(0)),
    }
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

    fn st(max: i64, redeemed: i64, exp: Option<i64>) -> Option<CodeState> {
        Some(CodeState {
            amount_fen: 300,
            max_redemptions: max,
            redeemed,
            expires_at_ms: exp,
        })
    }

    #[test]
    fn each_refusal_has_its_code() {
        assert!(check_redeem(st(2, 1, None), 0).is_ok());
        assert_eq!(
            check_redeem(None, 0).unwrap_err().code,
            ErrorCode::CodeUnknown
        );
        assert_eq!(
            check_redeem(st(2, 2, None), 0).unwrap_err().code,
            ErrorCode::CodeExhausted
        );
        assert_eq!(
            check_redeem(st(2, 0, Some(5)), 5).unwrap_err().code,
            ErrorCode::CodeExpired
        );
    }

    fn claim(id: &str) -> Claim {
        Claim {
            redemption_id: id.into(),
            amount_fen: 300,
        }
    }

    #[test]
    fn a_first_claim_is_checked_and_takes_the_new_id() {
        assert_eq!(
            claim_code(st(2, 1, None), None, "r1", 0),
            Ok(ClaimDecision::New(claim("r1")))
        );
        let e = claim_code(st(2, 2, None), None, "r1", 0).unwrap_err();
        assert_eq!(e.code, ErrorCode::CodeExhausted);
        let e = claim_code(None, None, "r1", 0).unwrap_err();
        assert_eq!(e.code, ErrorCode::CodeUnknown);
    }

    #[test]
    fn a_second_claim_answers_the_first_even_after_the_code_ran_out() {
        // The retry of a redemption whose credit was lost keeps the first id, so the account's
        // object credits it once; the code's state since then does not matter.
        for state in [st(2, 1, None), st(1, 1, None), st(2, 0, Some(5)), None] {
            assert_eq!(
                claim_code(state, Some(claim("r1")), "r2", 10),
                Ok(ClaimDecision::Again(claim("r1"))),
                "{state:?}"
            );
        }
    }

    #[test]
    fn the_sweep_waits_for_the_request() {
        assert!(!claim_due(1_000, 1_500, 1_000));
        assert!(claim_due(1_000, 2_000, 1_000));
        // A clock that went back leaves the claim to later.
        assert!(!claim_due(5_000, 1_000, 1_000));
    }

    #[test]
    fn only_the_request_that_credited_succeeds() {
        assert!(credit_once(false));
        assert!(!credit_once(true));
        let ok = redeem_answer(&claim("r1"), true, 1300).unwrap();
        assert_eq!((ok.amount_fen, ok.balance_fen), (300, 1300));
        let e = redeem_answer(&claim("r1"), false, 1300).unwrap_err();
        assert_eq!((e.status, e.code), (409, ErrorCode::CodeAlreadyRedeemed));
    }

    #[test]
    fn a_hold_needs_the_balance() {
        assert!(check_hold(100, 100).is_ok());
        let e = check_hold(99, 100).unwrap_err();
        assert_eq!((e.status, e.code), (402, ErrorCode::InsufficientCredit));
        assert_eq!(e.details["required_fen"], 100);
        assert_eq!(e.details["balance_fen"], 99);
    }

    #[test]
    fn settling_twice_changes_nothing_and_capture_stays_in_the_hold() {
        let open = HoldState {
            amount_fen: 50,
            settled: false,
            captured_fen: None,
        };
        assert_eq!(
            settle_hold(open, 20),
            Settlement::Capture { capture_fen: 20 }
        );
        assert_eq!(
            settle_hold(open, 80),
            Settlement::Capture { capture_fen: 50 }
        );
        assert_eq!(
            settle_hold(open, -5),
            Settlement::Capture { capture_fen: 0 }
        );
        let done = HoldState {
            settled: true,
            captured_fen: Some(20),
            ..open
        };
        assert_eq!(
            settle_hold(done, 50),
            Settlement::Already { captured_fen: 20 }
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
