//! Support for the runner's own tests: start the real `onramp-runner` binary on a free port with
//! its own state folder (and restart it on the same folder), call its API with the secret, and
//! a small HTTP server that records the reports a job POSTs, standing in for the edge.

use crate::paths;
use crate::process::{Service, free_port};
use crate::stack::{random_hex, unique_temp_dir};
use crate::wait;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A runner started for a test; dropping it stops it (and, with `remove_state`, its folder).
pub struct TestRunner {
    pub url: String,
    pub secret: String,
    pub state_dir: PathBuf,
    pub service: Option<Service>,
    /// More options for every start (`--cards 2`, `--sandbox on`).
    pub extra_args: Vec<String>,
    log_index: u32,
}

impl TestRunner {
    /// Starts a runner with a fresh state folder.
    pub fn start(name: &str) -> Result<TestRunner, String> {
        TestRunner::start_with(name, &[])
    }

    /// Starts a runner with a fresh state folder and more options.
    pub fn start_with(name: &str, extra_args: &[&str]) -> Result<TestRunner, String> {
        let state_dir = unique_temp_dir(name);
        std::fs::create_dir_all(&state_dir).map_err(|e| e.to_string())?;
        let mut r = TestRunner {
            url: String::new(),
            secret: random_hex(16),
            state_dir,
            service: None,
            extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
            log_index: 0,
        };
        r.restart()?;
        Ok(r)
    }

    /// (Re)starts the runner process on the same state folder and waits until it answers.
    pub fn restart(&mut self) -> Result<(), String> {
        self.service.take();
        let port = free_port()?;
        self.url = format!("http://127.0.0.1:{port}");
        let secret_file =
            crate::process::write_secret(&self.state_dir.join("state"), &self.secret)?;
        let mut cmd = Command::new(paths::runner_bin());
        cmd.args(["--addr", &format!("127.0.0.1:{port}"), "--state-dir"])
            .arg(self.state_dir.join("state"))
            .arg("--shared")
            .arg(paths::shared_dir())
            .arg("--secret-file")
            .arg(secret_file)
            .args(&self.extra_args);
        self.log_index += 1;
        let log = self
            .state_dir
            .join(format!("runner-{}.log", self.log_index));
        let mut service = Service::start("onramp-runner", cmd, &log, false)?;
        let health = format!("{}/health", self.url);
        let auth = format!("Bearer {}", self.secret);
        let ready = wait::until("the runner's /health", Duration::from_secs(30), || {
            if let Some(s) = service.exited() {
                return Err(format!(
                    "runner exited with {s}: {}",
                    service.log_tail(2000)
                ));
            }
            Ok(crate::http()
                .get(&health)
                .header("authorization", &auth)
                .call()
                .is_ok_and(|r| r.status() == 200)
                .then_some(()))
        });
        self.service = Some(service);
        ready
    }

    /// Kills the runner process alone with SIGKILL, as a crash would: its jobs (in their own
    /// process groups) keep running.
    pub fn crash(&mut self) {
        if let Some(s) = self.service.as_mut() {
            crate::process::signal_group(s.pid(), "KILL");
            let _ = wait::until("the runner to die", Duration::from_secs(10), || {
                Ok(s.exited().map(|_| ()))
            });
        }
        self.service.take();
    }

    /// The runner's own log, for failure messages.
    pub fn log(&self) -> String {
        self.service
            .as_ref()
            .map(|s| s.log_tail(4000))
            .unwrap_or_default()
    }

    /// A job's folder in the runner's state.
    pub fn job_dir(&self, id: &str) -> PathBuf {
        self.state_dir.join("state/jobs").join(id)
    }

    fn auth(&self) -> String {
        format!("Bearer {}", self.secret)
    }

    /// `GET path` → (status, JSON body).
    pub fn get(&self, path: &str) -> (u16, Value) {
        let resp = crate::http()
            .get(&format!("{}{path}", self.url))
            .header("authorization", &self.auth())
            .call();
        json_answer(resp)
    }

