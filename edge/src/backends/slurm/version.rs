//! The slurmrestd data parsers the adapter speaks (v0.0.40 to v0.0.43), the endpoints of each,
//! and which of them a slurmrestd serves, read from its OpenAPI document.

/// The slurmrestd data parser versions the adapter speaks (Slurm 23.11 to 25.05 serve them; a
/// release serves its own and the two before it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApiVersion {
    V0040,
    V0041,
    V0042,
    V0043,
}

impl ApiVersion {
    pub const ALL: [ApiVersion; 4] = [
        ApiVersion::V0040,
        ApiVersion::V0041,
        ApiVersion::V0042,
        ApiVersion::V0043,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V0040 => "v0.0.40",
            ApiVersion::V0041 => "v0.0.41",
            ApiVersion::V0042 => "v0.0.42",
            ApiVersion::V0043 => "v0.0.43",
        }
    }

    /// Parses `v0.0.41` or `0.0.41`; anything else names what is supported.
    pub fn parse(s: &str) -> Result<ApiVersion, String> {
        let s = s.trim();
        let s = s.strip_prefix('v').unwrap_or(s);
        ApiVersion::ALL
            .into_iter()
            .find(|v| &v.as_str()[1..] == s)
            .ok_or_else(|| {
                format!(
                    "slurmrestd data parser {s:?} is not supported; use v0.0.40, v0.0.41, v0.0.42 or v0.0.43"
                )
            })
    }

    /// `POST` here with [`submit_body`](super::request::submit_body).
    pub fn submit_path(self) -> String {
        format!("/slurm/{}/job/submit", self.as_str())
    }

    /// `GET` here for the job's state ([`parse_job`](super::state::parse_job)); `DELETE` here cancels it.
    pub fn job_path(self, slurm_job_id: u64) -> String {
        format!("/slurm/{}/job/{slurm_job_id}", self.as_str())
    }

    /// `GET` here for every job slurmctld still knows (the edge finds its own by name).
    pub fn jobs_path(self) -> String {
        format!("/slurm/{}/jobs", self.as_str())
    }

    /// `GET` here to see that slurmrestd and slurmctld answer.
    pub fn ping_path(self) -> String {
        format!("/slurm/{}/ping", self.as_str())
    }
}

/// `GET` here (any version's token works) for the OpenAPI document that lists the data parsers
/// this slurmrestd serves ([`newest_served`]).
pub const OPENAPI_PATH: &str = "/openapi/v3";

/// The data parsers the adapter speaks among those slurmrestd's OpenAPI document has paths for
/// (`/slurm/v0.0.42/job/submit`, …), oldest first; an error when the document lists no paths.
pub fn served(openapi: &serde_json::Value) -> Result<Vec<ApiVersion>, String> {
    let paths = openapi
        .get("paths")
        .and_then(serde_json::Value::as_object)
        .ok_or("slurmrestd's /openapi/v3 has no paths")?;
    let listed: std::collections::BTreeSet<&str> = paths
        .keys()
        .filter_map(|p| p.strip_prefix("/slurm/")?.split('/').next())
        .collect();
    Ok(ApiVersion::ALL
        .into_iter()
        .filter(|v| listed.contains(v.as_str()))
        .collect())
}

/// The newest data parser that both slurmrestd and the adapter speak; an error names what the
/// document lists.
pub fn newest_served(openapi: &serde_json::Value) -> Result<ApiVersion, String> {
    served(openapi)?.last().copied().ok_or_else(|| {
        let listed: Vec<&str> = openapi
            .get("paths")
            .and_then(serde_json::Value::as_object)
            .map(|p| {
                p.keys()
                    .filter(|k| k.starts_with("/slurm/"))
                    .map(String::as_str)
                    .take(3)
                    .collect()
            })
            .unwrap_or_default();
        format!(
            "slurmrestd serves none of the data parsers v0.0.40 to v0.0.43 (its paths: {listed:?}…)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_per_version() {
        let v = ApiVersion::parse("0.0.41").unwrap();
        assert_eq!(v.submit_path(), "/slurm/v0.0.41/job/submit");
        assert_eq!(v.job_path(42), "/slurm/v0.0.41/job/42");
        assert_eq!(ApiVersion::V0042.ping_path(), "/slurm/v0.0.42/ping");
        assert_eq!(ApiVersion::parse("v0.0.40"), Ok(ApiVersion::V0040));
        assert!(
            ApiVersion::parse("v0.0.38")
                .unwrap_err()
                .contains("v0.0.40")
        );
    }
    #[test]
    fn picks_the_newest_data_parser_slurmrestd_serves() {
        let doc = |paths: &[&str]| {
            let p: serde_json::Map<_, _> = paths
                .iter()
                .map(|p| (p.to_string(), serde_json::json!({})))
                .collect();
            serde_json::json!({ "openapi": "3.0.2", "paths": p })
        };
        // Slurm 24.11: v0.0.40 to v0.0.42 (and slurmdbd's paths, which do not count).
        let served = doc(&[
            "/slurm/v0.0.40/job/submit",
            "/slurm/v0.0.41/job/submit",
            "/slurm/v0.0.42/job/submit",
            "/slurmdb/v0.0.42/jobs",
        ]);
        assert_eq!(newest_served(&served), Ok(ApiVersion::V0042));
        let newer = doc(&["/slurm/v0.0.43/ping", "/slurm/v0.0.44/ping"]);
        assert_eq!(newest_served(&newer), Ok(ApiVersion::V0043));
        let old = newest_served(&doc(&["/slurm/v0.0.39/ping"])).unwrap_err();
        assert!(old.contains("v0.0.39"), "{old}");
        assert!(newest_served(&serde_json::json!({})).is_err());
    }
}
