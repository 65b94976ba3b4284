//! A job's artifacts: the files a job leaves (its trained adapter or model, its metrics, its log,
//! the spec it ran), pushed by the job in parts with its own token and kept in R2 by the edge,
//! listed for and downloaded by the job's owner.
//!
//! An upload is one object in parts: every part but the last has the upload's `part_size`, the
//! parts arrive in order (a part sent again replaces itself), and the object is complete when
//! its last part arrives. A job that was cut off asks again with the same declaration
//! (`POST /api/jobs/{id}/artifacts/{name}`) and is told which parts arrived.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The smallest part but the last (what R2's multipart uploads require).
pub const MIN_PART_BYTES: u64 = 5 << 20;
/// The largest part: well within what one request to a Worker may carry (100 MB).
pub const MAX_PART_BYTES: u64 = 64 << 20;
/// The part size an upload gets when it does not ask for one.
pub const DEFAULT_PART_BYTES: u64 = 8 << 20;
/// The most parts one upload may have (R2's limit).
pub const MAX_PARTS: u64 = 10_000;
/// The longest artifact name, in bytes (ASCII).
pub const MAX_NAME_BYTES: usize = 255;
/// The most `/`-separated segments in an artifact name.
pub const MAX_NAME_SEGMENTS: usize = 8;
/// An artifact's name: one to eight segments joined by `/`, each of letters, digits, `.`, `_`
/// and `-` that starts with a letter, a digit or `_` (so no `.`, `..` or hidden segment); at
/// most [`MAX_NAME_BYTES`] in all. In a URL path the `/` is sent as `%2F`.
pub const NAME_PATTERN: &str =
    "^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}(/[A-Za-z0-9_][A-Za-z0-9._-]{0,127}){0,7}$";

/// Why `name` is not an artifact name, or `None` when it is one.
pub fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("an artifact name may not be empty".into());
    }
    if name.len() > MAX_NAME_BYTES {
        return Some(format!(
            "an artifact name has at most {MAX_NAME_BYTES} bytes; this one has {}",
            name.len()
        ));
    }
    let segments: Vec<&str> = name.split('/').collect();
    if segments.len() > MAX_NAME_SEGMENTS {
        return Some(format!(
            "an artifact name has at most {MAX_NAME_SEGMENTS} segments separated by '/'"
        ));
    }
    for seg in segments {
        let Some(first) = seg.chars().next() else {
            return Some(
                "an artifact name has an empty segment (a leading, trailing or doubled '/')".into(),
            );
        };
        if !(first.is_ascii_alphanumeric() || first == '_') {
            return Some(format!(
                "the segment {seg:?} must start with a letter, a digit or '_' (no '.', '..' or hidden names)"
            ));
        }
        if seg.len() > 128 {
            return Some(format!("the segment {seg:?} is longer than 128 bytes"));
        }
        if let Some(bad) = seg
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        {
            return Some(format!(
                "{bad:?} may not be in an artifact name: only letters, digits, '.', '_', '-' and '/'"
            ));
        }
    }
    None
}

/// `POST /api/jobs/{id}/artifacts/{name}` (the job's token): what the job will upload. The same
/// declaration again resumes the upload; another one starts it over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUpload {
    /// The file's size in bytes.
    #[schemars(range(min = 0))]
    pub size: u64,
    /// The file's SHA-256, 64 lowercase hex digits: what a download is checked against.
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub sha256: String,
    /// The size of every part but the last; the edge's default when absent. Raised to what the
    /// size needs to fit in [`MAX_PARTS`] parts.
    #[serde(default)]
    #[schemars(range(min = MIN_PART_BYTES, max = MAX_PART_BYTES))]
    pub part_size: Option<u64>,
}

/// Where an upload stands: the answer of starting or resuming one, and of each part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Upload {
    pub name: String,
    pub size: u64,
    pub sha256: String,
    pub part_size: u64,
    /// How many parts the file takes (at least 1; an empty file is one empty part).
    pub parts: u64,
    /// The parts that arrived, in order: the next to send is `received + 1`.
    pub received: u64,
    /// All parts arrived: the artifact is stored and listed.
    pub complete: bool,
}

/// One stored artifact, as its owner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Artifact {
    pub name: String,
    pub size: u64,
    pub sha256: String,
    /// Where to download it: `/api/jobs/{id}/artifacts/{name}`, the name's `/` as `%2F`.
    pub url: String,
    /// When its last part arrived (RFC 3339).
    pub stored_at: String,
}

/// `GET /api/jobs/{id}/resume`: the latest checkpoint the job this one continues uploaded, for the
/// job to fetch with its own token: every file of one `checkpoint-<step>/` folder, each served at
/// its `url` (`/api/jobs/{id}/resume/{name}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResumeCheckpoint {
    /// The job continued (`checkpoint.resume_from`).
    pub job_id: String,
    /// The checkpoint's step.
    pub step: u64,
    pub artifacts: Vec<Artifact>,
}

