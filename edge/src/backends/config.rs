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
    /// Slurm: how long before a job's time limit Slurm sends it SIGTERM (`kill_warning_*` in
    /// the submit request, sbatch's `--signal`), so that the trainer saves a checkpoint and
    /// stops while there is time to save one; a duration, `"5m"` when absent, `"0s"` for none.
    /// A job gets at most half its own limit.
    #[serde(default)]
    pub stop_warning: Option<String>,
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
    /// Benchmark tasks (`eval.tasks`, lm-evaluation-harness names) whose data this backend's
    /// cluster holds offline: the tasks of its task folder (a Slurm backend's
    /// `ONRAMP_EVAL_TASKS` in `env`, the runner's `--eval-tasks`) and those of lm-eval's own
    /// whose data is in its cache. A spec with `eval.tasks` goes only to a backend that lists
    /// every one of them; none listed, none scored.
    #[serde(default)]
    pub eval_tasks: Vec<String>,
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

    /// Whether this backend's cluster holds the data of every benchmark task the spec scores.
    pub fn holds_tasks(&self, v: &jobspec::ValidSpec) -> bool {
        v.spec()
            .eval
            .tasks
            .iter()
            .all(|t| self.eval_tasks.contains(t))
    }

    /// The stop warning in seconds (`parse` has checked that it reads).
    pub fn stop_warning_s(&self) -> u64 {
        self.stop_warning
            .as_deref()
            .and_then(jobspec::duration::parse_duration_s)
            .unwrap_or(super::slurm::request::DEFAULT_STOP_WARNING_S)
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
        if let Some(t) = b
            .eval_tasks
            .iter()
            .find(|t| !jobspec::eval_spec::is_task_name(t))
        {
            return Err(format!(
                "BACKENDS: backend {:?} has eval_tasks {t:?}, which is not a task name (letters, digits, '_', '-', '.', as lm-evaluation-harness names them)",
                b.name
            ));
        }
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
            ("stop_warning", b.stop_warning.is_some()),
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
    // Slurm keeps the warning in 16 bits of seconds.
    if let Some(w) = b
        .stop_warning
        .as_ref()
        .filter(|w| jobspec::duration::parse_duration_s(w).is_none_or(|s| s > u64::from(u16::MAX)))
    {
        return Err(format!(
            "BACKENDS: backend {:?} has stop_warning {w:?}; a duration up to 18h, like \"5m\" or \"0s\"",
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
mod tests;
