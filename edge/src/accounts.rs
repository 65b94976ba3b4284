//! The rules of accounts: what sign-up accepts (an email, a password), how passwords are hashed,
//! and the session cookie a sign-in sets. The WebCrypto (PBKDF2) and storage parts live in the
//! worker (`worker/accounts.rs`); how a caller shows who they are is `access.rs`.

use crate::access::SESSION_COOKIE;
use crate::error::{ApiError, ErrorCode};

/// Sessions last 30 days.
pub const SESSION_MAX_AGE_S: u64 = 30 * 24 * 3600;
/// PBKDF2-SHA256 iterations (Cloudflare's WebCrypto allows at most 100,000).
pub const PBKDF2_ITERATIONS: u32 = 100_000;
pub use api::accounts::MAX_PASSWORD_CHARS;
pub use api::accounts::MIN_PASSWORD_CHARS;

/// Lower-cased, trimmed email if it is plausible: one `@`, something on both sides, a dot in the
/// domain, at most 254 bytes, no spaces or control characters.
pub fn normalise_email(raw: &str) -> Result<String, ApiError> {
    let email = raw.trim().to_lowercase();
    let bad = || {
        ApiError::new(
            ErrorCode::InvalidEmail,
            format!("{raw:?} is not an email address"),
        )
        .with_details(serde_json::json!({"field": "email"}))
    };
    if email.len() > api::accounts::MAX_EMAIL_BYTES
        || email.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(bad());
    }
    let (local, domain) = email.split_once('@').ok_or_else(bad)?;
    if local.is_empty() || domain.contains('@') || !domain.contains('.') {
        return Err(bad());
    }
    if domain.starts_with('.') || domain.ends_with('.') {
        return Err(bad());
    }
    Ok(email)
}

pub fn check_password(password: &str) -> Result<(), ApiError> {
    let n = password.chars().count();
    if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&n) {
        return Err(ApiError::new(
            ErrorCode::WeakPassword,
            format!(
                "the password must have {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters \
                 (it has {n})"
            ),
        )
        .with_details(serde_json::json!({"field": "password"})));
    }
    Ok(())
}

/// Whether a host is local (then the cookie cannot be `Secure`: plain http).
pub fn is_local_host(host: &str) -> bool {
    let name = host.rsplit_once(':').map_or(host, |(h, _)| h);
    matches!(name, "localhost" | "127.0.0.1" | "[::1]") || name.ends_with(".localhost")
}

/// `Set-Cookie` for a new session (or, with `None`, one that clears it).
pub fn session_cookie(token: Option<&str>, host: &str) -> String {
    let secure = if is_local_host(host) { "" } else { "; Secure" };
    match token {
        Some(t) => format!(
            "{SESSION_COOKIE}={t}; Path=/; HttpOnly; SameSite=Lax; Max-Age={SESSION_MAX_AGE_S}{secure}"
        ),
        None => format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn emails() {
        assert_eq!(normalise_email(" A@B.cn ").unwrap(), "a@b.cn");
        for bad in [
            "", "a", "a@b", "@b.cn", "a@@b.cn", "a b@c.cn", "a@.cn", "a@b.",
        ] {
            assert_eq!(
                normalise_email(bad).unwrap_err().code,
                ErrorCode::InvalidEmail,
                "{bad}"
            );
        }
    }

    #[test]
    fn passwords() {
        assert!(check_password("12345678").is_ok());
        assert!(check_password("密码密码密码密码").is_ok());
        assert_eq!(
            check_password("short").unwrap_err().code,
            ErrorCode::WeakPassword
        );
        assert!(check_password(&"x".repeat(300)).is_err());
    }

    #[test]
    fn session_cookies() {
        let c = session_cookie(Some("t"), "127.0.0.1:8787");
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Lax") && !c.contains("Secure"));
        assert!(c.starts_with("onramp_session=t;"));
        assert!(session_cookie(Some("t"), "onramp.example.cn").ends_with("; Secure"));
        assert!(session_cookie(None, "localhost").contains("Max-Age=0"));
    }

    proptest! {
        #[test]
        fn parsing_never_panics(s in "\\PC{0,80}") {
            let _ = normalise_email(&s);
            let _ = check_password(&s);
            let _ = is_local_host(&s);
        }
    }
}
