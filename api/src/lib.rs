//! The wire contract of Onramp: every request and answer of the edge's HTTP API and of the
//! runner contract, the [`ErrorCode`]s with their HTTP statuses, and a job's [`JobState`]. The
//! edge writes these types, the app, the CLI and the tests read them, and the runner reads and
//! writes its own; `/api/openapi.json` is generated from them ([`schema`]).
//!
//! serde and schemars only (and `time` for RFC 3339, [`time`]): no I/O, builds for native and wasm32. Wire types are kept apart from
//! the domain types of `jobspec` and the edge's storage rows; golden files under `golden/` pin
//! their JSON.

pub mod accounts;
pub mod artifacts;
pub mod backends;
pub mod credits;
pub mod datasets;
pub mod error;
pub mod experiments;
pub mod job_state;
pub mod jobs;
pub mod results;
pub mod runner;
/// A sample of every request and answer, for tests (the edge's OpenAPI test answers each route
/// with its sample): not in the product's build.
#[cfg(any(test, feature = "samples"))]
pub mod samples;
pub mod schema;
pub mod time;

pub use accounts::{
    Account, Credentials, LogoutEverywhere, NewPassword, NewToken, Outbox, OutboxMail,
    PasswordChange, PasswordChanged, ResetRequest, ResetRequested, SignedOut, SignedOutEverywhere,
    TokenCreated, TokenInfo, TokenList, TokenRevoked, VerificationSent, Verified, VerifyRequest,
};
pub use artifacts::{
    Artifact, ArtifactDeleted, ArtifactList, ArtifactUsage, NewUpload, ResumeCheckpoint, Upload,
    human_size,
};
pub use backends::{
    AdminBackend, AdminBackendList, BackendHealth, BackendKind, BackendList, Bindings, Check,
    HealthReport, Liveness, PublicBackend, Reconciled,
};
pub use credits::{
    Ledger, LedgerEntry, LedgerKind, NewPromoCode, PromoCodeCreated, RedeemRequest, Redeemed,
    Refund, RefundAnswer, RefundRequest,
};
pub use datasets::{Dataset, DatasetDeleted, DatasetList, NewDataset, TokenizerFileStored};
pub use error::{ErrorBody, ErrorCode, ErrorEnvelope, InvalidSpecDetails};
pub use experiments::{
    Experiment, ExperimentChange, ExperimentDeleted, ExperimentJob, ExperimentUsage, NewExperiment,
    PlanSummary, SavedExperiment,
};
pub use job_state::JobState;
pub use jobs::{
    CheckpointEntry, CheckpointList, Job, JobAttempt, JobList, LogAccepted, LogChunk, Messages,
    MetricPoint, MetricsPage, Report, ReportAccepted, Severity, SpecBody, SpecDiagnostic,
    SubmitRequest,
};
