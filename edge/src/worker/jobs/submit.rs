//! Submitting a job: the spec is checked, the job stored as `dispatching` with its maximum cost
//! held, and sent to the backend that fits it. One Idempotency-Key makes one job: a retry with
//! the same spec gets the job the first request made (another spec under that key is a 409), and
//! a backend that refused the job or was never reached leaves nothing behind (no job, no hold).

use super::row::{COLUMNS, JobRow, by_id};
use crate::backends::adapter::{self, BackendError, Dispatch};
use crate::backends::config::BackendConfig;
use crate::coordinator::{Balance, Op, Settled};
use crate::error::{ApiError, ErrorCode};
use crate::jobs::pick_for_spec;
use crate::wire::{self, SpecText};
use crate::worker::access::User;
use crate::worker::db::{self, n, now_ms, random_hex, s};
use crate::worker::http::{self, ApiResult};
use crate::worker::{backends, coordinator, report};
use jobspec::ValidSpec;
use std::collections::BTreeMap;
use worker::{Env, Request, Response};

/// A job on its way in: checked, priced and named, not yet stored.
struct NewJob {
    id: String,
    /// The job's own token for its reports (only its hash is stored).
    token: String,
    /// The submission's Idempotency-Key.
    key: String,
    valid: ValidSpec,
    /// The spec as stored: the TOML that was sent, or a JSON spec's TOML form.
    spec_toml: String,
    backend: BackendConfig,
    hold_fen: i64,
    created_at: i64,
}

pub async fn submit(user: User, mut req: Request, env: &Env) -> ApiResult<Response> {
    let key = wire::idempotency_key(http::header(&req, "idempotency-key").as_deref())?;
    let earlier = by_key(env, &user, &key).await?;
    let body = http::body(&mut req, wire::MAX_SPEC_BYTES).await?;
    let spec = wire::spec_from_body(http::header(&req, "content-type").as_deref(), &body);
    // A retry of a submission that already has its job gets that job; the key with another
    // spec is refused, since the job it names is not the one sent.
    if let Some(job) = earlier {
        let Ok(spec) = spec else {
            return retried(job, false);
        };
        // As stored: with the counts of a dataset it names added, or as sent (the dataset gone).
        let stored = |s: SpecText| submittable(s).is_ok_and(|(_, toml)| toml == job.spec);
        let same = stored(spec.clone())
            || stored(super::super::datasets::with_counts(env, &user.id, spec).await?);
        return retried(job, same);
    }
    // The counts of an uploaded dataset it names, where it gives none.
    let spec = super::super::datasets::with_counts(env, &user.id, spec?).await?;
    let (valid, spec_toml) = submittable(spec)?;
    // An uploaded dataset it names is this account's, stored whole.
    super::super::datasets::check_named(env, &user.id, valid.spec()).await?;
    let backends = backends::configured(env)?;
    // Where the job reports: read before anything is held, so a misconfigured edge moves no money.
    let origin = http::public_url(env)?;
    let configured = backends.len();
    let candidates = candidates(env, &user, &valid, backends).await?;
    // Where continuing an earlier job keeps this one, a refusal of the spec says so.
    let pinned = (candidates.len() < configured)
        .then(|| candidates.first().map(|b| b.name.clone()))
        .flatten();
    // Planned again on the chosen backend's own nodes (their RAM and NVMe for what it offloads).
    let (backend, valid) = pick_for_spec(&candidates, &valid)
        .map(|(b, v)| (b.clone(), v))
        .map_err(|e| unrunnable(e, &valid, pinned.as_deref()))?;
    let hold_fen = i64::try_from(valid.max_cost_fen()).map_err(|_| {
        ApiError::new(
            ErrorCode::InvalidSpec,
            "the maximum cost of this job is out of range",
        )
    })?;
    let job = NewJob {
        id: random_hex(16)?,
        token: random_hex(32)?,
        key,
        valid,
        spec_toml,
        backend,
        hold_fen,
        created_at: now_ms(),
    };
    let waiting_limit = db::setting(env, "WAITING_JOBS_PER_USER", 20);
    if !store(env, &user, &job, waiting_limit).await? {
        // A concurrent request with the same key won the insert: answer with its job. Without
        // one, the account has as many jobs waiting to start as it may.
        return match by_key(env, &user, &job.key).await? {
            Some(won) => {
                let same = won.spec == job.spec_toml;
                retried(won, same)
            }
            None => Err(ApiError::new(
                ErrorCode::LimitReached,
                format!(
                    "the account has {waiting_limit} jobs waiting to start, as many as it may; \
                     cancel one or wait until one starts, then submit again"
                ),
            )
            .with_details(serde_json::json!({"limit": "waiting_jobs", "max": waiting_limit}))),
        };
    }
    hold(env, &user, &job).await?;
    let id = job.id.clone();
    let status = dispatch(env, &user, job, &origin).await?;
    let job = by_id(env, &id)
        .await?
        .ok_or_else(|| ApiError::internal("new job vanished"))?;
    created(status, &job)
}

