//! Who may call a route, decided: what a request must show for its route's [`Access`] and what
//! then has to be looked up ([`lookup`]), and what the looked-up credential decides
//! ([`unauthenticated`], [`check_job_token`]); how a caller shows who they are (the bearer header,
//! the session cookie, the CSRF origin check of cookie-authenticated writes), and tokens kept as
//! hashes and compared in constant time. The worker's dispatcher applies these once per request,
//! as the route table says, before any handler runs (`worker/access.rs`).

use crate::error::{ApiError, ErrorCode};
use crate::jobs::JobState;
use crate::routes::{Access, Route};
use sha2::{Digest, Sha256};

pub const SESSION_COOKIE: &str = "onramp_session";

/// SHA-256 of a token, hex: what the database stores instead of the token.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Constant-time equality, for comparing secrets.
pub fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token in `Authorization: Bearer <token>`, if that is the header's form.
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let h = header?.trim();
    let (scheme, token) = h.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The value of one cookie in a `Cookie` header.
pub fn cookie<'a>(header: Option<&'a str>, name: &str) -> Option<&'a str> {
    header?.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name && !v.is_empty()).then_some(v)
    })
}

/// CSRF defence for cookie-authenticated writes: the browser's `Origin` must be this server's
/// origin. A missing Origin is refused too: every browser sends one on a cross-site POST, and
/// non-browser clients use API tokens, which are not ambient and need no such check.
pub fn check_origin(origin: Option<&str>, own_origin: &str) -> Result<(), ApiError> {
    match origin {
        Some(o) if o.trim_end_matches('/') == own_origin => Ok(()),
        Some(o) => Err(ApiError::new(
            ErrorCode::BadOrigin,
            format!("requests from origin {o:?} may not use this session"),
        )),
        None => Err(ApiError::new(
            ErrorCode::BadOrigin,
            "a cookie-authenticated write needs an Origin header",
        )),
    }
}

/// The credentials a request carries: its `Authorization` and `Cookie` headers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Presented<'a> {
    pub authorization: Option<&'a str>,
    pub cookie: Option<&'a str>,
}

/// How a signed-in user shows who they are, to be looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserCredential<'a> {
    /// An API token (`Authorization: Bearer`); it wins over a cookie sent with it.
    ApiToken(&'a str),
    /// The session cookie; on a write, the request's `Origin` must be the edge's own
    /// ([`check_origin`], after the session is found).
    Session { token: &'a str, write: bool },
}

/// What the worker has to look up before a route's handler may run, decided from the route's
/// access and the request's headers alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// Nothing: a `Public` route.
    Anyone,
    /// A `User` route's user; none found is [`unauthenticated`].
    User(UserCredential<'a>),
    /// A `MaybeUser` route's user, if a credential was sent; none found, or any failure, leaves
    /// the caller anonymous.
    MaybeUser(Option<UserCredential<'a>>),
    /// Nothing: the admin token matched.
    Admin,
    /// The job `id`, whose token must be `token` ([`check_job_token`]).
    Job { id: &'a str, token: &'a str },
}

/// What a request to `route` must show, with `param` its `{id}` and `admin_token` the
/// configured `ADMIN_TOKEN` (empty: no admin access at all). Refuses what no lookup can mend:
/// a missing credential (401), a wrong admin token (403), a malformed job id (404).
pub fn lookup<'a>(
    route: &Route,
    presented: Presented<'a>,
    admin_token: &str,
    param: &'a str,
) -> Result<Lookup<'a>, ApiError> {
    let user = || {
        if let Some(token) = bearer(presented.authorization) {
            return Some(UserCredential::ApiToken(token));
        }
        let token = cookie(presented.cookie, SESSION_COOKIE)?;
        let write = route.method != "GET";
        Some(UserCredential::Session { token, write })
    };
    match route.access {
        Access::Public => Ok(Lookup::Anyone),
        Access::User => user().map(Lookup::User).ok_or_else(unauthenticated),
        Access::MaybeUser => Ok(Lookup::MaybeUser(user())),
        Access::Admin => admin(presented.authorization, admin_token).map(|()| Lookup::Admin),
        Access::JobToken => {
            crate::wire::check_id(param)?;
            let token = bearer(presented.authorization).ok_or_else(|| {
                ApiError::new(
                    ErrorCode::Unauthenticated,
                    "reports need Authorization: Bearer <job token>",
                )
            })?;
            Ok(Lookup::Job { id: param, token })
        }
    }
}

