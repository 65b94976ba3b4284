//! Request bodies and query parameters of the API, and the checks that turn client input into
//! values the handlers trust. Every check names the field it refused.

use crate::error::{ApiError, ErrorCode};
use serde::de::DeserializeOwned;

/// Largest JSON body for ordinary requests.
pub const MAX_JSON_BYTES: usize = 64 * 1024;
/// Largest body carrying a job spec or a batch of metrics.
pub const MAX_SPEC_BYTES: usize = 256 * 1024;

/// Refuses a body over `limit` (413) before or after reading it.
pub fn check_size(len: usize, limit: usize) -> Result<(), ApiError> {
    if len > limit {
        return Err(ApiError::new(
            ErrorCode::BodyTooLarge,
            format!("the request body has {len} bytes; at most {limit} are accepted"),
        )
        .with_details(serde_json::json!({"limit_bytes": limit})));
    }
    Ok(())
}

/// Parses a JSON body, saying where it is malformed.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // Every body the API takes is an object (serde would also read a struct from an array).
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::new(
            ErrorCode::InvalidJson,
            "the request body must be a JSON object",
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidJson,
            format!("the request body is not the expected JSON: {e}"),
        )
        .with_details(serde_json::json!({"line": e.line(), "column": e.column()}))
    })
}

pub use api::{
    Credentials, MetricPoint, NewExperiment, NewPromoCode, NewToken, RedeemRequest, Report,
};

/// A request body whose fields the edge checks before it trusts them (the body types are the
/// contract's, in the `api` crate; the checks are the edge's).
pub trait Check {
    type Checked;
    fn check(self) -> Result<Self::Checked, ApiError>;
}

/// A checked promotion code: the code normalised, the expiry in epoch milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct PromoCode {
    pub code: String,
    pub amount_fen: i64,
    pub max_redemptions: i64,
    pub expires_at_ms: Option<i64>,
}

/// Codes are case-insensitive: upper-cased, 3–64 of `A-Z 0-9 - _`.
pub fn normalise_code(raw: &str) -> Result<String, ApiError> {
    let code = raw.trim().to_ascii_uppercase();
    let ok = (3..=64).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !ok {
        return Err(ApiError::new(
            ErrorCode::InvalidCode,
            format!("{raw:?} is not a promotion code (3-64 letters, digits, '-' or '_')"),
        )
        .with_details(serde_json::json!({"field": "code"})));
    }
    Ok(code)
}

impl Check for NewPromoCode {
    type Checked = PromoCode;

    fn check(self) -> Result<PromoCode, ApiError> {
        let code = normalise_code(&self.code)?;
        let field = |f: &str, msg: String| {
            ApiError::new(ErrorCode::InvalidField, msg)
                .with_details(serde_json::json!({"field": f}))
        };
        use api::credits::{MAX_AMOUNT_FEN, MAX_REDEMPTIONS};
        if !(1..=MAX_AMOUNT_FEN).contains(&self.amount_fen) {
            return Err(field(
                "amount_fen",
                format!(
                    "amount_fen must be 1..={MAX_AMOUNT_FEN}, got {}",
                    self.amount_fen
                ),
            ));
        }
        if !(1..=MAX_REDEMPTIONS).contains(&self.max_redemptions) {
            return Err(field(
                "max_redemptions",
                format!(
                    "max_redemptions must be 1..={MAX_REDEMPTIONS}, got {}",
                    self.max_redemptions
                ),
            ));
        }
        let expires_at_ms = match self.expires_at.as_deref() {
            None => None,
            Some(t) => Some(crate::time::parse_rfc3339_ms(t).ok_or_else(|| {
                field(
                    "expires_at",
                    format!("expires_at {t:?} is not a date and time that exists, in RFC 3339 (e.g. 2030-02-28T00:00:00Z)"),
                )
            })?),
        };
        Ok(PromoCode {
            code,
            amount_fen: self.amount_fen,
            max_redemptions: self.max_redemptions,
            expires_at_ms,
        })
    }
}

