//! Who may call a route, and the name of every operation of the API.

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone.
    Public,
    /// A signed-in user: session cookie (with an Origin check on writes) or an API token.
    User,
    /// Anyone; a signed-in user (as for `User`) is recognised, a missing or failing credential
    /// leaves the caller anonymous (what is unpublished shows to its owner only).
    MaybeUser,
    /// `Authorization: Bearer <ADMIN_TOKEN>`.
    Admin,
    /// The job's own process: `Authorization: Bearer <job token>`.
    JobToken,
}

/// Every operation of the API; the dispatcher matches on it exhaustively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteId {
    Health,
    AdminHealth,
    OpenApi,
    Signup,
    Login,
    VerifyEmail,
    ResendVerification,
    RequestPasswordReset,
    ResetPassword,
    ChangePassword,
    Logout,
    LogoutEverywhere,
    Me,
    CreateToken,
    ListTokens,
    RevokeToken,
    Ledger,
    Redeem,
    AdminPromoCodes,
    AdminReconcile,
    AdminBackends,
    AdminRefund,
    AdminOutbox,
    Backends,
    SubmitJob,
    ListJobs,
    GetJob,
    JobLogs,
    JobMetrics,
    CancelJob,
    JobReport,
    JobLogPush,
    JobCheckpoint,
    ListCheckpoints,
    StartUpload,
    UploadPart,
    ListArtifacts,
    GetArtifact,
    DeleteArtifact,
    CreateDataset,
    UploadDatasetPart,
    ListDatasets,
    GetDataset,
    DeleteDataset,
    JobDataset,
    JobResume,
    JobResumeFile,
    ModelTokenizer,
    AdminPutTokenizer,
    CreateExperiment,
    GetExperiment,
    GetExperimentArtifact,
    ChangeExperiment,
    DeleteExperiment,
}
