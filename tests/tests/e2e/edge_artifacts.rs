//! A job's artifacts in R2 under `wrangler dev`: uploaded by the job in parts with its own token
//! (one part, an empty file, more than three parts, a name with folders), an upload cut off and
//! resumed, parts out of order, of the wrong size or after the job ended refused with a clear
//! 4xx, the account's quota, and downloads by the owner with `Range`. Jobs come from a fake
//! backend (the runner's contract) so that each scenario holds a live job token.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::api::{Answer, Client, run_scenarios, unique_email};
use onramp_tests::fake_backend::{Fake, start_fake};
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};

mod cli;
mod datasets;
mod retention;
use cli::cli;

const PASSWORD: &str = "correct horse battery";
const LORA: &str = include_str!("../../../jobspec/specs/7b-lora-4090.toml");
const MIB: usize = 1 << 20;
/// The account quota this stack runs with: room for the largest upload here and not much more.
const QUOTA: usize = 160 * MIB;
/// A file larger than a Worker may hold in memory (128 MB).
const LARGE: usize = 136 * MIB;
/// The account dataset quota this stack runs with.
const DATASET_QUOTA: usize = 40 * MIB;

struct World {
    stack: Stack,
    fake: Arc<Mutex<Fake>>,
}

/// A running job: its owner, its id and a client with its token.
struct Job {
    owner: Client,
    id: String,
    job: Client,
}

impl World {
    fn job(&self, tag: &str) -> Job {
        let owner = self.stack.signup(&unique_email(tag), PASSWORD);
        self.submitted(&owner, LORA)
    }

    /// The owner's job of `spec`, running on the fake backend.
    fn submitted(&self, owner: &Client, spec: &str) -> Job {
        let owner = owner.clone();
        let a = owner.submit_spec(spec, &random_hex(8));
        assert_eq!(a.status, 201, "{}", a.shown());
        let id = a.json["id"].as_str().unwrap().to_string();
        let token = {
            let f = self.fake.lock().unwrap();
            f.jobs
                .values()
                .find(|j| j.edge_id == id)
                .map(|j| j.report_token.clone())
                .expect("the job reached the fake backend")
        };
        Job {
            job: Client::with_bearer(&self.stack.url, &token),
            owner,
            id,
        }
    }
}

impl Job {
    fn path(&self, name: &str) -> String {
        format!(
            "/api/jobs/{}/artifacts/{}",
            self.id,
            name.replace('/', "%2F")
        )
    }

    fn start(&self, name: &str, data: &[u8], part_size: Option<usize>) -> Answer {
        let mut body = json!({"size": data.len(), "sha256": sha256(data)});
        if let Some(p) = part_size {
            body["part_size"] = json!(p);
        }
        self.job.post(&self.path(name), &body)
    }

    fn part(&self, name: &str, n: u64, bytes: &[u8]) -> Answer {
        self.job.request(
            "PUT",
            &format!("{}?part={n}", self.path(name)),
            Some(bytes.to_vec()),
            &[("content-type", "application/octet-stream")],
        )
    }

    /// Uploads parts `from..=to` of `data` as the upload's part size cuts it.
    fn parts(&self, name: &str, data: &[u8], part_size: usize, from: u64, to: u64) -> Answer {
        let mut last = None;
        for n in from..=to {
            let start = (n as usize - 1) * part_size;
            let end = (start + part_size).min(data.len());
            let a = self.part(name, n, &data[start..end]);
            assert_eq!(a.status, 200, "part {n} of {name}: {}", a.shown());
            assert_eq!(a.json["received"], json!(n), "{}", a.shown());
            last = Some(a);
        }
        last.expect("at least one part")
    }

    fn download(&self, name: &str, range: Option<&str>) -> Answer {
        let headers: Vec<(&str, &str)> = range.map(|r| ("range", r)).into_iter().collect();
        self.owner.request("GET", &self.path(name), None, &headers)
    }
}