/// `Idempotency-Key`: required on job submission, 1–128 visible ASCII characters.
pub fn idempotency_key(header: Option<&str>) -> Result<String, ApiError> {
    match header.map(str::trim) {
        Some(k) if (1..=128).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()) => {
            Ok(k.to_string())
        }
        Some(_) => Err(ApiError::new(
            ErrorCode::InvalidIdempotencyKey,
            "Idempotency-Key must be 1-128 visible ASCII characters",
        )),
        None => Err(ApiError::new(
            ErrorCode::MissingIdempotencyKey,
            "POST /api/jobs needs an Idempotency-Key header, so that a retry never starts a second job",
        )),
    }
}

/// A submitted spec: JSON bodies `{"spec": "<toml>"}`, `{"spec": {...}}` or a bare spec object;
/// anything else is TOML text.
#[derive(Debug, Clone, PartialEq)]
pub enum SpecText {
    Toml(String),
    Json(String),
}

pub fn spec_from_body(content_type: Option<&str>, bytes: &[u8]) -> Result<SpecText, ApiError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ApiError::new(ErrorCode::InvalidEncoding, "the spec is not UTF-8 text"))?;
    let is_json = content_type.is_some_and(|c| c.contains("json"));
    if !is_json {
        return Ok(SpecText::Toml(text.to_string()));
    }
    let value: serde_json::Value = parse_json(bytes)?;
    match value.get("spec") {
        Some(serde_json::Value::String(toml)) => Ok(SpecText::Toml(toml.clone())),
        Some(obj @ serde_json::Value::Object(_)) => Ok(SpecText::Json(obj.to_string())),
        Some(_) => Err(ApiError::new(
            ErrorCode::InvalidField,
            "\"spec\" must be TOML text or an object",
        )
        .with_details(serde_json::json!({"field": "spec"}))),
        None => Ok(SpecText::Json(text.to_string())),
    }
}

pub const MAX_METRICS_PER_REPORT: usize = 1000;

/// The most of a job's message the edge keeps.
pub const MAX_MESSAGE_CHARS: usize = 2000;

/// A job's message as the edge stores and shows it: a job is a program, not a person typing, so
/// its words are cleaned rather than refused (a refused final report would leave the job's end
/// unknown): control, invisible and text-direction characters go (line breaks and tabs stay; an
/// ANSI colour sequence loses its ESC and shows as plain text), and it is cut to
/// [`MAX_MESSAGE_CHARS`].
pub fn clean_message(message: &str) -> String {
    let mut out: String = message
        .chars()
        .filter(|&c| {
            c == '\n' || c == '\t' || jobspec::validate::is_clean_text(&c.to_string(), true)
        })
        .take(MAX_MESSAGE_CHARS)
        .collect();
    out.truncate(out.trim_end().len());
    out
}

/// Refuses states a job may not report (`queued` and `requeued`, which only the edge sets from
/// its backend's word), an attempt past [`crate::attempts::MAX_ATTEMPT`] and non-finite numbers,
/// which JSON cannot carry back out.
impl Check for &Report {
    type Checked = ();

    fn check(self) -> Result<(), ApiError> {
        use crate::jobs::JobState;
        if let Some(s @ (JobState::Queued | JobState::Dispatching | JobState::Requeued)) =
            self.state
        {
            return Err(ApiError::new(
                ErrorCode::InvalidState,
                format!("a job cannot report itself {}", s.as_str()),
            ));
        }
        if self.metrics.len() > MAX_METRICS_PER_REPORT {
            return Err(ApiError::new(
                ErrorCode::TooManyMetrics,
                format!("at most {MAX_METRICS_PER_REPORT} metric points per report"),
            ));
        }
        crate::metric_points::check_points(&self.metrics)?;
        crate::attempts::check_attempt(self.attempt.map_or(0, u64::from))?;
        if self.message.as_ref().is_some_and(|m| m.len() > 4096) {
            return Err(ApiError::new(
                ErrorCode::InvalidField,
                "message has more than 4096 bytes",
            ));
        }
        Ok(())
    }
}

