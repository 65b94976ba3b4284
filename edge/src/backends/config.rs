//! The configured backends: the only hosts the edge ever calls.
//!
//! They come from the `BACKENDS` environment variable, a JSON array such as
//! `[{"name": "local", "kind": "runner", "url": "http://127.0.0.1:8788", "secret": "…",
//! "cards": {"cpu": 1}}]`. No user-supplied URL is ever fetched.

use super::slurm::credentials::Credentials;
use super::slurm::request::{NVME_PATH_ENV, TRUST_REMOTE_CODE_ENV};
use super::slurm::version::ApiVersion;
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
    /// Shared secret sent to the backend; never shown to clients. Slurm: `"<user>:<JWT>"`, a
    /// token made on the cluster (or use `jwt_key`).
    #[serde(default)]
    pub secret: String,
    /// Slurm: the cluster's auth/jwt HS256 key, base64 (`base64 -w0 jwt_hs256.key`), instead of
    /// `secret`: the edge mints a short-lived token for every call.
    #[serde(default)]
    pub jwt_key: Option<String>,
    /// Slurm: the user the jobs run as (the tokens' `sun`); `onramp` when absent.
    #[serde(default)]
    pub user: Option<String>,
    /// Slurm: the slurmrestd data parser (`v0.0.40` to `v0.0.43`); when absent the edge asks
    /// slurmrestd's `/openapi/v3` and takes the newest it serves.
    #[serde(default)]
    pub api_version: Option<String>,
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
    /// Slurm: whether Slurm may requeue a job that a failed node or a preemption stopped
    /// (`requeue` in the submit request); on when absent. A requeued job runs its script again in
    /// its own folder and the trainer resumes from the checkpoint it saved when it was stopped.
    #[serde(default)]
    pub requeue: Option<bool>,
    /// Slurm: how long a job's folder (`<work_dir>/<job id>`) stays after the job ended, as a
    /// duration (`"7d"`, `"36h"`); 7 days when absent.
    #[serde(default)]
    pub retention: Option<String>,
    /// Host RAM per node in GiB, where the backend knows its nodes better than the catalogue's
    /// figure for the card type: what offloaded optimizer states and parameters must fit in.
    #[serde(default)]
    pub node_ram_gib: Option<u64>,
    /// Local NVMe per node in GiB (where ZeRO-Infinity offloads to); the catalogue's when absent.
    /// Counted only with `nvme_path`: a backend that names no folder to offload to has none.
    #[serde(default)]
    pub node_nvme_gib: Option<u64>,
    /// The folder on each node's local NVMe where a job that offloads to NVMe keeps its swap
    /// files (absolute), given to the job as `ONRAMP_NVME_PATH`; the trainer swaps in a folder
    /// of the job's own under it and removes it at the end. Without it, NVMe offload goes to no
    /// job of this backend.
    #[serde(default)]
    pub nvme_path: Option<String>,
    /// Catalogue models whose Hugging Face repo runs code of its own to load (ChatGLM3's
    /// `trust_remote_code`) that this backend's operator allows to run, by id; given to the job
    /// as `ONRAMP_TRUST_REMOTE_CODE`. A spec of such a model goes only to a backend that lists it.
    #[serde(default)]
    pub trust_remote_code: Vec<String>,
    /// An `http://` URL on a private network, allowed where the deployment requires TLS
    /// (`crate::tls`): the operator says so by name.
    #[serde(default)]
    pub insecure_private_network: bool,
}

impl BackendConfig {
    /// This backend's nodes as jobspec plans on them (`None`: the catalogue's figure).
    pub fn node(&self) -> jobspec::NodeOverride {
        jobspec::NodeOverride {
            ram_bytes: self.node_ram_gib.map(|g| g << 30),
            nvme_bytes: match self.nvme_path {
                Some(_) => self.node_nvme_gib.map(|g| g << 30),
                None => Some(0),
            },
        }
    }

    /// The environment this backend gives every job beyond the job's own: its `env`, and
    /// `ONRAMP_NVME_PATH` where it has an `nvme_path`.
    pub fn job_env(&self) -> BTreeMap<String, String> {
        let mut env = self.env.clone();
        if let Some(p) = &self.nvme_path {
            env.insert(NVME_PATH_ENV.into(), p.clone());
        }
        if !self.trust_remote_code.is_empty() {
            env.insert(
                TRUST_REMOTE_CODE_ENV.into(),
                self.trust_remote_code.join(","),
            );
        }
        env
    }

    /// Whether this backend may run the spec's model: any model that needs no code of its own,
    /// and one that does only where the operator lists it in `trust_remote_code`.
    pub fn runs_model(&self, v: &jobspec::ValidSpec) -> bool {
        remote_code_model(v).is_none_or(|m| self.trust_remote_code.iter().any(|id| id == m.id))
    }

