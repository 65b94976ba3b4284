//! The job page's polling decisions, kept pure so they are tested natively: how long to wait
//! before asking again (and when to stop), how metric pages and log chunks accumulate, and
//! which Idempotency-Key a submission uses.

use crate::api_wire::{JobAttempt, JobState, LogChunk, MetricPoint, MetricsPage};

/// Milliseconds until the next poll, or `None` to stop: a finished job changes no more. Failed
/// polls back off (1 s, 2 s, 4 s … at most 15 s) so a struggling edge is not hammered.
pub fn next_delay_ms(state: Option<JobState>, failures: u32) -> Option<u32> {
    if state.is_some_and(JobState::is_terminal) {
        return None;
    }
    let base: u32 = match state {
        Some(JobState::Running) => 1000,
        _ => 2000,
    };
    Some(base.saturating_mul(1u32 << failures.min(4)).min(15_000))
}

/// The loss curve's points so far and where the next `?since=` starts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricSeries {
    pub points: Vec<MetricPoint>,
    pub since: u64,
}

impl MetricSeries {
    /// Adds a page; points already seen (a repeated or overlapping answer) are not added twice,
    /// and the last step seen is taken again as the edge now has it: the edge may still add that
    /// step's validation loss (the trainer sends the step's line again once it has evaluated),
    /// so the next poll asks from that step on. True when something new arrived.
    pub fn absorb(&mut self, page: MetricsPage) -> bool {
        let mut changed = false;
        for p in page.metrics {
            match self.points.last_mut() {
                Some(last) if p.step < last.step => {}
                Some(last) if p.step == last.step => {
                    if *last != p {
                        *last = p;
                        changed = true;
                    }
                }
                _ => {
                    self.points.push(p);
                    changed = true;
                }
            }
        }
        self.since = match self.points.last() {
            Some(last) => last.step,
            None => self.since.max(page.next_since),
        };
        changed
    }
}

/// The end of a job's log as far as it has been read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogTail {
    pub text: String,
    pub offset: u64,
    pub eof: bool,
    /// True once the start of the log was dropped to stay under the cap.
    pub truncated: bool,
}

/// The most log text the page keeps (the tail is what matters while a job runs).
pub const LOG_CAP_BYTES: usize = 64 * 1024;

impl LogTail {
    /// Appends a chunk read from `offset`; a chunk for another offset (a stale answer) is
    /// ignored. True when text was added.
    pub fn absorb(&mut self, chunk: LogChunk) -> bool {
        if chunk.offset != self.offset || chunk.next_offset < self.offset {
            return false;
        }
        self.offset = chunk.next_offset;
        self.eof = chunk.eof;
        if chunk.text.is_empty() {
            return false;
        }
        self.text.push_str(&chunk.text);
        if self.text.len() > LOG_CAP_BYTES {
            let mut cut = self.text.len() - LOG_CAP_BYTES;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            // Start at a whole line when there is one.
            if let Some(nl) = self.text[cut..].find('\n') {
                cut += nl + 1;
            }
            self.text.drain(..cut);
            self.truncated = true;
        }
        true
    }
}

/// The log text as read so far (`text`, which ends at offset `end`) cut where each attempt after
/// the first begins, for a job its cluster ran again: every piece with the attempt that begins
/// there (none for the text before the first such start).
pub fn log_by_attempt(text: &str, end: u64, attempts: &[JobAttempt]) -> Vec<(Option<u32>, String)> {
    let start = end.saturating_sub(text.len() as u64);
    let mut marks: Vec<(usize, u32)> = attempts
        .iter()
        .filter(|a| a.attempt > 0)
        .filter_map(|a| {
            let at = a.log_offset.filter(|o| (start..=end).contains(o))?;
            let mut at = usize::try_from(at - start).ok()?;
            while !text.is_char_boundary(at) {
                at += 1;
            }
            Some((at, a.attempt))
        })
        .collect();
    marks.sort_unstable();
    let mut pieces = vec![(None, String::new())];
    let mut from = 0;
    for (at, attempt) in marks {
        if let Some(last) = pieces.last_mut() {
            last.1 = text[from..at].to_string();
        }
        pieces.push((Some(attempt), String::new()));
        from = at;
    }
    if let Some(last) = pieces.last_mut() {
        last.1 = text[from..].to_string();
    }
    pieces.retain(|(mark, piece)| mark.is_some() || !piece.is_empty());
    pieces
}

/// The Idempotency-Key of one submission: the same spec sent again (a double click, a retry
/// after a network error) reuses its key, so the edge answers with the job it already made;
/// another spec gets a fresh key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    pub spec: String,
    pub key: String,
}

