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
}

impl Answer {
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

    /// Any request; `headers` are added to the client's own.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let url = format!("{}{path}", self.base);
        let mut builder = ureq::http::Request::builder().method(method).uri(&url);
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
        let agent = crate::http();
        let result = match builder.body(body.unwrap_or_default()) {
            Ok(req) => agent.run(req),
            Err(e) => panic!("bad request {method} {url}: {e}"),
        };
        let resp = result.unwrap_or_else(|e| panic!("{method} {url} failed: {e}"));
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
        let bytes = resp.into_body().read_to_vec().unwrap_or_default();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            json,
            bytes,
            set_cookie,
            retry_after,
            content_type,
        }
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

    /// Signs up a new account and keeps its session; panics with the answer if refused. The
    /// email is not verified, so the account has no trial credit: see `Stack::signup`.
    pub fn signup(base: &str, email: &str, password: &str) -> Client {
        let mut c = Client::new(base);
        let a = c.post(
            "/api/auth/signup",
            &serde_json::json!({"email": email, "password": password}),
        );
        assert_eq!(a.status, 201, "signup {email}: {:?}", a.json);
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
        assert_eq!(a.status, 200, "{:?}", a.json);
        a.json["balance_fen"].as_i64().unwrap_or(i64::MIN)
    }
}

/// The verification links mailed to `email`, newest first, read from the stack's outbox
/// (`MAIL_SENDER=outbox`) with the admin token.
pub fn verification_links(stack: &Stack, email: &str) -> Vec<String> {
    let admin = Client::with_bearer(&stack.url, &stack.admin_token);
    let a = admin.get(&format!("/api/admin/outbox?to={}", urlencode(email)));
    assert_eq!(a.status, 200, "outbox of {email}: {:?}", a.json);
    let mails = a.json["mails"].as_array().cloned().unwrap_or_default();
    mails
        .iter()
        .filter_map(|m| {
            let text = m["text"].as_str()?;
            let start = text.find("http")?;
            let link = text[start..].split_whitespace().next()?;
            link.contains("/verify?token=").then(|| link.to_string())
        })
        .collect()
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
        assert_eq!(v.status, 200, "verify {email}: {:?}", v.json);
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
/// and codes), then fails naming every scenario that failed. One stack per test file keeps
/// the stack tests quick, and every process is stopped when the test's stack drops.
pub fn run_scenarios<S: Sync>(stack: &S, scenarios: &[Scenario<S>]) {
    let failed: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = scenarios
            .iter()
            .map(|(name, f)| {
                (
                    name,
                    scope.spawn(move || {
                        let started = std::time::Instant::now();
                        f(stack);
                        started.elapsed()
                    }),
                )
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|(name, h)| match h.join() {
                Ok(took) => {
                    eprintln!("scenario {name}: ok ({:.1} s)", took.as_secs_f64());
                    None
                }
                Err(_) => {
                    eprintln!("scenario {name}: FAILED");
                    Some(name.to_string())
                }
            })
            .collect()
    });
    assert!(failed.is_empty(), "failed scenarios: {failed:?}");
}