/// No signed-in user: no credential, or one that names no session or API token.
pub fn unauthenticated() -> ApiError {
    ApiError::new(
        ErrorCode::Unauthenticated,
        "sign in first (session cookie or API token)",
    )
}

/// `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time; no token configured means
/// no admin access at all.
fn admin(authorization: Option<&str>, configured: &str) -> Result<(), ApiError> {
    match bearer(authorization) {
        Some(t) if !configured.is_empty() && same_secret(t, configured) => Ok(()),
        Some(_) => Err(ApiError::new(
            ErrorCode::Forbidden,
            "this admin token is not valid",
        )),
        None => Err(ApiError::new(
            ErrorCode::Unauthenticated,
            "admin routes need Authorization: Bearer <admin token>",
        )),
    }
}

/// A job's own token, once the job is looked up (`view` reads its token hash, its state and when
/// its token stops, [`token_expires_at`]): the job must exist (404), the token must be its own
/// (403, compared in constant time), and a job that has ended, or has run past its time limit
/// and the grace after it, takes nothing more from its token: no state, message, metric, log or
/// artifact (409). The job, when its token may act for it at `now`.
pub fn check_job_token<J>(
    id: &str,
    token: &str,
    job: Option<J>,
    now: i64,
    view: impl Fn(&J) -> (&str, JobState, Option<i64>),
) -> Result<J, ApiError> {
    let Some(job) = job else {
        return Err(ApiError::not_found(format!("no job {id}")));
    };
    let (token_hash, state, expires_at) = view(&job);
    if !same_secret(&hash_token(token), token_hash) {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "this token does not belong to this job",
        ));
    }
    if state.is_terminal() {
        return Err(ApiError::new(
            ErrorCode::AlreadyFinished,
            format!(
                "job {id} has ended ({}); its token can no longer report",
                state.as_str()
            ),
        ));
    }
    if let Some(at) = expires_at.filter(|at| now > *at) {
        return Err(ApiError::new(
            ErrorCode::AlreadyFinished,
            format!(
                "job {id} has run past its time limit and the grace after it (its token stopped at {}); \
                 its token can no longer report",
                crate::time::format_rfc3339_ms(at)
            ),
        ));
    }
    Ok(job)
}

