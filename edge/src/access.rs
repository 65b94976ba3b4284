//! How a caller shows who they are: the bearer header, the session cookie, the CSRF origin check
//! of cookie-authenticated writes, and tokens kept as hashes and compared in constant time.

use crate::error::{ApiError, ErrorCode};
use sha2::{Digest, Sha256};

pub const SESSION_COOKIE: &str = "onramp_session";

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
            let _ = bearer(Some(&s));
            let _ = cookie(Some(&s), SESSION_COOKIE);
            let _ = check_origin(Some(&s), "http://x");
        }
    }
}
