//! The Slurm backend adapter, as pure code: a `ValidSpec` becomes a job script and a slurmrestd
//! job-submit request, slurmrestd's answers become job states, exit codes and reasons, and every
//! endpoint is spelled for data parsers v0.0.40 to v0.0.43 (a backend names its own, or the edge
//! picks the newest that slurmrestd's `/openapi/v3` lists: [`newest_served`]). The edge's worker
//! does the HTTP calls; nothing here does I/O, so all of it is tested natively.
//!
//! slurmrestd authenticates with JWT: every request carries `X-SLURM-USER-NAME` and
//! `X-SLURM-USER-TOKEN` ([`Credentials`]): a token pasted into the configuration, or one the
//! edge mints per call from the cluster's key ([`jwt`]). The job itself reports to the edge: its script posts
//! `{"state": "running"}` when it starts, each metrics line its training prints, and the final
//! state with the exit code, and it pushes its log, which slurmrestd cannot serve ([`script`]).
//! A waiting job's `state_reason` becomes a reason code and words in zh-CN and en ([`state`]). A job killed by Slurm (cancel, time limit, node
//! failure) cannot report; the edge learns that by polling ([`state`]).

pub mod backend;
pub mod jwt;
pub mod request;
pub mod script;
pub mod state;

pub use backend::SlurmBackend;
pub use request::{SubmitOptions, submit_body};
pub use script::{ReportHook, job_script};
pub use state::{JobStatus, parse_job, parse_submit};

/// The slurmrestd data parser versions the adapter speaks (Slurm 23.11 to 25.05 serve them; a
/// release serves its own and the two before it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApiVersion {
    V0040,
    V0041,
    V0042,
    V0043,
}

impl ApiVersion {
    pub const ALL: [ApiVersion; 4] = [
        ApiVersion::V0040,
        ApiVersion::V0041,
        ApiVersion::V0042,
        ApiVersion::V0043,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V0040 => "v0.0.40",
            ApiVersion::V0041 => "v0.0.41",
            ApiVersion::V0042 => "v0.0.42",
            ApiVersion::V0043 => "v0.0.43",
        }
    }

    /// Parses `v0.0.41` or `0.0.41`; anything else names what is supported.
    pub fn parse(s: &str) -> Result<ApiVersion, String> {
        let s = s.trim();
        let s = s.strip_prefix('v').unwrap_or(s);
        ApiVersion::ALL
            .into_iter()
            .find(|v| &v.as_str()[1..] == s)
            .ok_or_else(|| {
                format!(
                    "slurmrestd data parser {s:?} is not supported; use v0.0.40, v0.0.41, v0.0.42 or v0.0.43"
                )
            })
    }

    /// `POST` here with [`submit_body`].
    pub fn submit_path(self) -> String {
        format!("/slurm/{}/job/submit", self.as_str())
    }

    /// `GET` here for the job's state ([`parse_job`]); `DELETE` here cancels it.
    pub fn job_path(self, slurm_job_id: u64) -> String {
        format!("/slurm/{}/job/{slurm_job_id}", self.as_str())
    }

    /// `GET` here for every job slurmctld still knows (the edge finds its own by name).
    pub fn jobs_path(self) -> String {
        format!("/slurm/{}/jobs", self.as_str())
    }

    /// `GET` here to see that slurmrestd and slurmctld answer.
    pub fn ping_path(self) -> String {
        format!("/slurm/{}/ping", self.as_str())
    }
}

/// `GET` here (any version's token works) for the OpenAPI document that lists the data parsers
/// this slurmrestd serves ([`newest_served`]).
pub const OPENAPI_PATH: &str = "/openapi/v3";

