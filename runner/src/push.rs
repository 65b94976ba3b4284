//! Pushing a job's result to the edge as one of its artifacts, as onramp-train's pusher does
//! (`trainer/src/onramp_train/artifacts.py`): the file is declared (size, sha256), then sent in
//! parts of the size the edge answers, in order, read from disk one part at a time; the last
//! part completes it. A try cut off declares it again and is told which parts arrived.

use crate::wire::ReportTarget;
use api::Upload;
use sha2::{Digest, Sha256};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

/// How many times one request is tried before the push gives up.
const TRIES: u32 = 4;

/// `…/api/jobs/{id}/report` → `…/api/jobs/{id}/artifacts/{name}` (the name's `/` as `%2F`).
pub fn artifact_url(report_url: &str, name: &str) -> Result<String, String> {
    let base = report_url
        .strip_suffix("/report")
        .ok_or_else(|| format!("{report_url:?} is not a job's report URL"))?;
    Ok(format!("{base}/artifacts/{}", name.replace('/', "%2F")))
}

fn sha256_of(path: &Path) -> Result<String, String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// One request, tried again on a network failure or a 5xx; a 4xx is final.
fn call(
    target: &ReportTarget,
    method: &str,
    url: &str,
    body: &[u8],
    ctype: &str,
) -> Result<Upload, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    let mut last = String::new();
    for attempt in 0..TRIES {
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(url)
            .header("authorization", format!("Bearer {}", target.token))
            .header("content-type", ctype)
            .body(body.to_vec())
            .map_err(|e| e.to_string())?;
        match agent.run(request) {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let text = resp.into_body().read_to_string().unwrap_or_default();
                if (200..300).contains(&status) {
                    return serde_json::from_str(&text)
                        .map_err(|e| format!("the edge answered {text:?}: {e}"));
                }
                if status < 500 {
                    return Err(format!("{method} {url}: {status} {text}"));
                }
                last = format!("{status} {text}");
            }
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(500 << attempt));
    }
    Err(format!("{method} {url} failed {TRIES} times: {last}"))
}

/// Uploads the file at `path` as the job's artifact `name`.
pub fn push_file(target: &ReportTarget, path: &Path, name: &str) -> Result<Upload, String> {
    let url = artifact_url(&target.url, name)?;
    let size = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let declared = serde_json::json!({"size": size, "sha256": sha256_of(path)?}).to_string();
    let mut up = call(
        target,
        "POST",
        &url,
        declared.as_bytes(),
        "application/json",
    )?;
    let mut file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut retried = false;
    while !up.complete {
        let n = up.received + 1;
        let len = api::artifacts::part_len(up.size, up.part_size, n);
        let mut part = vec![0u8; usize::try_from(len).map_err(|e| e.to_string())?];
        file.seek(SeekFrom::Start((n - 1) * up.part_size))
            .and_then(|_| file.read_exact(&mut part))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let part_url = format!("{url}?part={n}");
        match call(target, "PUT", &part_url, &part, "application/octet-stream") {
            Ok(next) => up = next,
            // Cut off mid-part: ask what arrived, then go on from there (once).
            Err(_) if !retried => {
                retried = true;
                up = call(
                    target,
                    "POST",
                    &url,
                    declared.as_bytes(),
                    "application/json",
                )?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(up)
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls() {
        assert_eq!(
            super::artifact_url("http://e/api/jobs/ab/report", "a/b.bin").unwrap(),
            "http://e/api/jobs/ab/artifacts/a%2Fb.bin"
        );
        assert!(super::artifact_url("http://e/api/jobs/ab/log", "x").is_err());
    }
}
