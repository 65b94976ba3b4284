//! Turning handler results into HTTP responses, so every error has the same JSON shape, and the
//! request helpers every handler shares (bounded bodies, the request's own origin).

use crate::error::{ApiError, ErrorCode};
use crate::wire;
use serde::Serialize;
use worker::{Request, Response};

/// The result every handler produces before it becomes a response.
pub type ApiResult<T> = Result<T, ApiError>;

/// A JSON response with the given status, or the error's JSON with its status.
pub fn respond<T: Serialize>(status: u16, result: ApiResult<T>) -> worker::Result<Response> {
    match result {
        Ok(value) => json(status, &value),
        Err(e) => error_response(&e),
    }
}

pub fn json<T: Serialize>(status: u16, value: &T) -> worker::Result<Response> {
    let mut resp = Response::from_json(value)?.with_status(status);
    resp.headers_mut().set("cache-control", "no-store")?;
    Ok(resp)
}

pub fn error_response(e: &ApiError) -> worker::Result<Response> {
    let mut request_id = None;
    // The edge's own failures carry a request id, under which the operator's log has the cause.
    let own = matches!(
        e.code,
        crate::error::ErrorCode::Internal | crate::error::ErrorCode::Unavailable
    );
    let shown = if own {
        let mut buf = [0u8; 8];
        let id = match getrandom::fill(&mut buf) {
            Ok(()) => hex::encode(buf),
            Err(_) => "unknown".to_string(),
        };
        // The whole cause goes to the operator's log, never to the client.
        worker::console_error!("request {id}: {} {}", e.status, e.message);
        let shown = e.public(&id);
        request_id = Some(id);
        shown
    } else {
        e.clone()
    };
    let mut resp = Response::ok(shown.to_body())?.with_status(e.status);
    resp.headers_mut().set("content-type", "application/json")?;
    if let Some(id) = request_id {
        resp.headers_mut().set("x-request-id", &id)?;
    }
    if let Some(after) = e
        .details
        .get("retry_after_s")
        .and_then(serde_json::Value::as_u64)
    {
        resp.headers_mut().set("retry-after", &after.to_string())?;
    }
    // A range past the end names the file's length, so that a client can ask again (RFC 9110).
    if e.code == crate::error::ErrorCode::RangeNotSatisfiable
        && let Some(size) = e.details.get("size").and_then(serde_json::Value::as_u64)
    {
        resp.headers_mut()
            .set("content-range", &format!("bytes */{size}"))?;
    }
    Ok(resp)
}

/// Any runtime error, as our error shape (D1 errors arrive both as `Error::D1` and as
/// `UnknownJsError`: both become a 500 with the cause in the message).
pub fn internal(what: &str) -> impl Fn(worker::Error) -> ApiError + '_ {
    move |e| ApiError::internal(format!("{what}: {e}"))
}

/// How much of a body past its route's limit the entry reads and drops before it refuses it,
/// so that the connection it came on is left at a request boundary (see [`buffered`]); a body
/// even larger is cancelled.
pub const DRAIN_BYTES: usize = 32 << 20;

/// How long the entry waits for the next part of an oversized body before it stops reading and
/// refuses it: a client that stalls (or a body that never ends) gets its 413 all the same. Long
/// enough that a sender on a busy machine is not taken for a stalled one (1.5 s was not: a
/// loaded CI machine's pauses cut bodies short, and the rest of them hung the next request).
pub const DRAIN_STALL: std::time::Duration = std::time::Duration::from_secs(10);

/// The request with its whole body read, before anything else looks at it: every answer, a
/// refusal by the router, the access check or a handler's own checks included, then leaves no
/// body half-read. (An answer sent while the client was still sending, with the rest of the
/// body cancelled under it, left wrangler dev's proxy with a connection it could not reuse: the
/// next request, anyone's, hung or got a bodiless 503.) A body over `limit` (its route's, see
/// `routes::body_limit`) is read on and dropped, up to [`DRAIN_BYTES`] and while the client
/// keeps sending (a pause of [`DRAIN_STALL`] ends it), and refused with 413.
pub async fn buffered(mut req: Request, limit: usize) -> Result<Request, ApiError> {
    if req.inner().body().is_none() {
        return Ok(req);
    }
    let bytes = read_whole(&mut req, limit).await?;
    let headers = req.headers().clone();
    let method = req.method();
    // A GET or HEAD cannot be rebuilt with a body (the runtime refuses): its body, which means
    // nothing to these routes, was read and is dropped.
    let bodiless = matches!(method, worker::Method::Get | worker::Method::Head);
    // The body is whole now: its length is known, and it is no longer chunked.
    headers
        .delete("transfer-encoding")
        .map_err(internal("headers"))?;
    let length = if bodiless {
        headers.delete("content-length")
    } else {
        headers.set("content-length", &bytes.len().to_string())
    };
    length.map_err(internal("headers"))?;
    let mut init = worker::RequestInit::new();
    init.with_method(method).with_headers(headers);
    if !bytes.is_empty() && !bodiless {
        init.with_body(Some(js_sys::Uint8Array::from(bytes.as_slice()).into()));
    }
    let url = req.url().map_err(internal("request URL"))?;
    Request::new_with_init(url.as_str(), &init).map_err(internal("rebuilding the request"))
}