/// One non-negative integer query parameter (`offset`, `since`); absent means `default`.
pub fn query_u64(query: Option<&str>, name: &str, default: u64) -> Result<u64, ApiError> {
    let Some(q) = query else { return Ok(default) };
    for pair in q.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == name {
            return v
                .parse::<u64>()
                .ok()
                .filter(|n| i64::try_from(*n).is_ok())
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::InvalidQuery,
                        format!("?{name}= must be a non-negative integer, got {v:?}"),
                    )
                    .with_details(serde_json::json!({"parameter": name}))
                });
        }
    }
    Ok(default)
}

/// A short free-text label a user names something with (an API token's name, an experiment's
/// title): at most `max_chars` characters, none of them a control, line-break, invisible or
/// text-direction character (the spec's own rule for names, see `jobspec::validate`).
pub fn check_label(field: &str, value: &str, max_chars: usize) -> Result<(), ApiError> {
    let bad = |msg: String| {
        Err(ApiError::new(ErrorCode::InvalidField, msg)
            .with_details(serde_json::json!({"field": field})))
    };
    let count = value.chars().count();
    if count > max_chars {
        return bad(format!(
            "{field} is {count} characters long; at most {max_chars} are allowed"
        ));
    }
    if let Some((at, c)) = value
        .chars()
        .enumerate()
        .find(|(_, c)| !jobspec::validate::is_clean_text(&c.to_string(), true))
    {
        return bad(format!(
            "{field} holds U+{:04X}, a character that cannot be shown, at character {}",
            u32::from(c),
            at + 1
        ));
    }
    Ok(())
}