/// The refusal of a spec no candidate backend can run; for a job that continues an earlier one
/// (`checkpoint.resume_from`), it says that the earlier job's backend is where this one must run.
fn unrunnable(e: ApiError, valid: &ValidSpec, pinned: Option<&str>) -> ApiError {
    match &valid.spec().checkpoint.resume_from {
        Some(id) if e.code == ErrorCode::InvalidSpec => match pinned {
            Some(name) => ApiError {
                message: format!(
                    "{}; checkpoint.resume_from keeps this job on backend {name}, where job {id}'s checkpoint is (a job that uploads its checkpoint, checkpoint.upload = true, can be continued on any backend)",
                    e.message
                ),
                ..e
            },
            None => e,
        },
        // A refusal that names its own field (the runner's week) is not the checkpoint's.
        Some(_) if e.details.get("field").is_some() => e,
        Some(id) => ApiError::new(
            ErrorCode::NoBackend,
            format!(
                "checkpoint.resume_from: job {id}'s checkpoint is on a backend that cannot run this spec ({}); a job that uploads its checkpoint (checkpoint.upload = true) can be continued on any backend",
                e.message
            ),
        )
        .with_details(serde_json::json!({"field": "checkpoint.resume_from"})),
        None => e,
    }
}

/// The backends that may run the spec: the one an earlier job it continues ran on (unless that
/// job uploaded its checkpoint), else any.
/// (An uploaded dataset is fetched by the job itself on every kind of backend: by the trainer
/// the runner starts, and by Slurm's job script.)
async fn candidates(
    env: &Env,
    user: &User,
    valid: &ValidSpec,
    backends: Vec<BackendConfig>,
) -> ApiResult<Vec<BackendConfig>> {
    // A job that continues an earlier one runs where that one's checkpoint is, or anywhere when
    // the edge keeps it.
    Ok(match resumed_backend(env, user, valid).await? {
        Some(name) => backends.into_iter().filter(|b| b.name == name).collect(),
        None => backends,
    })
}

/// For a spec that continues an earlier job (`checkpoint.resume_from`), the backend that job ran
/// on, where its checkpoint is. The job must be the caller's (another account's job, or none,
/// is "not found" alike, so ids cannot be probed) and must have ended.
async fn resumed_backend(env: &Env, user: &User, valid: &ValidSpec) -> ApiResult<Option<String>> {
    let Some(id) = valid.spec().checkpoint.resume_from.as_deref() else {
        return Ok(None);
    };
    let field = || serde_json::json!({"field": "checkpoint.resume_from", "job_id": id});
    let earlier: Option<JobRow> = db::first(
        env,
        &format!("SELECT {COLUMNS} FROM jobs WHERE id = ? AND user_id = ?"),
        &[s(id), s(&user.id)],
    )
    .await?;
    let Some(earlier) = earlier else {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            format!("checkpoint.resume_from: you have no job {id} to continue from"),
        )
        .with_details(field()));
    };
    if !earlier.state().is_terminal() {
        return Err(ApiError::new(
            ErrorCode::JobNotFinished,
            format!(
                "checkpoint.resume_from: job {id} is still {}; continue from it once it has ended (or cancel it)",
                earlier.state().as_str()
            ),
        )
        .with_details(field()));
    }
    // A checkpoint it uploaded reaches a job on any backend (`resume.rs`); else its folder on
    // the backend it ran on is the only one.
    if uploaded_checkpoint(env, &earlier.id).await? {
        return Ok(None);
    }
    Ok(Some(earlier.backend))
}

