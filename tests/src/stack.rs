//! The local stack: `onramp-runner` plus `wrangler dev` (workerd with local D1, KV and Durable
//! Objects) serving the app and `/api/*` on one URL. Used by `cargo xtask dev` and by the tests,
//! so both start exactly the same thing.

use crate::paths;
use crate::process::{Service, free_port};
use crate::wait;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

mod d1;

/// How to start a stack.
#[derive(Debug, Clone)]
pub struct StackOptions {
    /// Port of the one URL; a free one when `None`.
    pub port: Option<u16>,
    /// Where wrangler's local D1/KV/DO state, the runner's state and the logs live.
    pub state_dir: PathBuf,
    /// Remove `state_dir` when the stack stops (tests); kept for `cargo xtask dev`.
    pub remove_state_on_drop: bool,
    /// Let the services write to the terminal instead of log files.
    pub inherit_output: bool,
    pub admin_token: String,
    /// Start the runner and configure it as a backend.
    pub with_runner: bool,
    /// The runner's binary: the debug build for tests, the release build for `cargo xtask dev`.
    pub runner_bin: PathBuf,
    /// Where jobs reach the edge when that is not this machine's loopback (the nodes of a test
    /// cluster, each in a network of its own): wrangler dev then listens on every address, and
    /// `PUBLIC_URL`, which jobs report to, names this one. The tests still call loopback.
    pub public_host: Option<String>,
    /// The benchmark tasks the runner's backend lists in `BACKENDS` (`eval_tasks`): those whose
    /// data the test puts in the runner's task folder ([`Stack::eval_tasks`]), and any it lists
    /// without data to see the job refuse them.
    pub runner_eval_tasks: Vec<String>,
}

/// The CPU cards the stack's runner declares in `BACKENDS` and is started with (`--cards`), so
/// that the edge's view and the runner's capacity are one number.
pub const RUNNER_CARDS: u32 = 1;

impl StackOptions {
    /// A stack with fresh temporary state, for a test.
    pub fn for_test(name: &str) -> StackOptions {
        StackOptions {
            port: None,
            state_dir: unique_temp_dir(name),
            remove_state_on_drop: true,
            inherit_output: false,
            admin_token: random_hex(16),
            with_runner: true,
            runner_bin: crate::paths::runner_bin(),
            public_host: None,
            runner_eval_tasks: Vec::new(),
        }
    }
}

/// Additions to a stack's configuration, for tests that need them (`Stack::start_with`).
#[derive(Debug, Clone, Default)]
pub struct StackExtras {
    /// More `--var NAME:VALUE` for wrangler dev (e.g. limits a test wants low or high).
    pub vars: Vec<(String, String)>,
    /// More entries for `BACKENDS` (e.g. a fake backend served by the test itself).
    pub extra_backends: Vec<serde_json::Value>,
}

/// Where wrangler dev listens, and the `PUBLIC_URL` jobs reach it at: loopback, or every address
/// with `public_host` named (`StackOptions::public_host`).
fn listen_and_public(public_host: Option<&str>, port: u16) -> (&'static str, String) {
    match public_host {
        Some(host) => ("0.0.0.0", format!("http://{host}:{port}")),
        None => ("127.0.0.1", format!("http://127.0.0.1:{port}")),
    }
}

/// The key that signs this stack's email verification links: made once per state folder, so the
/// links of a `cargo xtask dev` run keep working after a restart, and fresh for every test.
fn email_link_key(state_dir: &Path) -> Result<String, String> {
    let path = state_dir.join("email_link_key");
    if let Ok(key) = std::fs::read_to_string(&path)
        && key.trim().len() >= 32
    {
        return Ok(key.trim().to_string());
    }
    let key = random_hex(32);
    std::fs::write(&path, &key).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(key)
}

