//! The known-device cookie of sign-in. Sign-in has a ceiling per email over every client
//! (`LOGIN_LIMIT_PER_15_MIN`), which bounds guessing from many addresses; alone it would let
//! anyone who sends that many wrong passwords keep the owner out. A browser that signed in to
//! an account before holds this cookie, a proof that it did: such a browser is not held by the
//! email's ceiling or its address's backoff, only by a backoff of the known devices of that
//! email, which nobody without the proof can touch. The proof is an HMAC, under a key derived
//! from `EMAIL_LINK_KEY`, of the email and the account's password hash: a new password (a reset,
//! a change) retires every proof issued before it. Pure: the caller passes the key.

use crate::access::same_secret;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The cookie's name.
pub const DEVICE_COOKIE: &str = "onramp_device";

/// How long a browser stays known without signing in again: a year.
pub const DEVICE_MAX_AGE_S: i64 = 365 * 86_400;

/// The proof that a browser signed in to the account of `email` whose password hash is
/// `password_hash`: hex HMAC-SHA256.
pub fn proof(link_key: &str, email: &str, password_hash: &str) -> String {
    use hmac::digest::KeyInit;
    let key = format!("{link_key}\nlogin-device");
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key.as_bytes())
        .unwrap_or_else(|_| <Hmac<Sha256> as KeyInit>::new(&Default::default()));
    m.update(format!("{email}\n{password_hash}").as_bytes());
    hex::encode(m.finalize().into_bytes())
}

/// Whether `presented` proves a sign-in to one of the accounts of `email` (their password
/// hashes), compared in constant time against each.
pub fn known(link_key: &str, presented: &str, email: &str, password_hashes: &[&str]) -> bool {
    password_hashes.iter().fold(false, |found, hash| {
        same_secret(presented, &proof(link_key, email, hash)) | found
    })
}

/// The `Set-Cookie` value: sent only to the sign-in route, never to scripts or other sites;
/// `Secure` except on a local host (as the session cookie).
pub fn cookie(proof: &str, host: &str) -> String {
    let secure = if crate::accounts::is_local_host(host) {
        ""
    } else {
        "; Secure"
    };
    format!(
        "{DEVICE_COOKIE}={proof}; Path=/api/auth/login; HttpOnly; SameSite=Strict; \
         Max-Age={DEVICE_MAX_AGE_S}{secure}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "a key of at least thirty-two bytes, for tests";

    #[test]
    fn a_proof_holds_for_its_email_and_password_only() {
        let p = proof(KEY, "ada@example.cn", "hash-1");
        assert_eq!(p.len(), 64);
        assert!(known(KEY, &p, "ada@example.cn", &["other", "hash-1"]));
        // Another email, a new password, another key, or nothing: not known.
        assert!(!known(KEY, &p, "bob@example.cn", &["hash-1"]));
        assert!(!known(KEY, &p, "ada@example.cn", &["hash-2"]));
        assert!(!known("another key", &p, "ada@example.cn", &["hash-1"]));
        assert!(!known(KEY, "", "ada@example.cn", &["hash-1"]));
        assert!(!known(KEY, &p, "ada@example.cn", &[]));
    }

    #[test]
    fn the_cookie_goes_to_the_sign_in_route_only() {
        let c = cookie("abc", "onramp.example.cn");
        assert!(
            c.starts_with("onramp_device=abc; Path=/api/auth/login; HttpOnly; SameSite=Strict")
        );
        assert!(c.ends_with("; Secure"));
        assert!(!cookie("abc", "localhost:8787").contains("Secure"));
    }
}
