//! A job's artifacts, decided without the runtime: which part an upload takes next, what a
//! download's `Range` asks for, whether a new upload fits the account's quota, and where an
//! artifact lives in R2. The handlers are `worker/artifacts.rs`; the wire types and the part
//! arithmetic are `api::artifacts`.

use crate::error::{ApiError, ErrorCode};
use api::artifacts::{name_from_path, name_problem, part_len};

/// The R2 key of a job's artifact: one folder per job.
pub fn object_key(job_id: &str, name: &str) -> String {
    format!("jobs/{job_id}/{name}")
}

/// The artifact name of a URL path segment, or 400 saying what is wrong with it.
pub fn parse_name(segment: &str) -> Result<String, ApiError> {
    let name = name_from_path(segment);
    match name_problem(&name) {
        None => Ok(name),
        Some(why) => Err(ApiError::new(ErrorCode::InvalidField, why).with_field("name")),
    }
}

/// An upload as storage keeps it, for deciding about its next part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadState {
    pub size: u64,
    pub part_size: u64,
    pub parts: u64,
    /// Parts 1..=received have arrived.
    pub received: u64,
}

/// Checks part `n` of `length` bytes against the upload: its number must be one that arrived
/// (sent again, it replaces itself) or the next one, and its length the one its number has.
pub fn check_part(u: &UploadState, n: u64, length: Option<u64>) -> Result<(), ApiError> {
    if n == 0 || n > u.parts {
        return Err(ApiError::new(
            ErrorCode::InvalidPart,
            format!(
                "part {n} does not exist: this upload has parts 1 to {}",
                u.parts
            ),
        )
        .with_details(serde_json::json!({"part": n, "parts": u.parts})));
    }
    if n > u.received + 1 {
        let next = u.received + 1;
        return Err(ApiError::new(
            ErrorCode::PartOutOfOrder,
            format!(
                "part {n} came before part {next}: parts arrive in order; send part {next} next"
            ),
        )
        .with_details(serde_json::json!({"part": n, "next_part": next})));
    }
    let expected = part_len(u.size, u.part_size, n);
    let Some(length) = length else {
        return Err(ApiError::new(
            ErrorCode::LengthRequired,
            format!("a part needs its Content-Length; part {n} has {expected} bytes"),
        )
        .with_details(serde_json::json!({"part": n, "expected_bytes": expected})));
    };
    if length != expected {
        let which = if n == u.parts {
            "the last part has what is left of the file"
        } else {
            "every part but the last has the upload's part_size"
        };
        return Err(ApiError::new(
            ErrorCode::InvalidPart,
            format!("part {n} has {length} bytes; it must have {expected} ({which})"),
        )
        .with_details(serde_json::json!({"part": n, "expected_bytes": expected})));
    }
    Ok(())
}

/// The bytes a download sends: the whole file, or one range of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Whole,
    /// Bytes `start..=end` of the file.
    Part {
        start: u64,
        end: u64,
    },
}

/// What a `Range` header asks of a file of `size` bytes. One range of bytes is served
/// (`bytes=a-b`, `bytes=a-`, `bytes=-n`); a header this does not read, or several ranges, gets
/// the whole file, as RFC 9110 allows. A range that starts past the end is 416.
pub fn parse_range(header: Option<&str>, size: u64) -> Result<Span, ApiError> {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return Ok(Span::Whole);
    };
    if spec.contains(',') {
        return Ok(Span::Whole);
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return Ok(Span::Whole);
    };
    let (a, b) = (a.trim(), b.trim());
    let unsatisfiable = || {
        ApiError::new(
            ErrorCode::RangeNotSatisfiable,
            format!("the range {spec:?} is past the end of the file, which has {size} bytes"),
        )
        .with_details(serde_json::json!({"size": size}))
    };
    let number = |s: &str| s.parse::<u64>().ok();
    let span = match (a.is_empty(), b.is_empty()) {
        // The last `b` bytes.
        (true, false) => match number(b) {
            Some(0) => return Err(unsatisfiable()),
            // An empty file is the whole of any suffix (RFC 9110 14.1.1): sent whole.
            Some(_) if size == 0 => Span::Whole,
            Some(n) => Span::Part {
                start: size.saturating_sub(n),
                end: size - 1,
            },
            None => Span::Whole,
        },
        (false, _) => match (
            number(a),
            if b.is_empty() {
                Some(u64::MAX)
            } else {
                number(b)
            },
        ) {
            (Some(start), Some(end)) if start <= end => {
                if start >= size {
                    return Err(unsatisfiable());
                }
                Span::Part {
                    start,
                    end: end.min(size - 1),
                }
            }
            _ => Span::Whole,
        },
        (true, true) => Span::Whole,
    };
    Ok(match span {
        Span::Part { start: 0, end } if end + 1 == size => Span::Whole,
        other => other,
    })
}

