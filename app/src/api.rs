//! Calls to the edge's API from the page: plain `fetch` on the same origin, so the session
//! cookie and the Origin header (which cookie-authenticated writes need) are the browser's own.
//! Every failure becomes an [`ApiError`] the pages can show.

use crate::api_wire::ApiError;
use serde::de::DeserializeOwned;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Request, RequestInit, Response};

/// Sends a request and returns the body of a 2xx answer.
pub async fn call(
    method: &str,
    path: &str,
    body: Option<(&str, String)>,
    headers: &[(&str, &str)],
) -> Result<String, ApiError> {
    let window = web_sys::window().ok_or_else(|| ApiError::network("no window"))?;
    let init = RequestInit::new();
    init.set_method(method);
    let h = web_sys::Headers::new().map_err(|e| ApiError::network(format!("{e:?}")))?;
    if let Some((content_type, text)) = &body {
        let _ = h.set("content-type", content_type);
        init.set_body(&wasm_bindgen::JsValue::from_str(text));
    }
    for (k, v) in headers {
        let _ = h.set(k, v);
    }
    init.set_headers(&h);
    let req = Request::new_with_str_and_init(path, &init)
        .map_err(|e| ApiError::network(format!("{e:?}")))?;
    let resp: Response = JsFuture::from(window.fetch_with_request(&req))
        .await
        .map_err(|e| ApiError::network(format!("{method} {path}: {e:?}")))?
        .unchecked_into();
    let text = match resp.text() {
        Ok(p) => JsFuture::from(p)
            .await
            .ok()
            .and_then(|t| t.as_string())
            .unwrap_or_default(),
        Err(_) => String::new(),
    };
    if resp.ok() {
        Ok(text)
    } else {
        Err(ApiError::from_answer(resp.status(), &text))
    }
}

/// `PUT path` with a `Blob` as the body (a slice of a file the browser reads from disk as it
/// sends), answered with JSON.
pub async fn put_blob<T: DeserializeOwned>(
    path: &str,
    blob: &web_sys::Blob,
) -> Result<T, ApiError> {
    let window = web_sys::window().ok_or_else(|| ApiError::network("no window"))?;
    let init = RequestInit::new();
    init.set_method("PUT");
    init.set_body(blob);
    let h = web_sys::Headers::new().map_err(|e| ApiError::network(format!("{e:?}")))?;
    let _ = h.set("content-type", "application/octet-stream");
    init.set_headers(&h);
    let req = Request::new_with_str_and_init(path, &init)
        .map_err(|e| ApiError::network(format!("{e:?}")))?;
    let resp: Response = JsFuture::from(window.fetch_with_request(&req))
        .await
        .map_err(|e| ApiError::network(format!("PUT {path}: {e:?}")))?
        .unchecked_into();
    let text = match resp.text() {
        Ok(p) => JsFuture::from(p)
            .await
            .ok()
            .and_then(|t| t.as_string())
            .unwrap_or_default(),
        Err(_) => String::new(),
    };
    if resp.ok() {
        decode(text)
    } else {
        Err(ApiError::from_answer(resp.status(), &text))
    }
}

fn decode<T: DeserializeOwned>(status_ok_body: String) -> Result<T, ApiError> {
    serde_json::from_str(&status_ok_body).map_err(|e| ApiError {
        status: 200,
        code: "unexpected".into(),
        message: format!("unreadable answer: {e}"),
        details: serde_json::Value::Null,
    })
}

/// `GET path` as JSON.
pub async fn get<T: DeserializeOwned>(path: &str) -> Result<T, ApiError> {
    decode(call("GET", path, None, &[]).await?)
}

/// `POST path` with a JSON body, answered with JSON.
pub async fn post<T: DeserializeOwned>(
    path: &str,
    body: &serde_json::Value,
) -> Result<T, ApiError> {
    decode(
        call(
            "POST",
            path,
            Some(("application/json", body.to_string())),
            &[],
        )
        .await?,
    )
}

/// What a page shows of one GET: `None` while it loads, then the answer or the refusal.
pub type Fetched<T> = leptos::prelude::RwSignal<Option<Result<T, ApiError>>>;

/// `GET path` into `into` (plain signals rather than a resource: the same for every page, and
/// less code in the download).
pub fn fetch_into<T: DeserializeOwned + Send + Sync + 'static>(path: String, into: Fetched<T>) {
    use leptos::prelude::Set;
    leptos::task::spawn_local(async move { into.set(Some(get::<T>(&path).await)) });
}

/// Resolves after `ms` milliseconds (a `setTimeout` as a future).
pub async fn sleep_ms(ms: u32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(
                &resolve,
                i32::try_from(ms).unwrap_or(i32::MAX),
            );
        }
    });
    let _ = JsFuture::from(promise).await;
}

/// 128 random bits as hex, for Idempotency-Keys.
pub fn random_key() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No crypto source: the clock still makes the key unique to this page and moment.
        let t = crate::worker_client::now_ms().to_bits().to_le_bytes();
        bytes[..8].copy_from_slice(&t);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The page's absolute URL for `path` (for share links).
pub fn absolute(path: &str) -> String {
    let origin = web_sys::window()
        .and_then(|w| w.location().origin().ok())
        .unwrap_or_default();
    format!("{origin}{path}")
}
