//! Sending mail through the configured sender (`crate::mail`): the local outbox (a D1 table and
//! the log) or a mail service over HTTP, and `GET /api/admin/outbox`, where the operator (and
//! the tests) read what the outbox holds.

use super::access::Admin;
use super::backends;
use super::db::{self, n, now_ms, s};
use super::http::ApiResult;
use crate::error::{ApiError, ErrorCode};
use crate::mail::{self, Mail, MailSender};
use api::{Outbox, OutboxMail};
use serde::Deserialize;
use worker::{Env, Request};

/// A setting that may be a secret (production) or a plain variable (`wrangler dev`).
pub fn setting(env: &Env, name: &str) -> Option<String> {
    env.secret(name)
        .ok()
        .map(|v| v.to_string())
        .or_else(|| env.var(name).ok().map(|v| v.to_string()))
}

/// Sends one mail; a misconfigured or failing sender is the edge's own error (500, the cause
/// in the log).
pub async fn send(env: &Env, m: &Mail) -> ApiResult<()> {
    let sender = mail::sender(
        setting(env, "MAIL_SENDER").as_deref(),
        setting(env, "MAIL_HTTP_URL").as_deref(),
        setting(env, "MAIL_HTTP_TOKEN").as_deref(),
    )
    .map_err(ApiError::internal)?;
    match sender {
        MailSender::Outbox => {
            db::run(
                env,
                "INSERT INTO outbox (to_email, subject, text, created_at) VALUES (?, ?, ?, ?)",
                &[s(&m.to), s(&m.subject), s(&m.text), n(now_ms())],
            )
            .await?;
            worker::console_log!(
                "outbox (MAIL_SENDER=outbox, not sent): to {}\nsubject: {}\n{}",
                m.to,
                m.subject,
                m.text
            );
            Ok(())
        }
        MailSender::Http { url, token } => {
            let call = mail::http_request(m, &url, &token);
            let (status, body) = backends::send(&call, backends::TIMEOUT)
                .await
                .map_err(|e| ApiError::internal(format!("mail service: {e:?}")))?;
            mail::http_outcome(status, &String::from_utf8_lossy(&body)).map_err(ApiError::internal)
        }
    }
}

/// `GET /api/admin/outbox?to=<email>`: the newest 50 mails to one address.
pub async fn admin_outbox(_: Admin, req: Request, env: &Env) -> ApiResult<Outbox> {
    let url = req
        .url()
        .map_err(|e| ApiError::internal(format!("request URL: {e}")))?;
    let to = url
        .query_pairs()
        .find(|(k, _)| k == "to")
        .map(|(_, v)| v.into_owned())
        .ok_or_else(|| {
            ApiError::new(ErrorCode::InvalidQuery, "name the address: ?to=<email>")
                .with_details(serde_json::json!({"parameter": "to"}))
        })?;
    let to = crate::accounts::normalise_email(&to)?;
    #[derive(Deserialize)]
    struct Row {
        to_email: String,
        subject: String,
        text: String,
        created_at: i64,
    }
    let rows: Vec<Row> = db::all(
        env,
        "SELECT to_email, subject, text, created_at FROM outbox WHERE to_email = ? ORDER BY id DESC LIMIT 50",
        &[s(&to)],
    )
    .await?;
    Ok(Outbox {
        mails: rows
            .into_iter()
            .map(|r| OutboxMail {
                to: r.to_email,
                subject: r.subject,
                text: r.text,
                sent_at: crate::time::format_rfc3339_ms(r.created_at),
            })
            .collect(),
    })
}
