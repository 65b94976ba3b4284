//! A job as the `jobs` table keeps it: the row, the columns every query selects, and the lookup
//! by id that the handlers, the job-token check and the reconcile sweep share.

use crate::jobs::{JobState, JobWire, reason_messages};
use crate::time::format_rfc3339_ms;
use crate::worker::db::{self, s};
use crate::worker::http::ApiResult;
use serde::Deserialize;
use worker::Env;

/// A row of `jobs` (the columns the handlers use; serde ignores the others selected).
#[derive(Debug, Clone, Deserialize)]
pub struct JobRow {
    pub id: String,
    /// The owner, whose account object holds the job's hold.
    pub user_id: String,
    pub name: String,
    pub spec: String,
    pub state: String,
    pub backend: String,
    pub remote_id: Option<String>,
    pub card: String,
    pub cards: i64,
    pub price_fen_per_hour: i64,
    pub hold_fen: i64,
    pub charged_fen: Option<i64>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
    pub message: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub last_report_at: Option<i64>,
    /// A terminal state the job claimed while its backend still said it ran.
    #[serde(default)]
    pub ending: Option<String>,
    pub checkpoint: i64,
    pub token_hash: String,
    /// The spec's time limit (absent on rows from before it was kept).
    #[serde(default)]
    pub time_limit_s: Option<i64>,
    /// The newest attempt the edge has heard of (0 until the cluster runs the job again).
    #[serde(default)]
    pub attempt: i64,
    /// What that attempt spent suspended by its cluster, as the sweep last heard: the suspensions
    /// that ended (ms), and since when the one going on lasts.
    #[serde(default)]
    pub suspended_ms: i64,
    #[serde(default)]
    pub suspended_since: Option<i64>,
}

impl JobRow {
    /// How long its newest attempt had spent suspended at `at` (ms), as far as the edge knows.
    pub fn suspended_until(&self, at: i64) -> i64 {
        crate::attempts::suspended_until(self.suspended_ms, self.suspended_since, at)
    }

    /// Its newest attempt from `started` to `ended` on the edge's own record, less what it spent
    /// suspended by then.
    pub fn span(&self, started: Option<i64>, ended: Option<i64>) -> crate::backends::adapter::Span {
        crate::backends::adapter::Span {
            started_ms: started,
            ended_ms: ended,
            suspended_ms: ended.map_or(0, |e| self.suspended_until(e)),
        }
    }

    pub fn state(&self) -> JobState {
        JobState::parse(&self.state).unwrap_or(JobState::Lost)
    }

    pub fn wire(&self) -> JobWire {
        JobWire {
            id: self.id.clone(),
            name: self.name.clone(),
            state: self.state(),
            backend: self.backend.clone(),
            card: self.card.clone(),
            cards: u32::try_from(self.cards).unwrap_or(0),
            hold_fen: self.hold_fen,
            charged_fen: self.charged_fen,
            created_at: format_rfc3339_ms(self.created_at),
            started_at: self.started_at.map(format_rfc3339_ms),
            ended_at: self.ended_at.map(format_rfc3339_ms),
            message: self.message.clone(),
            reason: self.reason.clone(),
            reason_messages: self.reason.as_deref().map(reason_messages),
            checkpoint: self.checkpoint != 0,
            spec: self.spec.clone(),
            attempts: Vec::new(),
        }
    }
}

pub const COLUMNS: &str = "id, user_id, name, spec, state, backend, remote_id, card, cards, price_fen_per_hour, hold_fen, \
     charged_fen, created_at, started_at, ended_at, last_report_at, message, reason, ending, checkpoint, token_hash, time_limit_s, attempt, \
     suspended_ms, suspended_since";

/// The job with this id, whoever owns it.
pub async fn by_id(env: &Env, id: &str) -> ApiResult<Option<JobRow>> {
    db::first(
        env,
        &format!("SELECT {COLUMNS} FROM jobs WHERE id = ?"),
        &[s(id)],
    )
    .await
}
