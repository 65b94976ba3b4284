//! The email verification link's token: who (user id and email) and until when, signed with
//! HMAC-SHA256 under the edge's `EMAIL_LINK_KEY`. Nothing is stored for a link: the signature
//! is the proof that this edge issued it, and the expiry is inside the signed text, so no field
//! can be changed without the key. Pure: the caller passes the key and the time.

use crate::error::{ApiError, ErrorCode};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The token's version tag, so that a later format can keep reading (or refusing) this one.
const VERSION: &str = "v1";
/// How long a link works.
pub const LINK_LIFETIME_S: i64 = 24 * 3600;
/// The shortest key accepted: 32 bytes, the size of the HMAC's output.
pub const MIN_KEY_BYTES: usize = 32;

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkClaims {
    pub user_id: String,
    pub email: String,
    /// Unix seconds after which the link no longer works.
    pub expires_at_s: i64,
}

/// The configured key, refused when missing or too short to be a secret (the worker turns that
/// into an internal error: the deployment is misconfigured, the user did nothing wrong).
pub fn check_key(key: Option<&str>) -> Result<&str, String> {
    match key {
        Some(k) if k.len() >= MIN_KEY_BYTES => Ok(k),
        Some(k) => Err(format!(
            "EMAIL_LINK_KEY has {} bytes; it needs at least {MIN_KEY_BYTES}",
            k.len()
        )),
        None => Err("EMAIL_LINK_KEY is not set (a secret of at least 32 bytes)".into()),
    }
}

fn mac(key: &str, text: &str) -> Hmac<Sha256> {
    use hmac::digest::KeyInit;
    // HMAC takes a key of any length, so `new_from_slice` does not fail; the fallback (an
    // all-zero key, which no token of a configured key verifies under) only avoids a panic path.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key.as_bytes())
        .unwrap_or_else(|_| <Hmac<Sha256> as KeyInit>::new(&Default::default()));
    m.update(text.as_bytes());
    m
}

/// The signed text: version, user id, expiry and the email in hex (so no field can hold the
/// separator).
fn payload(user_id: &str, email: &str, expires_at_s: i64) -> String {
    format!(
        "{VERSION}.{user_id}.{expires_at_s}.{}",
        hex::encode(email.as_bytes())
    )
}

/// A token for `user_id`'s `email`, valid until `expires_at_s`.
pub fn sign(key: &str, user_id: &str, email: &str, expires_at_s: i64) -> String {
    let text = payload(user_id, email, expires_at_s);
    let sig = hex::encode(mac(key, &text).finalize().into_bytes());
    format!("{text}.{sig}")
}

fn invalid(why: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidLink,
        format!("this verification link is not valid ({why}); open the link from the newest mail, or ask for a new one"),
    )
    .with_field("token")
}

