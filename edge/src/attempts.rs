//! A job's attempts: the runs of one job that its cluster started again after stopping it (a
//! Slurm requeue, a preemption, a node that died). Each attempt's card time is billed, the
//! hold caps the sum, and each attempt's log follows the one before it in the job's log. The
//! rules here; the D1 side is `worker/attempts.rs`.

use crate::error::{ApiError, ErrorCode};
use serde::Deserialize;

/// The most attempts of one job the edge keeps (Slurm's own `MaxBatchRequeue` is 5 by default).
pub const MAX_ATTEMPT: u64 = 1000;

/// Refuses an attempt number past [`MAX_ATTEMPT`] (a job's report or log push names it).
pub fn check_attempt(attempt: u64) -> Result<u32, ApiError> {
    u32::try_from(attempt)
        .ok()
        .filter(|a| u64::from(*a) <= MAX_ATTEMPT)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidField,
                format!("attempt is at most {MAX_ATTEMPT} (got {attempt})"),
            )
            .with_details(serde_json::json!({"field": "attempt"}))
        })
}

/// One attempt as `job_attempts` keeps it (milliseconds on the backend's clock, or the edge's
/// when only the job said it started).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Attempt {
    pub attempt: u32,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
    /// Where its log begins in the job's stored log, once it pushed some.
    pub log_offset: Option<i64>,
    /// What it spent suspended by its cluster, once it ended (not billed).
    #[serde(default)]
    pub suspended_ms: i64,
}

/// How long a job's newest attempt has spent suspended by its cluster up to `at` (ms): the
/// suspensions that ended (`suspended_ms`) and the one going on since `since`, if any.
pub fn suspended_until(suspended_ms: i64, since: Option<i64>, at: i64) -> i64 {
    let now = since.map_or(0, |s| at.saturating_sub(s).max(0));
    suspended_ms.max(0).saturating_add(now)
}

/// The card time of the attempts before `last`, the one whose time the backend reports at the
/// end: each from its start to its end, less what it spent suspended, never negative. An attempt
/// whose start the edge never learnt (the backend ran and stopped it between two looks, and its
/// report never came) is not billed: nothing measured it.
pub fn earlier_ms(attempts: &[Attempt], last: u32) -> i64 {
    attempts
        .iter()
        .filter(|a| a.attempt < last)
        .filter_map(|a| {
            let (started, ended) = (a.started_at?, a.ended_at?);
            Some(crate::backends::adapter::Span::ran_ms(
                started,
                ended,
                a.suspended_ms,
            ))
        })
        .fold(0i64, i64::saturating_add)
}

/// When an attempt that started at `started` ended, as the edge records it on seeing a later
/// one: when the backend says it requeued the job, if that is after the attempt's start and not
/// in the future, else now (Slurm can show the new attempt's number a moment before it resets
/// `submit_time` to the requeue, leaving a time from before the attempt began). Never before it
/// started.
pub fn ended_ms(started: i64, requeued_at: Option<i64>, now: i64) -> i64 {
    requeued_at
        .filter(|t| *t > started && *t <= now)
        .unwrap_or(now)
        .max(started)
}

/// The time limit, in Slurm's whole minutes, of a job run again after its earlier attempts used
/// `earlier_ms` of its `time_limit_s`: what they left, rounded down so that all the attempts
/// together never run past the limit the hold was taken for; at least a minute (Slurm's least),
/// which the hold still caps.
pub fn minutes_left(time_limit_s: i64, earlier_ms: i64) -> u32 {
    let left_ms = time_limit_s
        .saturating_mul(1000)
        .saturating_sub(earlier_ms.max(0));
    u32::try_from((left_ms / 60_000).max(0))
        .unwrap_or(u32::MAX)
        .max(1)
}

