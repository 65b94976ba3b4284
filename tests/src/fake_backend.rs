//! A fake backend for edge tests: a tiny HTTP server on a thread that follows the runner's
//! contract (`POST /jobs`, `GET /jobs?job_id=`, `GET /jobs/{id}`, logs, cancel, checkpoint) and
//! keeps its jobs in memory, so a test can say what the backend answers (a job that runs, ends,
//! or whose submission never gets an answer) and see what the edge sent it.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A spec whose submission the fake accepts but answers only after the edge gave up waiting.
pub const SLOW_NAME: &str = "slow-accept";
/// A job whose name starts with this waits in the fake's queue until a test says otherwise.
pub const QUEUED_NAME: &str = "waits-in-queue";
/// A spec whose submission the fake never answers and never keeps.
pub const LOST_NAME: &str = "lost-submit";
/// How long the fake stalls the two kinds of submission above (a test sets the edge's
/// `BACKEND_TIMEOUT_S` below it).
pub const STALL: std::time::Duration = std::time::Duration::from_secs(4);

/// One job as the fake backend knows it.
#[derive(Debug, Clone)]
pub struct FakeJob {
    pub edge_id: String,
    pub task: String,
    pub report_url: String,
    pub state: String,
    pub report_token: String,
    pub checkpoint: bool,
    pub ended: bool,
    /// The spec the edge sent (`spec_toml`).
    pub spec: String,
}

impl FakeJob {
    /// A job as the edge's submission describes it, running at once.
    fn submitted(b: &Value) -> FakeJob {
        let text = |k: &str| b[k].as_str().unwrap_or("").to_string();
        FakeJob {
            edge_id: text("job_id"),
            task: text("task"),
            report_url: text("report_url"),
            state: "running".into(),
            report_token: text("report_token"),
            checkpoint: false,
            ended: false,
            spec: text("spec_toml"),
        }
    }
}

#[derive(Default)]
pub struct Fake {
    pub jobs: HashMap<String, FakeJob>,
    pub submissions: usize,
}

/// Serves the runner contract on a free port until the test process ends.
pub fn start_fake(secret: String) -> (String, Arc<Mutex<Fake>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let fake = Arc::new(Mutex::new(Fake::default()));
    let state = fake.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let state = state.clone();
            let secret = secret.clone();
            std::thread::spawn(move || serve(stream, &state, &secret));
        }
    });
    (url, fake)
}

fn serve(stream: TcpStream, fake: &Mutex<Fake>, secret: &str) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    let _ = reader.read_exact(&mut body);
    let (status, ctype, out) = if headers.get("authorization") != Some(&format!("Bearer {secret}"))
    {
        (401, "application/json", b"{\"error\":\"secret\"}".to_vec())
    } else {
        route(fake, &method, &target, &body)
    };
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        out.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&out);
}

pub const LOG: &str = "step 1 loss 2.50\nstep 2 loss 2.25\n";

fn route(
    fake: &Mutex<Fake>,
    method: &str,
    target: &str,
    body: &[u8],
) -> (u16, &'static str, Vec<u8>) {
    let mut f = fake.lock().expect("fake state");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let j = |v: Value| (200, "application/json", v.to_string().into_bytes());
    match (method, segs.as_slice()) {
        ("POST", ["jobs"]) => {
            let b: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let spec = b["spec_toml"].as_str().unwrap_or("");
            if spec.contains(&format!("name = \"{LOST_NAME}")) {
                drop(f);
                std::thread::sleep(STALL);
                return (503, "application/json", b"{}".to_vec());
            }
            let slow = spec.contains(&format!("name = \"{SLOW_NAME}"));
            f.submissions += 1;
            let id = format!("r{}", f.submissions);
            let mut job = FakeJob::submitted(&b);
            if spec.contains(&format!("name = \"{QUEUED_NAME}")) {
                job.state = "queued".into();
            }
            let state = job.state.clone();
            f.jobs.insert(id.clone(), job);
            if slow {
                drop(f);
                std::thread::sleep(STALL);
            }
            (
                201,
                "application/json",
                json!({"id": id, "state": state}).to_string().into_bytes(),
            )
        }
        ("GET", ["jobs"]) => {
            let wanted = query.strip_prefix("job_id=").unwrap_or("");
            let found: Vec<Value> = f
                .jobs
                .iter()
                .filter(|(_, j)| j.edge_id == wanted)
                .map(|(id, j)| json!({"id": id, "job_id": j.edge_id, "task": j.task, "state": j.state}))
                .collect();
            j(Value::Array(found))
        }
        ("GET", ["jobs", id]) => match f.jobs.get(*id) {
            Some(job) => j(json!({
                "id": id, "job_id": job.edge_id, "task": job.task, "state": job.state, "exit_code": if job.ended { Some(0) } else { None },
                "started_at": "2030-01-01T00:00:00Z",
                "ended_at": if job.ended { Some("2030-01-01T00:00:36Z") } else { None },
                "checkpoint": job.checkpoint
            })),
            None => (404, "application/json", b"{}".to_vec()),
        },
        ("GET", ["jobs", _, "logs"]) => {
            let offset: usize = query
                .trim_start_matches("offset=")
                .parse()
                .unwrap_or(0)
                .min(LOG.len());
            j(
                json!({"offset": offset, "next_offset": LOG.len(), "text": &LOG[offset..], "eof": true}),
            )
        }
        ("POST", ["jobs", id, "cancel"]) => match f.jobs.get_mut(*id) {
            Some(job) => {
                // Stopped at once, after its 36 s of work.
                job.state = "cancelled".into();
                job.ended = true;
                j(json!({"id": id, "state": "cancelled"}))
            }
            None => (404, "application/json", b"{}".to_vec()),
        },
        ("GET", ["jobs", id, "checkpoint"]) => match f.jobs.get(*id) {
            Some(job) if job.checkpoint => (
                200,
                "application/octet-stream",
                b"CHECKPOINT-BYTES".to_vec(),
            ),
            _ => (404, "application/json", b"{}".to_vec()),
        },
        _ => (404, "application/json", b"{}".to_vec()),
    }
}

impl Fake {
    /// How many copies of the edge's job `edge_id` the fake was sent.
    pub fn copies(&self, edge_id: &str) -> usize {
        self.jobs.values().filter(|j| j.edge_id == edge_id).count()
    }

    /// The fake's id and record of the job the edge submitted as `edge_id`.
    pub fn job(&self, edge_id: &str) -> Option<(String, FakeJob)> {
        self.jobs
            .iter()
            .find(|(_, j)| j.edge_id == edge_id)
            .map(|(id, j)| (id.clone(), j.clone()))
    }

    /// Says from now on that the job has ended in `state` (its times: 36 s of work).
    pub fn end(&mut self, edge_id: &str, state: &str) {
        if let Some(j) = self.jobs.values_mut().find(|j| j.edge_id == edge_id) {
            j.state = state.into();
            j.ended = true;
        }
    }
}
