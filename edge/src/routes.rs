//! The route table of the API, as data: the dispatcher in the worker and the OpenAPI document
//! both derive from [`ROUTES`], so a route cannot exist in one and be missing from the other.
//! A route's [`Access`] is enforced by the dispatcher before its handler runs (`access.rs`).

mod ids;
pub use ids::{Access, RouteId};

/// One route: method, path template (`{id}`, `{name}`: one path segment each), who may call it,
/// and what it does (the OpenAPI summary).
#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub id: RouteId,
    pub method: &'static str,
    pub path: &'static str,
    pub access: Access,
    pub summary: &'static str,
    /// Success status, for the OpenAPI document.
    pub status: u16,
}

/// The largest body a route reads (its handler refuses more with 413; the entry reads no further
/// before it refuses a body, see `worker::http::buffered`): a spec, report or experiment may be
/// as large as a spec, a log chunk one chunk, a tokenizer file 32 MiB; others are small JSON.
pub const fn body_limit(id: RouteId) -> usize {
    match id {
        SubmitJob | JobReport | CreateExperiment => crate::wire::MAX_SPEC_BYTES,
        JobLogPush => crate::job_logs::MAX_CHUNK_BYTES,
        UploadPart | UploadDatasetPart => api::artifacts::MAX_PART_BYTES as usize,
        AdminPutTokenizer => api::datasets::MAX_TOKENIZER_FILE_BYTES as usize,
        _ => crate::wire::MAX_JSON_BYTES,
    }
}

/// Whether a route's handler streams its body (a part goes on to R2 as it arrives): the entry
/// does not buffer it, and drains it when the handler refused it unread.
pub const fn streams_body(id: RouteId) -> bool {
    matches!(id, UploadPart | UploadDatasetPart)
}

const fn r(
    id: RouteId,
    method: &'static str,
    path: &'static str,
    access: Access,
    status: u16,
    summary: &'static str,
) -> Route {
    Route {
        id,
        method,
        path,
        access,
        summary,
        status,
    }
}

use Access::*;
use RouteId::*;

