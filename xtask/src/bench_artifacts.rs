//! `cargo xtask bench artifacts`: a job's artifact through `wrangler dev`'s local R2, uploaded
//! in parts with the job's token and downloaded whole by its owner, next to a plain copy of the
//! same file on this machine (the reference, measured in the same run), and the memory of the
//! runtime (every `workerd` process) while it streams a file several times its part size and
//! larger than a Worker's 128 MB: it must stay flat, since no part is held whole.

use onramp_tests::api::Client;
use onramp_tests::fake_backend::start_fake;
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
/// The file: larger than what one Worker may hold in memory (`ONRAMP_BENCH_ARTIFACT_MIB`
/// chooses another size, a whole number of parts).
fn file_bytes() -> u64 {
    let mib = std::env::var("ONRAMP_BENCH_ARTIFACT_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(192);
    (mib.div_ceil(PART_BYTES / MIB) * (PART_BYTES / MIB)).max(PART_BYTES / MIB) * MIB
}
const PART_BYTES: u64 = 16 * MIB;
const LORA: &str = include_str!("../../jobspec/specs/7b-lora-4090.toml");

/// The anonymous resident memory (what a process holds itself, without the files it maps,
/// which the kernel may drop at any time) of each `workerd` process, by pid, in bytes.
fn workerd_rss() -> std::collections::BTreeMap<u32, u64> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Default::default();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path())))
        .filter(|(_, p)| {
            std::fs::read_to_string(p.join("comm")).is_ok_and(|c| c.trim() == "workerd")
        })
        .filter_map(|(pid, p)| {
            let status = std::fs::read_to_string(p.join("status")).ok()?;
            let kib = status
                .lines()
                .find(|l| l.starts_with("RssAnon:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())?;
            Some((pid, kib * 1024))
        })
        .collect()
}

fn total(m: &std::collections::BTreeMap<u32, u64>) -> u64 {
    m.values().sum()
}

/// Samples [`workerd_rss`] every 50 ms until stopped; the peak of each process.
struct Peak {
    stop: Arc<AtomicBool>,
    peak: Arc<std::sync::Mutex<std::collections::BTreeMap<u32, u64>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Peak {
    fn start() -> Peak {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::new()));
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let now = workerd_rss();
                if let Ok(mut m) = p.lock() {
                    for (pid, rss) in now {
                        let e = m.entry(pid).or_insert(0);
                        *e = (*e).max(rss);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Peak {
            stop,
            peak,
            thread: Some(thread),
        }
    }

    fn end(mut self) -> std::collections::BTreeMap<u32, u64> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

fn write_file(path: &Path) -> Result<String, String> {
    let mut f = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut h = Sha256::new();
    let mut block = vec![0u8; MIB as usize];
    for i in 0..file_bytes() / MIB {
        for (j, b) in block.iter_mut().enumerate() {
            *b = (j as u64).wrapping_mul(2_654_435_761).wrapping_add(i) as u8;
        }
        h.update(&block);
        f.write_all(&block).map_err(|e| e.to_string())?;
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / MIB as f64 / d.as_secs_f64().max(1e-9)
}

/// The stack, the job's owner, the job's id and the job's token.
fn start() -> Result<(Stack, Client, String, String), String> {
    let secret = random_hex(16);
    let (fake_url, fake) = start_fake(secret.clone());
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("bench-artifacts")
        },
        StackExtras {
            vars: vec![
                ("SIGNUP_GRANT_FEN".into(), "100000".into()),
                (
                    "ARTIFACT_QUOTA_BYTES".into(),
                    (8 * file_bytes()).to_string(),
                ),
            ],
            extra_backends: vec![json!({
                "name": "fake", "kind": "runner", "url": fake_url, "secret": secret,
                "cards": {"rtx-4090": 8}
            })],
        },
    )
    .map_err(|e| e.to_string())?;
    let owner = stack.signup("bench-artifacts@example.com", "bench horse battery staple");
    let a = owner.submit_spec(LORA, &random_hex(8));
    let id = a.json["id"]
        .as_str()
        .ok_or(format!("no job: {}", a.shown()))?
        .to_string();
    let token = fake
        .lock()
        .map_err(|_| "the fake backend's lock")?
        .jobs
        .values()
        .find(|j| j.edge_id == id)
        .map(|j| j.report_token.clone())
        .ok_or("the job did not reach the fake backend")?;
    Ok((stack, owner, id, token))
}

pub fn run() -> Result<Vec<String>, String> {
    let (stack, owner, id, token) = start()?;
    let dir = onramp_tests::stack::unique_temp_dir("bench-artifacts");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let src = dir.join("model.bin");
    let sha = write_file(&src)?;

    // The reference: a plain copy of the same file on this machine.
    let t = Instant::now();
    std::fs::copy(&src, dir.join("copy.bin")).map_err(|e| e.to_string())?;
    let copy = mb_per_s(file_bytes(), t.elapsed());
    let _ = std::fs::remove_file(dir.join("copy.bin"));

    let idle = workerd_rss();
    let job = Client::with_bearer(&stack.url, &token);
    let path = format!("/api/jobs/{id}/artifacts/model.bin");
    let up = job.post(
        &path,
        &json!({"size": file_bytes(), "sha256": sha, "part_size": PART_BYTES}),
    );
    if up.status != 200 {
        return Err(format!("declaring the upload: {}", up.shown()));
    }
    let peak = Peak::start();
    let t = Instant::now();
    upload(&job, &path, &src)?;
    let up_rate = mb_per_s(file_bytes(), t.elapsed());
    let up_peak = peak.end();

    let peak = Peak::start();
    let t = Instant::now();
    let got = download(&stack.url, &owner, &path, &dir.join("down.bin"))?;
    let down_rate = mb_per_s(file_bytes(), t.elapsed());
    let down_peak = peak.end();
    if got != sha {
        return Err(format!("the download's sha256 is {got}, not {sha}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mib = |b: u64| b as f64 / MIB as f64;
    Ok(vec![
        format!(
            "file {} MiB in parts of {} MiB; plain copy here {copy:.0} MiB/s (the reference)",
            file_bytes() / MIB,
            PART_BYTES / MIB
        ),
        format!(
            "upload through wrangler dev   {up_rate:>7.1} MiB/s  {:.2}× the copy",
            up_rate / copy
        ),
        format!(
            "download through wrangler dev {down_rate:>7.1} MiB/s  {:.2}× the copy",
            down_rate / copy
        ),
        format!(
            "workerd memory (anonymous resident, all processes): idle {:.0} MiB, peak {:.0} MiB uploading (+{:.0}), {:.0} MiB downloading (+{:.0}); the file is {} MiB",
            mib(total(&idle)),
            mib(total(&up_peak)),
            mib(total(&up_peak).saturating_sub(total(&idle))),
            mib(total(&down_peak)),
            mib(total(&down_peak).saturating_sub(total(&idle))),
            file_bytes() / MIB
        ),
        format!(
            "  by process (idle → peak up / peak down, MiB): {}",
            idle.iter()
                .map(|(pid, i)| format!(
                    "{pid}: {:.0} → {:.0} / {:.0}",
                    mib(*i),
                    mib(up_peak.get(pid).copied().unwrap_or(0)),
                    mib(down_peak.get(pid).copied().unwrap_or(0))
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ])
}

/// Sends the file's parts in order, one part in memory at a time.
fn upload(job: &Client, path: &str, src: &Path) -> Result<(), String> {
    let mut f = std::fs::File::open(src).map_err(|e| e.to_string())?;
    let mut part = vec![0u8; PART_BYTES as usize];
    for n in 1..=file_bytes() / PART_BYTES {
        f.read_exact(&mut part).map_err(|e| e.to_string())?;
        let a = job.request(
            "PUT",
            &format!("{path}?part={n}"),
            Some(part.clone()),
            &[("content-type", "application/octet-stream")],
        );
        if a.status != 200 {
            return Err(format!("part {n}: {}", a.shown()));
        }
    }
    Ok(())
}

/// Streams a download to `to` (never held whole here either); its sha256.
fn download(base: &str, owner: &Client, path: &str, to: &Path) -> Result<String, String> {
    let mut req = ureq::http::Request::builder()
        .method("GET")
        .uri(format!("{base}{path}"));
    if let Some(c) = &owner.cookie {
        req = req.header("cookie", c);
    }
    let req = req.body(()).map_err(|e| e.to_string())?;
    let resp = onramp_tests::http().run(req).map_err(|e| e.to_string())?;
    if resp.status() != 200 {
        return Err(format!("download: {}", resp.status()));
    }
    let mut body = resp.into_body().into_reader();
    let mut out = std::fs::File::create(to).map_err(|e| e.to_string())?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = body.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(|e| e.to_string())?;
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
