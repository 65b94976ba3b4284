//! Mail the edge sends (today: the email verification link) and how it leaves, as data: the
//! sender chosen by `MAIL_SENDER`, the mail's text, and the HTTP request that hands a mail to
//! a mail service. The worker does the I/O (`worker/mail.rs`); everything here is tested
//! natively.

/// One mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    pub to: String,
    pub subject: String,
    pub text: String,
}

use crate::backends::adapter::HttpCall;

/// Where mail goes (`MAIL_SENDER`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailSender {
    /// `outbox`, for local development and the tests: stored in D1's `outbox` table, printed
    /// to the log, and readable by the operator at `GET /api/admin/outbox`. Nothing is sent.
    Outbox,
    /// `http`: `POST` `{to, subject, text}` as JSON to `MAIL_HTTP_URL`, with
    /// `Authorization: Bearer <MAIL_HTTP_TOKEN>` (a secret): a mail service's send endpoint, or
    /// a small relay in front of one.
    Http { url: String, token: String },
}

/// The sender the deployment configured. `kind` defaults to `outbox`; `http` needs both of
/// its settings, and an https URL unless it is on this machine.
pub fn sender(
    kind: Option<&str>,
    url: Option<&str>,
    token: Option<&str>,
) -> Result<MailSender, String> {
    match kind.map(str::trim).filter(|k| !k.is_empty()) {
        None | Some("outbox") => Ok(MailSender::Outbox),
        Some("http") => {
            let url = url
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .ok_or("MAIL_SENDER=http needs MAIL_HTTP_URL, the mail service's send endpoint")?;
            let local = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
                .iter()
                .any(|p| url.starts_with(p));
            if !url.starts_with("https://") && !local {
                return Err(format!(
                    "MAIL_HTTP_URL {url:?} must be an https:// URL (plain http only to this machine)"
                ));
            }
            let token = token
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .ok_or("MAIL_SENDER=http needs the secret MAIL_HTTP_TOKEN")?;
            Ok(MailSender::Http {
                url: url.to_string(),
                token: token.to_string(),
            })
        }
        Some(other) => Err(format!(
            "MAIL_SENDER={other:?} is not a mail sender (outbox or http)"
        )),
    }
}

/// The page that verifies an email: the app's `/verify`, which posts the token to the API.
pub fn verify_link(public_url: &str, token: &str) -> String {
    format!("{}/verify?token={token}", public_url.trim_end_matches('/'))
}

/// The verification mail, in English and Chinese (the edge does not know the reader's language).
pub fn verification(to: &str, link: &str, expires_at: &str) -> Mail {
    Mail {
        to: to.to_string(),
        subject: "Verify your email for Onramp / 验证您的 Onramp 邮箱".into(),
        text: format!(
            "Open this link to verify your email and receive your trial credit:\n\n{link}\n\n\
             It works until {expires_at} (UTC). If you did not sign up for Onramp, ignore this mail.\n\n\
             打开以下链接验证邮箱并领取试用额度：\n\n{link}\n\n\
             链接在 {expires_at}（UTC）前有效。如果您没有注册 Onramp，请忽略此邮件。\n"
        ),
    }
}

/// The page that sets a new password: the app's `/reset`, which posts the token to the API.
pub fn reset_link(public_url: &str, token: &str) -> String {
    format!("{}/reset?token={token}", public_url.trim_end_matches('/'))
}

/// The password reset mail, in English and Chinese.
pub fn password_reset(to: &str, link: &str, expires_at: &str) -> Mail {
    Mail {
        to: to.to_string(),
        subject: "Reset your Onramp password / 重置您的 Onramp 密码".into(),
        text: format!(
            "Open this link to choose a new password for your Onramp account:\n\n{link}\n\n\
             It works once, until {expires_at} (UTC), and signs out every other session and API token. \
             If you did not ask for it, ignore this mail: your password stays as it is.\n\n\
             打开以下链接为您的 Onramp 账户设置新密码：\n\n{link}\n\n\
             链接只能使用一次，在 {expires_at}（UTC）前有效，并会退出其他所有会话、撤销所有 API 令牌。\
             如果不是您本人申请，请忽略此邮件，密码不会改变。\n"
        ),
    }
}

/// What a sign-up (or a resend) for an email that another account holds verified mails, in
/// place of a verification link: the answer is the same either way, so only the mailbox learns it.
pub fn already_registered(to: &str, public_url: &str) -> Mail {
    let base = public_url.trim_end_matches('/');
    Mail {
        to: to.to_string(),
        subject: "Your Onramp account / 您的 Onramp 账户".into(),
        text: format!(
            "Someone asked Onramp to verify this email for a new account, but the email already \
             belongs to an account. If it was you, sign in at {base}/account with your password, \
             or ask there for a new one (\"Forgot your password?\"). If it was not you, ignore \
             this mail: nobody else can verify this email, and your account is unchanged.\n\n\
             有人请求 Onramp 为一个新账户验证此邮箱，但此邮箱已属于一个账户。如果是您本人，请在 \
             {base}/account 用密码登录，或在该页申请重置密码。如果不是您本人，请忽略此邮件：\
             别人无法验证此邮箱，您的账户不受影响。\n"
        ),
    }
}

