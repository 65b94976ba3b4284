//! `GET /api/openapi.json`: an OpenAPI 3.1 document generated from the route table and the wire
//! types of the `api` crate, so it cannot drift from what the dispatcher serves or what the
//! handlers answer.

use crate::routes::{Access, ROUTES, RouteId};
use api::schema::Schemas;
use serde_json::{Map, Value, json};

/// What a route reads and answers, as JSON Schemas; `None` where there is no JSON (no body, a
/// binary download, TOML text).
fn bodies(id: RouteId, s: &mut Schemas) -> (Option<Value>, Option<Value>) {
    use RouteId::*;
    match id {
        Health => (None, Some(s.of::<api::Liveness>())),
        AdminHealth => (None, Some(s.of::<api::HealthReport>())),
        OpenApi => (None, Some(json!({"type": "object"}))),
        Signup | Login => io::<api::Credentials, api::Account>(s),
        VerifyEmail => io::<api::VerifyRequest, api::Verified>(s),
        ResendVerification => (None, Some(s.of::<api::VerificationSent>())),
        RequestPasswordReset => io::<api::ResetRequest, api::ResetRequested>(s),
        ResetPassword => io::<api::NewPassword, api::Account>(s),
        AdminOutbox => (None, Some(s.of::<api::Outbox>())),
        Logout => (None, Some(s.of::<api::SignedOut>())),
        ChangePassword => io::<api::PasswordChange, api::PasswordChanged>(s),
        LogoutEverywhere => io::<api::LogoutEverywhere, api::SignedOutEverywhere>(s),
        Me => (None, Some(s.of::<api::Account>())),
        CreateToken => io::<api::NewToken, api::TokenCreated>(s),
        ListTokens => (None, Some(s.of::<api::TokenList>())),
        RevokeToken => (None, Some(s.of::<api::TokenRevoked>())),
        Ledger => (None, Some(s.of::<api::Ledger>())),
        Redeem => io::<api::RedeemRequest, api::Redeemed>(s),
        AdminPromoCodes => io::<api::NewPromoCode, api::PromoCodeCreated>(s),
        AdminReconcile => (None, Some(s.of::<api::Reconciled>())),
        AdminBackends => (None, Some(s.of::<api::AdminBackendList>())),
        AdminRefund => io::<api::RefundRequest, api::RefundAnswer>(s),
        Backends => (None, Some(s.of::<api::BackendList>())),
        SubmitJob => io::<api::SubmitRequest, api::Job>(s),
        ListJobs => (None, Some(s.of::<api::JobList>())),
        GetJob | CancelJob => (None, Some(s.of::<api::Job>())),
        JobLogs => (None, Some(s.of::<api::LogChunk>())),
        JobMetrics => (None, Some(s.of::<api::MetricsPage>())),
        JobReport => io::<api::Report, api::ReportAccepted>(s),
        JobLogPush => (None, Some(s.of::<api::LogAccepted>())),
        JobCheckpoint => (None, None),
        ListCheckpoints => (None, Some(s.of::<api::CheckpointList>())),
        StartUpload => io::<api::NewUpload, api::Upload>(s),
        UploadPart => (None, Some(s.of::<api::Upload>())),
        ListArtifacts => (None, Some(s.of::<api::ArtifactList>())),
        GetArtifact => (None, None),
        DeleteArtifact => (None, Some(s.of::<api::ArtifactDeleted>())),
        CreateDataset => io::<api::NewDataset, api::Dataset>(s),
        UploadDatasetPart | GetDataset => (None, Some(s.of::<api::Dataset>())),
        ListDatasets => (None, Some(s.of::<api::DatasetList>())),
        DeleteDataset => (None, Some(s.of::<api::DatasetDeleted>())),
        JobDataset | JobResumeFile | ModelTokenizer => (None, None),
        JobResume => (None, Some(s.of::<api::ResumeCheckpoint>())),
        AdminPutTokenizer => (None, Some(s.of::<api::TokenizerFileStored>())),
        CreateExperiment => io::<api::NewExperiment, api::SavedExperiment>(s),
        GetExperiment => (None, Some(s.of::<api::Experiment>())),
        GetExperimentArtifact => (None, None),
        ChangeExperiment => io::<api::ExperimentChange, api::SavedExperiment>(s),
        DeleteExperiment => (None, Some(s.of::<api::ExperimentDeleted>())),
    }
}

/// A route that reads `I` and answers `O`.
fn io<I: api::schema::JsonSchema, O: api::schema::JsonSchema>(
    s: &mut Schemas,
) -> (Option<Value>, Option<Value>) {
    (Some(s.of::<I>()), Some(s.of::<O>()))
}

