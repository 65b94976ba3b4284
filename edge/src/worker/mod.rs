//! Everything that runs only inside the Workers runtime: the fetch and scheduled entry points,
//! the dispatcher over the route table, the handlers and the Durable Object class. The
//! dispatcher authenticates each request once, as its route's `access` says (`access.rs`), and
//! hands the handler who is calling; a handler's signature says which caller it takes.

mod access;
mod account_sweep;
mod accounts;
mod artifact_uploads;
mod artifacts;
mod attempts;
mod backends;
mod coordinator;
mod credits;
mod datasets;
mod db;
mod deadline;
mod experiments;
mod health;
mod http;
mod job_logs;
mod job_metrics;
mod jobs;
mod mail;
mod objects;
mod passwords;
mod reconcile;
mod refunds;
mod report;
mod reset;
mod resume;
mod tokenizers;
mod verify;

use crate::error::{ApiError, ErrorCode};
use crate::routes::{self, Matched, RouteId};
use http::{ApiResult, error_response, json};
use worker::{Context, Env, Request, Response, ScheduleContext, ScheduledEvent, event};

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> worker::Result<Response> {
    // The method as sent: the worker crate's `Method` reads one it does not know (`QUERY`, say)
    // as GET, which would answer it as if it were one.
    let method = req.inner().method();
    let path = req.path();
    let matched = routes::find(&method, &path);
    // Read the whole body first, whatever the answer will be: see `http::buffered`.
    let allowed = match matched {
        Matched::Route(id, params) if routes::streams_body(id) => {
            // The handler streams the body on; one it did not read (a refusal, or a part sent
            // again that is already stored) is read to its end here, as `http::buffered` would
            // have, so the connection is left at a boundary. A second handle on the same request
            // (not the runtime's `Request.clone()`, which would tee its body).
            let raw = Clone::clone(req.inner());
            let answer = handle(id, params, req, &env, &ctx).await;
            if !raw.body_used()
                && let Err(e) = http::discard(Request::from(raw)).await
            {
                return error_response(&e);
            }
            return match answer {
                Ok(resp) => Ok(resp),
                Err(e) => error_response(&e),
            };
        }
        Matched::Route(id, params) => {
            let req = match http::buffered(req, routes::body_limit(id)).await {
                Ok(req) => req,
                Err(e) => return error_response(&e),
            };
            return match handle(id, params, req, &env, &ctx).await {
                Ok(resp) => Ok(resp),
                Err(e) => error_response(&e),
            };
        }
        Matched::WrongMethod(allowed) => Some(allowed),
        Matched::NoRoute => None,
    };
    if let Err(e) = http::drained(req, crate::wire::MAX_JSON_BYTES).await {
        return error_response(&e);
    }
    let Some(allowed) = allowed else {
        return error_response(
            &ApiError::not_found(format!("no route for {method} {path}"))
                .with_typed_details(&NoRouteDetails { path: &path }),
        );
    };
    let mut resp = error_response(
        &ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("{method} is not allowed on {path}"),
        )
        .with_typed_details(&MethodNotAllowedDetails { allowed: &allowed }),
    )?;
    resp.headers_mut().set("allow", &allowed.join(", "))?;
    Ok(resp)
}

#[derive(serde::Serialize)]
struct MethodNotAllowedDetails<'a> {
    allowed: &'a [&'static str],
}

#[derive(serde::Serialize)]
struct NoRouteDetails<'a> {
    path: &'a str,
}

/// The cron trigger (see wrangler.toml): ask backends about jobs that went silent.
#[event(scheduled)]
async fn scheduled(_event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    // A failed sweep is retried by the next tick; there is no caller to report to.
    let _ = reconcile::reconcile(&env, None, None).await;
    let _ = artifacts::sweep(&env, 100).await;
    let _ = datasets::sweep(&env, 100).await;
    if let Ok(swept) = account_sweep::sweep(&env, 50).await {
        worker::console_log!(
            "sweep: {} expired sessions and {} unverified accounts cleared",
            swept.sessions,
            swept.accounts
        );
    }
}

fn ok<T: serde::Serialize>(status: u16, v: ApiResult<T>) -> ApiResult<Response> {
    json(status, &v?).map_err(http::internal("response"))
}

/// The routes of files in R2: a job's artifacts and checkpoint, an account's datasets.
async fn files(
    id: RouteId,
    status: u16,
    caller: access::Caller,
    req: Request,
    env: &Env,
    p: &str,
    name: &str,
) -> ApiResult<Response> {
    use RouteId::*;
    match id {
        JobCheckpoint => artifacts::job_checkpoint(caller.user()?, req, env, p).await,
        StartUpload => ok(
            status,
            artifact_uploads::start(caller.job()?, req, env, name).await,
        ),
        UploadPart => ok(
            status,
            artifact_uploads::put_part(caller.job()?, req, env, name).await,
        ),
        ListArtifacts => ok(status, artifacts::list(caller.user()?, env, p).await),
        GetArtifact => artifacts::download(caller.user()?, req, env, p, name).await,
        DeleteArtifact => ok(
            status,
            artifacts::delete(caller.user()?, env, p, name).await,
        ),
        CreateDataset => ok(status, datasets::create(caller.user()?, req, env).await),
        UploadDatasetPart => ok(
            status,
            datasets::put_part(caller.user()?, req, env, p).await,
        ),
        ListDatasets => ok(status, datasets::list(caller.user()?, env).await),
        GetDataset => ok(status, datasets::get(caller.user()?, env, p).await),
        DeleteDataset => ok(status, datasets::delete(caller.user()?, env, p).await),
        JobDataset => datasets::job_fetch(caller.job()?, req, env).await,
        JobResume => ok(status, resume::list(caller.job()?, env).await),
        JobResumeFile => resume::file(caller.job()?, req, env, name).await,
        other => Err(ApiError::internal(format!(
            "{other:?} is not a route of files"
        ))),
    }
}

