//! The dataset check's Web Worker: the worker binary started as `/worker.js#datacheck` runs this
//! instead of the model. It reads the chosen file a slice at a time (`Blob::slice`, never the
//! whole file), feeds datacheck's checker and posts its progress, so that a file of gigabytes
//! is checked without the page freezing or the tab holding it; its SHA-256 is taken in the same
//! pass, for an upload.

use crate::dataset_proto::{CHUNK_BYTES, DatasetOutput, DatasetSummary};
use datacheck::{Checker, Estimate};
use sha2::{Digest, Sha256};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, spawn_local};
use web_sys::{DedicatedWorkerGlobalScope, File, MessageEvent};

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

fn post(msg: &DatasetOutput) {
    if let Ok(text) = serde_json::to_string(msg) {
        let _ = scope().post_message(&JsValue::from_str(&text));
    }
}

/// Installs the handler: each message is `{file, seq_len}`, checked one after another.
pub fn start() {
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let data = ev.data();
        let field = |k: &str| js_sys::Reflect::get(&data, &JsValue::from_str(k)).ok();
        let file = field("file").and_then(|f| f.dyn_into::<File>().ok());
        let seq_len = field("seq_len").and_then(|v| v.as_f64()).unwrap_or(2048.0);
        match file {
            Some(file) => spawn_local(check(file, seq_len.clamp(1.0, 1_048_576.0) as u32)),
            None => post(&DatasetOutput::Error {
                detail: "the message holds no file".into(),
            }),
        }
    });
    scope().set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    onmessage.forget();
    post(&DatasetOutput::Ready);
}

async fn check(file: File, seq_len: u32) {
    let name = file.name();
    let total = file.size();
    let why = "the model's tokenizer is not in the browser".to_string();
    let mut checker = Checker::new(Some(&name), Estimate { why }, seq_len);
    let mut sha = Sha256::new();
    let mut at = 0.0;
    while at < total {
        let end = (at + CHUNK_BYTES).min(total);
        let bytes = match read(&file, at, end).await {
            Ok(b) => b,
            Err(detail) => return post(&DatasetOutput::Error { detail }),
        };
        checker.push(&bytes);
        sha.update(&bytes);
        at = end;
        post(&DatasetOutput::Progress {
            read: at as u64,
            total: total as u64,
        });
    }
    let report = checker.finish();
    let mut summary = DatasetSummary::of(&name, &report);
    summary.sha256 = format!("{:x}", sha.finalize());
    post(&DatasetOutput::Done(summary));
}

async fn read(file: &File, start: f64, end: f64) -> Result<Vec<u8>, String> {
    let blob = file
        .slice_with_f64_and_f64(start, end)
        .map_err(|e| format!("{e:?}"))?;
    let buf = JsFuture::from(blob.array_buffer())
        .await
        .map_err(|e| format!("cannot read the file: {e:?}"))?;
    Ok(js_sys::Uint8Array::new(&buf).to_vec())
}