/// An empty dotenv file in `state_dir`.
fn empty_env_file(state_dir: &Path) -> Result<PathBuf, String> {
    let path = state_dir.join("empty.env");
    std::fs::write(&path, "").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// A running stack; dropping it stops every process it started and, for tests, removes its state.
pub struct Stack {
    pub url: String,
    pub admin_token: String,
    pub runner_url: Option<String>,
    pub runner_secret: String,
    pub state_dir: PathBuf,
    remove_state_on_drop: bool,
    runner_bin: PathBuf,
    // Declared in stop order: the edge first, then the runner.
    pub edge: Option<Service>,
    pub runner: Option<Service>,
}

impl Stack {
    /// The runner's benchmark task folder (`--eval-tasks`): `eval-tasks/` of the stack's state,
    /// outside the runner's own state (which jobs do not see). Empty at start; a test puts the
    /// lm-eval tasks its jobs score there (and lists them in `StackOptions::runner_eval_tasks`),
    /// and so may a developer under `cargo xtask dev`.
    pub fn eval_tasks(&self) -> PathBuf {
        self.state_dir.join("eval-tasks")
    }

    pub fn start(opts: StackOptions) -> Result<Stack, String> {
        Stack::start_with(opts, StackExtras::default())
    }

    /// `start` with extra variables and backends. A free port is found before the service
    /// binds it, so another process may take it in between: a start that failed on a port in
    /// use starts again (three tries), on new ports, or on the port asked for once it is free
    /// (a stack started again on its predecessor's port and state). A try that failed keeps the
    /// state folder: the next one starts on the same state (its database, its link key).
    pub fn start_with(opts: StackOptions, extras: StackExtras) -> Result<Stack, String> {
        let mut tries = 0;
        loop {
            tries += 1;
            match Stack::start_once(opts.clone(), extras.clone()) {
                Err(e) if tries < 3 && e.contains("Address already in use") => {
                    if let Some(port) = opts.port {
                        let _ = crate::wait::until(
                            "the port to be free",
                            Duration::from_secs(30),
                            || {
                                Ok(std::net::TcpListener::bind(("127.0.0.1", port))
                                    .is_ok()
                                    .then_some(()))
                            },
                        );
                    }
                }
                Err(e) => {
                    if opts.remove_state_on_drop && std::env::var_os("ONRAMP_KEEP_STATE").is_none()
                    {
                        let _ = std::fs::remove_dir_all(&opts.state_dir);
                    }
                    return Err(e);
                }
                ok => return ok,
            }
        }
    }

    fn start_once(opts: StackOptions, extras: StackExtras) -> Result<Stack, String> {
        std::fs::create_dir_all(&opts.state_dir)
            .map_err(|e| format!("cannot create {}: {e}", opts.state_dir.display()))?;
        let mut stack = Stack {
            url: String::new(),
            admin_token: opts.admin_token.clone(),
            runner_url: None,
            runner_secret: random_hex(32),
            state_dir: opts.state_dir.clone(),
            remove_state_on_drop: false, // until it is up: see `start_with`
            runner_bin: opts.runner_bin.clone(),
            edge: None,
            runner: None,
        };
        let mut backends = Vec::new();
        if opts.with_runner {
            let port = free_port()?;
            let url = format!("http://127.0.0.1:{port}");
            stack.runner = Some(start_runner(
                &opts.runner_bin,
                &opts.state_dir,
                port,
                &stack.runner_secret,
                opts.inherit_output,
            )?);
            backends.push(serde_json::json!({
                "name": "local", "kind": "runner", "url": url,
                "secret": stack.runner_secret, "cards": {"cpu": RUNNER_CARDS},
                "eval_tasks": opts.runner_eval_tasks,
            }));
            stack.runner_url = Some(url);
        }

        backends.extend(extras.extra_backends.iter().cloned());

        let persist = opts.state_dir.join("wrangler");
        d1::migrate(wrangler, &opts.state_dir, &persist)?;

        let port = match opts.port {
            Some(p) => p,
            None => free_port()?,
        };
        stack.url = format!("http://127.0.0.1:{port}");
        let (listen, public_url) = listen_and_public(opts.public_host.as_deref(), port);
        let mut cmd = wrangler(&opts.state_dir);
        cmd.args([
            "dev",
            "--local",
            "--ip",
            listen,
            "--port",
            &port.to_string(),
        ])
        .args(["--show-interactive-dev-session=false", "--persist-to"])
        .arg(&persist)
        // Each wrangler opens a debugger port (9229 by default); parallel stacks need their own.
        .args(["--inspector-port", &free_port()?.to_string()])
        // `GET /__scheduled?cron=…` fires the cron trigger (the reconcile sweep) on demand.
        .arg("--test-scheduled")
        // Everything comes from here and wrangler.toml: an empty env file instead of a
        // developer's edge/.dev.vars or .env, which wrangler dev would read otherwise.
        .arg("--env-file")
        .arg(empty_env_file(&opts.state_dir)?)
        .args([
            "--var",
            &format!("BACKENDS:{}", serde_json::Value::Array(backends)),
        ])
        .args(["--var", &format!("ADMIN_TOKEN:{}", opts.admin_token)])
        .args(["--var", &format!("PUBLIC_URL:{public_url}")])
        .args([
            "--var",
            &format!("EMAIL_LINK_KEY:{}", email_link_key(&opts.state_dir)?),
        ]);
        for (name, value) in &extras.vars {
            cmd.args(["--var", &format!("{name}:{value}")]);
        }
        let log = opts.state_dir.join("edge.log");
        stack.edge = Some(Service::start(
            "wrangler dev",
            cmd,
            &log,
            opts.inherit_output,
        )?);
        stack.wait_edge_healthy()?;
        stack.remove_state_on_drop = opts.remove_state_on_drop;
        Ok(stack)
    }

    /// Waits until `wrangler dev` answers `/api/health` (200, or 503 while a backend is down).
    fn wait_edge_healthy(&mut self) -> Result<(), String> {
        let health = format!("{}/api/health", self.url);
        let edge = self.edge.as_mut();
        wait_healthy("wrangler dev", edge, Duration::from_secs(90), || {
            Ok(crate::http()
                .get(&health)
                .call()
                .is_ok_and(|r| r.status() == 200 || r.status() == 503))
        })
    }

    /// Kills the runner with SIGKILL, as a crash would (its jobs, in their own process groups,
    /// keep running), and starts a new one on the same URL and state folder.
    pub fn crash_and_restart_runner(&mut self) -> Result<(), String> {
        let url = self.runner_url.clone().ok_or("this stack has no runner")?;
        let port: u16 = url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("no port in {url}"))?;
        if let Some(mut old) = self.runner.take() {
            crate::process::signal_group(old.pid(), "KILL");
            wait::until("the runner to die", Duration::from_secs(10), || {
                Ok(old.exited().map(|_| ()))
            })?;
        }
        self.runner = Some(start_runner(
            &self.runner_bin,
            &self.state_dir,
            port,
            &self.runner_secret,
            false,
        )?);
        Ok(())
    }

    /// Fires the cron trigger once, as the schedule would (wrangler dev's `--test-scheduled`), and
    /// returns when the scheduled handler has finished. (`/__scheduled` is in wrangler.toml's
    /// `run_worker_first`, else the assets would answer it with the app's page.)
    pub fn run_scheduled(&self, cron: &str) -> Result<(), String> {
        let url = format!("{}/__scheduled?cron={}", self.url, cron.replace(' ', "+"));
        let resp = crate::http()
            .post(&url)
            .send_empty()
            .map_err(|e| format!("POST {url}: {e}"))?;
        let status = resp.status();
        let text = resp.into_body().read_to_string().unwrap_or_default();
        if status == 200 && text.contains("Ran scheduled event") {
            Ok(())
        } else {
            Err(format!("POST {url}: HTTP {status}: {text:.200}"))
        }
    }

    /// Stops everything; also done on drop.
    pub fn stop(&mut self) {
        self.edge.take();
        self.runner.take();
        // ONRAMP_KEEP_STATE=1 keeps every stack's logs and state, to read after a failure.
        if self.remove_state_on_drop && std::env::var_os("ONRAMP_KEEP_STATE").is_none() {
            let _ = std::fs::remove_dir_all(&self.state_dir);
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", edge_log_notes(&self.state_dir.join("edge.log")));
        }
        self.stop();
    }
}