/// The `Range` to serve, given the request's `If-Range`: a resumed download names the version
/// it has the start of (`If-Range: "<etag>"`), and gets the range only when that is still the
/// file's `etag` (a strong comparison: a weak validator or a date, which this file's answers never
/// carry, never matches); otherwise the whole file, so that no client appends bytes of another.
pub fn range_to_serve<'a>(
    range: Option<&'a str>,
    if_range: Option<&str>,
    etag: &str,
) -> Option<&'a str> {
    match if_range {
        Some(validator) if validator.trim() != etag => None,
        _ => range,
    }
}

/// A declared SHA-256: 64 lowercase hex digits.
pub fn check_sha256(sha: &str) -> Result<(), ApiError> {
    if sha.len() == 64 && sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::InvalidField,
        "sha256 must be the file's SHA-256 as 64 lowercase hex digits",
    )
    .with_field("sha256"))
}

/// Refuses an upload of `asked` bytes when the account's artifacts (`used`, uploads under way
/// included, less what the upload replaces) would pass `quota`: 409 `limit_reached`, saying
/// which limit and what to delete.
pub fn check_quota(used: u64, asked: u64, quota: u64) -> Result<(), ApiError> {
    if used.checked_add(asked).is_some_and(|total| total <= quota) {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::LimitReached,
        format!(
            "the account's artifact quota is {quota} bytes and {used} are in use, so {asked} more do not fit; \
             delete artifacts you no longer need (onramp artifacts delete JOB NAME, or the job page) \
             or ask the operator for a larger quota"
        ),
    )
    .with_details(serde_json::json!({
        "limit": "artifact_bytes",
        "quota_bytes": quota,
        "used_bytes": used,
        "asked_bytes": asked,
    })))
}

/// Whether R2 refused a part or a completion because it no longer knows the upload
/// (`NoSuchUpload`, code 10024): it ends unfinished uploads after a time of its own (a bucket's
/// lifecycle), and every part sent after that would be refused the same way for ever.
pub fn upload_gone(r2_error: &str) -> bool {
    r2_error.contains("(10024)") || r2_error.contains("multipart upload does not exist")
}

/// How much of an object one read from R2 takes while a download streams, at least.
const READ_BYTES: u64 = 4 << 20;
/// The most one read takes: what the edge holds of a download at a time.
const MAX_READ_BYTES: u64 = 32 << 20;
/// The reads one download makes at most while a read may still grow: each is a call to R2, and
/// the platform bounds the calls one request makes (1,000 on some plans).
const MAX_READS: u64 = 900;