fn sha256(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Bytes that are not all alike, so a part in the wrong place shows.
fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed)
        .collect()
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn edge_artifacts() {
    let secret = random_hex(16);
    let (fake_url, fake) = start_fake(secret.clone());
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("edge-artifacts")
        },
        StackExtras {
            vars: vec![
                ("SIGNUP_LIMIT_PER_HOUR".into(), "1000".into()),
                ("SIGNUP_GRANT_FEN".into(), "10000".into()),
                ("ARTIFACT_QUOTA_BYTES".into(), QUOTA.to_string()),
                ("DATASET_QUOTA_BYTES".into(), DATASET_QUOTA.to_string()),
            ],
            extra_backends: vec![
                json!({"name": "fake", "kind": "runner", "url": fake_url, "secret": secret, "cards": {"rtx-4090": 8}}),
            ],
        },
    )
    .expect("stack starts");
    let world = World { stack, fake };
    run_scenarios(
        &world,
        &[
            (
                "one part, an empty file, a name with folders; Range",
                small_files,
            ),
            ("more than three parts, cut off and resumed", resumed_upload),
            (
                "parts out of order, of the wrong size, after the end",
                refused_parts,
            ),
            ("the account's quota, and deleting to make room", quota),
            (
                "onramp artifacts: list, a download resumed and checked, delete",
                cli,
            ),
            (
                "a file larger than a Worker's memory, whole and by Range",
                larger_than_a_worker,
            ),
            (
                "an experiment link shares them only when the owner says so",
                shared_by_an_experiment,
            ),
            (
                "datasets: onramp datasets upload resumed, the same file twice, list, rm",
                datasets::uploads,
            ),
            (
                "datasets: the quota, bad declarations, an unverified account",
                datasets::refusals,
            ),
            (
                "datasets: named in a spec, fetched by the job's token only",
                datasets::named_in_a_spec,
            ),
            (
                "datasets: an eval set of its own, fetched by ?id=",
                datasets::an_eval_set_uploaded,
            ),
        ],
    );
}

