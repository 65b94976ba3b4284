//! Browser APIs the pages call through `js_sys` — `matchMedia` and `Notification` — so that the
//! page's `web-sys` feature set, which it shares with Leptos, stays as it is; and the page's
//! localStorage. Every call degrades to "no" when the browser lacks the API.

use js_sys::{Function, Reflect};
use wasm_bindgen::{JsCast, JsValue};

fn get(target: impl AsRef<JsValue>, name: &str) -> Option<JsValue> {
    Reflect::get(target.as_ref(), &JsValue::from_str(name))
        .ok()
        .filter(|v| !v.is_undefined() && !v.is_null())
}

/// The page's localStorage, when the browser lets the page use one.
pub fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Whether the user asked their system for less motion (`prefers-reduced-motion: reduce`).
pub fn prefers_reduced_motion() -> bool {
    let Some(window) = web_sys::window() else {
        return false;
    };
    let Some(match_media) = get(&window, "matchMedia").and_then(|f| f.dyn_into::<Function>().ok())
    else {
        return false;
    };
    match_media
        .call1(
            &window,
            &JsValue::from_str("(prefers-reduced-motion: reduce)"),
        )
        .ok()
        .and_then(|list| get(&list, "matches"))
        .and_then(|m| m.as_bool())
        .unwrap_or(false)
}

/// The `Notification` constructor, when the browser has one.
fn notification_class() -> Option<Function> {
    get(&web_sys::window()?, "Notification")?.dyn_into().ok()
}

/// `Notification.permission`: `"granted"`, `"denied"` or `"default"`; `None` without the API.
pub fn notification_permission() -> Option<String> {
    get(&notification_class()?, "permission")?.as_string()
}

/// Asks for permission to notify (the browser only asks during a user action) and answers the
/// permission the user gave.
pub async fn request_notification_permission() -> Option<String> {
    let class = notification_class()?;
    let request = get(&class, "requestPermission")?
        .dyn_into::<Function>()
        .ok()?;
    let promise = request
        .call0(&class)
        .ok()?
        .dyn_into::<js_sys::Promise>()
        .ok()?;
    wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .ok()?
        .as_string()
}

/// Shows a system notification; false when it cannot (no API, no permission).
pub fn notify(title: &str, body: &str, tag: &str) -> bool {
    let Some(class) = notification_class() else {
        return false;
    };
    if notification_permission().as_deref() != Some("granted") {
        return false;
    }
    let options = js_sys::Object::new();
    let set =
        |k: &str, v: &str| Reflect::set(&options, &JsValue::from_str(k), &JsValue::from_str(v));
    if set("body", body).is_err() || set("tag", tag).is_err() {
        return false;
    }
    let args = js_sys::Array::of2(&JsValue::from_str(title), &options);
    Reflect::construct(&class, &args).is_ok()
}
