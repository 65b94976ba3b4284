//! The dataset check's Web Worker: the `datacheck` worker binary (`app/worker/src/datacheck.rs`,
//! started by `public/datacheck.js`) runs this. It reads the chosen file a slice at a time (`Blob::slice`, never the
//! whole file), feeds datacheck's checker and posts its progress, so that a file of gigabytes
//! is checked without the page freezing or the tab holding it; its SHA-256 is taken in the same
//! pass, for an upload. It counts tokens with the spec's model's own tokenizer, fetched from the
//! edge (`/api/models/{id}/tokenizer/…`, where the operator stored it), rendered as onramp-train
//! renders an example, so that the page's count is the trainer's; where the edge has none, it
//! estimates and says why.

use crate::dataset_proto::{CHUNK_BYTES, DatasetOutput, DatasetSummary, tokenizer_url};
use datacheck::hf::{HfCounter, TokenizerFiles, template_for};
use datacheck::{Checker, Counter, Estimate};
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

/// Installs the handler: each message is `{file, seq_len, model}`, checked one after another.
pub fn start() {
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let data = ev.data();
        let field = |k: &str| js_sys::Reflect::get(&data, &JsValue::from_str(k)).ok();
        let file = field("file").and_then(|f| f.dyn_into::<File>().ok());
        let seq_len = field("seq_len").and_then(|v| v.as_f64()).unwrap_or(2048.0);
        let model = field("model").and_then(|v| v.as_string());
        match file {
            Some(file) => spawn_local(async move {
                let counter = counter(model).await;
                check(file, counter, seq_len.clamp(1.0, 1_048_576.0) as u32).await
            }),
            None => post(&DatasetOutput::Error {
                detail: "the message holds no file".into(),
            }),
        }
    });
    scope().set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    onmessage.forget();
    post(&DatasetOutput::Ready);
}

/// The model's own tokenizer where the edge serves it, else an estimate that says why.
async fn counter(model: Option<String>) -> Box<dyn Counter> {
    let estimate = |why: String| -> Box<dyn Counter> { Box::new(Estimate { why }) };
    let Some(model) = model.filter(|m| !m.is_empty()) else {
        return estimate(
            "the spec is not valid yet, so its model and tokenizer are not known".into(),
        );
    };
    let files = match tokenizer_files(&model).await {
        Ok(Some(files)) => files,
        Ok(None) => {
            return estimate(format!(
                "the tokenizer of {model} is not stored on this Onramp"
            ));
        }
        Err(e) => return estimate(format!("the tokenizer of {model} did not load: {e}")),
    };
    let source = format!(
        "the tokenizer of {model} from {}",
        tokenizer_url(&model, "")
    );
    match HfCounter::new(&files, &template_for(Some(&model)), source) {
        Ok(c) => Box::new(c),
        Err(e) => estimate(format!("the tokenizer of {model} cannot be read: {e}")),
    }
}

/// The model's tokenizer files from the edge; `None` when it has no `tokenizer.json` for it.
async fn tokenizer_files(model: &str) -> Result<Option<TokenizerFiles>, String> {
    let Some(tokenizer_json) = fetch(&tokenizer_url(model, "tokenizer.json")).await? else {
        return Ok(None);
    };
    let urls = [
        "tokenizer_config.json",
        "special_tokens_map.json",
        "chat_template.jinja",
    ]
    .map(|name| tokenizer_url(model, name));
    let (config, specials, template) =
        futures::join!(fetch(&urls[0]), fetch(&urls[1]), fetch(&urls[2]));
    Ok(Some(TokenizerFiles {
        tokenizer_json,
        tokenizer_config: config?,
        special_tokens_map: specials?,
        chat_template: template?.and_then(|b| String::from_utf8(b).ok()),
    }))
}

/// The bytes at `url`, `None` on a 404.
async fn fetch(url: &str) -> Result<Option<Vec<u8>>, String> {
    let resp = JsFuture::from(scope().fetch_with_str(url))
        .await
        .map_err(|e| format!("{url}: {e:?}"))?
        .dyn_into::<web_sys::Response>()
        .map_err(|_| format!("{url}: not a response"))?;
    if resp.status() == 404 {
        return Ok(None);
    }
    if !resp.ok() {
        return Err(format!("{url}: HTTP {}", resp.status()));
    }
    let buf = resp.array_buffer().map_err(|e| format!("{url}: {e:?}"))?;
    let buf = JsFuture::from(buf)
        .await
        .map_err(|e| format!("{url}: {e:?}"))?;
    Ok(Some(js_sys::Uint8Array::new(&buf).to_vec()))
}

async fn check(file: File, counter: Box<dyn Counter>, seq_len: u32) {
    let name = file.name();
    let total = file.size();
    let mut checker = Checker::new(Some(&name), counter, seq_len);
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
