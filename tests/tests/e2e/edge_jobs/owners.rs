//! A saved experiment is its owner's: only a verified account saves one, its owner alone takes
//! its link back, publishes it again or deletes it, and an account's experiments are held to a
//! byte quota as well as a count, both shown on `/api/me`.

use super::*;

/// What one account's saved experiments may take on this stack.
pub(crate) const EXPERIMENT_BYTES: u64 = 1 << 20;

/// The experiments scenario: who sees what (`access.rs`), then what is their owner's.
pub(crate) fn experiments(w: &World) {
    super::access::experiments(w);
    owned_experiments(w);
    experiment_byte_quota(w);
}

fn owned_experiments(w: &World) {
    // Unverified, an account saves nothing that persists.
    let unverified = Client::signup(&w.stack.url, &unique_email("exp-unverified"), PASSWORD);
    let r = unverified.post("/api/experiments", &json!({"spec": LORA}));
    assert_eq!(
        (r.status, r.code()),
        (403, "email_not_verified"),
        "{:?}",
        r.json
    );

    let a = w.user("exp-owner");
    let b = w.user("exp-stranger");
    let anon = Client::new(&w.stack.url);
    let id = a.post("/api/experiments", &json!({"spec": LORA})).json["id"]
        .as_str()
        .expect("id")
        .to_string();
    let path = format!("/api/experiments/{id}");
    assert_eq!(a.get(&path).json["yours"], true);
    assert_eq!(
        anon.get(&path).json.get("yours"),
        None,
        "only the owner's answer says so"
    );
    assert_eq!(b.get(&path).json.get("yours"), None);
    let usage = |c: &Client| c.get("/api/me").json["experiments"].clone();
    assert_eq!(usage(&a)["count"], 1, "{}", usage(&a));

    // The owner takes the link back: nobody else sees it, and a stranger cannot change it.
    let change = |c: &Client, published: Value| {
        c.request(
            "PATCH",
            &path,
            Some(json!({ "published": published }).to_string().into_bytes()),
            &[("content-type", "application/json")],
        )
    };
    assert_eq!(change(&b, json!(true)).status, 404);
    assert_eq!(change(&a, json!("no")).status, 400);
    let r = change(&a, json!(false));
    assert_eq!(
        (r.status, &r.json["published"]),
        (200, &json!(false)),
        "{:?}",
        r.json
    );
    assert_eq!(anon.get(&path).status, 404);
    assert_eq!(b.get(&path).status, 404);
    assert_eq!(a.get(&path).json["published"], false);
    assert_eq!(change(&a, json!(true)).status, 200);
    assert_eq!(anon.get(&path).json["published"], true);

    // Deleted by its owner only; then its link finds nothing.
    assert_eq!(b.request("DELETE", &path, None, &[]).status, 404);
    let gone = a.request("DELETE", &path, None, &[]);
    assert_eq!(gone.status, 200, "{:?}", gone.json);
    assert!(
        gone.json["freed_bytes"].as_u64().unwrap_or(0) > 0,
        "{:?}",
        gone.json
    );
    assert_eq!(anon.get(&path).status, 404);
    assert_eq!(a.request("DELETE", &path, None, &[]).status, 404);
    assert_eq!(usage(&a)["count"], 0);
}

/// Large snapshots meet the byte quota before the count: the refusal names it, and what is
/// stored stays within it.
fn experiment_byte_quota(w: &World) {
    let a = w.user("exp-bytes");
    let usage = |c: &Client| c.get("/api/me").json["experiments"].clone();
    let padded = format!("{LORA}\n# {}\n", "x".repeat(200 * 1024));
    let refused = (0..8)
        .map(|_| a.post("/api/experiments", &json!({"spec": padded})))
        .find(|r| r.status != 201)
        .expect("the byte quota refuses one");
    assert_eq!(
        (refused.status, refused.code()),
        (409, "limit_reached"),
        "{:?}",
        refused.json
    );
    assert_eq!(
        refused.json["error"]["details"]["limit"],
        "experiment_bytes"
    );
    let u = usage(&a);
    assert!(u["used_bytes"].as_u64() <= u["quota_bytes"].as_u64(), "{u}");
    assert_eq!(u["quota_bytes"], EXPERIMENT_BYTES);
}