/// The data parsers the adapter speaks among those slurmrestd's OpenAPI document has paths for
/// (`/slurm/v0.0.42/job/submit`, …), oldest first; an error when the document lists no paths.
pub fn served(openapi: &serde_json::Value) -> Result<Vec<ApiVersion>, String> {
    let paths = openapi
        .get("paths")
        .and_then(serde_json::Value::as_object)
        .ok_or("slurmrestd's /openapi/v3 has no paths")?;
    let listed: std::collections::BTreeSet<&str> = paths
        .keys()
        .filter_map(|p| p.strip_prefix("/slurm/")?.split('/').next())
        .collect();
    Ok(ApiVersion::ALL
        .into_iter()
        .filter(|v| listed.contains(v.as_str()))
        .collect())
}

/// The newest data parser that both slurmrestd and the adapter speak; an error names what the
/// document lists.
pub fn newest_served(openapi: &serde_json::Value) -> Result<ApiVersion, String> {
    served(openapi)?.last().copied().ok_or_else(|| {
        let listed: Vec<&str> = openapi
            .get("paths")
            .and_then(serde_json::Value::as_object)
            .map(|p| {
                p.keys()
                    .filter(|k| k.starts_with("/slurm/"))
                    .map(String::as_str)
                    .take(3)
                    .collect()
            })
            .unwrap_or_default();
        format!(
            "slurmrestd serves none of the data parsers v0.0.40 to v0.0.43 (its paths: {listed:?}…)"
        )
    })
}

/// How the edge proves itself to slurmrestd.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// A token pasted into the configuration (`secret`: `"<user>:<JWT>"`; a bare JWT is the user
    /// `onramp`'s). It lasts as long as whoever made it said.
    Token { user: String, token: String },
    /// The cluster's HS256 key (`jwt_key`, with `user`): a token per call ([`jwt::mint`]).
    Key { user: String, key: Vec<u8> },
}

/// The Slurm user when the configuration names none.
pub const DEFAULT_USER: &str = "onramp";

impl Credentials {
    /// From a backend's configuration; errors name the field.
    pub fn from_config(c: &crate::backends::BackendConfig) -> Result<Credentials, String> {
        match (&c.jwt_key, c.secret.is_empty()) {
            (Some(_), false) => Err(format!(
                "BACKENDS: backend {:?} has both secret and jwt_key; give one",
                c.name
            )),
            (Some(k), true) => Ok(Credentials::Key {
                user: c.user.clone().unwrap_or_else(|| DEFAULT_USER.into()),
                key: jwt::decode_key(k)
                    .map_err(|e| format!("BACKENDS: backend {:?}: {e}", c.name))?,
            }),
            (None, _) => {
                let (user, token) = match c.secret.split_once(':') {
                    Some((u, t)) if !u.is_empty() => (u.to_string(), t.to_string()),
                    _ => (DEFAULT_USER.to_string(), c.secret.clone()),
                };
                if c.user.as_ref().is_some_and(|u| *u != user) {
                    return Err(format!(
                        "BACKENDS: backend {:?} names user {:?}, but its secret is {user:?}'s token",
                        c.name, c.user
                    ));
                }
                Ok(Credentials::Token { user, token })
            }
        }
    }

    pub fn user(&self) -> &str {
        match self {
            Credentials::Token { user, .. } | Credentials::Key { user, .. } => user,
        }
    }