/// Ids we mint are lower-case hex; anything else cannot name a row, so refuse it early.
pub fn check_id(id: &str) -> Result<(), ApiError> {
    if (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(ApiError::not_found(format!("no such id {id:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bodies_are_objects() {
        assert!(parse_json::<NewToken>(b" {}").is_ok());
        for body in [&b"[]"[..], b"null", b"\"x\"", b"", b"7"] {
            let e = parse_json::<NewToken>(body).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidJson, "{body:?}");
        }
    }

    #[test]
    fn job_messages_lose_what_cannot_be_shown_and_keep_their_lines() {
        assert_eq!(
            clean_message("OOM at step 3\n\ttry micro_batch = 1"),
            "OOM at step 3\n\ttry micro_batch = 1"
        );
        assert_eq!(clean_message("\u{1b}[31mred\u{1b}[0m\r\n"), "[31mred[0m");
        assert_eq!(clean_message("a\u{202e}b\u{200b}c\0"), "abc");
        assert_eq!(
            clean_message(&"x".repeat(5000)).chars().count(),
            MAX_MESSAGE_CHARS
        );
    }

    #[test]
    fn labels_refuse_what_cannot_be_shown_and_say_where() {
        assert!(check_label("name", "laptop 笔记本 🚀", 64).is_ok());
        let e = check_label("title", "ok\u{202e}txt", 64).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidField);
        assert!(
            e.message.contains("U+202E") && e.message.contains("character 3"),
            "{}",
            e.message
        );
        assert!(check_label("name", "a\nb", 64).is_err());
        let e = check_label("name", &"x".repeat(65), 64).unwrap_err();
        assert!(e.message.contains("at most 64"), "{}", e.message);
    }

    #[test]
    fn codes_and_keys() {
        assert_eq!(normalise_code(" welcome-2026 ").unwrap(), "WELCOME-2026");
        assert_eq!(
            normalise_code("a b").unwrap_err().code,
            ErrorCode::InvalidCode
        );
        assert_eq!(
            idempotency_key(None).unwrap_err().code,
            ErrorCode::MissingIdempotencyKey
        );
        assert_eq!(
            idempotency_key(Some("")).unwrap_err().code,
            ErrorCode::InvalidIdempotencyKey
        );
        assert_eq!(idempotency_key(Some("k-1")).unwrap(), "k-1");
    }

    #[test]
    fn promo_checks_each_field() {
        let p = |amount, max, exp: Option<&str>| {
            NewPromoCode {
                code: "ABC".into(),
                amount_fen: amount,
                max_redemptions: max,
                expires_at: exp.map(String::from),
            }
            .check()
        };
        assert_eq!(
            p(100, 5, Some("2030-01-01T00:00:00Z"))
                .unwrap()
                .expires_at_ms,
            Some(1_893_456_000_000)
        );
        assert_eq!(p(0, 5, None).unwrap_err().details["field"], "amount_fen");
        assert_eq!(
            p(1, 0, None).unwrap_err().details["field"],
            "max_redemptions"
        );
        assert_eq!(
            p(1, 1, Some("tomorrow")).unwrap_err().details["field"],
            "expires_at"
        );
    }

    #[test]
    fn spec_bodies() {
        assert_eq!(
            spec_from_body(None, b"name = 'x'").unwrap(),
            SpecText::Toml("name = 'x'".into())
        );
        assert_eq!(
            spec_from_body(Some("application/json"), br#"{"spec":"a = 1"}"#).unwrap(),
            SpecText::Toml("a = 1".into())
        );
        assert!(matches!(
            spec_from_body(Some("application/json"), br#"{"name":"x"}"#).unwrap(),
            SpecText::Json(_)
        ));
        assert_eq!(
            spec_from_body(Some("application/json"), b"{")
                .unwrap_err()
                .code,
            ErrorCode::InvalidJson
        );
        assert_eq!(
            spec_from_body(None, &[0xff, 0xfe]).unwrap_err().code,
            ErrorCode::InvalidEncoding
        );
    }

    #[test]
    fn reports_and_queries() {
        let r: Report =
            parse_json(br#"{"state":"running","metrics":[{"step":1,"loss":2.5,"elapsed_s":0.5}]}"#)
                .unwrap();
        assert!(r.check().is_ok());
        // A metrics line as onramp-train prints it (the Slurm job script forwards it as is).
        let r: Report = parse_json(
            br#"{"metrics":[{"step": 3, "loss": 5.9, "val_loss": 5.8, "lr": 0.00075, "tokens_per_s": 1732.8, "elapsed_s": 2.8, "grad_norm": 2.2, "epoch": 0.25, "peak_mem_bytes": 123}]}"#,
        )
        .unwrap();
        assert!(r.check().is_ok());
        assert_eq!(r.metrics[0].epoch, Some(0.25));
        assert!(
            parse_json::<Report>(br#"{"metrics":[{"step":1,"loss":2.5,"elapsed_s":0.5,"x":1}]}"#)
                .is_err()
        );
        let r: Report = parse_json(br#"{"state":"queued"}"#).unwrap();
        assert_eq!(r.check().unwrap_err().code, ErrorCode::InvalidState);
        let r: Report = parse_json(br#"{"state":"requeued"}"#).unwrap();
        assert_eq!(r.check().unwrap_err().code, ErrorCode::InvalidState);
        let r: Report = parse_json(br#"{"state":"running","attempt":2}"#).unwrap();
        assert!(r.check().is_ok());
        let r: Report = parse_json(br#"{"state":"running","attempt":1001}"#).unwrap();
        assert_eq!(r.check().unwrap_err().code, ErrorCode::InvalidField);
        assert!(parse_json::<Report>(br#"{"state":"flying"}"#).is_err());
        assert_eq!(query_u64(Some("offset=12&x=1"), "offset", 0).unwrap(), 12);
        assert_eq!(query_u64(None, "offset", 7).unwrap(), 7);
        assert_eq!(
            query_u64(Some("offset=-1"), "offset", 0).unwrap_err().code,
            ErrorCode::InvalidQuery
        );
        assert_eq!(check_size(10, 5).unwrap_err().status, 413);
        assert!(check_id("abc123").is_ok() && check_id("../x").is_err() && check_id("").is_err());
    }

    proptest! {
        #[test]
        fn parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), s in "\\PC{0,60}") {
            let _ = parse_json::<Report>(&bytes).map(|r| r.check());
            let _ = parse_json::<NewPromoCode>(&bytes).map(NewPromoCode::check);
            let _ = parse_json::<Credentials>(&bytes);
            let _ = spec_from_body(Some("application/json"), &bytes);
            let _ = spec_from_body(None, &bytes);
            let _ = normalise_code(&s);
            let _ = idempotency_key(Some(&s));
            let _ = query_u64(Some(&s), "offset", 0);
            let _ = check_id(&s);
        }
    }
}
