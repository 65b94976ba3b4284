//! Talking to the edge: one blocking HTTP call at a time, answers as status + JSON, and the
//! edge's error shape `{"error": {"code", "message", "details"}}` turned into one readable line.

use crate::say::{self, t};
use serde_json::Value;

/// No edge answered at `base`: why, and what to do about it.
fn unreachable(base: &str, e: &ureq::Error) -> Failure {
    Failure(t(
        format!(
            "cannot reach the edge at {base}: {e}. Start the local stack with `cargo xtask dev`, \
             or name another edge with --edge URL or ONRAMP_EDGE (`onramp login --edge URL` \
             remembers it)"
        ),
        format!(
            "无法连接边缘服务 {base}：{}。请用 `cargo xtask dev` 启动本地服务，或用 --edge URL 或 \
             ONRAMP_EDGE 指定其他边缘服务（`onramp login --edge URL` 会记住它）",
            reason_zh(e)
        ),
    ))
}

/// Why a request got no answer, in Chinese (the network's own words stay English only in the
/// English message).
fn reason_zh(e: &ureq::Error) -> String {
    use std::io::ErrorKind;
    match e {
        ureq::Error::Io(io) => match io.kind() {
            ErrorKind::ConnectionRefused => "连接被拒绝（该地址没有服务在监听）".into(),
            ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => "连接被重置".into(),
            ErrorKind::TimedOut => "连接超时".into(),
            ErrorKind::NetworkUnreachable | ErrorKind::HostUnreachable => "网络不可达".into(),
            ErrorKind::AddrNotAvailable => "地址不可用".into(),
            _ => format!("网络读写失败（{:?}）", io.kind()),
        },
        ureq::Error::Timeout(_) => "请求超时".into(),
        ureq::Error::HostNotFound => "找不到该主机名".into(),
        ureq::Error::ConnectionFailed => "连接失败".into(),
        ureq::Error::BadUri(_) => "地址格式不对".into(),
        ureq::Error::Tls(_) => "TLS 握手失败".into(),
        _ => "网络错误".into(),
    }
}

/// How long one call may take: a minute, and for a body (a dataset's part, up to tens of MiB) the
/// time to send it at 128 kbit/s on top, so that a slow uplink still gets every part through.
pub fn call_limit(body_len: usize) -> std::time::Duration {
    std::time::Duration::from_secs(60 + (body_len / (16 * 1024)) as u64)
}

/// Where the edge is when nothing says otherwise: what `cargo xtask dev` serves.
pub const DEFAULT_EDGE: &str = "http://localhost:8787";

/// One answer from the edge.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub json: Value,
    /// `onramp_session=…` when the answer set a session cookie (login).
    pub session: Option<String>,
    /// The start of a body that is not JSON (a proxy's or the runtime's own answer, never the
    /// edge's), so that a failure can say what answered; empty otherwise.
    pub text: String,
}

/// An answer's body read: its JSON, or `Null` and the start of its text (see [`Answer::text`]).
fn parse_body(bytes: &[u8]) -> (Value, String) {
    match serde_json::from_slice(bytes) {
        Ok(json) => (json, String::new()),
        Err(_) => {
            let text = String::from_utf8_lossy(bytes);
            let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            (Value::Null, text.chars().take(200).collect())
        }
    }
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A successful answer whose body is read as it arrives ([`Edge::stream`]).
pub struct Streamed {
    pub status: u16,
    /// Its `Content-Range`, which a 206 carries.
    pub content_range: Option<String>,
    pub body: Box<dyn std::io::Read + Send>,
}

/// A refusal or failure, already worded for the terminal.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure(pub String);

/// `v[key]`, or its zh-CN wording (`v["messages"]["zh-CN"]`) when this run speaks Chinese and
/// the answer carries one.
fn in_lang<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    in_lang_of(v, key, say::lang())
}

fn in_lang_of<'a>(v: &'a Value, key: &str, lang: say::Lang) -> Option<&'a str> {
    let zh = match lang {
        say::Lang::Zh => v["messages"]["zh-CN"].as_str(),
        say::Lang::En => None,
    };
    zh.or(v[key].as_str())
}