fn small_files(w: &World) {
    let j = w.job("small");
    let log = data(1000, 1);
    let a = j.start("log.txt", &log, None);
    assert_eq!(a.status, 200, "{}", a.shown());
    assert_eq!(
        (a.json["parts"].as_u64(), a.json["received"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(a.json["complete"], false);
    let done = j.part("log.txt", 1, &log);
    assert_eq!(
        (done.status, &done.json["complete"]),
        (200, &json!(true)),
        "{}",
        done.shown()
    );
    // The answer to the last part was lost: the same part again is answered the same.
    assert_eq!(j.part("log.txt", 1, &log).json["complete"], true);
    assert_eq!(
        j.start("log.txt", &log, None).json["complete"],
        true,
        "declared again: stored"
    );

    let empty = j.start("empty.json", b"", None);
    assert_eq!(empty.json["parts"], 1, "{}", empty.shown());
    assert_eq!(j.part("empty.json", 1, b"").json["complete"], true);

    let adapter = data(3 * MIB, 2);
    let name = "adapter/adapter_model.safetensors";
    assert_eq!(j.start(name, &adapter, None).status, 200);
    assert_eq!(j.part(name, 1, &adapter).json["complete"], true);

    let list = j.owner.get(&format!("/api/jobs/{}/artifacts", j.id));
    assert_eq!(list.status, 200, "{}", list.shown());
    let names: Vec<&str> = list.json["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(names, [name, "empty.json", "log.txt"]);
    let entry = &list.json["artifacts"][0];
    assert_eq!(entry["sha256"], sha256(&adapter));
    assert_eq!(entry["size"], adapter.len());
    assert_eq!(entry["url"], j.path(name));
    assert_eq!(list.json["used_bytes"], adapter.len() + log.len());

    downloads(&j, name, &adapter);
}

/// The owner's downloads of one stored artifact: whole, one range, the tail, past the end.
fn downloads(j: &Job, name: &str, adapter: &[u8]) {
    let whole = j.download(name, None);
    assert_eq!(whole.status, 200);
    assert_eq!(sha256(&whole.bytes), sha256(adapter));
    assert_eq!(whole.header("accept-ranges"), Some("bytes"));
    assert!(
        whole
            .header("content-disposition")
            .is_some_and(|d| d.contains("adapter_model.safetensors")),
        "{:?}",
        whole.headers
    );
    let part = j.download(name, Some("bytes=100-199"));
    assert_eq!(part.status, 206);
    assert_eq!(part.bytes, adapter[100..200]);
    let size = adapter.len();
    assert_eq!(
        part.header("content-range"),
        Some(format!("bytes 100-199/{size}").as_str())
    );
    let tail = j.download(name, Some("bytes=-10"));
    assert_eq!(
        (tail.status, tail.bytes.as_slice()),
        (206, &adapter[size - 10..])
    );
    let past = j.download(name, Some(&format!("bytes={size}-")));
    assert_eq!(
        (past.status, past.code()),
        (416, "range_not_satisfiable"),
        "{}",
        past.shown()
    );
    let all = format!("bytes */{size}");
    assert_eq!(past.header("content-range"), Some(all.as_str()));
    // A resumed download names the version it has the start of: the range only while it stands.
    let etag = format!("\"{}\"", sha256(adapter));
    let path = j.path(name);
    let same = [("range", "bytes=100-"), ("if-range", etag.as_str())];
    let resumed = j.owner.request("GET", &path, None, &same);
    assert_eq!((resumed.status, &resumed.bytes[..]), (206, &adapter[100..]));
    let other = [("range", "bytes=100-"), ("if-range", "\"0123\"")];
    let changed = j.owner.request("GET", &path, None, &other);
    assert_eq!((changed.status, changed.bytes.len()), (200, size));
    // HEAD: the headers of the download, no body (and the connection goes on).
    let head = j.owner.request("HEAD", &path, None, &[]);
    let length = size.to_string();
    assert_eq!(
        (head.status, head.header("content-length"), head.bytes.len()),
        (200, Some(length.as_str()), 0),
        "{:?}",
        head.headers
    );
    assert_eq!(head.header("etag"), Some(etag.as_str()));
    assert_eq!(j.download("empty.json", None).bytes, b"");
    assert_eq!(j.download("missing.bin", None).status, 404);
}

fn resumed_upload(w: &World) {
    let j = w.job("resume");
    let part = 5 * MIB;
    let file = data(3 * part + 123_457, 3);
    let a = j.start("model.safetensors", &file, Some(part));
    assert_eq!(a.status, 200, "{}", a.shown());
    assert_eq!(
        (a.json["parts"].as_u64(), a.json["part_size"].as_u64()),
        (Some(4), Some(part as u64))
    );
    j.parts("model.safetensors", &file, part, 1, 2);
    // The job was cut off; started again, it declares the same file and is told where it was.
    let again = j.start("model.safetensors", &file, Some(part));
    assert_eq!(
        (again.json["received"].as_u64(), &again.json["complete"]),
        (Some(2), &json!(false))
    );
    // Part 2 sent again (its answer lost) replaces itself.
    j.parts("model.safetensors", &file, part, 2, 2);
    let done = j.parts("model.safetensors", &file, part, 3, 4);
    assert_eq!(done.json["complete"], true, "{}", done.shown());
    let got = j.download("model.safetensors", None);
    assert_eq!(got.bytes.len(), file.len());
    assert_eq!(
        sha256(&got.bytes),
        sha256(&file),
        "the parts joined in order"
    );
    // A range across two parts.
    let r = j.download(
        "model.safetensors",
        Some(&format!("bytes={}-{}", part - 5, part + 4)),
    );
    assert_eq!(
        (r.status, r.bytes.as_slice()),
        (206, &file[part - 5..part + 5])
    );
    // Another declaration of the same name starts it over.
    let other = data(10, 4);
    let a = j.start("model.safetensors", &other, None);
    assert_eq!(
        (a.json["received"].as_u64(), &a.json["complete"]),
        (Some(0), &json!(false))
    );
    assert_eq!(
        j.download("model.safetensors", None).status,
        404,
        "replaced, not yet stored"
    );
    assert_eq!(
        j.part("model.safetensors", 1, &other).json["complete"],
        true
    );
    assert_eq!(j.download("model.safetensors", None).bytes, other);
}

fn refused_parts(w: &World) {
    let j = w.job("refuse");
    let part = 5 * MIB;
    let file = data(2 * part + 10, 5);
    assert_eq!(j.start("ckpt.bin", &file, Some(part)).status, 200);
    let early = j.part("ckpt.bin", 2, &file[part..2 * part]);
    assert_eq!(
        (early.status, early.code()),
        (409, "part_out_of_order"),
        "{}",
        early.shown()
    );
    assert_eq!(early.json["error"]["details"]["next_part"], 1);
    let short = j.part("ckpt.bin", 1, &file[..part - 1]);
    assert_eq!(
        (short.status, short.code()),
        (400, "invalid_part"),
        "{}",
        short.shown()
    );
    assert_eq!(short.json["error"]["details"]["expected_bytes"], part);
    let past = j.part("ckpt.bin", 4, b"x");
    assert_eq!((past.status, past.code()), (400, "invalid_part"));
    let unnumbered = j
        .job
        .request("PUT", &j.path("ckpt.bin"), Some(b"x".to_vec()), &[]);
    assert_eq!(
        (unnumbered.status, unnumbered.code()),
        (400, "invalid_query")
    );
    let unstarted = j.part("never.bin", 1, b"x");
    assert_eq!(unstarted.status, 404, "{}", unstarted.shown());
    for (body, field) in [
        (json!({"size": 1, "sha256": "ABC"}), "sha256"),
        (
            json!({"size": 1, "sha256": "0".repeat(64), "part_size": 1024}),
            "part_size",
        ),
        (
            json!({"size": 1u64 << 50, "sha256": "0".repeat(64)}),
            "part_size",
        ),
    ] {
        let a = j.job.post(&j.path("x.bin"), &body);
        assert_eq!(
            (a.status, &a.json["error"]["details"]["field"]),
            (400, &json!(field)),
            "{body}"
        );
    }
    let bad: Value = j
        .job
        .post(&j.path("x.bin"), &json!({"size": -1, "sha256": "0"}))
        .json;
    assert_eq!(bad["error"]["code"], "invalid_json", "{bad}");
    // Every refused part above left the connection usable: the next part is taken.
    j.parts("ckpt.bin", &file, part, 1, 1);

    // Once the job has ended, its token uploads nothing more; what it stored stays.
    let c = j
        .owner
        .post(&format!("/api/jobs/{}/cancel", j.id), &json!({}));
    assert_eq!(c.status, 200, "{}", c.shown());
    let late = j.part("ckpt.bin", 2, &file[part..2 * part]);
    assert_eq!(
        (late.status, late.code()),
        (409, "already_finished"),
        "{}",
        late.shown()
    );
    assert_eq!(j.start("late.txt", b"x", None).code(), "already_finished");
}

fn quota(w: &World) {
    let j = w.job("quota");
    // An upload the job started and never finished counts, is listed, and can be deleted.
    let declare = |name: &str, size: usize| {
        j.job.post(
            &j.path(name),
            &json!({"size": size, "sha256": "0".repeat(64)}),
        )
    };
    assert_eq!(declare("unfinished.bin", 150 * MIB).status, 200);
    let refused = declare("more.bin", 20 * MIB);
    assert_eq!(refused.code(), "limit_reached", "{}", refused.shown());
    let list = j.owner.get(&format!("/api/jobs/{}/artifacts", j.id)).json;
    assert_eq!(list["uploads"][0]["name"], "unfinished.bin", "{list}");
    assert_eq!(list["uploads"][0]["received"], 0, "{list}");
    assert_eq!(list["used_bytes"], 150 * MIB, "{list}");
    let gone = j
        .owner
        .request("DELETE", &j.path("unfinished.bin"), None, &[]);
    assert_eq!(gone.json["freed_bytes"], 150 * MIB, "{}", gone.shown());
    let big = data(20 * MIB, 6);
    assert_eq!(j.start("big.bin", &big, Some(20 * MIB)).status, 200);
    j.parts("big.bin", &big, 20 * MIB, 1, 1);
    let refused = declare("more.bin", 150 * MIB);
    assert_eq!(
        (refused.status, refused.code()),
        (409, "limit_reached"),
        "{}",
        refused.shown()
    );
    let d = &refused.json["error"]["details"];
    assert_eq!(
        (d["limit"].as_str(), d["quota_bytes"].as_u64()),
        (Some("artifact_bytes"), Some(QUOTA as u64))
    );
    assert!(
        refused.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("delete")
    );
    // Another file under a stored file's name that does not fit is refused, and loses nothing.
    let replace = declare("big.bin", QUOTA + MIB);
    assert_eq!(replace.code(), "limit_reached", "{}", replace.shown());
    assert!(j.download("big.bin", None).bytes == big, "big.bin kept");
    let gone = j.owner.request("DELETE", &j.path("big.bin"), None, &[]);
    assert_eq!(
        (gone.status, gone.json["freed_bytes"].as_u64()),
        (200, Some(big.len() as u64))
    );
    assert_eq!(j.download("big.bin", None).status, 404);
    assert_eq!(declare("more.bin", 150 * MIB).status, 200, "room again");
}

/// A file larger than a Worker may hold in memory goes up in parts and comes down whole, and a
/// range from its middle (the edge streams it from R2 a range at a time).
fn larger_than_a_worker(w: &World) {
    let j = w.job("large");
    let part = 32 * MIB;
    let file = data(LARGE, 10);
    let a = j.start("large.bin", &file, Some(part));
    assert_eq!(a.json["parts"], 5, "{}", a.shown());
    j.parts("large.bin", &file, part, 1, 5);
    let got = j.download("large.bin", None);
    assert_eq!(got.bytes.len(), LARGE);
    assert_eq!(sha256(&got.bytes), sha256(&file));
    let from = 100 * MIB + 12_345;
    let r = j.download(
        "large.bin",
        Some(&format!("bytes={from}-{}", from + 9 * MIB)),
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.bytes, file[from..=from + 9 * MIB]);
}

/// An experiment's link shares the job's artifacts only when its owner asked (`share_artifacts`),
/// with whoever may see the link, and only while the job keeps them as they were.
fn shared_by_an_experiment(w: &World) {
    let j = w.job("share");
    let file = data(2 * MIB + 5, 11);
    assert_eq!(j.start("adapter/model.bin", &file, None).status, 200);
    assert_eq!(j.part("adapter/model.bin", 1, &file).json["complete"], true);
    let c = j
        .owner
        .post(&format!("/api/jobs/{}/cancel", j.id), &json!({}));
    assert_eq!(c.status, 200, "{}", c.shown());
    let save = |extra: Value| {
        let mut body = json!({"spec": LORA, "job_id": j.id});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let a = j.owner.post("/api/experiments", &body);
        assert_eq!(a.status, 201, "{}", a.shown());
        a.json["id"].as_str().unwrap().to_string()
    };
    let anyone = Client::new(&w.stack.url);
    let link = |id: &str| format!("/api/experiments/{id}/artifacts/adapter%2Fmodel.bin");

    let plain = save(json!({}));
    assert_eq!(
        anyone.get(&format!("/api/experiments/{plain}")).json["artifacts"],
        json!([])
    );
    assert_eq!(
        anyone.get(&link(&plain)).status,
        404,
        "not shared unless asked"
    );

    let shared = save(json!({"share_artifacts": true}));
    let x = anyone.get(&format!("/api/experiments/{shared}")).json;
    assert_eq!(x["artifacts"][0]["name"], "adapter/model.bin", "{x}");
    assert_eq!(x["artifacts"][0]["url"], link(&shared), "{x}");
    assert_eq!(x["artifacts"][0]["sha256"], sha256(&file), "{x}");
    let got = anyone.get(&link(&shared));
    assert_eq!((got.status, got.bytes.len()), (200, file.len()));
    assert_eq!(got.bytes, file);
    let part = anyone.request("GET", &link(&shared), None, &[("range", "bytes=10-19")]);
    assert_eq!((part.status, part.bytes.as_slice()), (206, &file[10..20]));

    let private = save(json!({"share_artifacts": true, "published": false}));
    assert_eq!(
        anyone.get(&link(&private)).status,
        404,
        "unpublished: the owner only"
    );
    assert_eq!(j.owner.get(&link(&private)).status, 200);

    let none = j.owner.post(
        "/api/experiments",
        &json!({"spec": LORA, "share_artifacts": true}),
    );
    assert_eq!(
        (none.status, &none.json["error"]["details"]["field"]),
        (400, &json!("share_artifacts"))
    );
    // Deleted by its owner, it is gone from every link too.
    let gone = j
        .owner
        .request("DELETE", &j.path("adapter/model.bin"), None, &[]);
    assert_eq!(gone.status, 200, "{}", gone.shown());
    assert_eq!(anyone.get(&link(&shared)).status, 404);
}
