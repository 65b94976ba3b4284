//! The bucket (`ARTIFACTS`) that holds jobs' artifacts and accounts' datasets, and its objects
//! served as downloads: whole or one range, streamed a range of R2 at a time.

use super::http::{self, ApiResult};
use crate::artifacts::{Span, parse_range};
use crate::error::ApiError;
use worker::{Bucket, Env, Response};

pub fn bucket(env: &Env) -> ApiResult<Bucket> {
    env.bucket("ARTIFACTS")
        .map_err(|e| ApiError::internal(format!("binding ARTIFACTS: {e}")))
}

pub fn r2(what: &'static str) -> impl Fn(worker::Error) -> ApiError {
    move |e| ApiError::internal(format!("R2 {what}: {e}"))
}

/// How much of an object one read from R2 takes while a download streams.
const READ_BYTES: u64 = 4 << 20;

/// Bytes `start..=end` of an object as a body of that fixed length (the runtime sends it as
/// Content-Length), read from R2 one range of [`READ_BYTES`] at a time, each only when the
/// client has taken the one before: however large the file and however slow the client, the
/// edge holds about one range of it. (Handing on R2's own stream of the whole object held what
/// the client had not yet read: under `wrangler dev`, 300 MiB of a 512 MiB download.)
fn ranged_body(b: Bucket, key: String, start: u64, end: u64) -> worker::ResponseBody {
    use futures_util::StreamExt;
    let reads = futures_util::stream::unfold(start, move |at| {
        let (b, key) = (b.clone(), key.clone());
        async move {
            if at > end {
                return None;
            }
            let length = (end - at + 1).min(READ_BYTES);
            let read = async {
                let object = b
                    .get(&key)
                    .range(worker::Range::OffsetWithLength { offset: at, length })
                    .execute()
                    .await?
                    .ok_or_else(|| worker::Error::RustError(format!("{key} is gone")))?;
                match object.body() {
                    Some(body) => body.bytes().await,
                    None => Ok(Vec::new()),
                }
            };
            Some((read.await, at + length))
        }
    });
    let fixed: worker::worker_sys::FixedLengthStream =
        worker::FixedLengthStream::wrap(reads.boxed_local(), end - start + 1).into();
    worker::ResponseBody::Stream(web_sys::TransformStream::readable(&fixed))
}

/// An object in the bucket, as a download names it.
pub struct Object<'a> {
    pub key: String,
    pub size: u64,
    pub sha256: &'a str,
    /// The file name the download suggests.
    pub file: &'a str,
}

/// An object's bytes from R2, whole or the range asked for; `missing` words the 404 of a row
/// whose object is gone (deleted under it), which is not a download cut short.
pub async fn serve_object(
    env: &Env,
    o: Object<'_>,
    range: Option<&str>,
    missing: impl FnOnce() -> String,
) -> ApiResult<Response> {
    let size = o.size;
    let span = parse_range(range, size)?;
    let (start, end) = match span {
        Span::Whole => (0, size.saturating_sub(1)),
        Span::Part { start, end } => (start, end),
    };
    let b = bucket(env)?;
    if b.head(&o.key).await.map_err(r2("head"))?.is_none() {
        return Err(ApiError::not_found(missing()));
    }
    let body = if size == 0 {
        worker::ResponseBody::Empty
    } else {
        ranged_body(b, o.key, start, end)
    };
    let mut resp = Response::from_body(body).map_err(http::internal("response"))?;
    let h = resp.headers_mut();
    let set = |h: &worker::Headers, k: &str, v: &str| h.set(k, v).map_err(http::internal("header"));
    set(h, "content-type", "application/octet-stream")?;
    set(h, "accept-ranges", "bytes")?;
    set(
        h,
        "content-disposition",
        &format!("attachment; filename=\"{}\"", o.file),
    )?;
    set(h, "etag", &format!("\"{}\"", o.sha256))?;
    set(h, "x-onramp-sha256", o.sha256)?;
    set(h, "cache-control", "private, no-store")?;
    let status = match span {
        Span::Whole => 200,
        Span::Part { start, end } => {
            set(h, "content-range", &format!("bytes {start}-{end}/{size}"))?;
            206
        }
    };
    Ok(resp.with_status(status))
}
