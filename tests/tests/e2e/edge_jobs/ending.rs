//! How a job ends and goes on: a cancel raced by the reconcile sweep keeps the user's words and
//! settles once, and a job continues another only when that one is the caller's and has ended.

use super::*;

/// A cancel sent at the same moment as the reconcile sweep and the cron hook, many times over:
/// whichever records the end first (the backend already says "cancelled", exit code 0, while
/// the cancel is still on its way back), the job ends `cancelled` with the user's message, its
/// hold settles exactly once, and the cancel's own answer says so.
pub(crate) fn cancel_against_the_sweep(w: &World) {
    const ROUNDS: usize = 12;
    let u = w.user("cancel-race");
    let admin = Client::with_bearer(&w.stack.url, &w.stack.admin_token);
    let mut charged_total = 0;
    for round in 0..ROUNDS {
        let id = u.submit_spec(LORA, &format!("race-{round}")).json["id"]
            .as_str()
            .expect("id")
            .to_string();
        let (cancel, sweeps) = std::thread::scope(|scope| {
            let sweeps: Vec<_> = (0..3)
                .map(|i| {
                    let admin = &admin;
                    scope.spawn(move || {
                        if i == 2 {
                            w.stack.run_scheduled("*/5 * * * *").map(|()| 200)
                        } else {
                            Ok(admin
                                .request("POST", "/api/admin/reconcile?silent_after_s=0", None, &[])
                                .status)
                        }
                    })
                })
                .collect();
            let cancel = u.post(&format!("/api/jobs/{id}/cancel"), &json!({}));
            let sweeps: Vec<_> = sweeps
                .into_iter()
                .map(|h| h.join().expect("sweep"))
                .collect();
            (cancel, sweeps)
        });
        for s in sweeps {
            assert_eq!(s, Ok(200), "round {round}");
        }
        assert_eq!(cancel.status, 200, "round {round}: {:?}", cancel.json);
        assert_eq!(
            cancel.json["state"], "cancelled",
            "round {round}: {:?}",
            cancel.json
        );
        let job = u.get(&format!("/api/jobs/{id}")).json;
        assert_eq!(
            (&job["state"], &job["message"]),
            (&json!("cancelled"), &json!("cancelled by the user")),
            "round {round}: {job}"
        );
        charged_total += job["charged_fen"].as_i64().expect("settled");
    }
    // Every hold went back whole but for what each job was charged, once.
    assert_eq!(u.balance(), GRANT - charged_total);
    let ledger = u.get("/api/ledger").json;
    let entries = ledger["entries"].as_array().expect("entries");
    let count = |kind: &str| entries.iter().filter(|e| e["kind"] == kind).count();
    assert_eq!(
        (count("hold"), count("release")),
        (ROUNDS, ROUNDS),
        "{ledger}"
    );
}

/// `checkpoint.resume_from` continues only the caller's own job, once it has ended, and on the
/// backend where its checkpoint is; another account's job reads as no job at all, and a refused
/// submission holds nothing.
pub(crate) fn resume_from(w: &World) {
    let (a, b) = (w.user("resume-a"), w.user("resume-b"));
    let earlier = a.submit_spec(LORA, "first").json["id"]
        .as_str()
        .expect("id")
        .to_string();
    let continuing = |id: &str| format!("{LORA}\n[checkpoint]\nresume_from = \"{id}\"\n");
    let refused = a.submit_spec(&continuing(&earlier), "too-soon");
    assert_eq!(
        (refused.status, refused.code()),
        (409, "job_not_finished"),
        "{:?}",
        refused.json
    );
    assert_eq!(
        refused.json["error"]["details"]["field"],
        "checkpoint.resume_from"
    );
    // It ends: the backend says so, and so does the job with its own token.
    w.fake.lock().expect("fake").end(&earlier, "succeeded");
    let (_, remote) = w.remote(&earlier);
    let r = w.report(
        &earlier,
        &remote.report_token,
        json!({"state": "succeeded"}),
    );
    assert_eq!(
        (r.status, &r.json["state"]),
        (200, &json!("succeeded")),
        "{:?}",
        r.json
    );
    let balance = b.balance();
    for (id, why) in [
        (earlier.as_str(), "another account's job"),
        ("0123456789abcdef0123456789abcdef", "no job at all"),
    ] {
        let r = b.submit_spec(&continuing(id), &format!("steal-{id}"));
        assert_eq!(
            (r.status, r.code()),
            (404, "not_found"),
            "{why}: {:?}",
            r.json
        );
        assert!(
            !r.json.to_string().contains("resume-a"),
            "{why}: {:?}",
            r.json
        );
    }
    assert_eq!(b.balance(), balance, "a refused submission holds nothing");
    // Not a job id at all: the spec itself is refused, with where.
    let r = a.submit_spec(&continuing(&earlier.to_uppercase()), "upper");
    assert_eq!((r.status, r.code()), (422, "invalid_spec"), "{:?}", r.json);
    assert!(
        r.json.to_string().contains("checkpoint.resume_from"),
        "{:?}",
        r.json
    );
    let ok = a.submit_spec(&continuing(&earlier), "second");
    assert_eq!(ok.status, 201, "{:?}", ok.json);
    assert_eq!(ok.json["backend"], "fake", "{:?}", ok.json);
    let id = ok.json["id"].as_str().expect("id");
    assert!(
        w.remote(id)
            .1
            .spec
            .contains(&format!("resume_from = \"{earlier}\""))
    );
}
