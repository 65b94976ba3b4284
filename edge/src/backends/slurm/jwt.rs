//! Tokens for slurmrestd minted by the edge: when a Slurm backend is configured with the
//! cluster's auth/jwt key (`jwt_key`) instead of a pasted token, every call carries a fresh
//! HS256 JWT in Slurm's format — header `{"alg":"HS256","typ":"JWT"}`, claims `exp`, `iat` and
//! `sun` (the Slurm user name) — that expires [`LIFETIME_S`] after it was made. The clock is the
//! caller's, so the same inputs always give the same token.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How long a minted token is good for: one call, with room for clocks a little apart.
pub const LIFETIME_S: i64 = 300;

/// The smallest key accepted: Slurm's own advice is 32 random bytes (`dd … bs=32 count=1`).
pub const MIN_KEY_BYTES: usize = 32;

/// Decodes a configured key (standard base64, with or without padding). Errors say what is wrong
/// without showing the key.
pub fn decode_key(base64_key: &str) -> Result<Vec<u8>, String> {
    let text = base64_key.trim();
    let key = STANDARD
        .decode(text)
        .or_else(|_| STANDARD_NO_PAD.decode(text))
        .map_err(|_| "jwt_key is not base64 (encode the key file with `base64 -w0`)".to_string())?;
    if key.len() < MIN_KEY_BYTES {
        return Err(format!(
            "jwt_key is {} bytes; Slurm's HS256 key must be at least {MIN_KEY_BYTES}",
            key.len()
        ));
    }
    Ok(key)
}

/// A token for `user`, issued at `now_s` (Unix seconds).
pub fn mint(key: &[u8], user: &str, now_s: i64) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "exp": now_s.saturating_add(LIFETIME_S),
        "iat": now_s,
        "sun": user,
    });
    let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signed = format!("{header}.{claims}");
    // HMAC takes a key of any length, so this cannot fail; an empty signature would only be
    // refused by Slurm.
    let signature = Hmac::<Sha256>::new_from_slice(key)
        .map(|mut mac| {
            mac.update(signed.as_bytes());
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        })
        .unwrap_or_default();
    format!("{signed}.{signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Made independently with Python's hmac and base64 for the key 00 01 … 1f.
    const VECTOR: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3NjcyMjU5MDAsImlhdCI6MTc2NzIyNTYwMCwic3VuIjoib25yYW1wIn0.WTfleOYXHDNgCbKkzRVxB3ptkNRCJxpkEmkpmgW9eGY";

    #[test]
    fn mints_the_known_token() {
        let key = decode_key("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
        assert_eq!(key, (0u8..32).collect::<Vec<_>>());
        assert_eq!(mint(&key, "onramp", 1_767_225_600), VECTOR);
        // Another second, user or key is another token.
        assert_ne!(mint(&key, "onramp", 1_767_225_601), VECTOR);
        assert_ne!(mint(&key, "alice", 1_767_225_600), VECTOR);
        assert_ne!(mint(&[7; 32], "onramp", 1_767_225_600), VECTOR);
    }

    #[test]
    fn claims_are_slurms() {
        let token = mint(&[1; 32], "alice", 100);
        let claims = token.split('.').nth(1).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
        assert_eq!(
            claims,
            serde_json::json!({"exp": 400, "iat": 100, "sun": "alice"})
        );
    }

    #[test]
    fn bad_keys_are_refused_without_showing_them() {
        assert!(decode_key("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").is_ok());
        let e = decode_key("not base64 at all!").unwrap_err();
        assert!(e.contains("not base64") && !e.contains("at all"), "{e}");
        let e = decode_key("AAECAw==").unwrap_err();
        assert!(e.contains("4 bytes") && e.contains("32"), "{e}");
    }
}
