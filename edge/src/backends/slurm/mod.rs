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
pub mod credentials;
pub mod jwt;
pub mod request;
pub mod script;
pub mod state;
pub mod version;

pub use backend::SlurmBackend;
pub use credentials::{Credentials, DEFAULT_USER};
pub use request::{DEFAULT_RETENTION_S, SubmitOptions, is_reserved_env, submit_body};
pub use script::{ReportHook, job_script};
pub use state::{JobStatus, parse_job, parse_submit};
pub use version::{ApiVersion, OPENAPI_PATH, newest_served, served};