    /// `GET path` → (status, raw bytes).
    pub fn get_bytes(&self, path: &str) -> (u16, Vec<u8>) {
        match crate::http()
            .get(&format!("{}{path}", self.url))
            .header("authorization", &self.auth())
            .call()
        {
            Ok(r) => {
                let status = r.status().as_u16();
                let bytes = r
                    .into_body()
                    .with_config()
                    .limit(64 * 1024 * 1024)
                    .read_to_vec()
                    .unwrap_or_default();
                (status, bytes)
            }
            Err(e) => (0, e.to_string().into_bytes()),
        }
    }

    /// `POST path` with a JSON body → (status, JSON body).
    pub fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let resp = crate::http()
            .post(&format!("{}{path}", self.url))
            .header("authorization", &self.auth())
            .send_json(body);
        json_answer(resp)
    }

    /// Submits a job and returns its runner id (panics with the answer when not 201: tests only).
    pub fn submit(&self, body: &Value) -> Result<String, String> {
        let (status, v) = self.post("/jobs", body);
        if status != 201 {
            return Err(format!("POST /jobs: HTTP {status}: {v}"));
        }
        v["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("no id in {v}"))
    }

    /// Waits until the job's state satisfies `pred`; returns the job view.
    pub fn wait_state(
        &self,
        id: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<Value, String> {
        wait::until(&format!("job {id}'s state"), timeout, || {
            let (status, v) = self.get(&format!("/jobs/{id}"));
            if status != 200 {
                return Err(format!("HTTP {status}: {v}"));
            }
            let state = v["state"].as_str().unwrap_or_default().to_string();
            if pred(&state) {
                Ok(Some(v))
            } else {
                Err(format!("state so far: {v}"))
            }
        })
        .map_err(|e| format!("{e}\n--- runner log ---\n{}", self.log()))
    }

    /// The whole log of a job, paging with `next_offset` until `eof`.
    pub fn read_log(&self, id: &str) -> Result<String, String> {
        let mut text = String::new();
        let mut offset = 0u64;
        wait::until(
            &format!("job {id}'s log to end"),
            Duration::from_secs(30),
            || {
                let (status, v) = self.get(&format!("/jobs/{id}/logs?offset={offset}"));
                if status != 200 {
                    return Err(format!("HTTP {status}: {v}"));
                }
                text.push_str(v["text"].as_str().unwrap_or_default());
                offset = v["next_offset"].as_u64().unwrap_or(offset);
                Ok(v["eof"].as_bool().unwrap_or(false).then_some(()))
            },
        )?;
        Ok(text)
    }
}

impl Drop for TestRunner {
    fn drop(&mut self) {
        self.service.take();
        let _ = std::fs::remove_dir_all(&self.state_dir);
    }
}

fn json_answer(resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> (u16, Value) {
    match resp {
        Ok(r) => {
            let status = r.status().as_u16();
            let text = r.into_body().read_to_string().unwrap_or_default();
            let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
            (status, v)
        }
        Err(e) => (0, Value::String(e.to_string())),
    }
}

/// One request the sink received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

/// A tiny HTTP server that records every POST and answers 204, standing in for the edge's
/// report endpoint. It runs until the test process ends.
#[derive(Clone)]
pub struct ReportSink {
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl ReportSink {
    pub fn start() -> Result<ReportSink, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let store = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Some(r) = read_request(&stream) {
                    store.lock().unwrap_or_else(|p| p.into_inner()).push(r);
                }
                let mut s = &stream;
                let _ = s.write_all(
                    b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Ok(ReportSink {
            url: format!("http://127.0.0.1:{port}/report"),
            received,
        })
    }

    pub fn received(&self) -> Vec<Received> {
        self.received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

fn read_request(stream: &std::net::TcpStream) -> Option<Received> {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let (mut len, mut authorization) = (0usize, None);
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => len = value.trim().parse().ok()?,
            "authorization" => authorization = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Received {
        path,
        authorization,
        body,
    })
}