/// The claims of a token this key signed and that has not expired at `now_s`. The signature is
/// checked first, in constant time, so a forged token is "not valid" whatever its expiry says.
pub fn verify(key: &str, token: &str, now_s: i64) -> Result<LinkClaims, ApiError> {
    let token = token.trim();
    let (text, sig) = token
        .rsplit_once('.')
        .ok_or_else(|| invalid("it is not a token of this edge"))?;
    let sig = hex::decode(sig).map_err(|_| invalid("its signature is not hex"))?;
    mac(key, text)
        .verify_slice(&sig)
        .map_err(|_| invalid("its signature does not match"))?;
    let mut parts = text.split('.');
    let (Some(version), Some(user_id), Some(expires), Some(email), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(invalid("it does not have the fields of a token"));
    };
    if version != VERSION {
        return Err(invalid("it is of an unknown version"));
    }
    let expires_at_s: i64 = expires
        .parse()
        .map_err(|_| invalid("its expiry is not a number"))?;
    let email = hex::decode(email)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| invalid("its email is not readable"))?;
    if now_s >= expires_at_s {
        return Err(ApiError::new(
            ErrorCode::LinkExpired,
            format!(
                "this verification link expired {} ago; ask for a new one on the account page",
                crate::time::words_for_seconds(now_s - expires_at_s)
            ),
        )
        .with_field("token"));
    }
    Ok(LinkClaims {
        user_id: user_id.to_string(),
        email,
        expires_at_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: &str = "0123456789abcdef0123456789abcdef";
    const NOW: i64 = 1_767_225_600;

    #[test]
    fn a_signed_token_verifies_until_it_expires() {
        let t = sign(KEY, "u1", "ada@example.cn", NOW + 60);
        let claims = verify(KEY, &t, NOW).unwrap();
        assert_eq!(
            claims,
            LinkClaims {
                user_id: "u1".into(),
                email: "ada@example.cn".into(),
                expires_at_s: NOW + 60
            }
        );
        assert!(verify(KEY, &t, NOW + 59).is_ok());
        let expired = verify(KEY, &t, NOW + 60 + 3600).unwrap_err();
        assert_eq!(expired.code, ErrorCode::LinkExpired);
        assert_eq!(expired.status, 410);
        assert!(expired.message.contains("1 h"), "{}", expired.message);
    }

    #[test]
    fn a_token_under_another_key_is_not_valid() {
        let t = sign(KEY, "u1", "ada@example.cn", NOW + 60);
        let e = verify("another key that is long enough!!", &t, NOW).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidLink);
        assert_eq!(e.status, 400);
        assert!(
            e.message.contains("signature does not match"),
            "{}",
            e.message
        );
    }

    #[test]
    fn changing_any_field_breaks_the_signature() {
        let t = sign(KEY, "u1", "ada@example.cn", NOW + 60);
        let later = t.replace(&format!(".{}.", NOW + 60), &format!(".{}.", NOW + 999_999));
        let other_user = t.replacen(".u1.", ".u2.", 1);
        let other_email = t.replace(
            &hex::encode("ada@example.cn"),
            &hex::encode("eve@example.cn"),
        );
        for forged in [later, other_user, other_email] {
            assert_ne!(forged, t);
            let e = verify(KEY, &forged, NOW).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidLink, "{forged}");
        }
        // An expired token with a forged expiry is "not valid", not "expired".
        let old = sign(KEY, "u1", "ada@example.cn", NOW - 10);
        let bumped = old.replace(&format!(".{}.", NOW - 10), &format!(".{}.", NOW + 10));
        assert_eq!(
            verify(KEY, &bumped, NOW).unwrap_err().code,
            ErrorCode::InvalidLink
        );
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        for t in ["", "nodots", "v1.u1.5.00.zz", "v1.u1.5.00", "...."] {
            let e = verify(KEY, t, NOW).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidLink, "{t:?}");
            assert_eq!(e.details["field"], "token");
        }
    }

    #[test]
    fn keys_must_be_long_enough() {
        assert_eq!(check_key(Some(KEY)), Ok(KEY));
        assert!(
            check_key(Some("short"))
                .unwrap_err()
                .contains("at least 32")
        );
        assert!(check_key(None).unwrap_err().contains("not set"));
    }

    #[test]
    fn the_mac_is_hmac_sha256() {
        // RFC 4231 test case 2.
        let m = mac("Jefe", "what do ya want for nothing?")
            .finalize()
            .into_bytes();
        assert_eq!(
            hex::encode(m),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    proptest! {
        #[test]
        fn verification_never_panics(t in ".{0,200}") {
            let _ = verify(KEY, &t, NOW);
        }

        #[test]
        fn any_email_round_trips(email in "[a-z0-9.+_-]{1,20}@[a-z0-9.-]{1,20}") {
            let t = sign(KEY, "abc", &email, NOW + 1);
            prop_assert_eq!(verify(KEY, &t, NOW).unwrap().email, email);
        }
    }
}
