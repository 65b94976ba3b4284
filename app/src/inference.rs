//! The inference worker's side: loads a model (from the Cache API when it is there, else from
//! the network with progress, then caches it) and streams generated text back to the page,
//! yielding to the event loop often enough that a Stop message is seen within a few
//! milliseconds. It starts loading the default model as soon as it runs, without waiting for the
//! page to ask: on a cold load the page's main thread is still busy starting up.

use crate::api_wire::{Playable, playable};
use crate::worker_proto::{
    BROWSER_MAX_PARAMS, ErrorKind, GenerateRequest, MODEL_CACHE, ModelSource, TOKEN_BATCH_MS,
    Utf8Stream, WorkerError, WorkerInput, WorkerOutput,
};
use model_tiny::{Generator, SamplerConfig, Tokenizer, Transformer};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, spawn_local};
use web_sys::{Cache, DedicatedWorkerGlobalScope, MessageEvent, Response};

/// Longest stretch of model work between two looks at the message queue (how long a Stop may
/// wait). A look still costs a turn of the worker's event loop: measured on the Try page with
/// stories260K, every 4 ms cost about a tenth of the tokens/s, every 8 ms the same as every 12.
const YIELD_EVERY_MS: f64 = 8.0;

struct LoadedModel {
    model: Transformer,
    tokenizer: Tokenizer,
}

#[derive(Default)]
struct State {
    loaded: RefCell<Option<LoadedModel>>,
    busy: Cell<bool>,
    /// True while `busy` is a model load rather than a generation.
    loading: Cell<bool>,
    /// A model asked for while another one was loading: loaded next.
    next: RefCell<Option<ModelSource>>,
    stop: Cell<bool>,
}

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

fn post(msg: &WorkerOutput) {
    // Serialising our own enum cannot fail; an empty string would show up as a parse error on
    // the page rather than vanish.
    let json = serde_json::to_string(msg).unwrap_or_default();
    if let Err(e) = scope().post_message(&JsValue::from_str(&json)) {
        web_sys::console::error_1(&e);
    }
}

fn fail(kind: ErrorKind, detail: impl Into<String>) -> WorkerError {
    WorkerError {
        kind,
        detail: detail.into(),
    }
}

fn js_detail(e: JsValue) -> String {
    e.as_string()
        .or_else(|| {
            e.dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
        })
        .unwrap_or_else(|| format!("{e:?}"))
}

/// Installs the message handler and tells the page the worker is listening.
pub fn start() {
    let state = Rc::new(State::default());
    let default_load = load(state.clone(), ModelSource::stories260k());
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let input = ev
            .data()
            .as_string()
            .ok_or_else(|| "a message that is not text".to_string())
            .and_then(|t| serde_json::from_str::<WorkerInput>(&t).map_err(|e| e.to_string()));
        match input {
            Err(e) => post(&WorkerOutput::Error(fail(ErrorKind::BadInput, e))),
            Ok(WorkerInput::Stop) => state.stop.set(true),
            Ok(WorkerInput::Load(src)) => spawn_local(load(state.clone(), src)),
            Ok(WorkerInput::Generate(req)) => spawn_local(generate(state.clone(), req)),
        }
    });
    scope().set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    onmessage.forget();
    post(&WorkerOutput::Ready);
    // The page starts with the default model (worker_client.rs does not ask for it again).
    spawn_local(default_load);
}

async fn load(state: Rc<State>, src: ModelSource) {
    if state.busy.get() {
        if state.loading.get() {
            // Picked while another model (at start, the default one) was loading: next.
            *state.next.borrow_mut() = Some(src);
        } else {
            post(&WorkerOutput::Error(fail(
                ErrorKind::NotReady,
                "a generation is running; stop it before switching models",
            )));
        }
        return;
    }
    state.busy.set(true);
    state.loading.set(true);
    let result = load_model(&src).await;
    state.loading.set(false);
    state.busy.set(false);
    match result {
        Ok((loaded, from_cache, params)) => {
            *state.loaded.borrow_mut() = Some(loaded);
            post(&WorkerOutput::Loaded {
                name: src.name,
                from_cache,
                params,
            });
        }
        Err(e) => post(&WorkerOutput::Error(e)),
    }
    let next = state.next.borrow_mut().take();
    if let Some(next) = next {
        spawn_local(load(state, next));
    }
}