    /// The JWT headers of a request made at `now_ms`.
    pub fn headers(&self, now_ms: i64) -> [(&'static str, String); 2] {
        let token = match self {
            Credentials::Token { token, .. } => token.clone(),
            Credentials::Key { user, key } => jwt::mint(key, user, now_ms.div_euclid(1000)),
        };
        [
            ("X-SLURM-USER-NAME", self.user().to_string()),
            ("X-SLURM-USER-TOKEN", token),
        ]
    }
}

/// Never shows a token or a key.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Token { user, .. } => write!(f, "Token {{ user: {user:?}, .. }}"),
            Credentials::Key { user, .. } => write!(f, "Key {{ user: {user:?}, .. }}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_per_version() {
        let v = ApiVersion::parse("0.0.41").unwrap();
        assert_eq!(v.submit_path(), "/slurm/v0.0.41/job/submit");
        assert_eq!(v.job_path(42), "/slurm/v0.0.41/job/42");
        assert_eq!(ApiVersion::V0042.ping_path(), "/slurm/v0.0.42/ping");
        assert_eq!(ApiVersion::parse("v0.0.40"), Ok(ApiVersion::V0040));
        assert!(
            ApiVersion::parse("v0.0.38")
                .unwrap_err()
                .contains("v0.0.40")
        );
    }
    #[test]
    fn picks_the_newest_data_parser_slurmrestd_serves() {
        let doc = |paths: &[&str]| {
            let p: serde_json::Map<_, _> = paths
                .iter()
                .map(|p| (p.to_string(), serde_json::json!({})))
                .collect();
            serde_json::json!({ "openapi": "3.0.2", "paths": p })
        };
        // Slurm 24.11: v0.0.40 to v0.0.42 (and slurmdbd's paths, which do not count).
        let served = doc(&[
            "/slurm/v0.0.40/job/submit",
            "/slurm/v0.0.41/job/submit",
            "/slurm/v0.0.42/job/submit",
            "/slurmdb/v0.0.42/jobs",
        ]);
        assert_eq!(newest_served(&served), Ok(ApiVersion::V0042));
        let newer = doc(&["/slurm/v0.0.43/ping", "/slurm/v0.0.44/ping"]);
        assert_eq!(newest_served(&newer), Ok(ApiVersion::V0043));
        let old = newest_served(&doc(&["/slurm/v0.0.39/ping"])).unwrap_err();
        assert!(old.contains("v0.0.39"), "{old}");
        assert!(newest_served(&serde_json::json!({})).is_err());
    }

    #[test]
    fn credentials_from_a_token_or_a_key() {
        use crate::backends::BackendConfig;
        let config = |extra: serde_json::Value| {
            let mut v = serde_json::json!({"name": "hpc", "kind": "slurm", "url": "http://h"});
            if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
                o.extend(e.clone());
            }
            serde_json::from_value::<BackendConfig>(v).unwrap()
        };
        let pasted =
            Credentials::from_config(&config(serde_json::json!({"secret": "alice:eyJ.jwt"})));
        let [(n, u), (t, k)] = pasted.unwrap().headers(0);
        assert_eq!(
            (n, u.as_str(), t, k.as_str()),
            (
                "X-SLURM-USER-NAME",
                "alice",
                "X-SLURM-USER-TOKEN",
                "eyJ.jwt"
            )
        );
        let bare =
            Credentials::from_config(&config(serde_json::json!({"secret": "eyJ.jwt"}))).unwrap();
        assert_eq!(bare.user(), "onramp");

        let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        let minted =
            Credentials::from_config(&config(serde_json::json!({"jwt_key": key}))).unwrap();
        let [(_, user), (_, token)] = minted.headers(1_767_225_600_999);
        assert_eq!(user, "onramp");
        assert_eq!(
            token,
            jwt::mint(&(0u8..32).collect::<Vec<_>>(), "onramp", 1_767_225_600)
        );
        // A token per call: a later call carries a later token.
        assert_ne!(minted.headers(1_767_225_660_000)[1].1, token);
        let alice = Credentials::from_config(&config(
            serde_json::json!({"jwt_key": key, "user": "alice"}),
        ))
        .unwrap();
        assert_eq!(alice.headers(0)[0].1, "alice");
        assert!(
            !format!("{alice:?}").contains("AAEC")
                && !format!(
                    "{pasted:?}",
                    pasted = Credentials::from_config(&config(
                        serde_json::json!({"secret": "alice:eyJ.jwt"})
                    ))
                    .unwrap()
                )
                .contains("eyJ")
        );

        for (bad, field) in [
            (
                serde_json::json!({"jwt_key": key, "secret": "a:b"}),
                "both secret and jwt_key",
            ),
            (serde_json::json!({"jwt_key": "AAECAw=="}), "jwt_key"),
            (
                serde_json::json!({"secret": "alice:t", "user": "bob"}),
                "user",
            ),
        ] {
            let e = Credentials::from_config(&config(bad)).unwrap_err();
            assert!(e.contains("hpc") && e.contains(field), "{e}");
        }
    }
}