impl Submission {
    /// The submission for `spec`: the pending one when it sends the same text, else a new one.
    pub fn for_spec(
        pending: Option<&Submission>,
        spec: &str,
        fresh_key: impl FnOnce() -> String,
    ) -> Submission {
        match pending {
            Some(p) if p.spec == spec => p.clone(),
            _ => Submission {
                spec: spec.to_string(),
                key: fresh_key(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(step: u64) -> MetricPoint {
        MetricPoint {
            step,
            loss: 3.0,
            val_loss: None,
            lr: None,
            tokens_per_s: None,
            elapsed_s: 0.0,
            grad_norm: None,
            epoch: None,
            peak_mem_bytes: None,
        }
    }

    #[test]
    fn the_log_is_cut_where_each_attempt_begins() {
        let attempt = |attempt: u32, log_offset: Option<u64>| JobAttempt {
            attempt,
            started_at: None,
            ended_at: None,
            log_offset,
        };
        let text = "step 1\nstep 2\nresuming\nstep 3\n";
        let attempts = [attempt(0, Some(0)), attempt(1, Some(14)), attempt(2, None)];
        assert_eq!(
            log_by_attempt(text, text.len() as u64, &attempts),
            vec![
                (None, "step 1\nstep 2\n".to_string()),
                (Some(1), "resuming\nstep 3\n".to_string())
            ]
        );
        // The page kept only the log's end (it started at 10): the mark is still in its place.
        assert_eq!(
            log_by_attempt(&text[10..], 10 + text[10..].len() as u64, &attempts),
            vec![
                (None, "p 2\n".to_string()),
                (Some(1), "resuming\nstep 3\n".to_string())
            ]
        );
        // An attempt that has begun but printed nothing yet is shown at the end; a start before
        // the text kept is not shown.
        let at_end = [attempt(1, Some(33)), attempt(2, Some(3))];
        assert_eq!(
            log_by_attempt(&text[10..], 33, &at_end),
            vec![(None, text[10..].to_string()), (Some(1), String::new())]
        );
        assert_eq!(log_by_attempt("", 0, &[]), Vec::new());
    }

    #[test]
    fn polls_while_the_job_lives_and_stops_when_it_ends() {
        assert_eq!(next_delay_ms(None, 0), Some(2000));
        assert_eq!(next_delay_ms(Some(JobState::Queued), 0), Some(2000));
        assert_eq!(next_delay_ms(Some(JobState::Dispatching), 0), Some(2000));
        assert_eq!(next_delay_ms(Some(JobState::Running), 0), Some(1000));
        assert_eq!(next_delay_ms(Some(JobState::Running), 2), Some(4000));
        assert_eq!(next_delay_ms(Some(JobState::Running), 40), Some(15_000));
        for s in [
            JobState::Succeeded,
            JobState::Failed,
            JobState::Cancelled,
            JobState::TimedOut,
            JobState::Lost,
        ] {
            assert_eq!(next_delay_ms(Some(s), 0), None, "{s:?}");
        }
    }

    #[test]
    fn metric_pages_accumulate_without_repeats() {
        let page = |steps: &[u64], next| MetricsPage {
            job_id: "j".into(),
            state: JobState::Running,
            metrics: steps.iter().map(|s| point(*s)).collect(),
            next_since: next,
        };
        let mut m = MetricSeries::default();
        assert!(!m.absorb(page(&[], 0)));
        assert_eq!(m.since, 0);
        assert!(m.absorb(page(&[1, 2, 3], 4)));
        // The last step is asked for again: its validation loss may still come.
        assert_eq!(m.since, 3);
        // The same page again (a retried request) adds nothing.
        assert!(!m.absorb(page(&[1, 2, 3], 4)));
        assert!(m.absorb(page(&[3, 4, 5], 6)));
        let steps: Vec<u64> = m.points.iter().map(|p| p.step).collect();
        assert_eq!(steps, vec![1, 2, 3, 4, 5]);
        assert_eq!(m.since, 5);
        // An empty page keeps where we are.
        assert!(!m.absorb(page(&[], 6)));
        assert_eq!(m.since, 5);
    }

    /// The job page read step 5 before the trainer had evaluated it; the edge then added the
    /// step's validation loss, and the next poll (from step 5) brings it: the eval curve never
    /// misses a point to the poll's timing.
    #[test]
    fn a_validation_loss_added_to_the_last_step_seen_arrives() {
        let page = |points: Vec<MetricPoint>| MetricsPage {
            job_id: "j".into(),
            state: JobState::Running,
            next_since: points.last().map_or(0, |p| p.step + 1),
            metrics: points,
        };
        let mut m = MetricSeries::default();
        assert!(m.absorb(page(vec![point(4), point(5)])));
        let evaluated = MetricPoint {
            val_loss: Some(2.5),
            ..point(5)
        };
        assert!(m.absorb(page(vec![evaluated.clone(), point(6)])));
        assert_eq!(m.points[1], evaluated);
        assert_eq!(m.points.len(), 3);
        // An answer that repeats an older step changes nothing.
        assert!(!m.absorb(page(vec![point(5), point(6)])));
        assert_eq!(m.points[1], evaluated);
    }

    #[test]
    fn logs_follow_offsets_and_keep_the_tail() {
        let chunk = |offset, text: &str| LogChunk {
            offset,
            next_offset: offset + text.len() as u64,
            text: text.into(),
            eof: false,
        };
        let mut t = LogTail::default();
        assert!(t.absorb(chunk(0, "step 1\n")));
        assert_eq!(t.offset, 7);
        // A late answer for an old offset is dropped.
        assert!(!t.absorb(chunk(0, "step 1\n")));
        assert!(t.absorb(chunk(7, "step 2\n")));
        assert_eq!(t.text, "step 1\nstep 2\n");
        let big = "x".repeat(100) + "\n";
        for _ in 0..1000 {
            let at = t.offset;
            t.absorb(chunk(at, &big));
        }
        assert!(t.text.len() <= LOG_CAP_BYTES && t.truncated);
        assert!(t.text.starts_with('x') && t.text.ends_with('\n'));
    }

    #[test]
    fn a_retry_of_the_same_spec_reuses_its_key() {
        let mut n = 0;
        let mut fresh = || {
            n += 1;
            format!("k{n}")
        };
        let first = Submission::for_spec(None, "name = 'a'", &mut fresh);
        let again = Submission::for_spec(Some(&first), "name = 'a'", &mut fresh);
        assert_eq!(again.key, first.key);
        let other = Submission::for_spec(Some(&first), "name = 'b'", &mut fresh);
        assert_ne!(other.key, first.key);
    }
}
