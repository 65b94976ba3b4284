//! Artifacts, attacked: another account's artifacts, a job token on another job's artifacts,
//! names that try to leave the job's folder, and a job id in another case.

use super::*;

pub(crate) fn artifacts(w: &World) {
    let a = w.user("artifact-owner");
    let b = w.user("artifact-thief");
    let (job_a, token_a) = w.job(&a, None);
    let (job_b, _) = w.job(&b, None);
    let owner_job = Client::with_bearer(&w.stack.url, &token_a);
    let declared = json!({"size": 3, "sha256": "0".repeat(64)});
    // An upload a's job started.
    let stored = w.post(
        &owner_job,
        &format!("/api/jobs/{job_a}/artifacts/log.txt"),
        &declared,
    );
    assert_eq!(stored.status, 200, "{:?}", stored.json);

    // Another account sees nothing of it, and deletes nothing.
    for path in [
        format!("/api/jobs/{job_a}/artifacts"),
        format!("/api/jobs/{job_a}/artifacts/log.txt"),
    ] {
        assert_eq!(w.get(&b, &path).status, 404, "{path}");
        assert_eq!(
            w.get(&Client::new(&w.stack.url), &path).status,
            401,
            "{path}"
        );
    }
    let path = format!("/api/jobs/{job_a}/artifacts/log.txt");
    let delete = w.see(
        &format!("DELETE {path}"),
        b.request("DELETE", &path, None, &[]),
    );
    assert_eq!(
        delete.status, 404,
        "another account's artifact cannot be deleted"
    );

    // A job's token writes only its own job's artifacts.
    let r = w.post(
        &owner_job,
        &format!("/api/jobs/{job_b}/artifacts/model.bin"),
        &declared,
    );
    assert_eq!(r.status, 403, "{:?}", r.json);
    let r = w.raw(
        &owner_job,
        "PUT",
        &format!("/api/jobs/{job_b}/artifacts/model.bin?part=1"),
        b"abc".to_vec(),
        "application/octet-stream",
    );
    assert_eq!(r.status, 403, "{:?}", r.json);
    // Nor is it a user's credential.
    assert_eq!(
        w.get(&owner_job, &format!("/api/jobs/{job_a}/artifacts"))
            .status,
        401
    );

    leaving_the_folder(w, &a, &owner_job, &job_a, &declared);
}

/// Names that try to leave the job's folder, and a job id in another case.
fn leaving_the_folder(w: &World, a: &Client, owner_job: &Client, job_a: &str, declared: &Value) {
    // Names that try to leave the job's folder are refused before R2. (A bare `..`, spelled
    // out or percent-encoded, is resolved by the URL parser before the edge sees it: some 4xx.)
    for name in [
        "..",
        "%2E%2E",
        "a%2F..%2Fb",
        "%2Fetc%2Fpasswd",
        ".env",
        "a%5Cb",
        "a%00b",
    ] {
        let r = w.post(
            owner_job,
            &format!("/api/jobs/{job_a}/artifacts/{name}"),
            declared,
        );
        if name == ".." || name == "%2E%2E" {
            assert!((400..500).contains(&r.status), "{name}: {:?}", r.json);
        } else {
            assert_eq!(
                (r.status, r.code()),
                (400, "invalid_field"),
                "{name}: {:?}",
                r.json
            );
        }
    }
    // A job id in another case is another id, which no job has.
    let upper = job_a.to_uppercase();
    let r = w.post(
        owner_job,
        &format!("/api/jobs/{upper}/artifacts/model.bin"),
        declared,
    );
    assert_eq!(r.status, 404, "{:?}", r.json);
    assert_eq!(
        w.get(a, &format!("/api/jobs/{upper}/artifacts")).status,
        404
    );
    assert_eq!(
        w.get(a, &format!("/api/jobs/{job_a}/artifacts")).status,
        200
    );
}
