//! The bucket (`ARTIFACTS`) that holds jobs' artifacts and accounts' datasets, and its objects
//! served as downloads: whole or one range, streamed a range of R2 at a time.

use super::http::{self, ApiResult};
use crate::artifacts::{Span, parse_range, range_to_serve};
use crate::error::ApiError;
use worker::{Bucket, Env, Response};

pub fn bucket(env: &Env) -> ApiResult<Bucket> {
    env.bucket("ARTIFACTS")
        .map_err(|e| ApiError::internal(format!("binding ARTIFACTS: {e}")))
}

pub fn r2(what: &'static str) -> impl Fn(worker::Error) -> ApiError {
    move |e| ApiError::internal(format!("R2 {what}: {e}"))
}

/// Bytes `start..=end` of an object as a body of that fixed length (the runtime sends it as
/// Content-Length), read from R2 one range of [`crate::artifacts::read_bytes`] at a time, each only when the
/// client has taken the one before: however large the file and however slow the client, the
/// edge holds about one range of it. (Handing on R2's own stream of the whole object held what
/// the client had not yet read: under `wrangler dev`, 300 MiB of a 512 MiB download.)
///
/// Every read is of the object whose R2 etag `etag` is (the one the download's headers were
/// written for): an object stored again under the same key while a download runs ends that
/// download short, an error the client sees, instead of sending it bytes of two files.
fn ranged_body(b: Bucket, key: String, etag: String, start: u64, end: u64) -> worker::ResponseBody {
    use futures_util::StreamExt;
    let step = crate::artifacts::read_bytes(end - start + 1);
    let reads = futures_util::stream::unfold(start, move |at| {
        let (b, key, etag) = (b.clone(), key.clone(), etag.clone());
        async move {
            if at > end {
                return None;
            }
            let length = (end - at + 1).min(step);
            let read = async {
                let object = b
                    .get(&key)
                    .range(worker::Range::OffsetWithLength { offset: at, length })
                    .only_if(worker::Conditional {
                        etag_matches: Some(etag),
                        ..Default::default()
                    })
                    .execute()
                    .await?
                    .ok_or_else(|| worker::Error::RustError(format!("{key} is gone")))?;
                // R2 answers a failed condition with the object's metadata and no body.
                match object.body() {
                    Some(body) => body.bytes().await,
                    None => Err(worker::Error::RustError(format!(
                        "{key} was stored again during the download"
                    ))),
                }
            };
            Some((read.await, at + length))
        }
    });
    let fixed: worker::worker_sys::FixedLengthStream =
        worker::FixedLengthStream::wrap(reads.boxed_local(), end - start + 1).into();
    worker::ResponseBody::Stream(web_sys::TransformStream::readable(&fixed))
}

/// Whether the bucket holds an object of `size` bytes at `key` stored since `since_ms` (when its
/// upload was declared): an upload R2 no longer knows may have just been completed by another
/// request (the same last part, sent again) whose row is not written yet.
pub async fn holds(env: &Env, since_ms: i64, key: &str, size: u64) -> ApiResult<bool> {
    let head = bucket(env)?.head(key).await.map_err(r2("head"))?;
    Ok(head.is_some_and(|o| o.size() == size && o.uploaded().as_millis() as i64 >= since_ms))
}

/// Marks stored the row of an upload R2 has joined, while the row is still that upload's, and
/// forgets its parts: `table` and `parts` are the tables (artifacts' or datasets'), `key` the
/// row's two key columns with their values.
pub async fn mark_stored(
    env: &Env,
    (table, parts): (&str, &str),
    [(k0, v0), (k1, v1)]: [(&str, &str); 2],
    upload_id: Option<&str>,
) -> ApiResult<()> {
    use super::db::{n, now_ms, s};
    let sql = format!(
        "UPDATE {table} SET state = 'stored', stored_at = ?, upload_id = NULL \
         WHERE {k0} = ? AND {k1} = ? AND upload_id = ?"
    );
    let id = upload_id.unwrap_or_default();
    // Declared again meanwhile: the parts are the new upload's.
    if super::db::run(env, &sql, &[n(now_ms()), s(v0), s(v1), s(id)]).await? > 0 {
        let sql = format!("DELETE FROM {parts} WHERE {k0} = ? AND {k1} = ?");
        super::db::run(env, &sql, &[s(v0), s(v1)]).await?;
    }
    Ok(())
}