/// What a failed test's edge said besides its ordinary lines: the last 40 of its log's answers
/// of 500 and above and its errors and warnings (wrangler's, workerd's, a panic), for the CI log.
fn edge_log_notes(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    // A request line: `[wrangler:info] GET /api/me 200 OK (12ms)`.
    let answered_5xx = |l: &str| {
        let mut words = l.split_whitespace();
        words.next() == Some("[wrangler:info]")
            && words
                .nth(2)
                .and_then(|w| w.parse::<u16>().ok())
                .is_some_and(|status| status >= 500)
    };
    let marks = [
        "ERROR",
        "Error",
        "error:",
        "[wrangler:warn]",
        "panicked",
        "restarted",
    ];
    let notes: Vec<&str> = text
        .lines()
        .filter(|l| answered_5xx(l) || marks.iter().any(|m| l.contains(m)))
        .collect();
    let tail = &notes[notes.len().saturating_sub(40)..];
    format!(
        "the edge's log ({}), its last notes:\n{}",
        log.display(),
        tail.join("\n")
    )
}

/// Starts `onramp-runner` on `port` with its state in `state_dir/runner` and waits until it is
/// healthy. Each start logs to its own file, so a restart keeps the earlier log.
fn start_runner(
    bin: &Path,
    state_dir: &Path,
    port: u16,
    secret: &str,
    inherit_output: bool,
) -> Result<Service, String> {
    // The secret in a file of the runner's state, which its sandbox hides from jobs.
    let secret_file = crate::process::write_secret(&state_dir.join("runner"), secret)?;
    let tasks = state_dir.join("eval-tasks");
    std::fs::create_dir_all(&tasks)
        .map_err(|e| format!("cannot create {}: {e}", tasks.display()))?;
    let mut cmd = Command::new(bin);
    cmd.args(["--addr", &format!("127.0.0.1:{port}"), "--state-dir"])
        .arg(state_dir.join("runner"))
        .args(["--cards", &RUNNER_CARDS.to_string()])
        .arg("--secret-file")
        .arg(secret_file)
        .arg("--eval-tasks")
        .arg(tasks);
    let mut log = state_dir.join("runner.log");
    let mut n = 1;
    while log.exists() {
        n += 1;
        log = state_dir.join(format!("runner-{n}.log"));
    }
    let mut service = Service::start("onramp-runner", cmd, &log, inherit_output)?;
    let health = format!("http://127.0.0.1:{port}/health");
    let auth = format!("Bearer {secret}");
    wait_healthy(
        "the runner",
        Some(&mut service),
        Duration::from_secs(30),
        || {
            let resp = crate::http()
                .get(&health)
                .header("authorization", &auth)
                .call();
            Ok(resp.is_ok_and(|r| r.status() == 200))
        },
    )?;
    Ok(service)
}

