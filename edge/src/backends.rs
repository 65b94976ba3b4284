//! The configured backends: the only hosts the edge ever calls.
//!
//! They come from the `BACKENDS` environment variable, a JSON array such as
//! `[{"name": "local", "kind": "runner", "url": "http://127.0.0.1:8788", "secret": "…",
//! "cards": {"cpu": 1}}]`. No user-supplied URL is ever fetched.

use serde::Deserialize;
use std::collections::BTreeMap;

/// What kind of service a backend is; decides which adapter talks to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Runner,
    Slurm,
}

/// One backend as configured by the deployment.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendConfig {
    pub name: String,
    pub kind: BackendKind,
    /// Base URL, without a trailing slash.
    pub url: String,
    /// Shared secret sent to the backend; never shown to clients.
    #[serde(default)]
    pub secret: String,
    /// Card type → how many cards of it the backend has.
    #[serde(default)]
    pub cards: BTreeMap<String, u32>,
}

impl BackendConfig {
    /// The headers that authenticate the edge to this backend: the runner's shared secret as a
    /// bearer token; slurmrestd's JWT as `X-SLURM-USER-NAME` / `X-SLURM-USER-TOKEN`.
    pub fn auth_headers(&self) -> Vec<(&'static str, String)> {
        if self.secret.is_empty() {
            return Vec::new();
        }
        match self.kind {
            BackendKind::Runner => vec![("authorization", format!("Bearer {}", self.secret))],
            BackendKind::Slurm => {
                let (user, token) = slurm_credentials(&self.secret);
                vec![("x-slurm-user-name", user), ("x-slurm-user-token", token)]
            }
        }
    }

    /// The URL of the backend's health endpoint.
    pub fn health_url(&self) -> String {
        match self.kind {
            BackendKind::Runner => format!("{}/health", self.url),
            BackendKind::Slurm => format!("{}/slurm/v0.0.40/ping", self.url),
        }
    }
}

/// A Slurm backend's secret is `"<user>:<JWT>"`; a bare JWT is the user `onramp`'s.
pub fn slurm_credentials(secret: &str) -> (String, String) {
    match secret.split_once(':') {
        Some((u, t)) if !u.is_empty() => (u.to_string(), t.to_string()),
        _ => ("onramp".to_string(), secret.to_string()),
    }
}

/// Parses `BACKENDS`. An absent or empty variable means no backends; a malformed one is an error
/// that names what is wrong, so a deployment mistake is seen at once rather than as "no backends".
pub fn parse(text: Option<&str>) -> Result<Vec<BackendConfig>, String> {
    let text = match text.map(str::trim) {
        None | Some("") => return Ok(Vec::new()),
        Some(t) => t,
    };
    let mut list: Vec<BackendConfig> =
        serde_json::from_str(text).map_err(|e| format!("BACKENDS is not valid: {e}"))?;
    let mut seen = std::collections::BTreeSet::new();
    for b in &mut list {
        if b.name.is_empty() || !seen.insert(b.name.clone()) {
            return Err(format!(
                "BACKENDS: backend names must be unique and non-empty (got {:?})",
                b.name
            ));
        }
        if !(b.url.starts_with("http://") || b.url.starts_with("https://")) {
            return Err(format!(
                "BACKENDS: backend {:?} has url {:?}, which is not http(s)",
                b.name, b.url
            ));
        }
        while b.url.ends_with('/') {
            b.url.pop();
        }
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_runner() {
        let list = parse(Some(
            r#"[{"name":"local","kind":"runner","url":"http://127.0.0.1:8788/","secret":"s","cards":{"cpu":1}}]"#,
        ))
        .unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].kind, BackendKind::Runner);
        assert_eq!(list[0].health_url(), "http://127.0.0.1:8788/health");
        assert_eq!(list[0].cards["cpu"], 1);
    }

    #[test]
    fn each_kind_authenticates_its_own_way() {
        let list = parse(Some(
            r#"[{"name":"r","kind":"runner","url":"http://a","secret":"s3"},
                {"name":"s","kind":"slurm","url":"http://b","secret":"alice:eyJ.jwt"},
                {"name":"t","kind":"slurm","url":"http://c","secret":"eyJ.bare"},
                {"name":"u","kind":"runner","url":"http://d"}]"#,
        ))
        .unwrap();
        assert_eq!(
            list[0].auth_headers(),
            vec![("authorization", "Bearer s3".to_string())]
        );
        assert_eq!(
            list[1].auth_headers(),
            vec![
                ("x-slurm-user-name", "alice".to_string()),
                ("x-slurm-user-token", "eyJ.jwt".to_string())
            ]
        );
        assert_eq!(list[2].auth_headers()[0].1, "onramp");
        assert!(list[3].auth_headers().is_empty());
    }

    #[test]
    fn empty_means_none() {
        assert_eq!(parse(None).unwrap(), vec![]);
        assert_eq!(parse(Some("  ")).unwrap(), vec![]);
    }

    #[test]
    fn refuses_bad_config_with_a_reason() {
        let e = parse(Some("[{")).unwrap_err();
        assert!(e.starts_with("BACKENDS is not valid"), "{e}");
        let e = parse(Some(r#"[{"name":"a","kind":"runner","url":"ftp://x"}]"#)).unwrap_err();
        assert!(e.contains("not http"), "{e}");
        let e = parse(Some(
            r#"[{"name":"a","kind":"runner","url":"http://x"},{"name":"a","kind":"runner","url":"http://y"}]"#,
        ))
        .unwrap_err();
        assert!(e.contains("unique"), "{e}");
        let e = parse(Some(r#"[{"name":"a","kind":"ray","url":"http://x"}]"#)).unwrap_err();
        assert!(e.contains("unknown variant"), "{e}");
    }
}