/// A route's path and header parameters, if it has any.
fn parameters(route: &crate::routes::Route) -> Option<Value> {
    let mut parameters = Vec::new();
    if route.path.contains("{id}") {
        parameters.push(json!({
            "name": "id", "in": "path", "required": true, "schema": {"type": "string"}
        }));
    }
    if matches!(
        route.id,
        RouteId::ModelTokenizer | RouteId::AdminPutTokenizer
    ) {
        parameters.push(json!({
            "name": "name", "in": "path", "required": true,
            "description": "one of the files of a Hugging Face tokenizer folder",
            "schema": {"type": "string", "enum": api::datasets::TOKENIZER_FILES}
        }));
    } else if route.path.contains("{name}") {
        parameters.push(json!({
            "name": "name", "in": "path", "required": true,
            "description": "the artifact's name; a '/' in it is sent as %2F",
            "schema": {"type": "string", "pattern": api::artifacts::NAME_PATTERN, "maxLength": api::artifacts::MAX_NAME_BYTES}
        }));
    }
    if matches!(route.id, RouteId::UploadPart | RouteId::UploadDatasetPart) {
        parameters.push(json!({
            "name": "part", "in": "query", "required": true,
            "description": "the part's number, from 1; parts arrive in order",
            "schema": {"type": "integer", "minimum": 1, "maximum": api::artifacts::MAX_PARTS}
        }));
    }
    if matches!(
        route.id,
        RouteId::GetArtifact
            | RouteId::GetExperimentArtifact
            | RouteId::JobDataset
            | RouteId::JobResumeFile
    ) {
        parameters.push(json!({
            "name": "Range", "in": "header", "required": false,
            "description": "one range of bytes (bytes=a-b, bytes=a-, bytes=-n): answered 206",
            "schema": {"type": "string"}
        }));
    }
    if route.id == RouteId::JobDataset {
        parameters.push(json!({
            "name": "id", "in": "query", "required": false,
            "description": "which uploaded dataset of the spec: its data.dataset (the default) or its eval.dataset",
            "schema": {"type": "string", "pattern": format!("^{}[0-9a-f]{{{}}}$", jobspec::validate::DATASET_ID_PREFIX, jobspec::validate::DATASET_ID_HEX)}
        }));
    }
    if route.id == RouteId::AdminOutbox {
        parameters.push(json!({
            "name": "to", "in": "query", "required": true,
            "description": "the address whose mails to list",
            "schema": {"type": "string", "format": "email", "maxLength": api::accounts::MAX_EMAIL_BYTES}
        }));
    }
    if matches!(route.id, RouteId::SubmitJob | RouteId::AdminRefund) {
        // What `wire::idempotency_key` accepts: one key, one job (or refund), whatever the retries.
        parameters.push(json!({
            "name": "Idempotency-Key", "in": "header", "required": true,
            "description": "1-128 visible ASCII characters; a retry with the same key gets the same answer",
            "schema": {"type": "string", "pattern": "^[!-~]{1,128}$"}
        }));
    }
    (!parameters.is_empty()).then_some(Value::Array(parameters))
}