/// Waits until `ready` says yes, failing early with the log tail if the service exits.
fn wait_healthy(
    what: &str,
    service: Option<&mut Service>,
    timeout: Duration,
    mut ready: impl FnMut() -> Result<bool, String>,
) -> Result<(), String> {
    let service = service.ok_or_else(|| format!("{what} was not started"))?;
    // A service that exited will not become ready: stop waiting at once (`Some(Err)`).
    let result = wait::until(what, timeout, || {
        if let Some(status) = service.exited() {
            return Ok(Some(Err(format!("{what} exited with {status}"))));
        }
        Ok(ready()?.then_some(Ok(())))
    })
    .and_then(|r| r);
    result.map_err(|e| {
        format!(
            "{e}\n--- {} log ---\n{}",
            service.name,
            service.log_tail(4000)
        )
    })
}

/// A wrangler command with everything that would phone out switched off and its own
/// configuration folder inside `state_dir`.
pub fn wrangler(state_dir: &Path) -> Command {
    let root = paths::repo_root();
    let mut cmd = Command::new("node");
    cmd.arg(paths::wrangler_js())
        .arg("--config")
        .arg(root.join("edge/wrangler.toml"))
        .current_dir(root.join("edge"))
        .env("WRANGLER_SEND_METRICS", "false")
        .env("WRANGLER_HIDE_BANNER", "true")
        .env("CLOUDFLARE_CF_FETCH_ENABLED", "false")
        .env("XDG_CONFIG_HOME", state_dir.join("xdg"))
        .env("WRANGLER_LOG_PATH", state_dir.join("wrangler-logs"))
        .env("CI", "true");
    cmd
}

/// `len` random bytes as hex, from the kernel's generator.
pub fn random_hex(len: usize) -> String {
    use std::io::Read;
    let mut buf = vec![0u8; len];
    let filled = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf));
    if filled.is_err() {
        // No /dev/urandom: fall back to the clock and pid, which is still unique per run.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = format!("{t}{}", std::process::id());
        for (i, b) in seed.bytes().cycle().take(len).enumerate() {
            buf[i] = b ^ (i as u8).wrapping_mul(31);
        }
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// A new, empty folder under the system's temp dir.
pub fn unique_temp_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "onramp-{name}-{}-{}",
        std::process::id(),
        random_hex(6)
    ))
}
