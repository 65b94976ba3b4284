//! The route table's `access`, enforced: the dispatcher calls [`authenticate`] once per request,
//! before any handler runs, and hands the handler what it proved: a [`User`], an [`Admin`], the
//! [`JobCaller`]'s job, or nobody. Only this module makes those values, so a handler cannot skip
//! its route's check nor do another one; the decisions are `crate::access`'s, tested natively,
//! and this module only looks up what they need (sessions, API tokens, a job's token hash).

use super::db::{self, n, now_ms, s};
use super::http::{self, ApiResult};
use super::jobs::row::{self, JobRow};
use crate::access::{self, Lookup, Presented, UserCredential};
use crate::error::ApiError;
use crate::routes::{Access, Route};
use serde::Deserialize;
use worker::{Env, Request};

/// A signed-in user (`User` routes, and `MaybeUser` ones when a credential names one).
#[derive(Debug, Clone)]
pub struct User {
    pub id: String,
    pub email: String,
    pub email_verified: bool,
    /// The session's token hash when signed in by cookie (logout ends it).
    session_hash: Option<String>,
    /// The API token's hash when signed in by bearer token.
    token_hash: Option<String>,
}

impl User {
    /// The session this request signed in with, when it used the cookie.
    pub fn session_hash(&self) -> Option<&str> {
        self.session_hash.as_deref()
    }

    /// The API token this request signed in with, when it used one.
    pub fn token_hash(&self) -> Option<&str> {
        self.token_hash.as_deref()
    }
}

/// Proof that the request carried the admin token: every admin handler takes one.
#[derive(Debug)]
pub struct Admin(());

/// The live job whose own token the request carried (`JobToken` routes).
#[derive(Debug)]
pub struct JobCaller(Box<JobRow>);

impl JobCaller {
    pub fn job(&self) -> &JobRow {
        &self.0
    }
}

/// Who is calling, as the route's access proved it.
#[derive(Debug)]
pub enum Caller {
    /// A `Public` route: nobody is asked who they are.
    Anyone,
    /// A `MaybeUser` route: the signed-in user, if any.
    MaybeUser(Option<User>),
    User(User),
    Admin(Admin),
    Job(JobCaller),
}

impl Caller {
    /// The signed-in user of a `User` route.
    pub fn user(self) -> ApiResult<User> {
        match self {
            Caller::User(user) => Ok(user),
            other => Err(other.not("a signed-in user")),
        }
    }

    /// The signed-in user, if any, of a `MaybeUser` route.
    pub fn maybe_user(self) -> ApiResult<Option<User>> {
        match self {
            Caller::MaybeUser(user) => Ok(user),
            other => Err(other.not("a signed-in user or nobody")),
        }
    }

    /// The admin of an `Admin` route.
    pub fn admin(self) -> ApiResult<Admin> {
        match self {
            Caller::Admin(admin) => Ok(admin),
            other => Err(other.not("the admin")),
        }
    }

    /// The job of a `JobToken` route.
    pub fn job(self) -> ApiResult<JobCaller> {
        match self {
            Caller::Job(job) => Ok(job),
            other => Err(other.not("a job's own token")),
        }
    }

    /// A handler wanted another caller than its route's access gives: the dispatcher and the
    /// route table disagree, and the handler does not run.
    fn not(&self, wanted: &str) -> ApiError {
        let proved = match self {
            Caller::Anyone => "anyone",
            Caller::MaybeUser(_) => "anyone, signed in or not",
            Caller::User(_) => "a signed-in user",
            Caller::Admin(_) => "the admin",
            Caller::Job(_) => "a job's own token",
        };
        ApiError::internal(format!(
            "the handler takes {wanted}, but the route's access gives {proved}"
        ))
    }
}

/// Authenticates a request as its route's access says (`param` is the route's `{id}`): refuses
/// it with the API's error, or says who is calling.
pub async fn authenticate(
    route: &Route,
    param: &str,
    req: &Request,
    env: &Env,
) -> ApiResult<Caller> {
    let authorization = http::header(req, "authorization");
    let cookie = http::header(req, "cookie");
    let presented = Presented {
        authorization: authorization.as_deref(),
        cookie: cookie.as_deref(),
    };
    let admin_token = match route.access {
        Access::Admin => env.var("ADMIN_TOKEN").map(|v| v.to_string()).ok(),
        _ => None,
    };
    let lookup = access::lookup(
        route,
        presented,
        admin_token.as_deref().unwrap_or(""),
        param,
    )?;
    Ok(match lookup {
        Lookup::Anyone => Caller::Anyone,
        Lookup::User(credential) => Caller::User(user(credential, req, env).await?),
        Lookup::MaybeUser(None) => Caller::MaybeUser(None),
        Lookup::MaybeUser(Some(credential)) => {
            Caller::MaybeUser(user(credential, req, env).await.ok())
        }
        Lookup::Admin => Caller::Admin(Admin(())),
        Lookup::Job { id, token } => {
            let job = row::by_id(env, id).await?;
            let grace_s = db::setting(env, "TOKEN_GRACE_S", 900);
            // Each attempt of a job its cluster ran again has the whole time limit: the token
            // counts from the newest attempt's start once the edge knows it.
            let started = match &job {
                Some(j) if j.attempt > 0 => {
                    let attempt = u32::try_from(j.attempt).unwrap_or(u32::MAX);
                    super::attempts::started_at(env, id, attempt)
                        .await?
                        .or(j.started_at)
                }
                Some(j) => j.started_at,
                None => None,
            };
            let now = now_ms();
            let job = access::check_job_token(id, token, job, now, |j: &JobRow| {
                let suspended = j.suspended_until(now);
                let expires_at =
                    access::token_expires_at(started, j.time_limit_s, grace_s, suspended);
                (j.token_hash.as_str(), j.state(), expires_at)
            })?;
            Caller::Job(JobCaller(Box::new(job)))
        }
    })
}

/// The user a session cookie or an API token names; a cookie-authenticated write must come from
/// this server's own origin (CSRF), checked once the session is found.
async fn user(credential: UserCredential<'_>, req: &Request, env: &Env) -> ApiResult<User> {
    #[derive(Deserialize)]
    struct Row {
        id: String,
        email: String,
        email_verified_at: Option<i64>,
    }
    let (row, session_hash, token_hash): (Option<Row>, _, _) = match credential {
        UserCredential::ApiToken(token) => {
            let hash = access::hash_token(token);
            let row = db::first(
                env,
                "SELECT u.id, u.email, u.email_verified_at FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ?",
                &[s(&hash)],
            )
            .await?;
            (row, None, Some(hash))
        }
        UserCredential::Session { token, write } => {
            let hash = access::hash_token(token);
            let row = db::first(
                env,
                "SELECT u.id, u.email, u.email_verified_at FROM sessions x JOIN users u ON u.id = x.user_id WHERE x.token_hash = ? AND x.expires_at > ?",
                &[s(&hash), n(now_ms())],
            )
            .await?;
            if write && row.is_some() {
                access::check_origin(
                    http::header(req, "origin").as_deref(),
                    &http::own_origin(req)?.0,
                )?;
            }
            (row, Some(hash), None)
        }
    };
    let row = row.ok_or_else(access::unauthenticated)?;
    Ok(User {
        id: row.id,
        email: row.email,
        email_verified: row.email_verified_at.is_some(),
        session_hash,
        token_hash,
    })
}
