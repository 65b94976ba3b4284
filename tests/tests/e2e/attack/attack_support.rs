//! The attack suite's races and its look at the rendered pages (`attack.rs` holds the rest).

use super::*;

/// Many requests at once on one code, one key and one job: each happens once.
pub(crate) fn races(w: &World) {
    // One code worth 7, redeemable 3 times, tried by 8 users at once, each twice.
    let code = format!("RACE-{}", random_hex(4)).to_uppercase();
    let c = w.post(
        &w.admin(),
        "/api/admin/promo-codes",
        &json!({"code": code, "amount_fen": 7, "max_redemptions": 3}),
    );
    assert_eq!(c.status, 201);
    let users: Vec<Client> = (0..8).map(|i| w.user(&format!("race{i}"))).collect();
    let ok = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for u in &users {
            for _ in 0..2 {
                s.spawn(|| {
                    if w.post(u, "/api/credits/redeem", &json!({"code": code}))
                        .status
                        == 200
                    {
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        }
    });
    assert_eq!(ok.load(Ordering::Relaxed), 3, "exactly the code's maximum");

    // One idempotency key sent ten times at once: one job, one hold.
    let u = &users[0];
    let key = random_hex(8);
    let ids = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..10 {
            s.spawn(|| {
                let a = w.see("POST /api/jobs (race)", u.submit_spec(LORA, &key));
                if let Some(id) = a.json["id"].as_str() {
                    ids.lock().unwrap().push(id.to_string());
                }
            });
        }
    });
    let mut ids = ids.into_inner().unwrap();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 1, "one job for one key: {ids:?}");

    // One job, ended at the backend, hit at once by its owner's cancels, its own terminal
    // reports and the operator's sweeps: it ends once and settles once.
    for round in 0..3 {
        let u = &users[1 + round];
        let (job, token) = w.job(u, None);
        w.fake.lock().unwrap().end(&job, "succeeded");
        let jt = Client::with_bearer(&w.stack.url, &token);
        let admin = w.admin();
        std::thread::scope(|s| {
            for i in 0..12 {
                let (jt, admin, job) = (&jt, &admin, &job);
                s.spawn(move || match i % 3 {
                    0 => {
                        let r = w.post(u, &format!("/api/jobs/{job}/cancel"), &json!({}));
                        assert!(r.status == 200 || r.status == 409, "{:?}", r.json);
                    }
                    1 => {
                        let r = w.post(
                            jt,
                            &format!("/api/jobs/{job}/report"),
                            &json!({"state": "succeeded"}),
                        );
                        assert!(r.status == 200 || r.status == 409, "{:?}", r.json);
                    }
                    _ => {
                        let r = w.see(
                            "POST /api/admin/reconcile",
                            admin.request(
                                "POST",
                                "/api/admin/reconcile?silent_after_s=0",
                                None,
                                &[],
                            ),
                        );
                        assert_eq!(r.status, 200, "{:?}", r.json);
                    }
                });
            }
        });
        let j = w.get(u, &format!("/api/jobs/{job}")).json;
        assert!(
            matches!(j["state"].as_str(), Some("succeeded" | "cancelled")),
            "{j}"
        );
    }
}

/// The hostile strings reach a real page as text: nothing runs, no element is injected.
pub(crate) fn in_the_browser(w: &World, rendered: &(Client, String, String, String)) {
    let (_, email, job, exp) = rendered;
    let browser = Browser::start(Some("en")).expect("chromium starts");
    let pwned = |b: &Browser| -> Value {
        b.execute(
            "return [window.__pwned === undefined, document.querySelectorAll('img[src=x], svg[onload], main script').length]",
            json!([]),
        )
        .unwrap()
    };
    // The public experiment, as anyone opening a shared link sees it.
    browser.goto(&format!("{}/e/{exp}", w.stack.url)).unwrap();
    browser
        .wait_for_text("main", WAIT, |t| t.contains("<svg onload="))
        .expect("the title shows as text");
    assert_eq!(pwned(&browser), json!([true, 0]));
    // The owner's job page and list.
    browser.goto(&format!("{}/account", w.stack.url)).unwrap();
    let set = |css: &str, v: &str| {
        let el = browser.wait_for(css, WAIT).unwrap();
        browser.clear(&el).unwrap();
        browser.type_text(&el, v).unwrap();
    };
    set("[data-testid=auth-email]", email);
    set("[data-testid=auth-password]", PASSWORD);
    let submit = browser.wait_for("[data-testid=auth-submit]", WAIT).unwrap();
    browser.click(&submit).unwrap();
    browser
        .wait_for("[data-testid=balance]", WAIT)
        .expect("signed in");
    browser
        .goto(&format!("{}/jobs/{job}", w.stack.url))
        .unwrap();
    let text = browser
        .wait_for_text("[data-testid=job-message]", WAIT, |t| {
            t.contains("<script>")
        })
        .expect("the message shows as text");
    assert!(text.contains("<b>bold</b>"), "{text}");
    browser
        .wait_for_text("main", WAIT, |t| t.contains("<img src=x onerror="))
        .expect("the name shows as text");
    assert_eq!(pwned(&browser), json!([true, 0]));
    browser.goto(&format!("{}/jobs", w.stack.url)).unwrap();
    browser
        .wait_for_text("main", WAIT, |t| t.contains("<img src=x onerror="))
        .expect("the list shows the name as text");
    assert_eq!(pwned(&browser), json!([true, 0]));
    too_large_for_the_tab(w, &browser, &rendered.0);
}

/// A job that stored a Hugging Face folder of a model far past what a tab holds (268M
/// parameters by its config.json; its weights file a few bytes, never fetched): the playground
/// says so, by the kind of its error, instead of downloading it.
fn too_large_for_the_tab(w: &World, browser: &Browser, owner: &Client) {
    use sha2::{Digest, Sha256};
    let (job, token) = w.job(owner, None);
    let jt = Client::with_bearer(&w.stack.url, &token);
    let config = json!({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 1024,
        "intermediate_size": 4096, "num_hidden_layers": 16, "num_attention_heads": 16,
        "num_key_value_heads": 16, "vocab_size": 32000, "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5, "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": 2
    })
    .to_string();
    for (name, bytes) in [
        ("model/config.json", config.as_bytes()),
        ("model/tokenizer.json", b"{}".as_slice()),
        ("model/model.safetensors", b"not weights".as_slice()),
    ] {
        let path = format!("/api/jobs/{job}/artifacts/{}", name.replace('/', "%2F"));
        let sha: String = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let a = w.post(&jt, &path, &json!({"size": bytes.len(), "sha256": sha}));
        assert_eq!(a.status, 200, "{name}: {:?}", a.json);
        let put = jt.request(
            "PUT",
            &format!("{path}?part=1"),
            Some(bytes.to_vec()),
            &[("content-type", "application/octet-stream")],
        );
        assert_eq!(put.json["complete"], true, "{name}: {:?}", put.json);
    }
    browser
        .goto(&format!("{}/?model={job}", w.stack.url))
        .unwrap();
    let error = browser
        .wait_for("[data-testid=try-error][data-kind=TooLarge]", WAIT)
        .expect("the playground says the model is too large");
    let text = browser.text(&error).unwrap();
    assert!(text.contains("too large"), "{text}");
}