/// The most time [`warm_up`] spends, in ms, and the positions it runs at most.
const WARM_UP_MS: f64 = 25.0;
const WARM_UP_POSITIONS: usize = 64;

/// Runs the model's forward pass a few times before the page is told it is ready. The browser
/// first runs wasm with its baseline compiler and optimises the code only once it is hot; without
/// this, the first text a visitor sees is written at a third of the speed of the second. The KV
/// cache positions it fills are written over by the first generation, which starts at 0.
fn warm_up(model: &mut Transformer) {
    let started = js_sys::Date::now();
    let positions = WARM_UP_POSITIONS.min(model.config().seq_len);
    for pos in 0..positions {
        if model.forward(1, pos).is_err() || js_sys::Date::now() - started > WARM_UP_MS {
            break;
        }
    }
}

async fn load_model(src: &ModelSource) -> Result<(LoadedModel, bool, u64), WorkerError> {
    if let Some(job) = &src.job
        && let Some(folder) = job_folder(job, &src.name).await?
    {
        return Box::pin(load_model(&folder)).await;
    }
    if let Some(config_url) = &src.config_url {
        return load_folder(src, config_url).await;
    }
    // Both at once: each is a round trip (or a cache lookup) that need not wait for the other.
    let (model, tok) = futures::future::join(
        fetch_cached(&src.model_url, true),
        fetch_cached(&src.tokenizer_url, false),
    )
    .await;
    let ((model_bytes, model_cached), (tok_bytes, tok_cached)) = (model?, tok?);
    let weights = model_tiny::load_weights(&model_bytes)
        .map_err(|e| fail(ErrorKind::Format, format!("{}: {e}", src.model_url)))?;
    let params = weights.ordered().iter().map(|t| t.len() as u64).sum();
    let tokenizer = Tokenizer::from_bytes(&tok_bytes, weights.config.vocab_size)
        .map_err(|e| fail(ErrorKind::Format, format!("{}: {e}", src.tokenizer_url)))?;
    let mut model = Transformer::new(&weights);
    warm_up(&mut model);
    Ok((
        LoadedModel { model, tokenizer },
        model_cached && tok_cached,
        params,
    ))
}

/// The Hugging Face folder among job `job`'s artifacts ([`playable`]), named `name`; `None` when
/// it has none (a tiny-train job: its checkpoint URL is tried, and says why when it fails too).
async fn job_folder(job: &str, name: &str) -> Result<Option<ModelSource>, WorkerError> {
    let url = format!("/api/jobs/{job}/artifacts");
    let Some(list) = fetch_json::<::api::ArtifactList>(&url).await else {
        return Ok(None);
    };
    match playable(name, &list) {
        Playable::Folder(src) => Ok(Some(src)),
        Playable::AdapterOnly => Err(fail(ErrorKind::AdapterOnly, format!("job {job}"))),
        Playable::Nothing => Ok(None),
    }
}

/// A Hugging Face folder: `config.json` first, so that a model too large for the tab is refused
/// before its weights are downloaded; then the weights (with progress) and `tokenizer.json`.
async fn load_folder(
    src: &ModelSource,
    config_url: &str,
) -> Result<(LoadedModel, bool, u64), WorkerError> {
    let format = |url: &str, e: model_tiny::Error| fail(ErrorKind::Format, format!("{url}: {e}"));
    let (config, config_cached) = fetch_cached(config_url, false).await?;
    let hf = model_tiny::hf::config(&config).map_err(|e| format(config_url, e))?;
    let params = hf.config.n_params() as u64;
    if params > BROWSER_MAX_PARAMS {
        return Err(fail(
            ErrorKind::TooLarge,
            format!("{params} > {BROWSER_MAX_PARAMS}"),
        ));
    }
    let (model, tok) =
        futures::future::join(fetch_weights(src), fetch_cached(&src.tokenizer_url, false)).await;
    let ((files, model_cached), (tok_bytes, tok_cached)) = (model?, tok?);
    let shards: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    let (weights, hf) =
        model_tiny::hf::load_shards(&config, &shards).map_err(|e| format(&src.model_url, e))?;
    drop(files);
    let tokenizer = Tokenizer::from_hf_json(&tok_bytes, weights.config.vocab_size, &hf.eos)
        .map_err(|e| format(&src.tokenizer_url, e))?;
    let mut model = Transformer::new(&weights);
    drop(weights);
    warm_up(&mut model);
    let cached = config_cached && model_cached && tok_cached;
    Ok((LoadedModel { model, tokenizer }, cached, params))
}