/// An artifact's bytes: a part's request body, a download's answers (the whole file, or 206).
fn bytes_on_the_wire(id: RouteId, op: &mut Value) {
    let bytes =
        json!({"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}});
    match id {
        RouteId::UploadPart | RouteId::UploadDatasetPart => {
            op["requestBody"] = json!({"required": true, "content": bytes})
        }
        RouteId::GetArtifact
        | RouteId::GetExperimentArtifact
        | RouteId::JobDataset
        | RouteId::JobResumeFile => {
            op["responses"]["200"] = json!({"description": "the whole file", "content": bytes});
            op["responses"]["206"] =
                json!({"description": "the range asked for", "content": bytes});
        }
        RouteId::AdminPutTokenizer => {
            op["requestBody"] = json!({"required": true, "content": bytes});
        }
        RouteId::ModelTokenizer => {
            op["responses"]["200"] = json!({"description": "the file", "content": {
                "application/json": {"schema": {"type": "object"}},
                "text/plain": {"schema": {"type": "string"}}
            }});
        }
        _ => {}
    }
}

/// The whole document.
pub fn document() -> Value {
    let mut paths = Map::new();
    let mut schemas = Schemas::new();
    let error = schemas.of::<api::ErrorEnvelope>();
    for route in ROUTES {
        let (request, answer) = bodies(route.id, &mut schemas);
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        let mut op = json!({
            "operationId": format!("{:?}", route.id),
            "summary": route.summary,
            "responses": {
                route.status.to_string(): match &answer {
                    Some(schema) => json!({
                        "description": "success",
                        "content": {"application/json": {"schema": schema}}
                    }),
                    None => json!({"description": "success"}),
                },
                "default": {
                    "description": "error",
                    "content": {"application/json": {"schema": error}}
                }
            }
        });
        if route.id == RouteId::SubmitJob
            && let Some(schema) = &answer
        {
            // The same job, when the backend's answer did not come in time or on a retry.
            for status in ["200", "202"] {
                op["responses"][status] = json!({
                    "description": "the job, still dispatching or submitted before",
                    "content": {"application/json": {"schema": schema}}
                });
            }
        }
        bytes_on_the_wire(route.id, &mut op);
        if let Some(schema) = request {
            op["requestBody"] = json!({
                "required": !matches!(route.id, RouteId::CreateToken | RouteId::LogoutEverywhere),
                "content": {"application/json": {"schema": schema}}
            });
        }
        if let Some(p) = parameters(route) {
            op["parameters"] = p;
        }
        let security = match route.access {
            // Anyone may call: a signed-in caller only sees more (their own unpublished things).
            Access::Public | Access::MaybeUser => None,
            Access::User => Some(json!([{"session": []}, {"apiToken": []}])),
            Access::Admin => Some(json!([{"adminToken": []}])),
            Access::JobToken => Some(json!([{"jobToken": []}])),
        };
        if let Some(s) = security {
            op["security"] = s;
        }
        if let Some(obj) = entry.as_object_mut() {
            obj.insert(route.method.to_ascii_lowercase(), op);
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Onramp edge API", "version": crate::VERSION},
        "paths": paths,
        "components": {
            "securitySchemes": {
                "session": {"type": "apiKey", "in": "cookie", "name": crate::access::SESSION_COOKIE},
                "apiToken": {"type": "http", "scheme": "bearer"},
                "adminToken": {"type": "http", "scheme": "bearer"},
                "jobToken": {"type": "http", "scheme": "bearer"}
            },
            "schemas": schemas.into_components()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constraints the edge enforces are in the document, so that a client generated from
    /// it (or a fuzzer reading it) sends what the edge accepts.
    #[test]
    fn the_document_declares_the_constraints_the_edge_enforces() {
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        let creds = &schemas["Credentials"]["properties"];
        assert_eq!(creds["email"]["format"], "email", "{creds}");
        assert_eq!(creds["email"]["maxLength"], 254);
        assert_eq!(creds["password"]["minLength"], 8);
        let spec = doc["components"]["schemas"]["SpecBody"].to_string();
        assert!(
            spec.contains("\"minLength\":1") && spec.contains("\"minProperties\":1"),
            "{spec}"
        );
        for (path, method) in [("/api/jobs", "post"), ("/api/admin/refunds", "post")] {
            let params = doc["paths"][path][method]["parameters"].to_string();
            assert!(
                params.contains("\"Idempotency-Key\"") && params.contains("\"required\":true"),
                "{path}: {params}"
            );
        }
        assert!(doc["paths"]["/api/me"]["get"]["parameters"].is_null());
        let outbox = doc["paths"]["/api/admin/outbox"]["get"]["parameters"].to_string();
        assert!(
            outbox.contains("\"to\"") && outbox.contains("\"required\":true"),
            "{outbox}"
        );
        let code = &schemas["NewPromoCode"]["properties"];
        assert_eq!(code["code"]["pattern"], api::credits::CODE_PATTERN);
        assert_eq!(code["amount_fen"]["minimum"], 1);
        assert_eq!(
            code["max_redemptions"]["maximum"],
            api::credits::MAX_REDEMPTIONS
        );
        let refund = &schemas["RefundRequest"]["properties"];
        assert_eq!(refund["job_id"]["pattern"], api::credits::JOB_ID_PATTERN);
        assert_eq!(refund["reason"]["maxLength"], 500);
    }

    /// The document's spelling of a promotion code is the edge's: what one accepts, so does the
    /// other, around the edges of both.
    #[test]
    fn the_code_pattern_is_what_the_edge_accepts() {
        let pattern = regex::Regex::new(api::credits::CODE_PATTERN).unwrap();
        let long = "A".repeat(64);
        let too_long = "A".repeat(65);
        for code in [
            "abc",
            "WELCOME-2030",
            "a_b",
            " ABC ",
            "ab",
            "a b c",
            "ab\u{e9}",
            "",
            &long,
            &too_long,
        ] {
            assert_eq!(
                pattern.is_match(code),
                crate::wire::normalise_code(code).is_ok(),
                "{code:?}"
            );
        }
    }

    #[test]
    fn lists_exactly_the_routes() {
        let doc = document();
        let mut from_doc: Vec<(String, String)> = Vec::new();
        for (path, ops) in doc["paths"].as_object().unwrap() {
            for method in ops.as_object().unwrap().keys() {
                from_doc.push((method.to_ascii_uppercase(), path.clone()));
            }
        }
        let mut from_table: Vec<(String, String)> = ROUTES
            .iter()
            .map(|r| (r.method.to_string(), r.path.to_string()))
            .collect();
        from_doc.sort();
        from_table.sort();
        assert_eq!(from_doc, from_table);
        assert_eq!(
            doc["paths"]["/api/jobs/{id}"]["get"]["parameters"][0]["name"],
            "id"
        );
    }

    /// The sample of `api::samples` that each route answers with (its success status).
    fn answer_sample(id: RouteId) -> Option<&'static str> {
        use RouteId::*;
        Some(match id {
            Health => "liveness",
            AdminHealth => "health",
            Signup | Login | Me | ResetPassword => "account",
            RequestPasswordReset => "reset_requested",
            Logout => "signed_out",
            ChangePassword => "password_changed",
            LogoutEverywhere => "signed_out_everywhere",
            VerifyEmail => "verified",
            ResendVerification => "verification_sent",
            AdminOutbox => "outbox",
            CreateToken => "token_created",
            ListTokens => "token_list",
            RevokeToken => "token_revoked",
            Ledger => "ledger",
            Redeem => "redeemed",
            AdminPromoCodes => "promo_code_created",
            AdminReconcile => "reconciled",
            AdminBackends => "admin_backend_list",
            AdminRefund => "refund_answer",
            Backends => "backend_list",
            SubmitJob | GetJob | CancelJob => "job",
            ListJobs => "job_list",
            JobLogs => "log_chunk",
            JobMetrics => "metrics_page",
            JobReport => "report_accepted",
            JobLogPush => "log_accepted",
            ListCheckpoints => "checkpoint_list",
            StartUpload | UploadPart => "upload",
            ListArtifacts => "artifact_list",
            JobResume => "resume_checkpoint",
            DeleteArtifact => "artifact_deleted",
            CreateDataset | UploadDatasetPart | GetDataset => "dataset",
            AdminPutTokenizer => "tokenizer_file_stored",
            ListDatasets => "dataset_list",
            DeleteDataset => "dataset_deleted",
            CreateExperiment | ChangeExperiment => "saved_experiment",
            DeleteExperiment => "experiment_deleted",
            GetExperiment => "experiment",
            OpenApi
            | JobCheckpoint
            | GetArtifact
            | GetExperimentArtifact
            | JobDataset
            | JobResumeFile
            | ModelTokenizer => {
                return None;
            }
        })
    }

    /// Checks `value` against what the document says `method path` answers with `status`.
    pub(crate) fn check_answer(
        doc: &Value,
        method: &str,
        path: &str,
        status: &str,
        value: &Value,
    ) -> Result<(), String> {
        let op = &doc["paths"][path][method.to_ascii_lowercase()];
        let response = op["responses"]
            .get(status)
            .unwrap_or(&op["responses"]["default"]);
        let schema = &response["content"]["application/json"]["schema"];
        api::schema::check(doc, schema, value)
    }

    #[test]
    fn every_route_answers_what_the_document_says() {
        let doc = document();
        let samples = api::samples::all();
        let sample = |name: &str| {
            samples
                .iter()
                .find(|s| s.name == name)
                .map(|s| s.json.clone())
                .unwrap_or_else(|| panic!("no sample {name}"))
        };
        for route in ROUTES {
            let op = &doc["paths"][route.path][route.method.to_ascii_lowercase()];
            let error = sample("error");
            assert_eq!(
                check_answer(&doc, route.method, route.path, "400", &error),
                Ok(()),
                "{:?}",
                route.id
            );
            let Some(name) = answer_sample(route.id) else {
                continue;
            };
            let status = route.status.to_string();
            assert!(
                op["responses"][&status]["content"].is_object(),
                "{:?}",
                route.id
            );
            assert_eq!(
                check_answer(&doc, route.method, route.path, &status, &sample(name)),
                Ok(()),
                "{:?}",
                route.id
            );
        }
        // And a wrong answer is caught: a job where a list is documented.
        assert!(check_answer(&doc, "GET", "/api/jobs", "200", &sample("job")).is_err());
    }

    #[test]
    fn the_edge_answers_its_own_errors_in_the_documented_shape() {
        let doc = document();
        for &code in api::ErrorCode::ALL {
            let body: Value =
                serde_json::from_str(&crate::error::ApiError::new(code, "m").to_body()).unwrap();
            assert_eq!(
                check_answer(&doc, "GET", "/api/me", "default", &body),
                Ok(())
            );
        }
    }

    #[test]
    fn request_bodies_are_documented() {
        let doc = document();
        let body = &doc["paths"]["/api/auth/signup"]["post"]["requestBody"];
        let schema = &body["content"]["application/json"]["schema"];
        let good = json!({"email": "a@b.c", "password": "long enough"});
        assert_eq!(api::schema::check(&doc, schema, &good), Ok(()));
        assert!(api::schema::check(&doc, schema, &json!({"email": "a@b.c"})).is_err());
    }
}
