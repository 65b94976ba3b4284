//! A submitted job's state: one definition for the edge, the runner and the app, spelled on the
//! wire and in records as `dispatching`, `queued`, `running`, `requeued`, `succeeded`, `failed`,
//! `cancelled`, `timed_out`, `lost`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Held and sent to its backend, which has not confirmed it yet (or whose answer never came):
    /// the edge asks the backend by the job's id until it knows whether the job runs there.
    Dispatching,
    Queued,
    Running,
    /// Stopped by its cluster (a requeue, a preemption, a node that died) and waiting to run
    /// again from its last checkpoint: live, and billed for every attempt that ran.
    Requeued,
    Succeeded,
    Failed,
    Cancelled,
    TimedOut,
    /// The backend stopped or died while the job was queued or running.
    Lost,
}

impl JobState {
    /// Every state, in lifecycle order.
    pub const ALL: [JobState; 9] = [
        JobState::Dispatching,
        JobState::Queued,
        JobState::Running,
        JobState::Requeued,
        JobState::Succeeded,
        JobState::Failed,
        JobState::Cancelled,
        JobState::TimedOut,
        JobState::Lost,
    ];

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Dispatching => "dispatching",
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Requeued => "requeued",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
            JobState::TimedOut => "timed_out",
            JobState::Lost => "lost",
        }
    }

    /// The state spelled `s` on the wire, if any.
    pub fn parse(s: &str) -> Option<JobState> {
        JobState::ALL.into_iter().find(|j| j.as_str() == s)
    }

    /// Whether the job has ended (anything but dispatching, queued, running or requeued).
    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            JobState::Dispatching | JobState::Queued | JobState::Running | JobState::Requeued
        )
    }

    /// The live states, as SQL spells a list of them: `'dispatching', 'queued', …`.
    pub const LIVE_SQL: &'static str = "'dispatching', 'queued', 'running', 'requeued'";

    /// A terminal state is final: late or repeated reports cannot reopen or relabel a job. A job
    /// that ran never goes back to the queue (a requeue is `requeued`), and one waiting to run
    /// again is not newly queued.
    pub fn can_become(self, next: JobState) -> bool {
        !self.is_terminal()
            && self != next
            && next != JobState::Dispatching
            && !(matches!(self, JobState::Running | JobState::Requeued) && next == JobState::Queued)
    }

    /// The states a job may be in for `next` to be recorded (`next` itself included, so a repeat
    /// refreshes what comes with it), as a SQL list.
    pub fn sources_sql(next: JobState) -> String {
        JobState::ALL
            .into_iter()
            .filter(|s| *s == next && !s.is_terminal() || s.can_become(next))
            .map(|s| format!("'{}'", s.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_spelling_is_serdes_and_parses_back() {
        for s in JobState::ALL {
            let json = serde_json::to_string(&s).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(JobState::parse(s.as_str()), Some(s));
        }
        assert_eq!(JobState::parse("done"), None);
    }

    #[test]
    fn only_live_jobs_move_and_never_back_to_the_queue() {
        use JobState::*;
        assert!(Queued.can_become(Running) && Running.can_become(TimedOut));
        assert!(!Running.can_become(Queued) && !Running.can_become(Running));
        assert!(Dispatching.can_become(Queued) && Dispatching.can_become(Running));
        assert!(Dispatching.can_become(Failed) && !Dispatching.is_terminal());
        assert!(!Queued.can_become(Dispatching) && !Running.can_become(Dispatching));
        // A requeue: running → requeued → running, never back to queued.
        assert!(Running.can_become(Requeued) && Requeued.can_become(Running));
        assert!(Queued.can_become(Requeued) && !Requeued.can_become(Queued));
        assert!(Requeued.can_become(Failed) && !Requeued.is_terminal());
        assert_eq!(
            JobState::sources_sql(Queued),
            "'dispatching', 'queued'".to_string()
        );
        assert_eq!(
            JobState::sources_sql(Requeued),
            "'dispatching', 'queued', 'running', 'requeued'".to_string()
        );
        let live: Vec<String> = JobState::ALL
            .into_iter()
            .filter(|s| !s.is_terminal())
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        assert_eq!(live.join(", "), JobState::LIVE_SQL);
        for end in JobState::ALL.into_iter().filter(|s| s.is_terminal()) {
            assert!(JobState::ALL.iter().all(|&next| !end.can_become(next)));
        }
    }

    #[test]
    fn terminal_states_are_final() {
        use JobState::*;
        assert!(
            Queued.can_become(Running)
                && Running.can_become(Succeeded)
                && Queued.can_become(Cancelled)
        );
        assert!(
            !Succeeded.can_become(Failed)
                && !Cancelled.can_become(Running)
                && !Running.can_become(Queued)
        );
        assert_eq!(JobState::parse("timed_out"), Some(TimedOut));
        assert_eq!(JobState::parse("nope"), None);
    }
}
