//! Refunds (`POST /api/admin/refunds`): an operator gives back credit for a job that the platform
//! failed (a lost run, a node failure after the job was billed). A refund is bounded by what was
//! captured for that job, minus what was already refunded, and is applied once per idempotency
//! key; the job owner's account object applies these rules in one synchronous step.

use crate::error::{ApiError, ErrorCode};

/// The request body (the wire type).
pub use api::RefundRequest;

/// A checked request.
#[derive(Debug, Clone, PartialEq)]
pub struct Refund {
    pub job_id: String,
    pub amount_fen: i64,
    pub reason: String,
}

/// Longest reason kept, in characters (api's, which the API's document declares).
pub use api::credits::MAX_REASON_CHARS;

impl crate::wire::Check for RefundRequest {
    type Checked = Refund;

    fn check(self) -> Result<Refund, ApiError> {
        let field = |f: &str, msg: String| {
            ApiError::new(ErrorCode::InvalidField, msg)
                .with_details(serde_json::json!({"field": f}))
        };
        crate::wire::check_id(&self.job_id).map_err(|_| {
            field(
                "job_id",
                format!("job_id {:?} is not a job id", self.job_id),
            )
        })?;
        let most = api::credits::MAX_AMOUNT_FEN;
        if !(1..=most).contains(&self.amount_fen) {
            return Err(field(
                "amount_fen",
                format!("amount_fen must be 1..={most}, got {}", self.amount_fen),
            ));
        }
        let reason = self.reason.trim().to_string();
        if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
            return Err(field(
                "reason",
                format!("reason must be 1..={MAX_REASON_CHARS} characters (it is shown in audits)"),
            ));
        }
        Ok(Refund {
            job_id: self.job_id,
            amount_fen: self.amount_fen,
            reason,
        })
    }
}

/// The job's hold as its owner's account object has it: whether it settled and what was captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    pub settled: bool,
    pub captured_fen: i64,
}

/// A refund already made under an idempotency key, as the account's object keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierRefund {
    pub job_id: String,
    pub amount_fen: i64,
    pub reason: String,
}

/// What a refund request does given the refund kept under its key, if any: a new refund
/// (`Ok(false)`), the same one again, answered as it was and moving nothing (`Ok(true)`), or a
/// different one under a used key, refused.
pub fn refund_replay(earlier: Option<&EarlierRefund>, asked: &Refund) -> Result<bool, ApiError> {
    let Some(e) = earlier else {
        return Ok(false);
    };
    if e.job_id != asked.job_id || e.amount_fen != asked.amount_fen || e.reason != asked.reason {
        return Err(ApiError::new(
            ErrorCode::IdempotencyConflict,
            "this Idempotency-Key was used for a different refund",
        )
        .with_details(serde_json::json!({"job_id": e.job_id, "amount_fen": e.amount_fen})));
    }
    Ok(true)
}

/// Whether `amount` can be refunded for a job whose hold is `hold` and that already had
/// `refunded` fen back. Each refusal has its own code; none moves any money.
pub fn check_refund(hold: Option<Settled>, refunded: i64, amount: i64) -> Result<(), ApiError> {
    let Some(h) = hold else {
        return Err(ApiError::new(
            ErrorCode::NothingCaptured,
            "this job never held credit, so there is nothing to refund",
        ));
    };
    if !h.settled {
        return Err(ApiError::new(
            ErrorCode::NotSettled,
            "this job has not settled yet: refunds apply to what was captured once it ends",
        ));
    }
    let refundable = (h.captured_fen - refunded).max(0);
    if amount > refundable {
        return Err(ApiError::new(ErrorCode::RefundExceedsCapture,
            format!(
                "at most {refundable} fen can be refunded for this job ({} captured, {refunded} already refunded); asked {amount}",
                h.captured_fen
            ),
        )
        .with_details(serde_json::json!({
            "captured_fen": h.captured_fen, "refunded_fen": refunded, "refundable_fen": refundable
        })));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Check;

    fn req(job: &str, amount: i64, reason: &str) -> RefundRequest {
        RefundRequest {
            job_id: job.into(),
            amount_fen: amount,
            reason: reason.into(),
        }
    }

    #[test]
    fn checks_each_field() {
        let ok = req("0123abcd", 5, "  node failed  ").check().unwrap();
        assert_eq!(ok.reason, "node failed");
        for (r, field) in [
            (req("../x", 5, "r"), "job_id"),
            (req("abc", 0, "r"), "amount_fen"),
            (req("abc", -3, "r"), "amount_fen"),
            (req("abc", 5, "   "), "reason"),
            (req("abc", 5, &"x".repeat(501)), "reason"),
        ] {
            let e = r.check().unwrap_err();
            assert_eq!((e.status, e.details["field"].as_str()), (400, Some(field)));
        }
    }

    #[test]
    fn a_key_is_one_refund() {
        let asked = Refund {
            job_id: "j1".into(),
            amount_fen: 5,
            reason: "node failed".into(),
        };
        assert_eq!(refund_replay(None, &asked), Ok(false));
        let same = EarlierRefund {
            job_id: "j1".into(),
            amount_fen: 5,
            reason: "node failed".into(),
        };
        assert_eq!(refund_replay(Some(&same), &asked), Ok(true));
        for other in [
            EarlierRefund {
                amount_fen: 6,
                ..same.clone()
            },
            EarlierRefund {
                job_id: "j2".into(),
                ..same.clone()
            },
            EarlierRefund {
                reason: "other".into(),
                ..same.clone()
            },
        ] {
            let e = refund_replay(Some(&other), &asked).unwrap_err();
            assert_eq!((e.status, e.code), (409, ErrorCode::IdempotencyConflict));
        }
    }

    #[test]
    fn bounded_by_what_was_captured() {
        let h = Some(Settled {
            settled: true,
            captured_fen: 100,
        });
        assert!(check_refund(h, 0, 100).is_ok());
        assert!(check_refund(h, 60, 40).is_ok());
        let e = check_refund(h, 60, 41).unwrap_err();
        assert_eq!((e.status, e.code), (409, ErrorCode::RefundExceedsCapture));
        assert_eq!(e.details["refundable_fen"], 40);
        let open = Some(Settled {
            settled: false,
            captured_fen: 0,
        });
        assert_eq!(
            check_refund(open, 0, 1).unwrap_err().code,
            ErrorCode::NotSettled
        );
        assert_eq!(
            check_refund(None, 0, 1).unwrap_err().code,
            ErrorCode::NothingCaptured
        );
    }
}