    /// The retention in seconds (`parse` has checked that it reads).
    pub fn retention_s(&self) -> u64 {
        self.retention
            .as_deref()
            .and_then(jobspec::duration::parse_duration_s)
            .unwrap_or(super::slurm::request::DEFAULT_RETENTION_S)
    }
}

/// The spec's catalogue model when its repo runs code of its own to load (`trust_remote_code`).
pub fn remote_code_model(v: &jobspec::ValidSpec) -> Option<&'static jobspec::catalog::Model> {
    v.catalogue_model().filter(|m| m.remote_code)
}

/// Parses `BACKENDS`. An absent or empty variable means no backends; a malformed one is an error
/// that names what is wrong, so a deployment mistake is seen at once rather than as "no backends".
pub fn parse(text: Option<&str>) -> Result<Vec<BackendConfig>, String> {
    parse_with(text, false)
}

/// [`parse`], refusing an `http://` backend that is neither on this machine nor marked
/// `insecure_private_network` when `require_tls` (`REQUIRE_TLS`, see `crate::tls`).
pub fn parse_with(text: Option<&str>, require_tls: bool) -> Result<Vec<BackendConfig>, String> {
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
        if !b.insecure_private_network {
            crate::tls::check(
                &format!("BACKENDS: backend {:?} has url", b.name),
                &b.url,
                require_tls,
            )?;
        }
        if let Some(dir) = b.work_dir.as_ref().filter(|d| !d.starts_with('/')) {
            return Err(format!(
                "BACKENDS: backend {:?} has work_dir {dir:?}, which is not an absolute path",
                b.name
            ));
        }
        // Up to a PiB per node: more is a typo (and would pass u64 in bytes). A node may have
        // no NVMe, but not no RAM.
        for (field, gib, least) in [
            ("node_ram_gib", b.node_ram_gib, 1),
            ("node_nvme_gib", b.node_nvme_gib, 0),
        ] {
            if let Some(g) = gib.filter(|g| !(least..=1 << 20).contains(g)) {
                return Err(format!(
                    "BACKENDS: backend {:?} has {field} {g}; give GiB per node, {least} to 1048576",
                    b.name
                ));
            }
        }
        check_text_fields(b)?;
        check_kind_fields(b)?;
        check_remote_code(b)?;
        while b.url.ends_with('/') {
            b.url.pop();
        }
    }
    Ok(list)
}

