//! The password reset link's token. It is an email link (`email_link`'s format and HMAC) under a
//! key of its own, derived from `EMAIL_LINK_KEY`, so a verification link is never a reset link
//! or the reverse. It names the account, its email, and a fingerprint of the password hash it
//! was issued against, so it works once: setting a new password changes the hash, and every
//! earlier link of that account stops working. Valid for an hour. Pure: the caller passes the
//! key and the time.

use crate::email_link;
use crate::error::{ApiError, ErrorCode};
use sha2::{Digest, Sha256};

/// How long a reset link works.
pub const RESET_LIFETIME_S: i64 = 3600;

/// What a valid reset token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetClaims {
    pub user_id: String,
    pub email: String,
    /// [`fingerprint`] of the password hash the link was issued against.
    pub fingerprint: String,
}

fn reset_key(link_key: &str) -> String {
    format!("{link_key}\npassword-reset")
}

/// A short digest of a stored password hash: it tells whether the password changed since a link
/// was issued, and says nothing usable about the hash.
pub fn fingerprint(password_hash: &str) -> String {
    let digest = Sha256::digest(format!("onramp password reset\n{password_hash}").as_bytes());
    hex::encode(&digest[..8])
}

/// A reset token for the account, issued against its current password hash.
pub fn sign(link_key: &str, user_id: &str, email: &str, password_hash: &str, now_s: i64) -> String {
    let subject = format!("{email}\n{}", fingerprint(password_hash));
    email_link::sign(
        &reset_key(link_key),
        user_id,
        &subject,
        now_s + RESET_LIFETIME_S,
    )
}

fn invalid(why: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidLink,
        format!(
            "this password reset link is not valid ({why}); ask for a new one where you sign in"
        ),
    )
    .with_field("token")
}

/// The claims of a reset token this key signed and that has not expired at `now_s`.
pub fn verify(link_key: &str, token: &str, now_s: i64) -> Result<ResetClaims, ApiError> {
    let claims = email_link::verify(&reset_key(link_key), token, now_s).map_err(|e| {
        if e.code == ErrorCode::LinkExpired {
            ApiError::new(
                ErrorCode::LinkExpired,
                "this password reset link has expired (it works for an hour); ask for a new one",
            )
            .with_field("token")
        } else {
            invalid("it is not a reset link of this edge, or it was altered")
        }
    })?;
    let (email, fingerprint) = claims
        .email
        .split_once('\n')
        .ok_or_else(|| invalid("it does not have the fields of a reset link"))?;
    Ok(ResetClaims {
        user_id: claims.user_id,
        email: email.to_string(),
        fingerprint: fingerprint.to_string(),
    })
}

/// Whether a token's claims still hold for the account as stored: the same email, and the same
/// password as when the link was issued (so a used link, or one from before another reset, is
/// refused).
pub fn still_holds(claims: &ResetClaims, email: &str, password_hash: &str) -> Result<(), ApiError> {
    if claims.email != email {
        return Err(invalid("the account no longer has this email"));
    }
    if !crate::access::same_secret(&claims.fingerprint, &fingerprint(password_hash)) {
        return Err(invalid(
            "it was used already, or the password changed since it was sent",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0123456789abcdef0123456789abcdef";
    const NOW: i64 = 1_767_225_600;

    #[test]
    fn a_reset_link_works_once_for_an_hour() {
        let t = sign(KEY, "u1", "ada@example.cn", "hash-1", NOW);
        let c = verify(KEY, &t, NOW + 10).unwrap();
        assert_eq!(
            (c.user_id.as_str(), c.email.as_str()),
            ("u1", "ada@example.cn")
        );
        assert!(still_holds(&c, "ada@example.cn", "hash-1").is_ok());
        // Used: the password hash changed, and the link no longer holds.
        let e = still_holds(&c, "ada@example.cn", "hash-2").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidLink);
        assert!(still_holds(&c, "eve@example.cn", "hash-1").is_err());
        let e = verify(KEY, &t, NOW + RESET_LIFETIME_S).unwrap_err();
        assert_eq!(e.code, ErrorCode::LinkExpired);
    }

    #[test]
    fn verification_and_reset_links_are_not_interchangeable() {
        let verify_link = email_link::sign(KEY, "u1", "ada@example.cn", NOW + 60);
        assert_eq!(
            verify(KEY, &verify_link, NOW).unwrap_err().code,
            ErrorCode::InvalidLink
        );
        let reset = sign(KEY, "u1", "ada@example.cn", "h", NOW);
        assert!(email_link::verify(KEY, &reset, NOW).is_err());
        let other_key = "fedcba9876543210fedcba9876543210";
        assert!(verify(other_key, &reset, NOW).is_err());
    }

    #[test]
    fn the_fingerprint_is_short_and_follows_the_hash() {
        assert_eq!(fingerprint("a").len(), 16);
        assert_ne!(fingerprint("a"), fingerprint("b"));
        assert_eq!(fingerprint("a"), fingerprint("a"));
    }
}
