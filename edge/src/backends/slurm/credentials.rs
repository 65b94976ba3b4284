//! How the edge proves itself to slurmrestd: every request carries `X-SLURM-USER-NAME` and
//! `X-SLURM-USER-TOKEN`, from a token pasted into the configuration or one minted per call from
//! the cluster's key ([`jwt`](super::jwt)).

use super::jwt;

/// How the edge proves itself to slurmrestd.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// A token pasted into the configuration (`secret`: `"<user>:<JWT>"`; a bare JWT is the user
    /// `onramp`'s). It lasts as long as whoever made it said.
    Token { user: String, token: String },
    /// The cluster's HS256 key (`jwt_key`, with `user`): a token per call ([`jwt::mint`]).
    Key { user: String, key: Vec<u8> },
}

/// The Slurm user when the configuration names none.
pub const DEFAULT_USER: &str = "onramp";

impl Credentials {
    /// From a backend's settings in `BACKENDS` (`secret`, or `jwt_key` with `user`); errors name
    /// the backend and the field.
    pub fn from_settings(
        backend: &str,
        secret: &str,
        jwt_key: Option<&str>,
        user: Option<&str>,
    ) -> Result<Credentials, String> {
        match (jwt_key, secret.is_empty()) {
            (Some(_), false) => Err(format!(
                "BACKENDS: backend {backend:?} has both secret and jwt_key; give one"
            )),
            (Some(k), true) => Ok(Credentials::Key {
                user: user.unwrap_or(DEFAULT_USER).to_string(),
                key: jwt::decode_key(k)
                    .map_err(|e| format!("BACKENDS: backend {backend:?}: {e}"))?,
            }),
            (None, _) => {
                let (named, token) = match secret.split_once(':') {
                    Some((u, t)) if !u.is_empty() => (u.to_string(), t.to_string()),
                    _ => (DEFAULT_USER.to_string(), secret.to_string()),
                };
                if user.is_some_and(|u| u != named) {
                    return Err(format!(
                        "BACKENDS: backend {backend:?} names user {user:?}, but its secret is {named:?}'s token"
                    ));
                }
                Ok(Credentials::Token { user: named, token })
            }
        }
    }

    pub fn user(&self) -> &str {
        match self {
            Credentials::Token { user, .. } | Credentials::Key { user, .. } => user,
        }
    }

    /// The JWT headers of a request made at `now_ms`.
    pub fn headers(&self, now_ms: i64) -> [(&'static str, String); 2] {
        let token = match self {
            Credentials::Token { token, .. } => token.clone(),
            Credentials::Key { user, key } => jwt::mint(key, user, now_ms.div_euclid(1000)),
        };
        [
            ("X-SLURM-USER-NAME", self.user().to_string()),
            ("X-SLURM-USER-TOKEN", token),
        ]
    }
}

/// Never shows a token or a key.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Token { user, .. } => write!(f, "Token {{ user: {user:?}, .. }}"),
            Credentials::Key { user, .. } => write!(f, "Key {{ user: {user:?}, .. }}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_from_a_token_or_a_key() {
        // Backend "hpc" with these `secret`, `jwt_key` and `user`.
        let settings = |secret: &str, jwt_key: Option<&str>, user: Option<&str>| {
            Credentials::from_settings("hpc", secret, jwt_key, user)
        };
        let pasted = settings("alice:eyJ.jwt", None, None);
        let [(n, u), (t, k)] = pasted.unwrap().headers(0);
        assert_eq!(
            (n, u.as_str(), t, k.as_str()),
            (
                "X-SLURM-USER-NAME",
                "alice",
                "X-SLURM-USER-TOKEN",
                "eyJ.jwt"
            )
        );
        let bare = settings("eyJ.jwt", None, None).unwrap();
        assert_eq!(bare.user(), "onramp");

        let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        let minted = settings("", Some(key), None).unwrap();
        let [(_, user), (_, token)] = minted.headers(1_767_225_600_999);
        assert_eq!(user, "onramp");
        assert_eq!(
            token,
            jwt::mint(&(0u8..32).collect::<Vec<_>>(), "onramp", 1_767_225_600)
        );
        // A token per call: a later call carries a later token.
        assert_ne!(minted.headers(1_767_225_660_000)[1].1, token);
        let alice = settings("", Some(key), Some("alice")).unwrap();
        assert_eq!(alice.headers(0)[0].1, "alice");
        assert!(
            !format!("{alice:?}").contains("AAEC")
                && !format!(
                    "{pasted:?}",
                    pasted = settings("alice:eyJ.jwt", None, None).unwrap()
                )
                .contains("eyJ")
        );

        for ((secret, jwt_key, user), field) in [
            (("a:b", Some(key), None), "both secret and jwt_key"),
            (("", Some("AAECAw=="), None), "jwt_key"),
            (("alice:t", None, Some("bob")), "user"),
        ] {
            let e = settings(secret, jwt_key, user).unwrap_err();
            assert!(e.contains("hpc") && e.contains(field), "{e}");
        }
        let e = settings("alice:t", None, Some("bob")).unwrap_err();
        assert!(e.contains(r#"names user Some("bob")"#), "{e}");
    }
}