/// The folder's weights: its one `model.safetensors`, or the files its index names (each from
/// the job's artifacts, one after another with progress); true when all came from the cache.
async fn fetch_weights(src: &ModelSource) -> Result<(Vec<Vec<u8>>, bool), WorkerError> {
    if src.shards.is_empty() {
        let (bytes, cached) = fetch_cached(&src.model_url, true).await?;
        return Ok((vec![bytes], cached));
    }
    let (index, mut all_cached) = fetch_cached(&src.model_url, false).await?;
    let names = model_tiny::hf_index::shard_files(&index)
        .map_err(|e| fail(ErrorKind::Format, format!("{}: {e}", src.model_url)))?;
    let mut files = Vec::with_capacity(names.len());
    for name in names {
        let Some((_, url)) = src.shards.iter().find(|(n, _)| *n == name) else {
            return Err(fail(
                ErrorKind::Format,
                format!(
                    "{}: names {name}, which the job did not store",
                    src.model_url
                ),
            ));
        };
        let (bytes, cached) = fetch_cached(url, true).await?;
        all_cached &= cached;
        files.push(bytes);
    }
    Ok((files, all_cached))
}

/// A JSON answer at `url`, never cached (a job's artifacts change while it runs); `None` when
/// there is none.
async fn fetch_json<T: serde::de::DeserializeOwned>(url: &str) -> Option<T> {
    let resp: Response = JsFuture::from(scope().fetch_with_str(url))
        .await
        .ok()?
        .dyn_into()
        .ok()?;
    if !resp.ok() {
        return None;
    }
    let text = JsFuture::from(resp.text().ok()?).await.ok()?.as_string()?;
    serde_json::from_str(&text).ok()
}

/// The bytes at `url`, from the cache when present (true), else downloaded and stored.
async fn fetch_cached(url: &str, progress: bool) -> Result<(Vec<u8>, bool), WorkerError> {
    let dl = |what: &str, e: JsValue| {
        fail(
            ErrorKind::Download,
            format!("{what} {url}: {}", js_detail(e)),
        )
    };
    let resp = match take_prefetched(url).await {
        Some(resp) => resp,
        None => {
            let caches = scope().caches().map_err(|e| dl("cache storage for", e))?;
            let cache: Cache = JsFuture::from(caches.open(MODEL_CACHE))
                .await
                .map_err(|e| dl("opening the cache for", e))?
                .unchecked_into();
            let hit = JsFuture::from(cache.match_with_str(url))
                .await
                .map_err(|e| dl("reading the cache for", e))?;
            if let Ok(resp) = hit.dyn_into::<Response>() {
                let buf = JsFuture::from(resp.array_buffer().map_err(|e| dl("reading cached", e))?)
                    .await
                    .map_err(|e| dl("reading cached", e))?;
                return Ok((js_sys::Uint8Array::new(&buf).to_vec(), true));
            }
            JsFuture::from(scope().fetch_with_str(url))
                .await
                .map_err(|e| dl("GET", e))?
                .unchecked_into()
        }
    };
    if !resp.ok() {
        return Err(fail(
            ErrorKind::Download,
            format!("GET {url}: HTTP {}", resp.status()),
        ));
    }
    let total = resp
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.parse::<u64>().ok());
    let bytes = read_body(&resp, url, progress.then_some(total)).await?;
    store(url, &bytes);
    Ok((bytes, false))
}

