//! The Slurm backend adapter, as pure code: a `ValidSpec` becomes a job script and a slurmrestd
//! job-submit request, slurmrestd's answers become job states, exit codes and reasons, and every
//! endpoint is spelled for data parsers v0.0.40, v0.0.41 and v0.0.42. The edge's worker does the
//! HTTP calls; nothing here does I/O, so all of it is tested natively.
//!
//! slurmrestd authenticates with JWT: every request carries `X-SLURM-USER-NAME` and
//! `X-SLURM-USER-TOKEN` ([`auth_headers`]). The job itself reports to the edge: its script posts
//! `{"state": "running"}` when it starts, each metrics line its training prints, and the final
//! state with the exit code, and it pushes its log, which slurmrestd cannot serve ([`script`]).
//! A waiting job's `state_reason` becomes a reason code and words in zh-CN and en ([`state`]). A job killed by Slurm (cancel, time limit, node
//! failure) cannot report; the edge learns that by polling ([`state`]).

pub mod backend;
pub mod request;
pub mod script;
pub mod state;

pub use backend::SlurmBackend;
pub use request::{SubmitOptions, submit_body};
pub use script::{ReportHook, job_script};
pub use state::{JobStatus, parse_job, parse_submit};

/// The slurmrestd data parser versions the adapter speaks (Slurm 23.11 to 25.05 serve them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiVersion {
    V0040,
    V0041,
    V0042,
}

impl ApiVersion {
    pub const ALL: [ApiVersion; 3] = [ApiVersion::V0040, ApiVersion::V0041, ApiVersion::V0042];

    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V0040 => "v0.0.40",
            ApiVersion::V0041 => "v0.0.41",
            ApiVersion::V0042 => "v0.0.42",
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
                    "slurmrestd data parser {s:?} is not supported; use v0.0.40, v0.0.41 or v0.0.42"
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

/// A Slurm backend's secret is `"<user>:<JWT>"`; a bare JWT is the user `onramp`'s.
pub fn credentials(secret: &str) -> (String, String) {
    match secret.split_once(':') {
        Some((u, t)) if !u.is_empty() => (u.to_string(), t.to_string()),
        _ => ("onramp".to_string(), secret.to_string()),
    }
}

/// The JWT headers of every slurmrestd request.
pub fn auth_headers(user: &str, token: &str) -> [(&'static str, String); 2] {
    [
        ("X-SLURM-USER-NAME", user.to_string()),
        ("X-SLURM-USER-TOKEN", token.to_string()),
    ]
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
        let [(n, u), (t, k)] = auth_headers("onramp", "jwt");
        assert_eq!(
            (n, u.as_str(), t, k.as_str()),
            ("X-SLURM-USER-NAME", "onramp", "X-SLURM-USER-TOKEN", "jwt")
        );
    }
}
