//! Submissions the edge must not take twice: one whose answer never came is kept, found at its
//! backend by its id and never sent again; a used Idempotency-Key with another spec is refused.

use super::*;

/// The scenario: both kinds of submission.
pub(crate) fn submissions(w: &World) {
    unanswered_submission(w);
    another_spec_under_a_used_key(w);
}

fn unanswered_submission(w: &World) {
    let u = w.user("slow");
    let spec = LORA.replace("qwen2.5-7b-lora-4090", SLOW_NAME);
    let a = u.submit_spec(&spec, "slow-1");
    // Another scenario's reconcile sweep may have found the job at the backend already.
    assert_eq!(a.status, 202, "{:?}", a.json);
    assert!(
        ["dispatching", "running"].contains(&a.json["state"].as_str().unwrap_or("")),
        "{:?}",
        a.json
    );
    let id = a.json["id"].as_str().expect("id").to_string();
    let hold = a.json["hold_fen"].as_i64().expect("hold");
    assert_eq!(u.balance(), GRANT - hold, "the job may run: its hold stays");
    // A retry with the same key is this job, never a second copy at the backend.
    let again = u.submit_spec(&spec, "slow-1");
    assert_eq!(
        (again.status, again.json["id"].as_str()),
        (200, Some(id.as_str()))
    );
    // The edge finds the job at the backend by its id, and its reports are accepted.
    let job = wait_job(&u, &id, |j| j["state"] != "dispatching");
    assert_eq!(job["state"], "running", "{job}");
    let copies = w.fake.lock().expect("fake").copies(&id);
    assert_eq!(copies, 1);
    let (_, remote) = w.remote(&id);
    let r = w.report(
        &id,
        &remote.report_token,
        json!({"metrics": [{"step": 1, "loss": 2.0, "elapsed_s": 1.0}]}),
    );
    assert_eq!(r.status, 200, "{:?}", r.json);

    // A submission the backend never kept: after the grace period the sweep fails the job and
    // releases its whole hold.
    let v = w.user("lost");
    let spec = LORA.replace("qwen2.5-7b-lora-4090", LOST_NAME);
    let a = v.submit_spec(&spec, "lost-1");
    assert_eq!(
        (a.status, &a.json["state"]),
        (202, &json!("dispatching")),
        "{:?}",
        a.json
    );
    let id = a.json["id"].as_str().expect("id").to_string();
    assert!(v.balance() < GRANT);
    let admin = Client::with_bearer(&w.stack.url, &w.stack.admin_token);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let job = loop {
        let r = admin.request("POST", "/api/admin/reconcile", None, &[]);
        assert_eq!(r.status, 200, "{:?}", r.json);
        let job = v.get(&format!("/api/jobs/{id}")).json;
        if job["state"] != "dispatching" {
            break job;
        }
        assert!(std::time::Instant::now() < deadline, "{job}");
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert_eq!(
        (&job["state"], &job["charged_fen"]),
        (&json!("failed"), &json!(0)),
        "{job}"
    );
    assert_eq!(v.balance(), GRANT, "nothing charged");
}

/// A key that made a job, sent again with another spec: 409 naming that job, nothing held.
fn another_spec_under_a_used_key(w: &World) {
    let u = w.user("rekey");
    let key = random_hex(8);
    let a = u.submit_spec(LORA, &key);
    assert_eq!(a.status, 201, "{}", a.shown());
    let id = a.json["id"].as_str().expect("id");
    let held = u.balance();
    let other = u.submit_spec(&LORA.replace("lora_rank = 16", "lora_rank = 8"), &key);
    assert_eq!(
        (
            other.status,
            other.code(),
            other.json["error"]["details"]["job_id"].as_str()
        ),
        (409, "idempotency_conflict", Some(id)),
        "{}",
        other.shown()
    );
    assert_eq!(u.balance(), held, "no second hold");
    // The same spec again is still the job it made.
    let again = u.submit_spec(LORA, &key);
    assert_eq!((again.status, again.json["id"].as_str()), (200, Some(id)));
}