/// The request that hands `mail` to the `http` sender, as data (the backends' `HttpCall`, sent
/// by the same code).
pub fn http_request(mail: &Mail, url: &str, token: &str) -> HttpCall {
    let body = serde_json::json!({"to": mail.to, "subject": mail.subject, "text": mail.text});
    HttpCall {
        method: "POST",
        url: url.to_string(),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), format!("Bearer {token}")),
        ],
        body: Some(body.to_string()),
    }
}

/// Whether the mail service took the mail: any 2xx. Anything else is the service's failure,
/// reported with its status and the start of its answer.
pub fn http_outcome(status: u16, body: &str) -> Result<(), String> {
    if (200..300).contains(&status) {
        return Ok(());
    }
    let start: String = body.chars().take(200).collect();
    Err(format!("the mail service answered HTTP {status}: {start}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sender_is_outbox_unless_http_is_configured_fully() {
        assert_eq!(sender(None, None, None), Ok(MailSender::Outbox));
        assert_eq!(sender(Some("outbox"), None, None), Ok(MailSender::Outbox));
        assert_eq!(
            sender(
                Some("http"),
                Some("https://mail.example.cn/send"),
                Some("s3cret")
            ),
            Ok(MailSender::Http {
                url: "https://mail.example.cn/send".into(),
                token: "s3cret".into()
            })
        );
        assert!(
            sender(Some("http"), None, Some("t"))
                .unwrap_err()
                .contains("MAIL_HTTP_URL")
        );
        assert!(
            sender(Some("http"), Some("https://m.example.cn"), Some(" "))
                .unwrap_err()
                .contains("MAIL_HTTP_TOKEN")
        );
        assert!(
            sender(Some("http"), Some("http://m.example.cn"), Some("t"))
                .unwrap_err()
                .contains("https")
        );
        assert!(sender(Some("http"), Some("http://127.0.0.1:9/x"), Some("t")).is_ok());
        assert!(
            sender(Some("smtp"), None, None)
                .unwrap_err()
                .contains("outbox or http")
        );
    }

    #[test]
    fn the_verification_mail_carries_the_link_in_both_languages() {
        let link = verify_link("https://onramp.example.cn/", "v1.ab.12.cd.ef");
        assert_eq!(
            link,
            "https://onramp.example.cn/verify?token=v1.ab.12.cd.ef"
        );
        let m = verification("ada@example.cn", &link, "2026-01-02T00:00:00.000Z");
        assert_eq!(m.to, "ada@example.cn");
        assert_eq!(m.text.matches(&link).count(), 2);
        assert!(m.text.contains("trial credit") && m.text.contains("试用额度"));
    }

    #[test]
    fn the_already_registered_note_carries_no_link_that_verifies() {
        let m = already_registered("ada@example.cn", "https://onramp.example.cn/");
        assert_eq!(m.to, "ada@example.cn");
        assert_eq!(
            m.text.matches("https://onramp.example.cn/account").count(),
            2
        );
        assert!(!m.text.contains("token="), "{}", m.text);
        assert!(m.text.contains("Forgot your password?") && m.text.contains("重置密码"));
    }

    #[test]
    fn the_http_request_posts_the_mail_as_json_with_the_bearer_token() {
        let m = Mail {
            to: "ada@example.cn".into(),
            subject: "S \"quoted\"".into(),
            text: "line 1\nline 2".into(),
        };
        let r = http_request(&m, "https://mail.example.cn/send", "s3cret");
        assert_eq!(r.method, "POST");
        assert_eq!(r.url, "https://mail.example.cn/send");
        let has = |k: &str, v: &str| r.headers.contains(&(k.into(), v.into()));
        assert!(has("authorization", "Bearer s3cret"));
        assert!(has("content-type", "application/json"));
        let body: serde_json::Value = serde_json::from_str(r.body.as_deref().unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"to": "ada@example.cn", "subject": "S \"quoted\"", "text": "line 1\nline 2"})
        );
    }

    #[test]
    fn only_2xx_means_sent() {
        assert_eq!(http_outcome(202, ""), Ok(()));
        let e = http_outcome(401, "bad token").unwrap_err();
        assert!(e.contains("401") && e.contains("bad token"), "{e}");
        assert!(http_outcome(500, &"x".repeat(1000)).unwrap_err().len() < 300);
    }
}