/// Puts downloaded bytes into [`MODEL_CACHE`] in the background. Caching is an optimisation: when
/// it fails (quota, private mode) the model still loads and the next visit simply downloads
/// again. Nothing waits for it, since opening the Cache API on a fresh profile alone can take
/// a few hundred milliseconds.
fn store(url: &str, bytes: &[u8]) {
    let body = js_sys::Uint8Array::from(bytes);
    let url = url.to_string();
    spawn_local(async move {
        let put = async {
            let caches = scope().caches()?;
            let cache: Cache = JsFuture::from(caches.open(MODEL_CACHE))
                .await?
                .unchecked_into();
            let copy = Response::new_with_opt_buffer_source(Some(&body))?;
            JsFuture::from(cache.put_with_str(&url, &copy)).await
        };
        if let Err(e) = put.await {
            web_sys::console::warn_2(&JsValue::from_str(&format!("{url} not cached")), &e);
        }
    });
}

/// The download of `url` that `public/worker.js` started before this wasm ran (when the page did
/// not expect the default model to be cached). Taken once; anything else (failed, not
/// prefetched, another cache version) takes the ordinary path.
async fn take_prefetched(url: &str) -> Option<Response> {
    let get = |o: &JsValue, k: &str| js_sys::Reflect::get(o, &JsValue::from_str(k)).ok();
    let prefetch = get(&js_sys::global(), "onrampPrefetch")?;
    if prefetch.is_undefined() || get(&prefetch, "cache")?.as_string()? != MODEL_CACHE {
        return None;
    }
    let responses: js_sys::Object = get(&prefetch, "responses")?.dyn_into().ok()?;
    let pending: js_sys::Promise = get(&responses, url)?.dyn_into().ok()?;
    let _ = js_sys::Reflect::delete_property(&responses, &JsValue::from_str(url));
    JsFuture::from(pending).await.ok()?.dyn_into().ok()
}

/// The most one file of a model may have: the weights of the largest model the playground
/// opens in f32, and room for a tokenizer's or a header's bytes.
const MAX_DOWNLOAD_BYTES: u64 = 4 * BROWSER_MAX_PARAMS + (64 << 20);

/// Reads a response body chunk by chunk, posting progress when `progress` is set.
async fn read_body(
    resp: &Response,
    url: &str,
    progress: Option<Option<u64>>,
) -> Result<Vec<u8>, WorkerError> {
    let dl = |e: JsValue| fail(ErrorKind::Download, format!("GET {url}: {}", js_detail(e)));
    let Some(body) = resp.body() else {
        return Ok(Vec::new());
    };
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    // The length the answer declares is a hint: reserved when it is one a tab may hold (a
    // larger one, or a body that grows past it, is refused as too large, not a trap).
    let too_large = |n: u64| {
        fail(
            ErrorKind::TooLarge,
            format!("GET {url}: {n} bytes > {MAX_DOWNLOAD_BYTES}"),
        )
    };
    let mut bytes: Vec<u8> = Vec::new();
    match progress.flatten() {
        Some(n) if n > MAX_DOWNLOAD_BYTES => return Err(too_large(n)),
        Some(n) => {
            let _ = bytes.try_reserve_exact(n as usize);
        }
        None => {}
    }
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(dl)?;
        let done = js_sys::Reflect::get(&chunk, &"done".into()).map_err(dl)?;
        if done.as_bool() == Some(true) {
            break;
        }
        let value = js_sys::Reflect::get(&chunk, &"value".into()).map_err(dl)?;
        let part: js_sys::Uint8Array = value.unchecked_into();
        let at = bytes.len();
        let grown = at as u64 + u64::from(part.length());
        if grown > MAX_DOWNLOAD_BYTES {
            let _ = reader.cancel();
            return Err(too_large(grown));
        }
        bytes.resize(grown as usize, 0);
        part.copy_to(&mut bytes[at..]);
        if let Some(total) = progress {
            post(&WorkerOutput::Progress {
                loaded: bytes.len() as u64,
                total,
            });
        }
    }
    Ok(bytes)
}