/// When a job's token stops: `grace_s` after the job's time limit has run out since it started,
/// whatever it reports meanwhile, later by the `suspended_ms` its cluster held it suspended (a
/// cluster's time limit counts run time only); `None` while it has not started (or its row
/// predates time limits), when only its state ends the token.
pub fn token_expires_at(
    started_at: Option<i64>,
    time_limit_s: Option<i64>,
    grace_s: i64,
    suspended_ms: i64,
) -> Option<i64> {
    let limit_ms = time_limit_s?.saturating_add(grace_s).saturating_mul(1000);
    Some(
        started_at?
            .saturating_add(limit_ms)
            .saturating_add(suspended_ms.max(0)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn headers_and_cookies() {
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(Some("Bearer ")), None);
        assert_eq!(
            cookie(Some("a=1; onramp_session=xyz"), SESSION_COOKIE),
            Some("xyz")
        );
        assert_eq!(cookie(Some("onramp_session="), SESSION_COOKIE), None);
    }

    #[test]
    fn origin_check() {
        let own = "http://127.0.0.1:8787";
        assert!(check_origin(Some(own), own).is_ok());
        assert_eq!(
            check_origin(Some("http://evil.cn"), own)
                .unwrap_err()
                .status,
            403
        );
        assert!(check_origin(None, own).is_err());
    }

    #[test]
    fn token_hashes_are_sha256_hex() {
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("a", "ab"));
    }

    fn route(access: Access, method: &'static str) -> Route {
        let id = crate::routes::RouteId::Me;
        let (path, summary, status) = ("/api/x", "", 200);
        Route {
            id,
            method,
            path,
            access,
            summary,
            status,
        }
    }

    /// Ways a request can present itself: nothing, an API token, a session cookie, both, a
    /// header of another scheme with a cookie, and the admin token with a cookie.
    const NOTHING: Presented<'static> = Presented {
        authorization: None,
        cookie: None,
    };
    const TOKEN: Presented<'static> = Presented {
        authorization: Some("Bearer t1"),
        cookie: None,
    };
    const SESSION: Presented<'static> = Presented {
        authorization: None,
        cookie: Some("a=1; onramp_session=s1"),
    };
    const BOTH: Presented<'static> = Presented {
        authorization: Some("Bearer t1"),
        cookie: Some("onramp_session=s1"),
    };
    const BASIC: Presented<'static> = Presented {
        authorization: Some("Basic t1"),
        cookie: Some("onramp_session=s1"),
    };
    const ADMIN: Presented<'static> = Presented {
        authorization: Some("Bearer adm"),
        cookie: Some("onramp_session=s1"),
    };

    fn decide(
        access: Access,
        method: &'static str,
        presented: Presented<'static>,
        configured: &str,
        param: &'static str,
    ) -> Result<Lookup<'static>, ApiError> {
        lookup(&route(access, method), presented, configured, param)
    }

    /// A refusal's status, code and message.
    fn refused(r: Result<Lookup<'_>, ApiError>) -> (u16, ErrorCode, String) {
        let e = r.unwrap_err();
        (e.status, e.code, e.message)
    }

    fn session(write: bool) -> UserCredential<'static> {
        UserCredential::Session { token: "s1", write }
    }

    #[test]
    fn a_public_route_asks_nothing() {
        for presented in [NOTHING, TOKEN, SESSION, BOTH, BASIC, ADMIN] {
            let decided = decide(Access::Public, "POST", presented, "adm", "");
            assert_eq!(decided, Ok(Lookup::Anyone));
        }
    }

    #[test]
    fn a_user_route_takes_an_api_token_before_a_session_and_writes_check_the_origin() {
        let user = |presented, method| decide(Access::User, method, presented, "adm", "");
        let api = Lookup::User(UserCredential::ApiToken("t1"));
        let signin = (401, ErrorCode::Unauthenticated, unauthenticated().message);
        assert_eq!(refused(user(NOTHING, "GET")), signin);
        assert_eq!(user(TOKEN, "GET"), Ok(api));
        assert_eq!(user(BOTH, "POST"), Ok(api));
        assert_eq!(user(SESSION, "GET"), Ok(Lookup::User(session(false))));
        assert_eq!(user(SESSION, "POST"), Ok(Lookup::User(session(true))));
        assert_eq!(user(BASIC, "POST"), Ok(Lookup::User(session(true))));
        let basic_alone = Presented {
            cookie: None,
            ..BASIC
        };
        assert_eq!(refused(user(basic_alone, "GET")), signin);

        let maybe = |presented| decide(Access::MaybeUser, "GET", presented, "adm", "");
        assert_eq!(maybe(NOTHING), Ok(Lookup::MaybeUser(None)));
        let api = UserCredential::ApiToken("t1");
        assert_eq!(maybe(TOKEN), Ok(Lookup::MaybeUser(Some(api))));
        assert_eq!(maybe(SESSION), Ok(Lookup::MaybeUser(Some(session(false)))));
    }

    #[test]
    fn an_admin_route_takes_the_configured_admin_token_only() {
        let admin =
            |presented, configured| decide(Access::Admin, "POST", presented, configured, "");
        assert_eq!(admin(ADMIN, "adm"), Ok(Lookup::Admin));
        let needs = "admin routes need Authorization: Bearer <admin token>".to_string();
        let needs = (401, ErrorCode::Unauthenticated, needs);
        assert_eq!(refused(admin(NOTHING, "adm")), needs);
        assert_eq!(refused(admin(SESSION, "adm")), needs);
        let invalid = "this admin token is not valid".to_string();
        let invalid = (403, ErrorCode::Forbidden, invalid);
        assert_eq!(refused(admin(TOKEN, "adm")), invalid);
        let longer = Presented {
            authorization: Some("Bearer admx"),
            cookie: None,
        };
        assert_eq!(refused(admin(longer, "adm")), invalid);
        // No ADMIN_TOKEN configured: no admin at all, whatever is sent.
        assert_eq!(refused(admin(ADMIN, "")), invalid);
    }

    #[test]
    fn a_job_token_route_checks_the_id_then_asks_for_the_token() {
        let job = |presented, param| decide(Access::JobToken, "POST", presented, "adm", param);
        let lookup = Lookup::Job {
            id: "ab12",
            token: "t1",
        };
        assert_eq!(job(TOKEN, "ab12"), Ok(lookup));
        let bare = "reports need Authorization: Bearer <job token>".to_string();
        let bare = (401, ErrorCode::Unauthenticated, bare);
        assert_eq!(refused(job(SESSION, "ab12")), bare);
        // The id is checked first: a malformed one is "not found" whatever the token.
        assert_eq!(refused(job(NOTHING, "zz")).0, 404);
        assert_eq!(refused(job(TOKEN, "")).0, 404);
    }

    #[test]
    fn a_job_token_is_its_own_jobs_while_the_job_lives() {
        let hash = hash_token("t1");
        type View<'a> = (&'a str, JobState, Option<i64>);
        fn check<'a>(token: &str, job: Option<View<'a>>) -> Result<View<'a>, ApiError> {
            check_job_token("ab12", token, job, 5_000, |j| *j)
        }
        let running = Some((hash.as_str(), JobState::Running, None));
        assert_eq!(
            check("t1", running),
            Ok((hash.as_str(), JobState::Running, None))
        );
        assert!(check("t1", Some((&hash, JobState::Dispatching, None))).is_ok());
        let e = check("t1", None).unwrap_err();
        assert_eq!((e.status, e.message.as_str()), (404, "no job ab12"));
        let e = check("t2", running).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ErrorCode::Forbidden,
                "this token does not belong to this job"
            )
        );
        let e = check("t1", Some((&hash, JobState::Succeeded, None))).unwrap_err();
        assert_eq!(e.code, ErrorCode::AlreadyFinished);
        assert_eq!(
            e.message,
            "job ab12 has ended (succeeded); its token can no longer report"
        );
        // The token is checked before the state: another job's token learns nothing.
        let e = check("t2", Some((&hash, JobState::Failed, None))).unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden);
        // A running job's token stops once its time limit and grace are over, reports or not.
        assert!(check("t1", Some((&hash, JobState::Running, Some(5_000)))).is_ok());
        let e = check("t1", Some((&hash, JobState::Running, Some(4_999)))).unwrap_err();
        assert_eq!((e.status, e.code), (409, ErrorCode::AlreadyFinished));
        assert!(e.message.contains("past its time limit"), "{}", e.message);
        let e = check("t2", Some((&hash, JobState::Running, Some(0)))).unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden);
    }

    #[test]
    fn a_token_stops_after_the_time_limit_and_grace_from_the_start() {
        assert_eq!(token_expires_at(Some(1_000), Some(60), 30, 0), Some(91_000));
        assert_eq!(token_expires_at(None, Some(60), 30, 0), None, "not started");
        assert_eq!(
            token_expires_at(Some(1_000), None, 30, 0),
            None,
            "an old row"
        );
        assert_eq!(
            token_expires_at(Some(i64::MAX - 1), Some(i64::MAX), 30, 0),
            Some(i64::MAX)
        );
        // Suspended by its cluster for 20 s: it may report 20 s longer.
        assert_eq!(
            token_expires_at(Some(1_000), Some(60), 30, 20_000),
            Some(111_000)
        );
        assert_eq!(
            token_expires_at(Some(1_000), Some(60), 30, -1),
            Some(91_000)
        );
    }

    /// The route table is the gate: no route but the public ones lets a request without
    /// credentials through, the admin routes are exactly those under `/api/admin/`, and the
    /// job's own token reaches only the job's writes and its reads of the dataset its spec names
    /// and of the checkpoint of the job it continues.
    #[test]
    fn the_route_table_decides_every_route() {
        for r in crate::routes::ROUTES {
            let anonymous = lookup(r, Presented::default(), "adm", "ab12");
            match r.access {
                Access::Public => assert_eq!(anonymous, Ok(Lookup::Anyone), "{r:?}"),
                Access::MaybeUser => assert_eq!(anonymous, Ok(Lookup::MaybeUser(None)), "{r:?}"),
                _ => assert_eq!(anonymous.unwrap_err().status, 401, "{r:?}"),
            }
            assert_eq!(
                r.path.starts_with("/api/admin/"),
                r.access == Access::Admin,
                "{r:?}"
            );
            // A job writes its reports, its log and its artifacts' parts; its owner reads them.
            let job_write = (r.method == "POST"
                && ["/report", "/log"].iter().any(|e| r.path.ends_with(e)))
                || (matches!(r.method, "POST" | "PUT") && r.path.ends_with("/artifacts/{name}"));
            let job_read = r.method == "GET"
                && (r.path == "/api/jobs/{id}/dataset"
                    || r.path.starts_with("/api/jobs/{id}/resume"));
            assert_eq!(job_write || job_read, r.access == Access::JobToken, "{r:?}");
        }
    }

    proptest! {
        #[test]
        fn parsing_never_panics(s in "\\PC{0,80}") {
            let _ = bearer(Some(&s));
            let _ = cookie(Some(&s), SESSION_COOKIE);
            let _ = check_origin(Some(&s), "http://x");
        }
    }
}
