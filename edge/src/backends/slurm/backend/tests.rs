//! The Slurm adapter's calls and its readings of slurmrestd's answers.

use super::*;
use crate::backends::config::BackendKind;
use serde_json::json;
use std::collections::BTreeMap;

const TINY_TRAIN: &str = include_str!("../../../../../jobspec/specs/tiny-train-stories260k.toml");

#[test]
fn health_pings_with_the_jwt_headers() {
    let call = slurm().health();
    assert!(call.url.ends_with("/ping"), "{}", call.url);
    assert!(
        call.headers
            .contains(&("X-SLURM-USER-NAME".into(), "alice".into()))
    );
    assert!(
        call.headers
            .contains(&("X-SLURM-USER-TOKEN".into(), "eyJ.jwt".into()))
    );
}

#[test]
fn finds_its_job_by_the_edge_id_in_the_job_name() {
    let s = slurm();
    let call = s.find("abc123");
    assert_eq!(
        (call.method, call.url.as_str()),
        ("GET", "http://127.0.0.1:6820/slurm/v0.0.40/jobs")
    );
    let body = json!({"jobs": [
        {"job_id": 5, "name": "lora-ffff00", "job_state": ["RUNNING"]},
        {"job_id": 7, "name": "lora-abc123", "job_state": ["PENDING"], "state_reason": "Priority"},
        {"job_id": 9, "name": "x-abc1234", "job_state": ["RUNNING"]}
    ]})
    .to_string();
    assert_eq!(
        s.parse_find("abc123", 200, body.as_bytes()),
        Ok(Some(Submitted {
            remote_id: "7".into(),
            state: JobState::Queued
        }))
    );
    assert_eq!(s.parse_find("dddd", 200, body.as_bytes()), Ok(None));
    assert_eq!(s.parse_find("dddd", 200, b"{\"jobs\": []}"), Ok(None));
}

fn slurm() -> SlurmBackend {
    SlurmBackend::new(
        &BackendConfig {
            name: "hpc".into(),
            kind: BackendKind::Slurm,
            url: "http://127.0.0.1:6820".into(),
            secret: "alice:eyJ.jwt".into(),
            cards: BTreeMap::new(),
            ..BackendConfig::default()
        },
        0,
    )
    .unwrap()
}