/// Reads and drops the whole body as [`buffered`] does, for a request that is refused whatever
/// it carries (no route, a method the path does not serve). It is not rebuilt: its method may
/// be one the runtime cannot make a request with (`QUERY` is read as `GET`, which may not have
/// a body).
pub async fn drained(mut req: Request, limit: usize) -> Result<(), ApiError> {
    if req.inner().body().is_some() {
        read_whole(&mut req, limit).await?;
    }
    Ok(())
}

/// Reads a body to its end and drops it as it goes, keeping nothing (a streamed route's body that
/// its handler refused unread): while the client keeps sending, up to [`DRAIN_BYTES`] past the
/// route's largest body, a pause of [`DRAIN_STALL`] ending it.
pub async fn discard(mut req: Request) -> Result<(), ApiError> {
    use futures_util::StreamExt;
    if req.inner().body().is_none() {
        return Ok(());
    }
    let most = (api::artifacts::MAX_PART_BYTES as usize).saturating_add(DRAIN_BYTES);
    let mut stream = req.stream().map_err(internal("reading the body"))?;
    let mut seen = 0usize;
    loop {
        let delay = worker::Delay::from(DRAIN_STALL);
        let next = match futures_util::future::select(stream.next(), delay).await {
            futures_util::future::Either::Left((next, _)) => next,
            futures_util::future::Either::Right(_) => break,
        };
        match next {
            Some(Ok(chunk)) => seen = seen.saturating_add(chunk.len()),
            _ => break,
        }
        if seen > most {
            break;
        }
    }
    Ok(())
}

/// The body up to `limit`, or 413 after reading on past it as [`buffered`] says.
async fn read_whole(req: &mut Request, limit: usize) -> Result<Vec<u8>, ApiError> {
    use futures_util::StreamExt;
    let declared = header(req, "content-length").and_then(|l| l.parse::<u64>().ok());
    let mut over = declared.is_some_and(|n| n > limit as u64);
    let mut stream = req.stream().map_err(internal("reading the body"))?;
    let (mut bytes, mut seen) = (Vec::new(), 0usize);
    loop {
        let next = if over {
            // Past the limit, a stalled sender is not waited for.
            let delay = worker::Delay::from(DRAIN_STALL);
            match futures_util::future::select(stream.next(), delay).await {
                futures_util::future::Either::Left((next, _)) => next,
                futures_util::future::Either::Right(_) => break,
            }
        } else {
            stream.next().await
        };
        let Some(chunk) = next else { break };
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                ErrorCode::InvalidEncoding,
                format!("the request body could not be read to its end: {e}"),
            )
        })?;
        seen = seen.saturating_add(chunk.len());
        over |= seen > limit;
        if over {
            bytes = Vec::new();
            if seen > DRAIN_BYTES {
                break;
            }
        } else {
            bytes.extend_from_slice(&chunk);
        }
    }
    drop(stream);
    if over {
        return Err(ApiError::new(
            ErrorCode::BodyTooLarge,
            format!("the request body has more than {limit} bytes; at most {limit} are accepted"),
        )
        .with_details(serde_json::json!({"limit_bytes": limit})));
    }
    Ok(bytes)
}

/// The body, refused with 413 when it is over `limit`: by its declared length first, so an
/// oversized body is not read at all, and while it is read, so a chunked body without a length
/// stops at the first chunk past the limit instead of being held whole.
pub async fn body(req: &mut Request, limit: usize) -> ApiResult<Vec<u8>> {
    use futures_util::StreamExt;
    if let Some(len) = header(req, "content-length").and_then(|l| l.parse::<usize>().ok()) {
        wire::check_size(len, limit)?;
    }
    if req.inner().body().is_none() {
        return Ok(Vec::new());
    }
    let mut stream = req.stream().map_err(internal("reading the body"))?;
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(internal("reading the body"))?;
        wire::check_size(bytes.len().saturating_add(chunk.len()), limit)?;
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

pub fn header(req: &Request, name: &str) -> Option<String> {
    req.headers().get(name).ok().flatten()
}

/// The edge's configured public URL (`PUBLIC_URL`), where jobs report. Never the request's
/// `Host`: see `crate::public_url`.
pub fn public_url(env: &worker::Env) -> ApiResult<String> {
    let var = env.var("PUBLIC_URL").ok().map(|v| v.to_string());
    crate::public_url::parse(var.as_deref(), require_tls(env)).map_err(ApiError::internal)
}

/// Whether this deployment refuses cleartext URLs (`REQUIRE_TLS`, see `crate::tls`).
pub fn require_tls(env: &worker::Env) -> bool {
    crate::tls::required(
        env.var("REQUIRE_TLS")
            .ok()
            .map(|v| v.to_string())
            .as_deref(),
    )
}

/// `scheme://host[:port]` of this request: the only Origin a session may write from.
pub fn own_origin(req: &Request) -> ApiResult<(String, String)> {
    let url = req.url().map_err(internal("request URL"))?;
    let host = url.host_str().unwrap_or_default().to_string();
    let host = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host,
    };
    Ok((format!("{}://{host}", url.scheme()), host))
}

/// A runtime failure while building a response is an internal error like any other.
impl From<worker::Error> for ApiError {
    fn from(e: worker::Error) -> Self {
        ApiError::internal(format!("runtime: {e}"))
    }
}