/// A route's path parameters: `{id}`, then `{name}` where the path has one (else empty).
fn id_and_name(params: Vec<String>) -> [String; 2] {
    let mut params = params.into_iter();
    std::array::from_fn(|_| params.next().unwrap_or_default())
}

/// Runs a route's handler once its caller is authenticated as the route's access says. Each
/// handler takes the caller its route needs (`caller.user()?` and the like); a caller of another
/// kind than the table's access gives is refused before the handler runs.
async fn handle(
    id: RouteId,
    params: Vec<String>,
    req: Request,
    env: &Env,
    ctx: &Context,
) -> ApiResult<Response> {
    let route = routes::route(id)
        .ok_or_else(|| ApiError::internal(format!("{id:?} is not in the route table")))?;
    let status = route.status;
    let [param, name] = id_and_name(params);
    let caller = access::authenticate(route, &param, &req, env).await?;
    let (p, name) = (param.as_str(), name.as_str());
    use RouteId::*;
    match id {
        Health => ok(status, Ok(health::live())),
        AdminHealth => health::deep(caller.admin()?, env).await,
        OpenApi => ok(status, Ok(crate::openapi::document())),
        Signup => accounts::signup(req, env).await,
        Login => accounts::login(req, env).await,
        VerifyEmail => ok(status, verify::verify(req, env).await),
        ResendVerification => ok(status, verify::resend(caller.user()?, env).await),
        RequestPasswordReset => ok(status, reset::request(req, env, ctx).await),
        ResetPassword => reset::reset(req, env).await,
        AdminOutbox => ok(status, mail::admin_outbox(caller.admin()?, req, env).await),
        Logout => accounts::logout(caller.user()?, req, env).await,
        ChangePassword => ok(status, passwords::change(caller.user()?, req, env).await),
        LogoutEverywhere => passwords::logout_everywhere(caller.user()?, req, env).await,
        Me => accounts::me(caller.user()?, env).await,
        CreateToken => accounts::create_token(caller.user()?, req, env).await,
        ListTokens => ok(status, accounts::list_tokens(caller.user()?, env).await),
        RevokeToken => ok(status, accounts::revoke_token(caller.user()?, env, p).await),
        Ledger => ok(status, credits::ledger(caller.user()?, env).await),
        Redeem => ok(status, credits::redeem(caller.user()?, req, env).await),
        AdminPromoCodes => ok(
            status,
            credits::create_code(caller.admin()?, req, env).await,
        ),
        AdminReconcile => ok(
            status,
            reconcile::admin_reconcile(caller.admin()?, req, env).await,
        ),
        AdminBackends => ok(status, jobs::admin_backends(caller.admin()?, env)),
        AdminRefund => refunds::create(caller.admin()?, req, env).await,
        Backends => ok(
            status,
            backends::configured(env).map(|l| crate::backends::public::list(&l)),
        ),
        SubmitJob => jobs::submit(caller.user()?, req, env).await,
        ListJobs => ok(status, jobs::list(caller.user()?, env).await),
        GetJob => ok(status, jobs::get(&caller.user()?, env, p).await),
        JobLogs => ok(status, jobs::logs(caller.user()?, req, env, p).await),
        JobMetrics => ok(status, jobs::metrics(caller.user()?, req, env, p).await),
        CancelJob => ok(status, jobs::cancel(caller.user()?, env, p).await),
        JobReport => ok(status, report::report(caller.job()?, req, env).await),
        JobLogPush => ok(status, job_logs::push(caller.job()?, req, env).await),
        JobCheckpoint | StartUpload | UploadPart | ListArtifacts | GetArtifact | DeleteArtifact
        | CreateDataset | UploadDatasetPart | ListDatasets | GetDataset | DeleteDataset
        | JobDataset | JobResume | JobResumeFile => {
            files(id, status, caller, req, env, p, name).await
        }
        ListCheckpoints => ok(status, jobs::checkpoints(caller.user()?, env).await),
        CreateExperiment => ok(status, experiments::create(caller.user()?, req, env).await),
        GetExperiment => ok(status, experiments::get(caller.maybe_user()?, env, p).await),
        GetExperimentArtifact => {
            experiments::artifact(caller.maybe_user()?, req, env, p, name).await
        }
        ChangeExperiment => ok(
            status,
            experiments::change(caller.user()?, req, env, p).await,
        ),
        DeleteExperiment => ok(status, experiments::delete(caller.user()?, env, p).await),
        ModelTokenizer => tokenizers::get(env, p, name).await,
        AdminPutTokenizer => ok(
            status,
            tokenizers::put(caller.admin()?, req, env, p, name).await,
        ),
    }
}
