//! What a job's token can make the edge keep. A wrapper that keeps reporting after its backend
//! ended the job must not keep the job's hold and writes alive: the sweep asks about every
//! running job on a bound, reports or not, and the token then writes nothing. A log pushed a
//! byte at a time is stored whole, exactly once, without a row for each push.

use super::*;

pub(crate) fn job_writes(w: &World) {
    a_token_that_keeps_reporting(w);
    a_log_pushed_a_byte_at_a_time(w);
    jobs_waiting_without_end(w);
}

fn a_token_that_keeps_reporting(w: &World) {
    let u = w.user("keeps-reporting");
    let (id, token) = w.job(&u, None);
    let job = Client::with_bearer(&w.stack.url, &token);
    let report = format!("/api/jobs/{id}/report");
    assert_eq!(
        w.post(&job, &report, &json!({"state": "running"})).status,
        200
    );
    // The backend ends the job; its wrapper goes on reporting nothing, so it is never silent.
    w.fake.lock().unwrap().end(&id, "failed");
    assert_eq!(w.post(&job, &report, &json!({})).status, 200);
    // A sweep that asks only about silent jobs would leave it running; this one asks about every
    // job it has not asked about since (recheck_after_s=0), reports or not.
    let admin = Client::with_bearer(&w.stack.url, &w.stack.admin_token);
    let swept = w.see(
        "POST /api/admin/reconcile",
        admin.request(
            "POST",
            "/api/admin/reconcile?silent_after_s=86400&recheck_after_s=0",
            None,
            &[],
        ),
    );
    assert_eq!(swept.status, 200, "{:?}", swept.json);
    let seen = w.get(&u, &format!("/api/jobs/{id}")).json;
    assert_eq!(
        seen["state"], "failed",
        "the sweep asked the backend: {seen}"
    );
    for body in [
        json!({}),
        json!({"state": "running"}),
        json!({"message": "alive"}),
    ] {
        let r = w.post(&job, &report, &body);
        assert_eq!((r.status, r.code()), (409, "already_finished"), "{body}");
    }
    let log = w.raw(
        &job,
        "POST",
        &format!("/api/jobs/{id}/log?offset=0"),
        b"still here\n".to_vec(),
        "application/octet-stream",
    );
    assert_eq!(log.status, 409, "{:?}", log.json);
}

fn a_log_pushed_a_byte_at_a_time(w: &World) {
    let u = w.user("tiny-pushes");
    let (id, token) = w.job(&u, None);
    let job = Client::with_bearer(&w.stack.url, &token);
    let push = |offset: usize, bytes: &[u8]| {
        w.raw(
            &job,
            "POST",
            &format!("/api/jobs/{id}/log?offset={offset}"),
            bytes.to_vec(),
            "application/octet-stream",
        )
    };
    let log: Vec<u8> = (0..300).map(|i| b"step loss\n"[i % 10]).collect();
    for (i, byte) in log.iter().enumerate() {
        let r = push(i, std::slice::from_ref(byte));
        assert_eq!(
            (
                r.status,
                r.json["next_offset"].as_u64(),
                r.json["stored"].as_u64()
            ),
            (200, Some(i as u64 + 1), Some(1)),
            "push {i}: {:?}",
            r.json
        );
        if i % 97 == 0 {
            // A retry of what the edge already has stores nothing more.
            let again = push(i, std::slice::from_ref(byte));
            assert_eq!(
                (
                    again.json["next_offset"].as_u64(),
                    again.json["stored"].as_u64()
                ),
                (Some(i as u64 + 1), Some(0)),
                "{:?}",
                again.json
            );
        }
    }
    let gap = push(log.len() + 5, b"x");
    assert_eq!((gap.status, gap.code()), (409, "log_gap"), "{:?}", gap.json);
    assert_eq!(gap.json["error"]["details"]["next_offset"], log.len());
    // A retry overlapping the end stores only what is new.
    let overlap = push(log.len() - 2, b"ss\nmore");
    assert_eq!(
        (
            overlap.json["next_offset"].as_u64(),
            overlap.json["stored"].as_u64()
        ),
        (Some(log.len() as u64 + 5), Some(5)),
        "{:?}",
        overlap.json
    );
}

/// An account cannot queue without end: jobs waiting to start are capped per account, in the
/// insert itself, so submissions racing for the last place take it once.
fn jobs_waiting_without_end(w: &World) {
    const LIMIT: usize = 20;
    let u = w.user("waiting");
    let name = |i: usize| format!("{}-{i}", onramp_tests::fake_backend::QUEUED_NAME);
    let waiting: Vec<String> = (0..LIMIT - 1)
        .map(|i| w.job(&u, Some(&name(i))).0)
        .collect();
    let spec = LORA.replace(
        "name = \"qwen2.5-7b-lora-4090\"",
        &format!("name = {}", toml_string(&name(99))),
    );
    // Four at once for the last place: one gets it, the others are told why.
    let answers: Vec<Answer> = std::thread::scope(|s| {
        let racers: Vec<_> = (0..4)
            .map(|_| s.spawn(|| w.see("POST /api/jobs", u.submit_spec(&spec, &random_hex(8)))))
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    for a in answers.iter().filter(|a| a.status != 201) {
        assert_eq!((a.status, a.code()), (409, "limit_reached"), "{:?}", a.json);
        assert_eq!(a.json["error"]["details"]["limit"], "waiting_jobs");
    }
    // One that starts or is cancelled makes room.
    let cancel = w.post(&u, &format!("/api/jobs/{}/cancel", waiting[0]), &json!({}));
    assert_eq!(cancel.status, 200, "{:?}", cancel.json);
    let again = w.see("POST /api/jobs", u.submit_spec(&spec, &random_hex(8)));
    assert_eq!(again.status, 201, "{:?}", again.json);
}