/// A backend on data parser `version` that holds the key 00 01 … 1f.
fn keyed(version: Option<&str>) -> SlurmBackend {
    SlurmBackend::new(
        &BackendConfig {
            name: "hpc".into(),
            kind: BackendKind::Slurm,
            url: "http://127.0.0.1:6820".into(),
            jwt_key: Some("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into()),
            user: Some("onramp".into()),
            api_version: version.map(String::from),
            ..BackendConfig::default()
        },
        1_767_225_600_000,
    )
    .unwrap()
}

/// Every call of one adapter, as `METHOD url` lines, for a snapshot per data parser.
fn calls(s: &SlurmBackend) -> String {
    let submit = s
        .submit(&crate::backends::adapter::test_dispatch("j1", TINY_TRAIN))
        .unwrap();
    [
        submit,
        s.find("j1"),
        s.status("17"),
        s.cancel("17"),
        s.limit_time("17", 19).unwrap(),
        s.health(),
    ]
    .iter()
    .map(|c| format!("{} {}\n", c.method, c.url))
    .collect()
}

#[test]
fn every_data_parser_has_its_own_paths() {
    expect_test::expect![[r#"
        POST http://127.0.0.1:6820/slurm/v0.0.40/job/submit
        GET http://127.0.0.1:6820/slurm/v0.0.40/jobs
        GET http://127.0.0.1:6820/slurm/v0.0.40/job/17
        DELETE http://127.0.0.1:6820/slurm/v0.0.40/job/17
        POST http://127.0.0.1:6820/slurm/v0.0.40/job/17
        GET http://127.0.0.1:6820/slurm/v0.0.40/ping
    "#]]
    .assert_eq(&calls(&keyed(None)));
    expect_test::expect![[r#"
        POST http://127.0.0.1:6820/slurm/v0.0.43/job/submit
        GET http://127.0.0.1:6820/slurm/v0.0.43/jobs
        GET http://127.0.0.1:6820/slurm/v0.0.43/job/17
        DELETE http://127.0.0.1:6820/slurm/v0.0.43/job/17
        POST http://127.0.0.1:6820/slurm/v0.0.43/job/17
        GET http://127.0.0.1:6820/slurm/v0.0.43/ping
    "#]]
    .assert_eq(&calls(&keyed(Some("v0.0.43"))));
    for v in ApiVersion::ALL {
        let s = keyed(Some(v.as_str()));
        assert_eq!(s.version(), v);
        assert!(
            calls(&s)
                .lines()
                .all(|l| l.contains(&format!("/slurm/{}/", v.as_str())))
        );
    }
    let openapi = SlurmBackend::openapi_call(
        &BackendConfig {
            name: "hpc".into(),
            kind: BackendKind::Slurm,
            url: "http://h:6820".into(),
            secret: "t".into(),
            api_version: Some("v0.0.41".into()),
            ..BackendConfig::default()
        },
        0,
    )
    .unwrap();
    assert_eq!(
        (openapi.method, openapi.url.as_str()),
        ("GET", "http://h:6820/openapi/v3")
    );
}

#[test]
fn a_keyed_backend_sends_a_token_it_minted_for_the_call() {
    let call = keyed(None).health();
    let token = call
        .headers
        .iter()
        .find(|(k, _)| k == "X-SLURM-USER-TOKEN")
        .map(|(_, v)| v.clone())
        .unwrap();
    assert_eq!(
        token,
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3NjcyMjU5MDAsImlhdCI6MTc2NzIyNTYwMCwic3VuIjoib25yYW1wIn0.WTfleOYXHDNgCbKkzRVxB3ptkNRCJxpkEmkpmgW9eGY"
    );
    assert!(
        call.headers
            .contains(&("X-SLURM-USER-NAME".into(), "onramp".into()))
    );
}

#[test]
fn submits_with_jwt_headers_and_the_built_request() {
    let call = slurm()
        .submit(&crate::backends::adapter::test_dispatch("j1", TINY_TRAIN))
        .unwrap();
    assert_eq!(call.method, "POST");
    assert_eq!(call.url, "http://127.0.0.1:6820/slurm/v0.0.40/job/submit");
    assert!(
        call.headers
            .contains(&("X-SLURM-USER-NAME".into(), "alice".into()))
    );
    assert!(
        call.headers
            .contains(&("X-SLURM-USER-TOKEN".into(), "eyJ.jwt".into()))
    );
    let body: Value = serde_json::from_str(call.body.as_deref().unwrap()).unwrap();
    assert!(
        body["job"]["script"]
            .as_str()
            .unwrap()
            .contains("onramp-runner tiny-train")
    );
    assert_eq!(body["job"]["time_limit"]["number"], 30);
}

#[test]
fn deployment_options_reach_the_request_and_logs_are_pushed() {
    let s = SlurmBackend::new(
        &BackendConfig {
            name: "hpc".into(),
            kind: BackendKind::Slurm,
            url: "http://127.0.0.1:6820".into(),
            secret: "jwt-only".into(),
            work_dir: Some("/shared/onramp".into()),
            partition: Some("gpu".into()),
            cpus_per_task: Some(1),
            env: BTreeMap::from([("ONRAMP_SHARED".into(), "/shared/data".into())]),
            ..BackendConfig::default()
        },
        0,
    )
    .unwrap();
    let call = s
        .submit(&crate::backends::adapter::test_dispatch("j2", TINY_TRAIN))
        .unwrap();
    assert!(
        call.headers
            .contains(&("X-SLURM-USER-NAME".into(), "onramp".into()))
    );
    let job = &serde_json::from_str::<Value>(call.body.as_deref().unwrap()).unwrap()["job"];
    assert_eq!(job["current_working_directory"], "/shared/onramp");
    assert_eq!(job["standard_output"], "/shared/onramp/slurm-%j.out");
    assert_eq!(
        (job["partition"].as_str(), job["cpus_per_task"].as_u64()),
        (Some("gpu"), Some(1))
    );
    let env = job["environment"].to_string();
    assert!(env.contains("ONRAMP_SHARED=/shared/data"), "{env}");
    assert!(
        env.contains("ONRAMP_LOG_URL=https://edge/api/jobs/j2/log"),
        "{env}"
    );
    assert!(s.logs("5", 0).is_none());
    let pending = json!({"jobs": [{"job_id": 5, "job_state": ["PENDING"], "state_reason": "Resources",
        "start_time": {"set": true, "infinite": false, "number": 1_900_000_000}}]});
    let st = s.parse_status(200, pending.to_string().as_bytes()).unwrap();
    assert_eq!(
        (st.state, st.reason.as_deref(), st.started_at_ms),
        (JobState::Queued, Some("Resources"), None)
    );
    assert!(st.message.unwrap().starts_with("waiting for resources"));
}

/// A deployment option that no request can carry fails the submission before anything is
/// sent (it used to go out with no body and leave slurmrestd to word the problem).
#[test]
fn a_misconfigured_backend_sends_nothing() {
    let s = SlurmBackend::new(
        &BackendConfig {
            name: "hpc".into(),
            kind: BackendKind::Slurm,
            url: "http://127.0.0.1:6820".into(),
            secret: "jwt-only".into(),
            work_dir: Some("relative/dir".into()),
            ..BackendConfig::default()
        },
        0,
    )
    .unwrap();
    let e = s
        .submit(&crate::backends::adapter::test_dispatch("j3", TINY_TRAIN))
        .unwrap_err();
    assert!(
        matches!(&e, BackendError::Misconfigured(why) if why.contains("work_dir")),
        "{e:?}"
    );
    let api = e.into_api("hpc");
    assert_eq!(api.code, crate::error::ErrorCode::Internal);
    assert!(!crate::backends::adapter::submission_may_have_landed(
        &BackendError::Misconfigured(String::new())
    ));
}

#[test]
fn parses_status_cancel_and_refusals() {
    let s = slurm();
    let status = s.status("17");
    assert_eq!(
        (status.method, status.url.as_str()),
        ("GET", "http://127.0.0.1:6820/slurm/v0.0.40/job/17")
    );
    assert_eq!(s.cancel("17").method, "DELETE");
    let body = json!({"jobs": [{"job_id": 17, "job_state": ["TIMEOUT"],
        "exit_code": {"return_code": {"set": true, "number": 0}},
        "start_time": {"set": true, "number": 10}, "end_time": {"set": true, "number": 70}}]});
    let st = s.parse_status(200, body.to_string().as_bytes()).unwrap();
    assert_eq!(
        (st.state, st.started_at_ms, st.ended_at_ms),
        (JobState::TimedOut, Some(10_000), Some(70_000))
    );
    assert_eq!(
        s.parse_cancel(200, br#"{"status":[],"errors":[]}"#),
        Ok(JobState::Cancelled)
    );
    let refused = br#"{"errors":[{"description":"Batch job submission failed","error":"Requested node configuration is not available"}]}"#;
    match s.parse_submit(200, refused) {
        Err(BackendError::Refused(m)) => assert!(m.contains("node configuration"), "{m}"),
        other => panic!("{other:?}"),
    }
    // slurmrestd may send the refusal with a 500: still a refusal, not an outage.
    let e = s.parse_submit(500, refused).unwrap_err();
    assert!(matches!(e, BackendError::Refused(_)), "{e:?}");
    assert_eq!(
        e.into_api("hpc").code,
        crate::error::ErrorCode::BackendRefused
    );
    assert_eq!(
        s.parse_submit(200, br#"{"job_id": 5, "errors": []}"#)
            .unwrap()
            .remote_id,
        "5"
    );
    // Slurm 23.11 lists errors that did not stop slurmctld beside the id of the job it queued.
    let queued = br#"{"job_id": 6, "errors": [{"error": "Requested partition configuration not available now"}]}"#;
    assert_eq!(s.parse_submit(200, queued).unwrap().remote_id, "6");
    // slurmrestd's call to slurmctld timed out or broke: the job may have been queued.
    let timed_out = br#"{"errors":[{"error":"Socket timed out on send/recv operation"}]}"#;
    for status in [502, 503, 504] {
        let e = s.parse_submit(status, timed_out).unwrap_err();
        assert!(adapter::submission_may_have_landed(&e), "{status}: {e:?}");
    }
    let e = s.parse_submit(401, b"Authentication failure").unwrap_err();
    assert!(!adapter::submission_may_have_landed(&e), "{e:?}");
    // slurmrestd's refusal of the edge's credentials comes as a 511 with its errors: the
    // operator's to fix, not the spec's, and nothing was taken.
    let auth = br#"{"errors":[{"error_number":1007,"error":"Protocol authentication error"}]}"#;
    let e = s.parse_submit(511, auth).unwrap_err();
    assert!(matches!(e, BackendError::Unavailable(_)), "{e:?}");
    assert!(
        s.parse_submit(200, br#"{"job_id": 0}"#).is_err(),
        "Slurm has no job 0"
    );
    // Only slurmrestd's word that the job is unknown ends it as lost; any other 404 does not.
    let unknown = br#"{"errors":[{"description":"Failed to lookup job","error_number":2017,"error":"Invalid job id specified"}]}"#;
    assert_eq!(
        s.parse_status(404, unknown).unwrap_err(),
        BackendError::NotFound
    );
    assert!(
        s.parse_find("j1", 200, b"{}").is_err(),
        "no list is no word on the job"
    );
    assert_eq!((millis(10), millis(i64::MAX / 100)), (Some(10_000), None));
    for other in [
        &b"Not Found"[..],
        br#"{"errors":[{"error":"Unable find requested URL"}]}"#,
    ] {
        let e = s.parse_status(404, other).unwrap_err();
        assert!(matches!(e, BackendError::Protocol(_)), "{e:?}");
    }
    assert!(s.checkpoint("5").is_none());
}