/// The step of a checkpoint's artifact (`checkpoint-<step>/…`, as onramp-train pushes it).
pub fn checkpoint_step(name: &str) -> Option<u64> {
    let (top, rest) = name.split_once('/')?;
    let digits = top.strip_prefix("checkpoint-")?;
    if rest.is_empty() || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `GET /api/jobs/{id}/artifacts`: a job's stored artifacts, and the account's use of its quota.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactList {
    pub job_id: String,
    pub artifacts: Vec<Artifact>,
    /// Uploads the job started and has not finished: they count towards the quota, and deleting
    /// one frees its bytes.
    #[serde(default)]
    pub uploads: Vec<Upload>,
    /// Bytes the account's artifacts take, uploads under way included.
    pub used_bytes: u64,
    pub quota_bytes: u64,
    /// How long an artifact is kept after it is stored, in days.
    pub retention_days: u64,
}

/// An account's use of its artifact quota.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactUsage {
    /// Bytes the account's artifacts take, uploads under way included.
    pub used_bytes: u64,
    pub quota_bytes: u64,
    /// How long an artifact is kept after it is stored, in days.
    pub retention_days: u64,
}

/// `DELETE /api/jobs/{id}/artifacts/{name}`: the artifact is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactDeleted {
    pub name: String,
    pub freed_bytes: u64,
}

/// The URL path of an artifact: the name's `/` as `%2F` (one path segment).
pub fn artifact_path(job_id: &str, name: &str) -> String {
    format!("/api/jobs/{job_id}/artifacts/{}", name.replace('/', "%2F"))
}

/// An artifact name read from a URL path segment: `%2F` (either case) is `/`; any other `%`
/// is left as it is, which no name may hold.
pub fn name_from_path(segment: &str) -> String {
    segment.replace("%2F", "/").replace("%2f", "/")
}

/// The parts a file of `size` bytes takes with parts of `part_size`.
pub fn part_count(size: u64, part_size: u64) -> u64 {
    if size == 0 {
        1
    } else {
        size.div_ceil(part_size.max(1))
    }
}

/// The size of part `n` (from 1) of a file of `size` bytes.
pub fn part_len(size: u64, part_size: u64, n: u64) -> u64 {
    let start = (n - 1).saturating_mul(part_size);
    size.saturating_sub(start).min(part_size)
}

/// The part size for a file of `size` bytes when the job asked for `asked`: the default, raised
/// to a whole MiB that fits the file in [`MAX_PARTS`] parts; `Err` when it cannot fit.
pub fn choose_part_size(size: u64, asked: Option<u64>) -> Result<u64, String> {
    let asked = asked.unwrap_or(DEFAULT_PART_BYTES);
    if !(MIN_PART_BYTES..=MAX_PART_BYTES).contains(&asked) {
        return Err(format!(
            "part_size must be from {MIN_PART_BYTES} to {MAX_PART_BYTES} bytes (5 to 64 MiB); it is {asked}"
        ));
    }
    let needed = size.div_ceil(MAX_PARTS).div_ceil(1 << 20) << 20;
    let part = asked.max(needed);
    if part > MAX_PART_BYTES {
        return Err(format!(
            "a file of {size} bytes does not fit in {MAX_PARTS} parts of at most {MAX_PART_BYTES} bytes"
        ));
    }
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names() {
        for good in [
            "adapter/adapter_model.safetensors",
            "log.txt",
            "_x",
            "a-b.c/d_e",
        ] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        for bad in [
            "", "/abs", "a/", "a//b", "..", "a/../b", ".hidden", "a/./b", "a\\b", "a b", "é",
            "a%2Fb", "a:b",
        ] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
        assert!(name_problem(&"a".repeat(129)).is_some());
        assert!(name_problem(&["a"; 9].join("/")).is_some());
        assert_eq!(name_from_path("adapter%2Fx.bin"), "adapter/x.bin");
        assert_eq!(artifact_path("j1", "a/b"), "/api/jobs/j1/artifacts/a%2Fb");
    }

    #[test]
    fn parts() {
        assert_eq!(part_count(0, 8), 1);
        assert_eq!(part_count(16, 8), 2);
        assert_eq!(part_count(17, 8), 3);
        assert_eq!(part_len(17, 8, 3), 1);
        assert_eq!(part_len(16, 8, 2), 8);
        assert_eq!(part_len(0, 8, 1), 0);
        assert_eq!(choose_part_size(10, None), Ok(DEFAULT_PART_BYTES));
        assert!(choose_part_size(10, Some(1)).is_err());
        // 1 TB needs parts of 105 MB: more than a request may carry.
        assert!(choose_part_size(1 << 40, None).is_err());
        let big = 200u64 << 30;
        let p = choose_part_size(big, None).unwrap();
        assert!(part_count(big, p) <= MAX_PARTS && p.is_multiple_of(1 << 20));
    }

    proptest! {
        #[test]
        fn parts_cover_the_file(size in 0u64..(1u64 << 40), asked in proptest::option::of(MIN_PART_BYTES..=MAX_PART_BYTES)) {
            if let Ok(p) = choose_part_size(size, asked) {
                let n = part_count(size, p);
                prop_assert!(n <= MAX_PARTS);
                let total: u64 = (1..=n).map(|i| part_len(size, p, i)).sum();
                prop_assert_eq!(total, size);
                prop_assert!((1..n).all(|i| part_len(size, p, i) == p));
            }
        }
    }
}

/// A byte count as people read it: `5 B`, `1.5 KiB`, `20.0 MiB`, `3.2 GiB` (the account page,
/// the job page and `onramp artifacts` alike).
pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let (mut v, mut u) = (n as f64, 0);
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(super::human_size(5), "5 B");
        assert_eq!(super::human_size(1536), "1.5 KiB");
        assert_eq!(super::human_size(20 << 20), "20.0 MiB");
        assert_eq!(super::human_size(10 << 30), "10.0 GiB");
        assert_eq!(super::human_size(u64::MAX), "17179869184.0 GiB");
    }
}