/// `trust_remote_code` names catalogue models that need it, each once; ids are stored as the
/// catalogue spells them.
fn check_remote_code(b: &mut BackendConfig) -> Result<(), String> {
    let needing = || {
        jobspec::catalog::MODELS
            .iter()
            .filter(|m| m.remote_code)
            .map(|m| m.id)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut ids = Vec::new();
    for id in &b.trust_remote_code {
        let Some(m) = jobspec::catalog::model(id).filter(|m| m.remote_code) else {
            return Err(format!(
                "BACKENDS: backend {:?} has trust_remote_code {id:?}, which is not a catalogue model that runs code of its own; those are: {}",
                b.name,
                needing()
            ));
        };
        if !ids.contains(&m.id.to_string()) {
            ids.push(m.id.to_string());
        }
    }
    b.trust_remote_code = ids;
    Ok(())
}

/// The Slurm-only fields belong to Slurm backends, and hold what Slurm accepts.
fn check_kind_fields(b: &BackendConfig) -> Result<(), String> {
    if b.kind != BackendKind::Slurm {
        let slurm_only = [
            ("jwt_key", b.jwt_key.is_some()),
            ("user", b.user.is_some()),
            ("api_version", b.api_version.is_some()),
            ("retention", b.retention.is_some()),
        ];
        if let Some((field, _)) = slurm_only.iter().find(|(_, set)| *set) {
            return Err(format!(
                "BACKENDS: backend {:?} is not a Slurm backend but has {field}",
                b.name
            ));
        }
        return Ok(());
    }
    if let Some(u) = b.user.as_ref().filter(|u| {
        u.is_empty()
            || u.len() > 64
            || !u
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    }) {
        return Err(format!(
            "BACKENDS: backend {:?} has user {u:?}; a Slurm user name is letters, digits and . _ -",
            b.name
        ));
    }
    if let Some(r) = b
        .retention
        .as_ref()
        .filter(|r| jobspec::duration::parse_duration_s(r).is_none())
    {
        return Err(format!(
            "BACKENDS: backend {:?} has retention {r:?}; a duration is like \"7d\", \"36h\" or \"90m\"",
            b.name
        ));
    }
    if let Some(v) = &b.api_version {
        ApiVersion::parse(v)
            .map_err(|e| format!("BACKENDS: backend {:?} has api_version: {e}", b.name))?;
    }
    Credentials::from_settings(&b.name, &b.secret, b.jwt_key.as_deref(), b.user.as_deref())
        .map(|_| ())
}

/// Holds what the backend's configuration passes into a job (its environment, partition and
/// work folder) to the rules jobspec holds a spec's free text to: an environment name is a shell
/// identifier, and no value can carry a line break or a control character into a job script or
/// a Slurm request.
fn check_text_fields(b: &BackendConfig) -> Result<(), String> {
    for (key, value) in &b.env {
        let identifier = key
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !identifier {
            return Err(format!(
                "BACKENDS: backend {:?} has env name {key:?}; a name is letters, digits and _ and does not start with a digit",
                b.name
            ));
        }
        if super::slurm::request::is_reserved_env(key) {
            return Err(format!(
                "BACKENDS: backend {:?} sets env {key}, which the edge sets for every job itself",
                b.name
            ));
        }
        if !jobspec::validate::is_clean_text(value, true) {
            return Err(format!(
                "BACKENDS: backend {:?} has a control character or line break in env {key}",
                b.name
            ));
        }
    }
    if let Some(p) = b
        .partition
        .as_ref()
        .filter(|p| !jobspec::validate::is_clean_text(p, false) || p.is_empty())
    {
        return Err(format!(
            "BACKENDS: backend {:?} has partition {p:?}; a partition name is letters, digits and - _ .",
            b.name
        ));
    }
    if let Some(p) = b.nvme_path.as_ref().filter(|p| {
        !p.starts_with('/')
            || p.len() > 256
            || p.split('/').any(|part| part == "..")
            || !p
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/_.-".contains(c))
    }) {
        return Err(format!(
            "BACKENDS: backend {:?} has nvme_path {p:?}; give an absolute path of letters, digits and / _ . - (no ..)",
            b.name
        ));
    }
    if let Some(dir) = b
        .work_dir
        .as_ref()
        .filter(|d| !jobspec::validate::is_clean_text(d, false))
    {
        return Err(format!(
            "BACKENDS: backend {:?} has work_dir {dir:?}; a path is letters, digits and - _ . / : @ + = ~ , %",
            b.name
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_tls_is_required_a_cleartext_backend_must_say_so_by_name() {
        let one = |url: &str, extra: &str| {
            format!(r#"[{{"name":"hpc","kind":"runner","url":"{url}","secret":"s"{extra}}}]"#)
        };
        for url in ["https://hpc.example.com", "http://127.0.0.1:8788"] {
            assert!(parse_with(Some(&one(url, "")), true).is_ok(), "{url}");
        }
        let e = parse_with(Some(&one("http://10.0.0.5:8788", "")), true).unwrap_err();
        assert!(e.contains("\"hpc\"") && e.contains("REQUIRE_TLS"), "{e}");
        assert!(
            parse(Some(&one("http://10.0.0.5:8788", ""))).is_ok(),
            "not required"
        );
        let marked = one(
            "http://10.0.0.5:8788",
            r#","insecure_private_network":true"#,
        );
        assert!(parse_with(Some(&marked), true).unwrap()[0].insecure_private_network);
    }

    /// The folder of a job is the edge's to name: no backend's env may move it, or its output.
    #[test]
    fn a_backend_cannot_set_where_jobs_work_and_its_retention_reads() {
        for name in [
            "ONRAMP_JOB_DIR",
            "ONRAMP_WORK_DIR",
            "ONRAMP_OUTPUT_DIR",
            "ONRAMP_RETENTION_S",
            "ONRAMP_JOB_ID",
            "ONRAMP_REPORT_TOKEN",
            "PATH",
        ] {
            let text = format!(
                r#"[{{"name":"h","kind":"slurm","url":"http://x","secret":"u:t","env":{{"{name}":"/shared"}}}}]"#
            );
            let e = parse(Some(&text)).unwrap_err();
            assert!(e.contains(name) && e.contains("sets for every job"), "{e}");
        }
        let with = |retention: &str| {
            parse(Some(&format!(
                r#"[{{"name":"h","kind":"slurm","url":"http://x","secret":"u:t","retention":{retention}}}]"#
            )))
        };
        assert_eq!(with("\"36h\"").unwrap()[0].retention_s(), 36 * 3600);
        assert_eq!(with("null").unwrap()[0].retention_s(), 7 * 86_400);
        let e = with("\"a week\"").unwrap_err();
        assert!(e.contains("retention"), "{e}");
        let runner = parse(Some(
            r#"[{"name":"r","kind":"runner","url":"http://x","retention":"1d"}]"#,
        ));
        assert!(runner.unwrap_err().contains("retention"));
    }

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
    fn slurm_may_hold_its_key_and_name_its_data_parser() {
        let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        let with = |extra: &str| {
            parse(Some(&format!(
                r#"[{{"name":"hpc","kind":"slurm","url":"http://h:6820",{extra}}}]"#
            )))
        };
        let b = &with(&format!(
            r#""jwt_key":"{key}","user":"onramp","api_version":"v0.0.43""#
        ))
        .unwrap()[0];
        assert_eq!(
            (b.user.as_deref(), b.api_version.as_deref()),
            (Some("onramp"), Some("v0.0.43"))
        );
        for (bad, field) in [
            (
                format!(r#""jwt_key":"{key}","secret":"u:t""#),
                "both secret and jwt_key",
            ),
            (r#""jwt_key":"c2hvcnQ=""#.to_string(), "jwt_key is 5 bytes"),
            (r#""jwt_key":"%%%""#.to_string(), "not base64"),
            (format!(r#""jwt_key":"{key}","user":"a b""#), "user"),
            (
                format!(r#""jwt_key":"{key}","api_version":"v0.0.39""#),
                "api_version",
            ),
        ] {
            let e = with(&bad).unwrap_err();
            assert!(e.contains("hpc") && e.contains(field), "{bad}: {e}");
        }
        let e = parse(Some(
            r#"[{"name":"local","kind":"runner","url":"http://x","api_version":"v0.0.40"}]"#,
        ))
        .unwrap_err();
        assert!(
            e.contains("not a Slurm backend") && e.contains("api_version"),
            "{e}"
        );
    }

    #[test]
    fn a_backend_may_say_how_much_ram_and_nvme_its_nodes_have() {
        let one = |extra: &str| {
            parse(Some(&format!(
                r#"[{{"name": "hpc", "kind": "runner", "url": "http://127.0.0.1:1"{extra}}}]"#
            )))
        };
        let list = one(r#", "node_ram_gib": 256, "node_nvme_gib": 0"#).unwrap();
        assert_eq!(
            list[0].node(),
            jobspec::NodeOverride {
                ram_bytes: Some(256 << 30),
                nvme_bytes: Some(0)
            }
        );
        // Without a folder to offload to, a backend's nodes offer no NVMe, whatever they hold.
        assert_eq!(
            one("").unwrap()[0].node(),
            jobspec::NodeOverride {
                ram_bytes: None,
                nvme_bytes: Some(0)
            }
        );
        let with_path = one(r#", "node_nvme_gib": 3000, "nvme_path": "/local/nvme""#).unwrap();
        assert_eq!(with_path[0].node().nvme_bytes, Some(3000 << 30));
        assert_eq!(with_path[0].job_env()[NVME_PATH_ENV], "/local/nvme");
        assert_eq!(
            one(r#", "nvme_path": "/scratch""#).unwrap()[0].node(),
            jobspec::NodeOverride::default()
        );
        for bad in [
            "scratch",
            "/scratch/../etc",
            "/a b",
            "/x;rm",
            "/x%y",
            "/x\\\\y",
        ] {
            let e = one(&format!(r#", "nvme_path": "{bad}""#)).unwrap_err();
            assert!(e.contains("nvme_path"), "{bad}: {e}");
        }
        for bad in [r#", "node_ram_gib": 0"#, r#", "node_nvme_gib": 9999999999"#] {
            let e = one(bad).unwrap_err();
            assert!(e.contains("GiB per node"), "{e}");
        }
        assert!(one(r#", "node_ram_gib": -1"#).is_err());
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

    #[test]
    fn refuses_env_partition_and_work_dir_that_could_break_a_script() {
        let with = |extra: &str| {
            parse(Some(&format!(
                r#"[{{"name":"hpc","kind":"slurm","url":"http://h:6820","secret":"s",{extra}}}]"#
            )))
        };
        assert!(with(r#""env":{"ONRAMP_PYTHON":"/opt/venv/bin/python","_X1":"a b 中"}"#).is_ok());
        for bad in [
            r#""env":{"A B":"x"}"#,
            r#""env":{"1X":"x"}"#,
            r#""env":{"X;id":"x"}"#,
            r#""env":{"":"x"}"#,
            r#""env":{"X":"a\nb"}"#,
            r#""env":{"X":"a\u0000b"}"#,
            r#""partition":"gpu\n#SBATCH --uid=0""#,
            r#""partition":"gpu x""#,
            r#""work_dir":"/shared/on ramp""#,
            r#""work_dir":"/shared/x\n""#,
        ] {
            let err = with(bad).expect_err(bad);
            assert!(err.contains("hpc"), "{err}");
        }
    }
}