/// Where an attempt's log chunk lands: an attempt's offsets count from its own start, and its
/// log goes after everything stored before it began. `None` when a newer attempt has begun its
/// log (a late chunk of one stopped: dropped, its place taken).
pub fn log_base(attempts: &[Attempt], attempt: u32) -> Option<i64> {
    if attempts
        .iter()
        .any(|a| a.attempt > attempt && a.log_offset.is_some())
    {
        return None;
    }
    attempts
        .iter()
        .find(|a| a.attempt == attempt)
        .and_then(|a| a.log_offset)
        // The first attempt's log starts the job's, with no row needed.
        .or((attempt == 0).then_some(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suspension_counts_until_it_ends_or_until_now() {
        assert_eq!(suspended_until(0, None, 50_000), 0);
        assert_eq!(suspended_until(7_000, None, 50_000), 7_000);
        assert_eq!(suspended_until(7_000, Some(40_000), 50_000), 17_000);
        // A clock behind the suspension's start adds nothing; nonsense never goes below zero.
        assert_eq!(suspended_until(7_000, Some(60_000), 50_000), 7_000);
        assert_eq!(suspended_until(-5, Some(i64::MIN), i64::MAX), i64::MAX);
    }

    fn a(attempt: u32, started: Option<i64>, ended: Option<i64>, log: Option<i64>) -> Attempt {
        Attempt {
            attempt,
            started_at: started,
            ended_at: ended,
            log_offset: log,
            suspended_ms: 0,
        }
    }

    #[test]
    fn every_earlier_attempt_that_ran_is_billed() {
        let list = [
            a(0, Some(1_000), Some(61_000), Some(0)),
            a(1, None, Some(90_000), None),
            a(2, Some(100_000), Some(99_000), Some(500)),
            a(3, Some(200_000), None, Some(900)),
        ];
        // 60 s of attempt 0; attempt 1 never seen running; attempt 2 ends before it starts (a
        // clock step): nothing; the last attempt is billed by the backend's own times.
        assert_eq!(earlier_ms(&list, 3), 60_000);
        assert_eq!(earlier_ms(&list, 0), 0);
        assert_eq!(earlier_ms(&[], 5), 0);
        // Attempt 0 spent 20 s of its minute suspended: 40 s of card time; never below none.
        let mut list = list;
        list[0].suspended_ms = 20_000;
        assert_eq!(earlier_ms(&list, 3), 40_000);
        list[0].suspended_ms = 90_000;
        assert_eq!(earlier_ms(&list, 3), 0);
    }

    #[test]
    fn an_attempt_ends_at_its_requeue_only_when_that_follows_its_start() {
        assert_eq!(ended_ms(1_000, Some(61_000), 70_000), 61_000);
        // A requeue time from before the attempt began (Slurm's submit time not yet reset), or
        // equal to its start: the edge's own clock, now.
        assert_eq!(ended_ms(5_000, Some(4_000), 70_000), 70_000);
        assert_eq!(ended_ms(5_000, Some(5_000), 70_000), 70_000);
        assert_eq!(ended_ms(5_000, None, 70_000), 70_000);
        // One in the future is not believed either; and never an end before the start.
        assert_eq!(ended_ms(5_000, Some(90_000), 70_000), 70_000);
        assert_eq!(ended_ms(80_000, None, 70_000), 80_000);
    }

    #[test]
    fn a_job_run_again_gets_what_its_earlier_attempts_left_of_its_limit() {
        // 20 minutes, 30 s used: 19 whole minutes left (19.5 rounded down).
        assert_eq!(minutes_left(1200, 30_000), 19);
        assert_eq!(minutes_left(1200, 0), 20);
        // All used, or more (the clocks): Slurm's least, a minute.
        assert_eq!(minutes_left(1200, 1_200_000), 1);
        assert_eq!(minutes_left(1200, 5_000_000), 1);
        assert_eq!(minutes_left(60 * 60 * 24 * 7, -5), 7 * 24 * 60);
    }

    #[test]
    fn an_attempts_log_follows_the_one_before_and_a_late_chunk_is_dropped() {
        let list = [
            a(0, Some(0), Some(1), Some(0)),
            a(1, Some(2), None, Some(700)),
        ];
        assert_eq!(log_base(&list, 1), Some(700));
        assert_eq!(log_base(&list, 0), None);
        assert_eq!(log_base(&list, 2), None);
        assert_eq!(log_base(&[a(0, None, None, Some(0))], 0), Some(0));
        // The first attempt's row, made when it started, has no offset: its log starts at 0.
        assert_eq!(log_base(&[a(0, Some(5), None, None)], 0), Some(0));
        assert_eq!(log_base(&[], 0), Some(0));
        assert_eq!(log_base(&[a(1, None, None, None)], 1), None);
    }
}