/// Whether job `id` uploaded a checkpoint (`checkpoint-<step>/…` among its stored artifacts),
/// which `resume.rs` serves to a job that continues it.
async fn uploaded_checkpoint(env: &Env, id: &str) -> ApiResult<bool> {
    #[derive(serde::Deserialize)]
    struct Name {
        name: String,
    }
    let names: Vec<Name> = db::all(
        env,
        "SELECT name FROM artifacts WHERE job_id = ? AND state = 'stored' \
         AND name LIKE 'checkpoint-%/%' LIMIT 1000",
        &[s(id)],
    )
    .await?;
    Ok(names
        .iter()
        .any(|n| api::artifacts::checkpoint_step(&n.name).is_some()))
}

async fn by_key(env: &Env, user: &User, key: &str) -> ApiResult<Option<JobRow>> {
    db::first(
        env,
        &format!("SELECT {COLUMNS} FROM jobs WHERE user_id = ? AND idempotency_key = ?"),
        &[s(&user.id), s(key)],
    )
    .await
}

/// The answer to a submission whose Idempotency-Key already made `job`: that job when the
/// spec sent (`same`) is the one it was made from, else 409.
fn retried(job: JobRow, same: bool) -> ApiResult<Response> {
    if same {
        return created(200, &job);
    }
    Err(ApiError::new(
        ErrorCode::IdempotencyConflict,
        format!(
            "this Idempotency-Key already submitted job {} with another spec; send that spec again \
             to get the job, or submit this one with a new key",
            job.id
        ),
    )
    .with_details(serde_json::json!({"job_id": job.id})))
}

fn created(status: u16, job: &JobRow) -> ApiResult<Response> {
    http::json(status, &job.wire()).map_err(http::internal("response"))
}

/// The body's spec when it can be submitted, with the TOML text to store.
fn submittable(spec: SpecText) -> ApiResult<(ValidSpec, String)> {
    let plan = match &spec {
        SpecText::Toml(t) => jobspec::plan_toml(t),
        SpecText::Json(j) => jobspec::plan_json(j),
    };
    let valid = match (&plan.valid, plan.is_submittable()) {
        (Some(v), true) => v.clone(),
        _ => {
            return Err(ApiError::new(
                ErrorCode::InvalidSpec,
                "the spec cannot be submitted; see details.diagnostics",
            )
            .with_typed_details(&api::InvalidSpecDetails {
                diagnostics: plan.diagnostics.iter().map(Into::into).collect(),
            }));
        }
    };
    let spec_toml = match spec {
        SpecText::Toml(t) => t,
        SpecText::Json(_) => valid.spec().to_toml(),
    };
    Ok((valid, spec_toml))
}

/// Stores the job as `dispatching`; false when a request with the same key stored its job first,
/// or when the account already has `waiting_limit` jobs waiting to start (checked in the insert
/// itself, so racing submissions cannot pass it).
async fn store(env: &Env, user: &User, job: &NewJob, waiting_limit: i64) -> ApiResult<bool> {
    let valid = &job.valid;
    let inserted = db::run(
        env,
        "INSERT INTO jobs (id, user_id, idempotency_key, name, spec, state, backend, card, cards, price_fen_per_hour, \
         hold_fen, created_at, token_hash, checkpoint, time_limit_s) \
         SELECT ?, ?, ?, ?, ?, 'dispatching', ?, ?, ?, ?, ?, ?, ?, 0, ? \
         WHERE (SELECT COUNT(*) FROM jobs WHERE user_id = ? AND state IN ('dispatching', 'queued')) < ? \
         ON CONFLICT(user_id, idempotency_key) DO NOTHING",
        &[
            s(&job.id),
            s(&user.id),
            s(&job.key),
            s(&valid.spec().name),
            s(&job.spec_toml),
            s(&job.backend.name),
            s(valid.card().id),
            n(i64::from(valid.world_size())),
            n(i64::try_from(valid.price_fen_per_hour()).unwrap_or(i64::MAX)),
            n(job.hold_fen),
            n(job.created_at),
            s(&crate::access::hash_token(&job.token)),
            n(i64::try_from(valid.time_limit_s()).unwrap_or(i64::MAX)),
            s(&user.id),
            n(waiting_limit),
        ],
    )
    .await?;
    Ok(inserted != 0)
}