/// A part R2 did not take: its length was checked before, so storage failed (or the client
/// went, and reads no answer). Sent again in a moment, it is taken: 503 with `retry_after_s`.
pub fn part_not_taken(part: u64, e: &worker::Error) -> ApiError {
    ApiError::new(
        crate::error::ErrorCode::Unavailable,
        format!("storage did not take part {part} ({e}); send it again in a moment"),
    )
    .with_details(serde_json::json!({"part": part, "retry_after_s": 1}))
}

/// Records a part R2 took (`part`, its etag and size) in `parts`, only while the row of
/// `table` keyed by the two columns is still upload `upload_id`'s: a part stored as its upload
/// was forgotten (deleted, declared again) must not be taken for one of the next upload's.
/// Whether it was recorded (false: the upload is no longer the row's).
pub async fn record_part(
    env: &Env,
    (table, parts): (&str, &str),
    [(k0, v0), (k1, v1)]: [(&str, &str); 2],
    upload_id: &str,
    (part, etag, size): (u64, &str, u64),
) -> ApiResult<bool> {
    use super::db::{n, s};
    let sql = format!(
        "INSERT OR REPLACE INTO {parts} ({k0}, {k1}, part, etag, size) SELECT ?, ?, ?, ?, ? \
         WHERE EXISTS (SELECT 1 FROM {table} WHERE {k0} = ? AND {k1} = ? AND upload_id = ?)"
    );
    let args = [
        s(v0),
        s(v1),
        n(part as i64),
        s(etag),
        n(size as i64),
        s(v0),
        s(v1),
        s(upload_id),
    ];
    super::db::run(env, &sql, &args).await.map(|rows| rows > 0)
}

/// An object in the bucket, as a download names it.
pub struct Object<'a> {
    pub key: String,
    pub size: u64,
    pub sha256: &'a str,
    /// The file name the download suggests.
    pub file: &'a str,
}

/// An object's bytes from R2, whole or the range `req` asks for (`Range`, kept only while an
/// `If-Range` it carries names this file's ETag); `missing` words the 404 of a row whose object
/// is gone (deleted under it), which is not a download cut short.
pub async fn serve_object(
    env: &Env,
    o: Object<'_>,
    req: &worker::Request,
    missing: impl FnOnce() -> String,
) -> ApiResult<Response> {
    let size = o.size;
    let etag = format!("\"{}\"", o.sha256);
    let (range, if_range) = (http::header(req, "range"), http::header(req, "if-range"));
    let span = parse_range(
        range_to_serve(range.as_deref(), if_range.as_deref(), &etag),
        size,
    )?;
    let (start, end) = match span {
        Span::Whole => (0, size.saturating_sub(1)),
        Span::Part { start, end } => (start, end),
    };
    let b = bucket(env)?;
    let Some(stored) = b.head(&o.key).await.map_err(r2("head"))? else {
        return Err(ApiError::not_found(missing()));
    };
    // The row (its size and sha256, this answer's headers) and the object must be of one file:
    // a file stored again between the two reads is served once the row names it.
    if stored.size() != o.size {
        return Err(ApiError::new(
            crate::error::ErrorCode::Unavailable,
            "the file is being stored again; try again in a moment",
        )
        .with_details(serde_json::json!({ "retry_after_s": 1 })));
    }
    let head = req.inner().method() == "HEAD";
    let body = if size == 0 || head {
        worker::ResponseBody::Empty
    } else {
        ranged_body(b, o.key, stored.etag(), start, end)
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
    set(h, "etag", &etag)?;
    set(h, "x-onramp-sha256", o.sha256)?;
    set(h, "cache-control", "private, no-store")?;
    if head {
        // What a GET would send (RFC 9110 §8.6): the runtime sends no body for HEAD.
        set(
            h,
            "content-length",
            &(end + 1 - start).min(size).to_string(),
        )?;
    }
    let status = match span {
        Span::Whole => 200,
        Span::Part { start, end } => {
            set(h, "content-range", &format!("bytes {start}-{end}/{size}"))?;
            206
        }
    };
    Ok(resp.with_status(status))
}