/// The edge's error as one line: its message, its code and the HTTP status, then the spec
/// diagnostics when the edge sent them (so a refused spec says what and where).
pub fn describe_error(answer: &Answer) -> Failure {
    let e = &answer.json["error"];
    let mut text = match (in_lang(e, "message"), e["code"].as_str()) {
        (Some(m), Some(c)) => format!("{m} ({c}, HTTP {})", answer.status),
        _ if answer.text.is_empty() => t(
            format!(
                "the edge answered HTTP {} without an error body",
                answer.status
            ),
            format!("边缘服务返回 HTTP {}，没有错误内容", answer.status),
        ),
        _ => t(
            format!(
                "the edge answered HTTP {} without an error body; what answered said: {:?}",
                answer.status, answer.text
            ),
            format!(
                "边缘服务返回 HTTP {}，没有错误内容；应答的内容是：{:?}",
                answer.status, answer.text
            ),
        ),
    };
    if let Some(diags) = e["details"]["diagnostics"].as_array() {
        for d in diags {
            // Line 0: a finding of the edge about the spec as a whole, at its key path.
            let at = match (d["line"].as_u64(), d["column"].as_u64()) {
                (Some(l), Some(c)) if l > 0 => format!("{l}:{c}: "),
                _ => String::new(),
            };
            let message = in_lang(d, "message").unwrap_or("");
            text.push_str(&format!(
                "\n  {at}{} [{}] {message}",
                d["severity"].as_str().unwrap_or("error"),
                d["code"].as_str().unwrap_or("?"),
            ));
            let help = match say::lang() {
                say::Lang::Zh => d["help"]["zh-CN"].as_str(),
                say::Lang::En => None,
            };
            if let Some(help) = help.or(d["help"]["en"].as_str()) {
                text.push_str(&format!("\n    {help}"));
            }
        }
    }
    if answer.status == 401 {
        text.push_str(&t(
            "\n  sign in first: onramp login --email YOU@EXAMPLE.COM".into(),
            "\n  请先登录：onramp login --email YOU@EXAMPLE.COM".into(),
        ));
    }
    Failure(text)
}

/// A client of one edge with an optional API token (or a session cookie while logging in).
#[derive(Debug, Clone)]
pub struct Edge {
    pub base: String,
    pub token: Option<String>,
    pub session: Option<String>,
}

impl Edge {
    pub fn new(base: &str, token: Option<String>) -> Edge {
        Edge {
            base: base.trim_end_matches('/').to_string(),
            token,
            session: None,
        }
    }

    pub fn get(&self, path: &str) -> Result<Answer, Failure> {
        self.call("GET", path, None, &[])
    }

    pub fn post_json(&self, path: &str, body: &Value) -> Result<Answer, Failure> {
        self.call(
            "POST",
            path,
            Some(body.to_string().into_bytes()),
            &[("content-type", "application/json")],
        )
    }