pub const ROUTES: &[Route] = &[
    r(
        Health,
        "GET",
        "/api/health",
        Public,
        200,
        "Liveness: the edge answers (no storage, no backend and nothing internal)",
    ),
    r(
        AdminHealth,
        "GET",
        "/api/admin/health",
        Admin,
        200,
        "Deep health: a round trip through each storage binding and every backend",
    ),
    r(
        OpenApi,
        "GET",
        "/api/openapi.json",
        Public,
        200,
        "This document",
    ),
    r(
        Signup,
        "POST",
        "/api/auth/signup",
        Public,
        201,
        "Create an account; sets the session cookie",
    ),
    r(
        Login,
        "POST",
        "/api/auth/login",
        Public,
        200,
        "Sign in; sets the session cookie",
    ),
    r(
        VerifyEmail,
        "POST",
        "/api/auth/verify",
        Public,
        200,
        "Verify an account's email with the token of the mailed link; gives the trial credit once",
    ),
    r(
        ResendVerification,
        "POST",
        "/api/auth/verify/resend",
        User,
        200,
        "Mail a new verification link to the account's email (limited per account)",
    ),
    r(
        RequestPasswordReset,
        "POST",
        "/api/auth/reset/request",
        Public,
        202,
        "Mail a password reset link to the email if an account has it; the same answer either way",
    ),
    r(
        ResetPassword,
        "POST",
        "/api/auth/reset",
        Public,
        200,
        "Set a new password with the token of the mailed link; signs in, and signs out every other \
         session and API token of the account",
    ),
    r(
        ChangePassword,
        "POST",
        "/api/auth/password",
        User,
        200,
        "Change the password, giving the current one; signs out every other session (this one and \
         the API tokens stay)",
    ),
    r(
        Logout,
        "POST",
        "/api/auth/logout",
        User,
        200,
        "End this session",
    ),
    r(
        LogoutEverywhere,
        "POST",
        "/api/auth/logout/everywhere",
        User,
        200,
        "End every session of the account, this one too; with revoke_tokens, every API token too",
    ),
    r(
        Me,
        "GET",
        "/api/me",
        User,
        200,
        "The signed-in account and its balance",
    ),
    r(
        CreateToken,
        "POST",
        "/api/tokens",
        User,
        201,
        "A new API token for the CLI (shown once)",
    ),
    r(
        ListTokens,
        "GET",
        "/api/tokens",
        User,
        200,
        "The account's API tokens (names, ids and when made; never the tokens)",
    ),
    r(
        RevokeToken,
        "DELETE",
        "/api/tokens/{id}",
        User,
        200,
        "Revoke one of the account's API tokens: it signs nobody in any more",
    ),
    r(
        Ledger,
        "GET",
        "/api/ledger",
        User,
        200,
        "Every credit movement of the account",
    ),
    r(
        Redeem,
        "POST",
        "/api/credits/redeem",
        User,
        200,
        "Redeem a promotion code",
    ),
    r(
        AdminPromoCodes,
        "POST",
        "/api/admin/promo-codes",
        Admin,
        201,
        "Create a promotion code",
    ),
    r(
        AdminReconcile,
        "POST",
        "/api/admin/reconcile",
        Admin,
        200,
        "Ask backends about silent jobs now",
    ),
    r(
        AdminBackends,
        "GET",
        "/api/admin/backends",
        Admin,
        200,
        "The configured backends (no secrets)",
    ),
    r(
        AdminRefund,
        "POST",
        "/api/admin/refunds",
        Admin,
        201,
        "Refund credit for a job, up to what it was charged (Idempotency-Key)",
    ),
    r(
        AdminOutbox,
        "GET",
        "/api/admin/outbox",
        Admin,
        200,
        "Mails the local outbox holds for one address (`?to=`; MAIL_SENDER=outbox)",
    ),
    r(
        Backends,
        "GET",
        "/api/backends",
        Public,
        200,
        "Where jobs can run: each backend's name, kind and cards (no URLs or secrets)",
    ),
    r(
        SubmitJob,
        "POST",
        "/api/jobs",
        User,
        201,
        "Validate, hold the maximum cost and dispatch a job: 201 when the backend accepted it, 202 \
         (state dispatching) when its answer did not come in time, 200 for a retry with the same \
         Idempotency-Key",
    ),
    r(
        ListJobs,
        "GET",
        "/api/jobs",
        User,
        200,
        "The account's jobs, newest first",
    ),
    r(GetJob, "GET", "/api/jobs/{id}", User, 200, "One job"),
    r(
        JobLogs,
        "GET",
        "/api/jobs/{id}/logs",
        User,
        200,
        "Log text from a byte offset",
    ),
    r(
        JobMetrics,
        "GET",
        "/api/jobs/{id}/metrics",
        User,
        200,
        "Metrics after a step",
    ),
    r(
        CancelJob,
        "POST",
        "/api/jobs/{id}/cancel",
        User,
        200,
        "Cancel a job and settle its hold",
    ),
    r(
        JobReport,
        "POST",
        "/api/jobs/{id}/report",
        JobToken,
        200,
        "State and metrics from the job itself",
    ),
    r(
        JobLogPush,
        "POST",
        "/api/jobs/{id}/log",
        JobToken,
        200,
        "Log bytes from the job itself, at a byte offset",
    ),
    r(
        JobCheckpoint,
        "GET",
        "/api/jobs/{id}/checkpoint",
        User,
        200,
        "The trained checkpoint bundle",
    ),
    r(
        ListCheckpoints,
        "GET",
        "/api/checkpoints",
        User,
        200,
        "The account's jobs that have a checkpoint",
    ),
    r(
        StartUpload,
        "POST",
        "/api/jobs/{id}/artifacts/{name}",
        JobToken,
        200,
        "Start or resume the upload of one of the job's artifacts: which parts arrived",
    ),
    r(
        UploadPart,
        "PUT",
        "/api/jobs/{id}/artifacts/{name}",
        JobToken,
        200,
        "One part of an artifact (`?part=N`, the body is the part's bytes); the last completes it",
    ),
    r(
        ListArtifacts,
        "GET",
        "/api/jobs/{id}/artifacts",
        User,
        200,
        "The job's stored artifacts, and the account's use of its quota",
    ),
    r(
        GetArtifact,
        "GET",
        "/api/jobs/{id}/artifacts/{name}",
        User,
        200,
        "Download an artifact (honours `Range`: 206 with the part asked for)",
    ),
    r(
        DeleteArtifact,
        "DELETE",
        "/api/jobs/{id}/artifacts/{name}",
        User,
        200,
        "Delete an artifact, freeing its bytes from the account's quota",
    ),
    r(
        CreateDataset,
        "POST",
        "/api/datasets",
        User,
        200,
        "Declare a dataset to upload, with the checker's counts: which parts arrived (a file already stored answers complete)",
    ),
    r(
        UploadDatasetPart,
        "PUT",
        "/api/datasets/{id}",
        User,
        200,
        "One part of a dataset (`?part=N`, the body is the part's bytes); the last completes it",
    ),
    r(
        ListDatasets,
        "GET",
        "/api/datasets",
        User,
        200,
        "The account's datasets, and its use of the dataset quota",
    ),
    r(
        GetDataset,
        "GET",
        "/api/datasets/{id}",
        User,
        200,
        "One of the account's datasets",
    ),
    r(
        DeleteDataset,
        "DELETE",
        "/api/datasets/{id}",
        User,
        200,
        "Delete a dataset, freeing its bytes from the account's quota",
    ),
    r(
        JobDataset,
        "GET",
        "/api/jobs/{id}/dataset",
        JobToken,
        200,
        "An uploaded dataset the job's spec names, for the job to fetch: `?id=` one of them, else the one it trains on (honours `Range`; its SHA-256 in `x-onramp-sha256`)",
    ),
    r(
        JobResume,
        "GET",
        "/api/jobs/{id}/resume",
        JobToken,
        200,
        "The checkpoint files of the job this one continues (`checkpoint.resume_from`), which it uploaded",
    ),
    r(
        JobResumeFile,
        "GET",
        "/api/jobs/{id}/resume/{name}",
        JobToken,
        200,
        "One file of that checkpoint, for the job to fetch (honours `Range`)",
    ),
    r(
        ModelTokenizer,
        "GET",
        "/api/models/{id}/tokenizer/{name}",
        Public,
        200,
        "A file of a catalogue model's tokenizer, for the Plan page's dataset check",
    ),
    r(
        AdminPutTokenizer,
        "PUT",
        "/api/admin/models/{id}/tokenizer/{name}",
        Admin,
        200,
        "Store (or replace) a file of a catalogue model's tokenizer",
    ),
    r(
        CreateExperiment,
        "POST",
        "/api/experiments",
        User,
        201,
        "Store an immutable experiment snapshot",
    ),
    r(
        GetExperiment,
        "GET",
        "/api/experiments/{id}",
        MaybeUser,
        200,
        "A saved experiment (owner only when unpublished)",
    ),
    r(
        GetExperimentArtifact,
        "GET",
        "/api/experiments/{id}/artifacts/{name}",
        MaybeUser,
        200,
        "Download an artifact its job's owner shared with the experiment (honours `Range`)",
    ),
    r(
        ChangeExperiment,
        "PATCH",
        "/api/experiments/{id}",
        User,
        200,
        "Publish a saved experiment, or take its link back (the owner only)",
    ),
    r(
        DeleteExperiment,
        "DELETE",
        "/api/experiments/{id}",
        User,
        200,
        "Delete a saved experiment and its link (the owner only)",
    ),
];

