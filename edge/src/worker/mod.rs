//! Everything that runs only inside the Workers runtime: the fetch and scheduled entry points,
//! the dispatcher over the route table, the handlers and the Durable Object class. The
//! dispatcher authenticates each request once, as its route's `access` says (`access.rs`), and
//! hands the handler who is calling; a handler's signature says which caller it takes.

mod access;
mod accounts;
mod backends;
mod coordinator;
mod credits;
mod db;
mod experiments;
mod health;
mod http;
mod job_logs;
mod jobs;
mod mail;
mod refunds;
mod report;
mod verify;

use crate::error::{ApiError, ErrorCode};
use crate::routes::{self, Matched, Route, RouteId};
use access::{Admin, Caller, JobCaller, User};
use http::{ApiResult, error_response, json};
use worker::{Context, Env, Request, Response, ScheduleContext, ScheduledEvent, event};

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> worker::Result<Response> {
    let method = req.method().to_string();
    let path = req.path();
    match routes::find(&method, &path) {
        Matched::Route(id, param) => match handle(id, param, req, &env).await {
            Ok(resp) => Ok(resp),
            Err(e) => error_response(&e),
        },
        Matched::WrongMethod(allowed) => {
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
        Matched::NoRoute => error_response(
            &ApiError::not_found(format!("no route for {method} {path}"))
                .with_typed_details(&NoRouteDetails { path: &path }),
        ),
    }
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
    let _ = report::reconcile(&env, None).await;
}

fn ok<T: serde::Serialize>(status: u16, v: ApiResult<T>) -> ApiResult<Response> {
    json(status, &v?).map_err(http::internal("response"))
}

async fn handle(
    id: RouteId,
    param: Option<String>,
    req: Request,
    env: &Env,
) -> ApiResult<Response> {
    let route = routes::route(id)
        .ok_or_else(|| ApiError::internal(format!("{id:?} is not in the route table")))?;
    let param = param.unwrap_or_default();
    match access::authenticate(route, &param, &req, env).await? {
        Caller::Anyone => public(route, req, env).await,
        Caller::MaybeUser(viewer) => match id {
            RouteId::GetExperiment => ok(route.status, experiments::get(viewer, env, &param).await),
            _ => Err(not_its_caller(route)),
        },
        Caller::User(user) => signed_in(route, user, &param, req, env).await,
        Caller::Admin(admin) => admin_route(route, admin, req, env).await,
        Caller::Job(job) => job_route(route, job, req, env).await,
    }
}

/// A route whose handler takes another caller than the one its access gives: the dispatcher
/// and the route table disagree, and nothing runs.
fn not_its_caller(route: &Route) -> ApiError {
    ApiError::internal(format!(
        "{:?}: its handler takes another caller than its access ({:?}) gives",
        route.id, route.access
    ))
}

/// The `Public` routes.
async fn public(route: &Route, req: Request, env: &Env) -> ApiResult<Response> {
    let status = route.status;
    match route.id {
        RouteId::Health => ok(status, Ok(health::live())),
        RouteId::OpenApi => ok(status, Ok(crate::openapi::document())),
        RouteId::Signup => accounts::signup(req, env).await,
        RouteId::Login => accounts::login(req, env).await,
        RouteId::VerifyEmail => ok(status, verify::verify(req, env).await),
        RouteId::Backends => ok(
            status,
            backends::configured(env).map(|l| crate::backends::public::list(&l)),
        ),
        _ => Err(not_its_caller(route)),
    }
}

/// The `User` routes: the signed-in user's own things.
async fn signed_in(
    route: &Route,
    user: User,
    param: &str,
    req: Request,
    env: &Env,
) -> ApiResult<Response> {
    let status = route.status;
    match route.id {
        RouteId::ResendVerification => ok(status, verify::resend(user, env).await),
        RouteId::Logout => accounts::logout(user, req, env).await,
        RouteId::Me => accounts::me(user, env).await,
        RouteId::CreateToken => accounts::create_token(user, req, env).await,
        RouteId::Ledger => ok(status, credits::ledger(user, env).await),
        RouteId::Redeem => ok(status, credits::redeem(user, req, env).await),
        RouteId::SubmitJob => jobs::submit(user, req, env).await,
        RouteId::ListJobs => ok(status, jobs::list(user, env).await),
        RouteId::GetJob => ok(status, jobs::get(&user, env, param).await),
        RouteId::JobLogs => ok(status, jobs::logs(user, req, env, param).await),
        RouteId::JobMetrics => ok(status, jobs::metrics(user, req, env, param).await),
        RouteId::CancelJob => ok(status, jobs::cancel(user, env, param).await),
        RouteId::JobCheckpoint => jobs::checkpoint(user, env, param).await,
        RouteId::ListCheckpoints => ok(status, jobs::checkpoints(user, env).await),
        RouteId::CreateExperiment => ok(status, experiments::create(user, req, env).await),
        _ => Err(not_its_caller(route)),
    }
}

/// The `Admin` routes: the operator's.
async fn admin_route(route: &Route, admin: Admin, req: Request, env: &Env) -> ApiResult<Response> {
    let status = route.status;
    match route.id {
        RouteId::AdminHealth => health::deep(admin, env).await,
        RouteId::AdminOutbox => ok(status, mail::admin_outbox(admin, req, env).await),
        RouteId::AdminPromoCodes => ok(status, credits::create_code(admin, req, env).await),
        RouteId::AdminReconcile => ok(status, report::admin_reconcile(admin, req, env).await),
        RouteId::AdminBackends => ok(status, jobs::admin_backends(admin, env)),
        RouteId::AdminRefund => refunds::create(admin, req, env).await,
        _ => Err(not_its_caller(route)),
    }
}

/// The `JobToken` routes: what a job itself sends.
async fn job_route(route: &Route, job: JobCaller, req: Request, env: &Env) -> ApiResult<Response> {
    match route.id {
        RouteId::JobReport => ok(route.status, report::report(job, req, env).await),
        RouteId::JobLogPush => ok(route.status, job_logs::push(job, req, env).await),
        _ => Err(not_its_caller(route)),
    }
}