/// Holds the job's maximum cost in the account's object. A hold refused (too little credit)
/// forgets the job. A hold whose answer did not come may still be made after it: the job stays,
/// never sent, for the sweep, which fails it and gives back whatever was held (a hold made after
/// that is refused by the account's object), and a retry with the same key gets that job, not a
/// second hold.
async fn hold(env: &Env, user: &User, job: &NewJob) -> ApiResult<()> {
    let hold_op = Op::Hold {
        user_id: user.id.clone(),
        job_id: job.id.clone(),
        amount_fen: job.hold_fen,
        now_ms: job.created_at,
    };
    match coordinator::call::<Balance>(env, &hold_op).await {
        Ok(_) => Ok(()),
        Err(e) if e.code.status() < 500 => {
            db::run(env, "DELETE FROM jobs WHERE id = ?", &[s(&job.id)]).await?;
            Err(e)
        }
        Err(e) => {
            db::run(
                env,
                "UPDATE jobs SET message = ? WHERE id = ? AND state = 'dispatching'",
                &[s(report::HOLD_UNANSWERED), s(&job.id)],
            )
            .await?;
            Err(e)
        }
    }
}

/// Sends the job to its backend: 201 when the backend took it, 202 when its answer did not come
/// in time; a refusal, or a backend never reached, releases the hold ([`release_unsent`]).
async fn dispatch(env: &Env, user: &User, job: NewJob, origin: &str) -> ApiResult<u16> {
    let NewJob {
        id,
        token,
        valid,
        backend,
        ..
    } = job;
    let dispatch = Dispatch {
        job_id: id.clone(),
        spec: valid,
        env: BTreeMap::new(),
        report_url: format!("{origin}/api/jobs/{id}/report"),
        log_url: format!("{origin}/api/jobs/{id}/log"),
        report_token: token,
    };
    let timeout = backends::timeout(env);
    let submitted = match backends::adapter(env, &backend).await {
        Ok(a) => match a.submit(&dispatch) {
            Ok(call) => match backends::send(&call, timeout).await {
                Ok((status, body)) => a.parse_submit(status, &body),
                // The connection failed, before the request went out or after it (a backend that
                // went down mid-request, a proxy that dropped it): the backend, asked for the
                // job by its id, says which. One it does not have, or a backend that cannot be
                // asked either, took nothing.
                Err(BackendError::Unavailable(why)) => {
                    let found = backends::send(&a.find(&id), timeout)
                        .await
                        .and_then(|(status, body)| a.parse_find(&id, status, &body));
                    match found {
                        Ok(Some(sub)) => Ok(sub),
                        Ok(None) | Err(BackendError::Unavailable(_)) => {
                            Err(BackendError::Unavailable(why))
                        }
                        // An answer that came late or unread proves nothing: it may be there.
                        Err(e) => Err(BackendError::NoAnswer(format!("{why}; then {e:?}"))),
                    }
                }
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        },
        Err(e) => return release_unsent(env, &user.id, &id, e).await,
    };
    match submitted {
        Ok(s) => {
            report::adopt(env, &id, &s, now_ms()).await?;
            Ok(201)
        }
        Err(e) if adapter::submission_may_have_landed(&e) => {
            // The job may be running there: keep it (and its hold) as `dispatching`. The job page
            // and the reconcile sweep ask the backend for it by this id and settle it either way;
            // a retry with the same Idempotency-Key gets this job, never a second copy.
            let why = e.into_api(&backend.name).message;
            db::run(
                env,
                "UPDATE jobs SET message = ? WHERE id = ? AND state = 'dispatching'",
                &[
                    s(&format!(
                        "{why}; the backend may have the job, Onramp is asking it by the job's id"
                    )),
                    s(&id),
                ],
            )
            .await?;
            Ok(202)
        }
        Err(e) => release_unsent(env, &user.id, &id, e.into_api(&backend.name)).await,
    }
}

/// The backend refused the job or was never reached, so nothing runs: releases the whole hold
/// and forgets the job, so nothing is charged and a retry with the same key starts afresh.
async fn release_unsent<T>(env: &Env, user_id: &str, id: &str, e: ApiError) -> ApiResult<T> {
    let release = Op::Settle {
        user_id: user_id.to_string(),
        job_id: id.to_string(),
        capture_fen: 0,
        now_ms: now_ms(),
    };
    coordinator::call::<Settled>(env, &release).await?;
    db::run(env, "DELETE FROM jobs WHERE id = ?", &[s(id)]).await?;
    Err(e)
}
