//! The pure parts of authentication: credential rules, cookies, bearer headers, the CSRF origin
//! check and token hashing. The WebCrypto (PBKDF2) and storage parts live in the worker.

use crate::error::{ApiError, ErrorCode};
use sha2::{Digest, Sha256};

pub const SESSION_COOKIE: &str = "onramp_session";
/// Sessions last 30 days.
pub const SESSION_MAX_AGE_S: u64 = 30 * 24 * 3600;
/// PBKDF2-SHA256 iterations (Cloudflare's WebCrypto allows at most 100,000).
pub const PBKDF2_ITERATIONS: u32 = 100_000;
pub const MIN_PASSWORD_CHARS: usize = 8;
pub const MAX_PASSWORD_BYTES: usize = 256;

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
    if email.len() > 254 || email.chars().any(|c| c.is_whitespace() || c.is_control()) {
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
    if n < MIN_PASSWORD_CHARS || password.len() > MAX_PASSWORD_BYTES {
        return Err(ApiError::new(
            ErrorCode::WeakPassword,
            format!(
                "the password must have at least {MIN_PASSWORD_CHARS} characters and at most \
                 {MAX_PASSWORD_BYTES} bytes (it has {n} characters)"
            ),
        )
        .with_details(serde_json::json!({"field": "password"})));
    }
    Ok(())
}

/// SHA-256 of a token, hex: what the database stores instead of the token.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Constant-time equality, for comparing secrets.
pub fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token in `Authorization: Bearer <token>`, if that is the header's form.
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let h = header?.trim();
    let (scheme, token) = h.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The value of one cookie in a `Cookie` header.
pub fn cookie<'a>(header: Option<&'a str>, name: &str) -> Option<&'a str> {
    header?.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name && !v.is_empty()).then_some(v)
    })
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

/// CSRF defence for cookie-authenticated writes: the browser's `Origin` must be this server's
/// origin. A missing Origin is refused too: every browser sends one on a cross-site POST, and
/// non-browser clients use API tokens, which are not ambient and need no such check.
pub fn check_origin(origin: Option<&str>, own_origin: &str) -> Result<(), ApiError> {
    match origin {
        Some(o) if o.trim_end_matches('/') == own_origin => Ok(()),
        Some(o) => Err(ApiError::new(
            ErrorCode::BadOrigin,
            format!("requests from origin {o:?} may not use this session"),
        )),
        None => Err(ApiError::new(
            ErrorCode::BadOrigin,
            "a cookie-authenticated write needs an Origin header",
        )),
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
    fn headers_and_cookies() {
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(Some("Bearer ")), None);
        assert_eq!(
            cookie(Some("a=1; onramp_session=xyz"), SESSION_COOKIE),
            Some("xyz")
        );
        assert_eq!(cookie(Some("onramp_session="), SESSION_COOKIE), None);
        let c = session_cookie(Some("t"), "127.0.0.1:8787");
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Lax") && !c.contains("Secure"));
        assert!(session_cookie(Some("t"), "onramp.example.cn").ends_with("; Secure"));
        assert!(session_cookie(None, "localhost").contains("Max-Age=0"));
    }

    #[test]
    fn origin_check() {
        let own = "http://127.0.0.1:8787";
        assert!(check_origin(Some(own), own).is_ok());
        assert_eq!(
            check_origin(Some("http://evil.cn"), own)
                .unwrap_err()
                .status,
            403
        );
        assert!(check_origin(None, own).is_err());
    }

    #[test]
    fn token_hashes_are_sha256_hex() {
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("a", "ab"));
    }

    proptest! {
        #[test]
        fn parsing_never_panics(s in "\\PC{0,80}") {
            let _ = normalise_email(&s);
            let _ = check_password(&s);
            let _ = bearer(Some(&s));
            let _ = cookie(Some(&s), SESSION_COOKIE);
            let _ = check_origin(Some(&s), "http://x");
            let _ = is_local_host(&s);
        }
    }
}
