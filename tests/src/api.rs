//! A small typed client for the edge's API in tests: it keeps the session cookie, sends the
//! Origin header a browser would, or an API token instead, and returns statuses as values.

use crate::stack::Stack;
use serde_json::Value;

/// One answer: status, the headers tests look at, and the body (JSON when it parses).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub json: Value,
    pub bytes: Vec<u8>,
    pub set_cookie: Vec<String>,
    pub retry_after: Option<String>,
    pub content_type: Option<String>,
    /// Every header, names in lower case.
    pub headers: Vec<(String, String)>,
}

impl Answer {
    /// The body for a message: its JSON, or its first 300 bytes as text when it is not JSON
    /// (an answer that is not the edge's own, say), with its content type.
    pub fn shown(&self) -> String {
        if !self.json.is_null() {
            return self.json.to_string();
        }
        let text = String::from_utf8_lossy(&self.bytes[..self.bytes.len().min(300)]).into_owned();
        format!("{text:?} (not JSON; content-type {:?})", self.content_type)
    }

    /// The first value of a header (`name` in lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `error.code` of an error answer, or "" when there is none.
    pub fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }
}

/// A client of one edge, signed in or not.
#[derive(Debug, Clone)]
pub struct Client {
    pub base: String,
    /// `onramp_session=…`, once signed in by cookie.
    pub cookie: Option<String>,
    /// An API token or the admin token, sent as `Authorization: Bearer`.
    pub bearer: Option<String>,
    /// The Origin header to send on writes; the base URL by default, like a same-site page.
    pub origin: Option<String>,
}

impl Client {
    pub fn new(base: &str) -> Client {
        Client {
            base: base.to_string(),
            cookie: None,
            bearer: None,
            origin: Some(base.to_string()),
        }
    }

    pub fn with_bearer(base: &str, token: &str) -> Client {
        Client {
            bearer: Some(token.to_string()),
            origin: None,
            ..Client::new(base)
        }
    }

    pub fn get(&self, path: &str) -> Answer {
        self.request("GET", path, None, &[])
    }

    pub fn post(&self, path: &str, body: &Value) -> Answer {
        self.request(
            "POST",
            path,
            Some(body.to_string().into_bytes()),
            &[("content-type", "application/json")],
        )
    }

