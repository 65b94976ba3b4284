//! Who reaches what: another user's jobs are not found, saved experiments are immutable and
//! show nothing private, and a caller cannot choose where a job's token is sent.

use super::*;

pub(crate) fn authorization(w: &World) {
    let a = w.user("owner");
    let b = w.user("intruder");
    let id = a.submit_spec(LORA, "a1").json["id"]
        .as_str()
        .expect("id")
        .to_string();
    for path in ["", "/logs", "/metrics", "/checkpoint"] {
        let r = b.get(&format!("/api/jobs/{id}{path}"));
        assert_eq!(r.status, 404, "{path}: {:?}", r.json);
        assert_eq!(
            Client::new(&w.stack.url)
                .get(&format!("/api/jobs/{id}{path}"))
                .status,
            401
        );
    }
    assert_eq!(
        b.post(&format!("/api/jobs/{id}/cancel"), &json!({})).status,
        404
    );
    assert_eq!(b.get("/api/jobs").json["jobs"], json!([]));
    assert_eq!(
        a.get(&format!("/api/jobs/{id}")).json["state"],
        "running",
        "b changed nothing"
    );
    // The same idempotency key in another account is another job.
    let other = b.submit_spec(LORA, "a1");
    assert_eq!(other.status, 201);
    assert_ne!(other.json["id"].as_str(), Some(id.as_str()));
    assert_eq!(b.get("/api/jobs/not-hex").status, 404);
}

pub(crate) fn experiments(w: &World) {
    let a = w.user("exp");
    let b = w.user("exp-other");
    let email = a.get("/api/me").json["email"]
        .as_str()
        .expect("email")
        .to_string();
    let e = a.post(
        "/api/experiments",
        &json!({"spec": LORA, "title": "LoRA on a 4090"}),
    );
    assert_eq!(e.status, 201, "{:?}", e.json);
    let id = e.json["id"].as_str().expect("id").to_string();
    assert_eq!(id.len(), 32, "128-bit id");
    assert!(id.bytes().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(e.json["url"], format!("/e/{id}"));
    let anon = Client::new(&w.stack.url).get(&format!("/api/experiments/{id}"));
    assert_eq!(anon.status, 200);
    assert_eq!(anon.json["title"], "LoRA on a 4090");
    assert_eq!(
        anon.json["plan"]["cost"]["max_fen"], 4800,
        "{}",
        anon.json["plan"]
    );
    let text = anon.json.to_string();
    assert!(
        !text.contains(&email) && !text.contains("balance"),
        "no private data: {text}"
    );

    let private = a.post(
        "/api/experiments",
        &json!({"spec": LORA, "published": false}),
    );
    let pid = private.json["id"].as_str().expect("id").to_string();
    assert_eq!(a.get(&format!("/api/experiments/{pid}")).status, 200);
    assert_eq!(b.get(&format!("/api/experiments/{pid}")).status, 404);
    assert_eq!(
        Client::new(&w.stack.url)
            .get(&format!("/api/experiments/{pid}"))
            .status,
        404
    );

    // With a job: a running one cannot be snapshotted; a finished one brings its metrics.
    let job = a.submit_spec(LORA, "e1").json["id"]
        .as_str()
        .expect("id")
        .to_string();
    let r = a.post("/api/experiments", &json!({"spec": LORA, "job_id": job}));
    assert_eq!((r.status, r.code()), (409, "job_not_finished"));
    let (_, remote) = w.remote(&job);
    {
        let mut f = w.fake.lock().expect("fake");
        let j = f.jobs.values_mut().find(|j| j.edge_id == job).expect("job");
        j.state = "succeeded".into();
        j.ended = true;
    }
    w.report(
        &job,
        &remote.report_token,
        json!({"metrics": [{"step": 5, "loss": 1.5, "elapsed_s": 3.0}], "state": "succeeded"}),
    );
    let r = a.post("/api/experiments", &json!({"spec": LORA, "job_id": job}));
    assert_eq!(r.status, 201, "{:?}", r.json);
    let snap = Client::new(&w.stack.url)
        .get(&format!(
            "/api/experiments/{}",
            r.json["id"].as_str().expect("id")
        ))
        .json;
    assert_eq!(snap["job"]["state"], "succeeded", "{snap}");
    assert_eq!(snap["job"]["metrics"][0]["loss"], 1.5);
    assert_eq!(
        b.post("/api/experiments", &json!({"spec": LORA, "job_id": job}))
            .status,
        404,
        "not b's job"
    );
    assert_eq!(
        a.post("/api/experiments", &json!({"spec": "modle = 1"}))
            .code(),
        "invalid_spec"
    );
    assert_eq!(
        Client::new(&w.stack.url)
            .get("/api/experiments/00000000000000000000000000000000")
            .status,
        404
    );
}

/// A caller who sets `Host` (and a matching `Origin`) must not choose where the job's token goes.
pub(crate) fn report_url_is_configured(w: &World) {
    let u = w.user("host");
    let t = u.post("/api/tokens", &json!({"name": "attacker"}));
    assert_eq!(t.status, 201, "{:?}", t.json);
    let token = t.json["token"].as_str().expect("token").to_string();
    let cli = Client::with_bearer(&w.stack.url, &token);
    let key = random_hex(8);
    let a = cli.request(
        "POST",
        "/api/jobs",
        Some(LORA.as_bytes().to_vec()),
        &[
            ("content-type", "application/toml"),
            ("idempotency-key", &key),
            ("host", "attacker.invalid:9"),
            ("x-forwarded-host", "attacker.invalid:9"),
        ],
    );
    assert_eq!(a.status, 201, "{:?}", a.json);
    let id = a.json["id"].as_str().expect("id").to_string();
    let (_, job) = w.remote(&id);
    assert_eq!(
        job.report_url,
        format!("{}/api/jobs/{id}/report", w.stack.url),
        "the job reports to the configured URL"
    );
}
