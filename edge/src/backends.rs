//! The configured backends: the only hosts the edge ever calls.
//!
//! They come from the `BACKENDS` environment variable, a JSON array such as
//! `[{"name": "local", "kind": "runner", "url": "http://127.0.0.1:8788", "secret": "…",
//! "cards": {"cpu": 1}}]`. No user-supplied URL is ever fetched.

use serde::Deserialize;
use std::collections::BTreeMap;

/// What kind of service a backend is; decides which adapter talks to it.
pub use api::BackendKind;

/// One backend as configured by the deployment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
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
    /// Extra environment for every job on this backend (e.g. `ONRAMP_SHARED`, where a cluster
    /// keeps tiny-train's models and corpora).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Slurm: the folder on the cluster's shared storage where jobs work and log (absolute;
    /// `/tmp` when absent).
    #[serde(default)]
    pub work_dir: Option<String>,
    /// Slurm: the partition to submit to (the cluster's default when absent).
    #[serde(default)]
    pub partition: Option<String>,
    /// Slurm: CPUs per task (the spec's when absent: 8 per GPU, 4 for a CPU job).
    #[serde(default)]
    pub cpus_per_task: Option<u32>,
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
        if let Some(dir) = b
            .work_dir
            .as_ref()
            .filter(|d| !d.starts_with('/') || d.contains(['\n', '\0']))
        {
            return Err(format!(
                "BACKENDS: backend {:?} has work_dir {dir:?}, which is not an absolute path",
                b.name
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
        assert_eq!(list[0].url, "http://127.0.0.1:8788");
        assert_eq!(list[0].cards["cpu"], 1);
        assert_eq!(list[0].work_dir, None);
    }

    #[test]
    fn parses_slurm_options() {
        let list = parse(Some(
            r#"[{"name":"hpc","kind":"slurm","url":"http://h:6820","secret":"u:jwt","cards":{"cpu":1},
                "work_dir":"/shared/onramp","partition":"gpu","cpus_per_task":2,"env":{"ONRAMP_SHARED":"/shared/data"}}]"#,
        ))
        .unwrap();
        let b = &list[0];
        assert_eq!(
            (
                b.work_dir.as_deref(),
                b.partition.as_deref(),
                b.cpus_per_task
            ),
            (Some("/shared/onramp"), Some("gpu"), Some(2))
        );
        assert_eq!(b.env["ONRAMP_SHARED"], "/shared/data");
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
        let e = parse(Some(
            r#"[{"name":"a","kind":"slurm","url":"http://x","work_dir":"jobs"}]"#,
        ))
        .unwrap_err();
        assert!(e.contains("work_dir"), "{e}");
    }
}