async fn generate(state: Rc<State>, req: GenerateRequest) {
    if let Err(e) = req.check() {
        post(&WorkerOutput::Error(e));
        return;
    }
    if state.busy.get() {
        post(&WorkerOutput::Error(fail(
            ErrorKind::NotReady,
            "the model is busy (loading or generating)",
        )));
        return;
    }
    let Some(mut loaded) = state.loaded.borrow_mut().take() else {
        post(&WorkerOutput::Error(fail(
            ErrorKind::NotReady,
            "no model is loaded yet",
        )));
        return;
    };
    state.busy.set(true);
    state.stop.set(false);
    let result = run(&state, &mut loaded, &req).await;
    *state.loaded.borrow_mut() = Some(loaded);
    state.busy.set(false);
    match result {
        Ok(Generated {
            tokens,
            stopped,
            generate_ms,
        }) => post(&WorkerOutput::Done {
            tokens,
            stopped,
            generate_ms,
        }),
        Err(e) => post(&WorkerOutput::Error(e)),
    }
}

/// How a generation ended.
struct Generated {
    tokens: u32,
    stopped: bool,
    /// From the first token to the last.
    generate_ms: f64,
}

/// The worker's clock (`performance.now()`), in milliseconds.
fn worker_now_ms() -> f64 {
    scope().performance().map(|p| p.now()).unwrap_or_default()
}

async fn run(
    state: &State,
    loaded: &mut LoadedModel,
    req: &GenerateRequest,
) -> Result<Generated, WorkerError> {
    let LoadedModel { model, tokenizer } = loaded;
    let sampler = SamplerConfig {
        temperature: req.temperature,
        topp: req.top_p,
        seed: req.seed,
    };
    let mut generator = Generator::new(model, tokenizer, &req.prompt, req.steps(), sampler);
    let mut text = Utf8Stream::default();
    let mut tokens = 0u32;
    // Generated but not yet sent: the page redraws once a message, so text goes out in
    // batches of at most TOKEN_BATCH_MS (the first token at once, for the time to first token).
    let mut batch = (String::new(), 0u32);
    let mut sent_at = f64::NEG_INFINITY;
    let mut since_yield = js_sys::Date::now();
    let mut first_at = None;
    let ended = |tokens, stopped, first_at: Option<f64>| Generated {
        tokens,
        stopped,
        generate_ms: first_at.map_or(0.0, |t| worker_now_ms() - t),
    };
    loop {
        if state.stop.get() {
            send(&mut batch);
            return Ok(ended(tokens, true, first_at));
        }
        let Some(tok) = generator
            .next_token()
            .map_err(|e| fail(ErrorKind::Generate, e.to_string()))?
        else {
            break;
        };
        tokens += 1;
        first_at.get_or_insert_with(worker_now_ms);
        batch.1 += 1;
        if let Some(piece) = tokenizer.decode_printable(tok.prev, tok.id) {
            batch.0.push_str(&text.push(piece));
        }
        let now = js_sys::Date::now();
        if now - sent_at >= TOKEN_BATCH_MS {
            send(&mut batch);
            sent_at = now;
        }
        if now - since_yield > YIELD_EVERY_MS {
            yield_to_events().await;
            since_yield = js_sys::Date::now();
        }
    }
    let done = ended(tokens, false, first_at);
    batch.0.push_str(&text.finish());
    send(&mut batch);
    Ok(done)
}

/// Posts the batch of generated text, if it holds any token, and empties it.
fn send(batch: &mut (String, u32)) {
    if batch.1 > 0 {
        let (text, tokens) = (std::mem::take(&mut batch.0), std::mem::take(&mut batch.1));
        post(&WorkerOutput::Token { text, tokens });
    }
}

thread_local! {
    /// The channel [`yield_to_events`] posts to itself on (one for the worker's life).
    static YIELD_CHANNEL: Option<web_sys::MessageChannel> = web_sys::MessageChannel::new().ok();
}

/// Lets queued messages (Stop) run. A message to itself on a channel is a macrotask, unlike a
/// resolved promise, and unlike a zero timeout it is not held back: browsers clamp nested
/// timeouts to 4 ms, which a generation paid at every yield (a quarter of its time when it
/// yielded every 12 ms). A zero timeout only where there is no channel.
async fn yield_to_events() {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let posted = YIELD_CHANNEL.with(|ch| {
            ch.as_ref().is_some_and(|ch| {
                ch.port1().set_onmessage(Some(resolve.unchecked_ref()));
                ch.port2().post_message(&JsValue::UNDEFINED).is_ok()
            })
        });
        if !posted {
            let _ = scope().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 0);
        }
    });
    let _ = JsFuture::from(p).await;
}