/// The outcome of matching a request against the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matched {
    /// A route, with the values of its `{…}` segments in order.
    Route(RouteId, Vec<String>),
    /// The path exists with other methods (405, with these in `Allow`).
    WrongMethod(Vec<&'static str>),
    NoRoute,
}

/// Finds the route for a method and path (no query string).
pub fn find(method: &str, path: &str) -> Matched {
    let mut allowed = Vec::new();
    for route in ROUTES {
        if let Some(param) = match_path(route.path, path) {
            // HEAD is GET without the body (RFC 9110 §9.3.2): the entry drops the body.
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return Matched::Route(route.id, param);
            }
            allowed.push(route.method);
            if route.method == "GET" {
                allowed.push("HEAD");
            }
        }
    }
    if allowed.is_empty() {
        Matched::NoRoute
    } else {
        Matched::WrongMethod(allowed)
    }
}

/// `Some(params)` when `path` fits `template`; a `{…}` segment matches one non-empty segment.
fn match_path(template: &str, path: &str) -> Option<Vec<String>> {
    let mut t = template.split('/');
    let mut p = path.split('/');
    let mut params = Vec::new();
    loop {
        match (t.next(), p.next()) {
            (None, None) => return Some(params),
            (Some(ts), Some(ps)) if ts.starts_with('{') => {
                if ps.is_empty() {
                    return None;
                }
                params.push(ps.to_string());
            }
            (Some(ts), Some(ps)) if ts == ps => {}
            _ => return None,
        }
    }
}

pub fn route(id: RouteId) -> Option<&'static Route> {
    ROUTES.iter().find(|r| r.id == id)
}

#[cfg(test)]
mod tests;