    /// Any call. A cookie-authenticated write carries this edge's own Origin, as the app does:
    /// the edge refuses cookie writes from elsewhere (CSRF), while token calls need none.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Result<Answer, Failure> {
        let url = format!("{}{path}", self.base);
        let mut builder = ureq::http::Request::builder().method(method).uri(&url);
        if let Some(t) = &self.token {
            builder = builder.header("authorization", format!("Bearer {t}"));
        }
        if let Some(s) = &self.session {
            builder = builder.header("cookie", s).header("origin", &self.base);
        }
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let body_len = body.as_ref().map_or(0, Vec::len);
        let request = builder
            .body(body.unwrap_or_default())
            .map_err(|e| Failure(format!("cannot build the request to {url}: {e}")))?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(call_limit(body_len)))
            .build()
            .into();
        let response = agent
            .run(request)
            .map_err(|e| unreachable(&self.base, &e))?;
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|c| c.split(';').next())
            .find(|p| p.starts_with("onramp_session=") && p.len() > "onramp_session=".len())
            .map(String::from);
        let bytes = response
            .into_body()
            .read_to_vec()
            .map_err(|e| Failure(format!("cannot read the edge's answer: {e}")))?;
        let (json, text) = parse_body(&bytes);
        Ok(Answer {
            status,
            json,
            session,
            text,
        })
    }

    /// A GET whose successful body is read as it arrives (a download of any size): its status,
    /// its `Content-Range` and a reader. Any other answer is a failure worded by [`describe_error`].
    pub fn stream(&self, path: &str, headers: &[(&str, &str)]) -> Result<Streamed, Failure> {
        let url = format!("{}{path}", self.base);
        let mut builder = ureq::http::Request::builder().method("GET").uri(&url);
        if let Some(t) = &self.token {
            builder = builder.header("authorization", format!("Bearer {t}"));
        }
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let request = builder
            .body(())
            .map_err(|e| Failure(format!("cannot build the request to {url}: {e}")))?;
        // No overall timeout (a large file takes what it takes); a silent edge is given up on,
        // before its answer and in the middle of its body (`idle.rs`).
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(std::time::Duration::from_secs(30)))
            .timeout_recv_response(Some(std::time::Duration::from_secs(60)))
            .build()
            .into();
        let response = agent
            .run(request)
            .map_err(|e| unreachable(&self.base, &e))?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            let content_range = response
                .headers()
                .get("content-range")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            return Ok(Streamed {
                status,
                content_range,
                body: Box::new(crate::idle::IdleLimited::new(
                    Box::new(response.into_body().into_reader()),
                    crate::idle::IDLE,
                )),
            });
        }
        let bytes = response.into_body().read_to_vec().unwrap_or_default();
        let (json, text) = parse_body(&bytes);
        Err(describe_error(&Answer {
            status,
            json,
            session: None,
            text,
        }))
    }

    /// A successful answer read as the contract's type (`api`), or a failure that says the edge
    /// answered something else.
    pub fn typed<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, Failure> {
        serde_json::from_value(value.clone()).map_err(|e| {
            Failure(crate::say::t(
                format!("the edge answered unexpectedly ({e}): {value}"),
                format!("边缘服务的回答不符合约定（{e}）：{value}"),
            ))
        })
    }

    /// A call whose non-2xx answer is a failure worded by [`describe_error`].
    pub fn expect_ok(&self, answer: Result<Answer, Failure>) -> Result<Value, Failure> {
        let a = answer?;
        if a.ok() {
            Ok(a.json)
        } else {
            Err(describe_error(&a))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An `https://` edge is spoken to over TLS: a server that answers in cleartext fails the
    /// handshake (a CLI built without TLS refused every https URL before sending anything).
    #[test]
    fn an_https_edge_is_spoken_to_over_tls() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut hello = [0u8; 5];
            conn.read_exact(&mut hello).ok()?;
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}");
            Some(hello)
        });
        let edge = Edge::new(&format!("https://127.0.0.1:{port}"), None);
        let err = edge.get("/api/health").unwrap_err().0;
        // Ends the server's wait when the client never connected (it sends nothing).
        drop(std::net::TcpStream::connect(("127.0.0.1", port)));
        // What arrived first was a TLS record: a handshake (22), TLS 1.x (3).
        let hello = server.join().unwrap();
        assert_eq!(hello.map(|h| [h[0], h[1]]), Some([22, 3]), "{err}");
        assert!(
            !err.contains("TLS required") && !err.contains("RequireTls"),
            "{err}"
        );
    }

    #[test]
    fn a_large_body_is_given_the_time_to_go_up_a_slow_link() {
        assert_eq!(call_limit(0).as_secs(), 60);
        // 16 MiB at 128 kbit/s is 1024 s.
        assert_eq!(call_limit(16 << 20).as_secs(), 60 + 1024);
    }

    fn answer(status: u16, json: Value) -> Answer {
        Answer {
            status,
            json,
            session: None,
            text: String::new(),
        }
    }

    #[test]
    fn edge_errors_read_as_one_line_with_code_and_status() {
        let a = answer(
            402,
            json!({"error": {"code": "insufficient_credit", "message": "the hold of 120 fen exceeds the balance of 5 fen", "details": {}}}),
        );
        assert_eq!(
            describe_error(&a).0,
            "the hold of 120 fen exceeds the balance of 5 fen (insufficient_credit, HTTP 402)"
        );
    }

    #[test]
    fn refused_specs_list_their_diagnostics_with_line_and_column() {
        let a = answer(
            422,
            json!({"error": {"code": "invalid_spec", "message": "the spec cannot be submitted", "details": {
                "diagnostics": [{"severity": "error", "code": "E_UNKNOWN_CARD", "path": "resources.card", "line": 7, "column": 8,
                                 "message": "unknown card `H900`", "messages": {"en": "unknown card `H900`", "zh-CN": "未知的卡型 `H900`"}}]}}}),
        );
        let text = describe_error(&a).0;
        assert!(
            text.ends_with("\n  7:8: error [E_UNKNOWN_CARD] unknown card `H900`"),
            "{text}"
        );
    }

    /// The edge's own finding about the spec (line 0: no place in its text) reads at its key
    /// path's message, with its "did you mean".
    #[test]
    fn a_finding_without_a_line_has_no_position_and_keeps_its_hint() {
        let a = answer(
            422,
            json!({"error": {"code": "invalid_spec", "message": "the spec cannot be submitted", "details": {
                "diagnostics": [{"severity": "error", "code": "bad-value", "path": "eval.tasks", "line": 0, "column": 0,
                                 "message": "`eval.tasks`: no backend holds \"mmlu-x\"",
                                 "messages": {"en": "`eval.tasks`: no backend holds \"mmlu-x\"", "zh-CN": "没有后端"},
                                 "help": {"en": "did you mean \"mmlu\"?", "zh-CN": "是不是 \"mmlu\"？"}}]}}}),
        );
        let text = describe_error(&a).0;
        assert!(
            text.ends_with(
                "\n  error [bad-value] `eval.tasks`: no backend holds \"mmlu-x\"\n    did you mean \"mmlu\"?"
            ),
            "{text}"
        );
    }

    #[test]
    fn unauthenticated_answers_say_how_to_sign_in_and_bodiless_ones_say_so() {
        let a = answer(
            401,
            json!({"error": {"code": "unauthenticated", "message": "sign in first"}}),
        );
        assert!(describe_error(&a).0.contains("onramp login --email"));
        let b = answer(502, Value::Null);
        assert_eq!(
            describe_error(&b).0,
            "the edge answered HTTP 502 without an error body"
        );
    }

    /// wrangler dev's proxy answers a dropped POST with text of its own: the failure quotes it
    /// (on one line, cut), so that the cause of such an answer is in the log that saw it.
    #[test]
    fn a_body_that_is_not_the_edges_json_is_quoted() {
        let (json, text) = parse_body(b"Your worker restarted mid-request.\nPlease try again.");
        assert_eq!(json, Value::Null);
        let a = Answer {
            status: 503,
            json,
            session: None,
            text,
        };
        assert_eq!(
            describe_error(&a).0,
            "the edge answered HTTP 503 without an error body; what answered said: \
             \"Your worker restarted mid-request. Please try again.\""
        );
        assert_eq!(parse_body(&[b'x'; 500]).1.len(), 200);
        assert_eq!(parse_body(b"{\"ok\": true}").1, "");
    }

    #[test]
    fn chinese_runs_print_the_zh_cn_wording_the_answer_carries() {
        let d = json!({"message": "unknown card `H900`",
                       "messages": {"en": "unknown card `H900`", "zh-CN": "未知显卡 `H900`"}});
        assert_eq!(
            in_lang_of(&d, "message", say::Lang::Zh),
            Some("未知显卡 `H900`")
        );
        assert_eq!(
            in_lang_of(&d, "message", say::Lang::En),
            Some("unknown card `H900`")
        );
        // Without a Chinese wording the English one stays.
        let e = json!({"message": "sign in first"});
        assert_eq!(
            in_lang_of(&e, "message", say::Lang::Zh),
            Some("sign in first")
        );
    }

    #[test]
    fn an_unreachable_edge_is_a_failure_not_a_panic() {
        // Port 9 (discard) on loopback has nothing listening here.
        let e = Edge::new("http://127.0.0.1:9/", None);
        assert_eq!(e.base, "http://127.0.0.1:9");
        let err = e.get("/api/me").expect_err("nothing listens");
        assert!(
            err.0
                .starts_with("cannot reach the edge at http://127.0.0.1:9"),
            "{err:?}"
        );
        assert!(
            err.0.contains("cargo xtask dev") && err.0.contains("ONRAMP_EDGE"),
            "says what to do: {err:?}"
        );
    }
}