/// The size of each read of a download of `span` bytes: [`READ_BYTES`], grown so that the
/// download takes at most [`MAX_READS`] reads, up to [`MAX_READ_BYTES`].
pub fn read_bytes(span: u64) -> u64 {
    span.div_ceil(MAX_READS).clamp(READ_BYTES, MAX_READ_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_download_is_read_in_at_most_900_reads_of_4_to_32_mib() {
        const MIB: u64 = 1 << 20;
        assert_eq!(read_bytes(1), 4 * MIB);
        assert_eq!(read_bytes(3 * 1024 * MIB), 4 * MIB);
        let big = 15 * 1024 * MIB;
        assert!(big.div_ceil(read_bytes(big)) <= 900);
        assert_eq!(read_bytes(u64::MAX), 32 * MIB);
    }
    use api::artifacts::{MAX_NAME_BYTES, NAME_PATTERN};
    use proptest::prelude::*;

    fn upload(received: u64) -> UploadState {
        UploadState {
            size: 25,
            part_size: 10,
            parts: 3,
            received,
        }
    }

    #[test]
    fn parts_come_in_order_with_their_sizes() {
        assert_eq!(check_part(&upload(0), 1, Some(10)), Ok(()));
        assert_eq!(check_part(&upload(1), 1, Some(10)), Ok(()), "sent again");
        assert_eq!(check_part(&upload(2), 3, Some(5)), Ok(()));
        let e = check_part(&upload(0), 2, Some(10)).unwrap_err();
        assert_eq!(
            (e.code, e.details["next_part"].as_u64()),
            (ErrorCode::PartOutOfOrder, Some(1))
        );
        assert_eq!(
            check_part(&upload(0), 1, Some(9)).unwrap_err().code,
            ErrorCode::InvalidPart
        );
        assert_eq!(
            check_part(&upload(2), 3, Some(10)).unwrap_err().code,
            ErrorCode::InvalidPart
        );
        assert_eq!(
            check_part(&upload(3), 4, Some(0)).unwrap_err().code,
            ErrorCode::InvalidPart
        );
        assert_eq!(
            check_part(&upload(0), 0, Some(10)).unwrap_err().code,
            ErrorCode::InvalidPart
        );
        assert_eq!(
            check_part(&upload(0), 1, None).unwrap_err().code,
            ErrorCode::LengthRequired
        );
    }

    #[test]
    fn ranges() {
        let r = |h: &str| parse_range(Some(h), 100);
        assert_eq!(parse_range(None, 100), Ok(Span::Whole));
        assert_eq!(r("bytes=0-9"), Ok(Span::Part { start: 0, end: 9 }));
        assert_eq!(r("bytes=90-"), Ok(Span::Part { start: 90, end: 99 }));
        assert_eq!(r("bytes=90-1000"), Ok(Span::Part { start: 90, end: 99 }));
        assert_eq!(r("bytes=-10"), Ok(Span::Part { start: 90, end: 99 }));
        assert_eq!(r("bytes=-1000"), Ok(Span::Whole));
        assert_eq!(r("bytes=0-"), Ok(Span::Whole));
        assert_eq!(r("bytes=0-9,20-29"), Ok(Span::Whole));
        assert_eq!(r("bytes=9-0"), Ok(Span::Whole));
        assert_eq!(r("items=0-9"), Ok(Span::Whole));
        assert_eq!(r("bytes=x-y"), Ok(Span::Whole));
        assert_eq!(
            r("bytes=100-").unwrap_err().code,
            ErrorCode::RangeNotSatisfiable
        );
        assert_eq!(r("bytes=-0").unwrap_err().status, 416);
        assert_eq!(parse_range(Some("bytes=0-"), 0).unwrap_err().status, 416);
        assert_eq!(parse_range(Some("bytes=-500"), 0), Ok(Span::Whole));
    }

    #[test]
    fn a_range_is_kept_only_for_the_version_if_range_names() {
        let etag = "\"ab12\"";
        let r = Some("bytes=5-");
        assert_eq!(range_to_serve(r, None, etag), r);
        assert_eq!(range_to_serve(r, Some("\"ab12\""), etag), r);
        assert_eq!(range_to_serve(r, Some(" \"ab12\" "), etag), r);
        for other in [
            "\"cd34\"",
            "W/\"ab12\"",
            "ab12",
            "Tue, 01 Dec 2026 10:00:00 GMT",
            "",
        ] {
            assert_eq!(range_to_serve(r, Some(other), etag), None, "{other}");
        }
        assert_eq!(range_to_serve(None, Some("\"cd34\""), etag), None);
    }

    #[test]
    fn quota() {
        assert_eq!(check_quota(5, 5, 10), Ok(()));
        let e = check_quota(5, 6, 10).unwrap_err();
        assert_eq!(
            (e.status, e.details["limit"].as_str()),
            (409, Some("artifact_bytes"))
        );
        assert!(e.message.contains("delete"));
        assert!(check_quota(u64::MAX, 1, u64::MAX).is_err());
    }

    #[test]
    fn names_from_paths() {
        assert_eq!(
            parse_name("adapter%2Fconfig.json").unwrap(),
            "adapter/config.json"
        );
        for bad in [
            "..",
            "%2E%2E",
            "a%2F..%2Fb",
            "a%5Cb",
            "%2Fetc%2Fpasswd",
            "a%00",
        ] {
            assert_eq!(parse_name(bad).unwrap_err().status, 400, "{bad}");
        }
        assert_eq!(object_key("j", "a/b"), "jobs/j/a/b");
    }

    proptest! {
        /// What the OpenAPI document declares (the pattern and the length) is what the edge takes.
        #[test]
        fn the_declared_pattern_is_the_check(name in "[a-zA-Z0-9._/%\\\\ -]{0,20}") {
            let re = regex::Regex::new(NAME_PATTERN).unwrap();
            let declared = re.is_match(&name) && name.len() <= MAX_NAME_BYTES;
            prop_assert_eq!(declared, name_problem(&name).is_none(), "{:?}", name);
        }

        #[test]
        fn a_range_is_inside_the_file(size in 0u64..1000, a in 0u64..1200, b in 0u64..1200, form in 0..3) {
            let h = match form { 0 => format!("bytes={a}-{b}"), 1 => format!("bytes={a}-"), _ => format!("bytes=-{b}") };
            match parse_range(Some(&h), size) {
                Ok(Span::Part { start, end }) => prop_assert!(start <= end && end < size),
                Ok(Span::Whole) => {}
                Err(e) => prop_assert_eq!(e.status, 416),
            }
        }
    }

    #[test]
    fn an_upload_r2_no_longer_knows_is_told_from_a_part_cut_off() {
        assert!(upload_gone(
            "Error: uploadPart: The specified multipart upload does not exist. (10024)"
        ));
        assert!(upload_gone("completeMultipartUpload: NoSuchUpload (10024)"));
        assert!(!upload_gone(
            "uploadPart: One or more of the specified parts could not be found. (10025)"
        ));
        assert!(!upload_gone("TypeError: Network connection lost."));
    }
}