    /// Any request; `headers` are added to the client's own. An answer that wrangler dev's proxy
    /// made up for a request it dropped, and a GET it never answers, are sent again: see
    /// [`crate::dev_proxy`].
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let url = format!("{}{path}", self.base);
        let body = body.unwrap_or_default();
        let mut attempt = 1;
        loop {
            let retry = match self.send_once(method, &url, &body, headers) {
                Ok(answer) if crate::dev_proxy::dropped(answer.status, &answer.bytes) => {
                    if attempt >= crate::dev_proxy::ATTEMPTS {
                        return answer;
                    }
                    std::thread::sleep(crate::dev_proxy::pause_before_try(attempt));
                    "or miniflare answered for a request that never reached the edge"
                }
                Ok(answer) => return answer,
                Err(ureq::Error::Timeout(_))
                    if method == "GET" && attempt < crate::dev_proxy::ATTEMPTS =>
                {
                    "never answered"
                }
                Err(e) => panic!("{method} {url} failed: {e}"),
            };
            eprintln!("{}", crate::dev_proxy::note(method, &url, retry, attempt));
            attempt += 1;
        }
    }

    /// One try of [`Client::request`].
    fn send_once(
        &self,
        method: &str,
        url: &str,
        body: &[u8],
        headers: &[(&str, &str)],
    ) -> Result<Answer, ureq::Error> {
        let mut builder = ureq::http::Request::builder().method(method).uri(url);
        if let Some(c) = &self.cookie {
            builder = builder.header("cookie", c);
        }
        if let Some(b) = &self.bearer {
            builder = builder.header("authorization", format!("Bearer {b}"));
        }
        if let Some(o) = self.origin.as_ref().filter(|_| method != "GET") {
            builder = builder.header("origin", o);
        }
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let agent = if method == "GET" {
            crate::http_with_timeout(crate::dev_proxy::GET_ATTEMPT_TIMEOUT)
        } else {
            crate::http()
        };
        let req = builder
            .body(body.to_vec())
            .unwrap_or_else(|e| panic!("bad request {method} {url}: {e}"));
        let resp = agent.run(req)?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(String::from)
        };
        let set_cookie = resp
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok().map(String::from))
            .collect();
        let retry_after = header("retry-after");
        let content_type = header("content-type");
        let headers = resp
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        let bytes = resp
            .into_body()
            .with_config()
            .limit(u64::MAX)
            .read_to_vec()
            .unwrap_or_default();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok(Answer {
            status,
            json,
            bytes,
            set_cookie,
            retry_after,
            content_type,
            headers,
        })
    }

    /// Keeps the session cookie from an answer that set one.
    pub fn take_cookie(&mut self, answer: &Answer) {
        for c in &answer.set_cookie {
            if let Some(pair) = c
                .split(';')
                .next()
                .filter(|p| p.starts_with("onramp_session="))
            {
                self.cookie = (pair.len() > "onramp_session=".len()).then(|| pair.to_string());
            }
        }
    }

    /// A job's artifacts, each downloaded and checked against the sha256 it is listed with;
    /// panics unless every name in `wanted` is among them. Their names and bytes.
    pub fn artifacts_checked(&self, job: &str, wanted: &[&str]) -> Vec<(String, Vec<u8>)> {
        use sha2::Digest;
        let list = self.get(&format!("/api/jobs/{job}/artifacts"));
        assert_eq!(list.status, 200, "{}", list.shown());
        let listed = list.json["artifacts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let names: Vec<&str> = listed.iter().filter_map(|a| a["name"].as_str()).collect();
        for want in wanted {
            assert!(
                names.contains(want),
                "{want} not among job {job}'s artifacts {names:?}"
            );
        }
        let mut files = Vec::new();
        for a in &listed {
            let url = a["url"].as_str().unwrap_or_default();
            let got = self.get(url);
            assert_eq!(got.status, 200, "{url}: {}", got.shown());
            let sha: String = sha2::Sha256::digest(&got.bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(a["sha256"].as_str(), Some(sha.as_str()), "{a}");
            files.push((
                a["name"].as_str().unwrap_or_default().to_string(),
                got.bytes,
            ));
        }
        files
    }

    /// `POST /api/jobs` with a TOML job spec and the given Idempotency-Key.
    pub fn submit_spec(&self, spec: &str, key: &str) -> Answer {
        self.request(
            "POST",
            "/api/jobs",
            Some(spec.as_bytes().to_vec()),
            &[
                ("content-type", "application/toml"),
                ("idempotency-key", key),
            ],
        )
    }

    /// A POST from a new client, which keeps the session cookie the answer sets (sign-up,
    /// login, a password reset): the answer and the client.
    pub fn fresh_post(base: &str, path: &str, body: &Value) -> (Answer, Client) {
        let mut c = Client::new(base);
        let a = c.post(path, body);
        c.take_cookie(&a);
        (a, c)
    }

    /// Signs up a new account and keeps its session; panics with the answer if refused. The
    /// email is not verified, so the account has no trial credit: see `Stack::signup`.
    pub fn signup(base: &str, email: &str, password: &str) -> Client {
        let mut c = Client::new(base);
        let a = c.post(
            "/api/auth/signup",
            &serde_json::json!({"email": email, "password": password}),
        );
        assert_eq!(a.status, 201, "signup {email}: {}", a.shown());
        c.take_cookie(&a);
        assert!(
            c.cookie.is_some(),
            "signup set no session cookie: {:?}",
            a.set_cookie
        );
        c
    }

    /// `POST /api/auth/verify` with the token of a verification link.
    pub fn verify_email(&self, token: &str) -> Answer {
        self.post("/api/auth/verify", &serde_json::json!({ "token": token }))
    }

    pub fn balance(&self) -> i64 {
        let a = self.get("/api/me");
        assert_eq!(a.status, 200, "{}", a.shown());
        a.json["balance_fen"].as_i64().unwrap_or(i64::MIN)
    }
}

/// The verification links mailed to `email`, newest first, read from the stack's outbox
/// (`MAIL_SENDER=outbox`) with the admin token.
pub fn verification_links(stack: &Stack, email: &str) -> Vec<String> {
    mailed_links(stack, email, "/verify?token=")
}

/// The mails the stack's outbox holds for `email`, newest first (read with the admin token).
pub fn outbox(stack: &Stack, email: &str) -> Vec<Value> {
    let admin = Client::with_bearer(&stack.url, &stack.admin_token);
    let a = admin.get(&format!("/api/admin/outbox?to={}", urlencode(email)));
    assert_eq!(a.status, 200, "outbox of {email}: {}", a.shown());
    a.json["mails"].as_array().cloned().unwrap_or_default()
}

/// The links holding `marker` (`/verify?token=`, `/reset?token=`) in the mails the outbox holds
/// for `email`, newest first.
pub fn mailed_links(stack: &Stack, email: &str, marker: &str) -> Vec<String> {
    outbox(stack, email)
        .iter()
        .filter_map(|m| {
            let text = m["text"].as_str()?;
            let start = text.find("http")?;
            let link = text[start..].split_whitespace().next()?;
            link.contains(marker).then(|| link.to_string())
        })
        .collect()
}

/// The links of [`mailed_links`], waited for until at least one has arrived: a mail the edge
/// sends after its answer (the password reset's) lands in the outbox a moment later.
pub fn awaited_links(stack: &Stack, email: &str, marker: &str) -> Vec<String> {
    crate::wait::until(
        &format!("a mail to {email} holding {marker}"),
        std::time::Duration::from_secs(30),
        || {
            let links = mailed_links(stack, email, marker);
            Ok((!links.is_empty()).then_some(links))
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The token of the newest verification link mailed to `email`.
pub fn verification_token(stack: &Stack, email: &str) -> String {
    let links = verification_links(stack, email);
    let newest = links
        .first()
        .unwrap_or_else(|| panic!("no verification mail to {email} in the outbox"));
    newest
        .split_once("token=")
        .map(|(_, t)| t.to_string())
        .unwrap_or_default()
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Stack {
    /// Signs up a new account and verifies its email through the mailed link, as its owner
    /// would, so that it has the trial credit; the client keeps the session.
    pub fn signup(&self, email: &str, password: &str) -> Client {
        let c = Client::signup(&self.url, email, password);
        let token = verification_token(self, email);
        let v = c.verify_email(&token);
        assert_eq!(v.status, 200, "verify {email}: {}", v.shown());
        c
    }
}

/// A fresh email address, unique per call.
pub fn unique_email(tag: &str) -> String {
    format!("{tag}-{}@example.cn", crate::stack::random_hex(6))
}

/// A named test scenario against a shared stack.
pub type Scenario<S> = (&'static str, fn(&S));

/// Runs independent scenarios against one stack in parallel threads (each makes its own users
/// and codes), then fails naming every scenario that failed, with how long it ran and the start
/// of its panic message, so that the cause survives in a CI log that keeps only the end. One
/// stack per test file keeps the stack tests quick, and every process is stopped when the test's
/// stack drops.
pub fn run_scenarios<S: Sync>(stack: &S, scenarios: &[Scenario<S>]) {
    let failed: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = scenarios
            .iter()
            .map(|(name, f)| {
                let run = move || {
                    let started = std::time::Instant::now();
                    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(stack)));
                    (ran, started.elapsed().as_secs_f64())
                };
                (name, scope.spawn(run))
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|(name, h)| match h.join() {
                Ok((Ok(()), took)) => {
                    eprintln!("scenario {name}: ok ({took:.1} s)");
                    None
                }
                Ok((Err(payload), took)) => {
                    eprintln!("scenario {name}: FAILED ({took:.1} s)");
                    Some(format!("{name} ({took:.1} s): {}", panic_text(&*payload)))
                }
                Err(payload) => Some(format!("{name}: {}", panic_text(&*payload))),
            })
            .collect()
    });
    assert!(
        failed.is_empty(),
        "failed scenarios:\n{}",
        failed.join("\n")
    );
}

/// The first 400 characters of a panic's message.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("(a panic without a message)");
    let cut: String = text.chars().take(400).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}
