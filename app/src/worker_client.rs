//! The page's side of the inference worker: starts it once (or adopts the one `index.html`
//! started before the app's wasm loaded), turns its messages into signals the Try page renders,
//! and measures time to first token and tokens per second.

pub use crate::worker_proto::Metrics;
use crate::worker_proto::{
    GenerateRequest, MODEL_CACHE, MODEL_CACHED_KEY, ModelSource, WorkerError, WorkerInput,
    WorkerOutput,
};
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, Worker};

/// Where the model worker is.
#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    Starting,
    Downloading { loaded: u64, total: Option<u64> },
    Ready,
    Generating,
    Failed(WorkerError),
}

impl Phase {
    /// For `data-state`, which the end-to-end tests wait on.
    pub fn as_str(&self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Downloading { .. } => "downloading",
            Phase::Ready => "ready",
            Phase::Generating => "generating",
            Phase::Failed(_) => "error",
        }
    }
}

/// The model worker and what it reported.
#[derive(Clone, Copy)]
pub struct ModelWorker {
    worker: StoredValue<Option<Worker>, LocalStorage>,
    pub phase: RwSignal<Phase>,
    pub output: RwSignal<String>,
    pub metrics: RwSignal<Metrics>,
    /// The model that is loaded, and whether it came from the cache.
    pub loaded: RwSignal<Option<(String, bool)>>,
    /// The model to load once the worker is listening.
    pub wanted: RwSignal<ModelSource>,
    /// `performance.now()` when the model became ready (for the load benchmark).
    pub loaded_at_ms: RwSignal<Option<f64>>,
    /// A request to generate made while no worker ran (the last one failed): sent once the new
    /// one has loaded the model.
    pending: StoredValue<Option<GenerateRequest>, LocalStorage>,
    /// The model loaded before the load under way, which the worker keeps until another
    /// loads: restored when that load fails, so the playground is not left with none.
    before: StoredValue<Option<Earlier>, LocalStorage>,
}

/// A model that was loaded: where it came from, and its name and whether it came from the cache
/// (as [`ModelWorker::loaded`] holds them).
type Earlier = (ModelSource, (String, bool));

pub fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or_default()
}

impl ModelWorker {
    /// Signals only; the worker starts on the first [`ModelWorker::ensure_started`].
    pub fn install() -> ModelWorker {
        let w = ModelWorker {
            worker: StoredValue::new_local(None),
            phase: RwSignal::new(Phase::Starting),
            output: RwSignal::new(String::new()),
            metrics: RwSignal::new(Metrics::default()),
            loaded: RwSignal::new(None),
            wanted: RwSignal::new(ModelSource::stories260k()),
            loaded_at_ms: RwSignal::new(None),
            pending: StoredValue::new_local(None),
            before: StoredValue::new_local(None),
        };
        provide_context(w);
        w
    }

    pub fn ensure_started(self) {
        if self.worker.with_value(Option::is_some) {
            return;
        }
        let (worker, queued) = match take_early_worker() {
            Some((w, queued)) => (w, Some(queued)),
            None => match Worker::new(&worker_url()) {
                Ok(w) => (w, None),
                Err(e) => {
                    self.fail_js(e);
                    return;
                }
            },
        };
        let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            self.receive(ev.data());
        });
        worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
        onmessage.forget();
        let onerror =
            Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |ev: web_sys::ErrorEvent| {
                self.crashed(ev.message());
            });
        worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
        onerror.forget();
        self.worker.set_value(Some(worker));
        // What the early worker said before the handler above replaced index.html's buffer, in
        // order: nothing can arrive in between, since this runs without yielding.
        for data in queued.iter().flat_map(js_sys::Array::iter) {
            // index.html's note of an error the worker did not catch, else one of its messages.
            match js_sys::Reflect::get(&data, &JsValue::from_str("crashed"))
                .ok()
                .and_then(|c| c.as_string())
            {
                Some(why) => self.crashed(why),
                None => self.receive(data),
            }
        }
    }

    /// An error the worker did not catch (a trap of its wasm among them) leaves its state
    /// unusable (a model half-loaded, "busy" for ever): it is ended, and the next request starts
    /// a new one (`send`).
    fn crashed(self, why: String) {
        // The model went with it.
        self.before.set_value(None);
        self.worker.update_value(|w| {
            if let Some(w) = w.take() {
                w.terminate();
            }
        });
        // Before a model was ready (a generation still waiting for it) it was loading one;
        // after, generating.
        let loading = self.pending.with_value(Option::is_some)
            || matches!(
                self.phase.get_untracked(),
                Phase::Starting | Phase::Downloading { .. }
            );
        let kind = if loading {
            crate::worker_proto::ErrorKind::Download
        } else {
            crate::worker_proto::ErrorKind::Generate
        };
        self.phase
            .set(Phase::Failed(WorkerError { kind, detail: why }));
    }

    fn receive(self, data: JsValue) {
        let msg = data
            .as_string()
            .ok_or_else(|| "a message that is not text".to_string())
            .and_then(|t| serde_json::from_str::<WorkerOutput>(&t).map_err(|e| e.to_string()));
        match msg {
            Ok(m) => self.on_message(m),
            Err(e) => self.phase.set(Phase::Failed(WorkerError {
                kind: crate::worker_proto::ErrorKind::BadInput,
                detail: e,
            })),
        }
    }

    fn fail_js(self, e: JsValue) {
        self.phase.set(Phase::Failed(WorkerError {
            kind: crate::worker_proto::ErrorKind::Download,
            detail: format!("{e:?}"),
        }));
    }

    fn send(self, msg: &WorkerInput) {
        if self.worker.with_value(Option::is_none) {
            // None started, or the last one was ended by an error: a new one loads the wanted
            // model once it is ready (`on_message`), and then generates what was asked.
            // A stop then means the generation asked for before it is no longer wanted.
            match msg {
                WorkerInput::Generate(req) => self.pending.set_value(Some(req.clone())),
                WorkerInput::Stop => return self.pending.set_value(None),
                WorkerInput::Load(_) => {}
            }
            self.ensure_started();
            return;
        }
        let json = serde_json::to_string(msg).unwrap_or_default();
        self.worker.with_value(|w| {
            if let Some(w) = w
                && let Err(e) = w.post_message(&JsValue::from_str(&json))
            {
                self.fail_js(e);
            }
        });
    }

    fn on_message(self, msg: WorkerOutput) {
        match msg {
            WorkerOutput::Ready => {
                let wanted = self.wanted.get_untracked();
                if wanted == ModelSource::stories260k() {
                    // The worker loads the default model by itself as it starts (inference.rs).
                    self.phase.set(Phase::Downloading {
                        loaded: 0,
                        total: None,
                    });
                } else {
                    self.load(wanted);
                }
            }
            WorkerOutput::Progress { loaded, total } => {
                self.phase.set(Phase::Downloading { loaded, total })
            }
            WorkerOutput::Loaded {
                name, from_cache, ..
            } => {
                if name == ModelSource::stories260k().name {
                    remember_default_cached();
                }
                if name != self.wanted.get_untracked().name {
                    // Loaded while the page waits for another model, asked for since and queued
                    // behind it in the worker: the page waits for that one, and nothing
                    // generates with this one (should that one fail, the picker names it, and
                    // picking this one again loads it). The model held before is no longer the
                    // worker's, so a failure does not name it either.
                    self.before.set_value(None);
                    return;
                }
                self.loaded_at_ms.set(Some(now_ms()));
                self.before.set_value(None);
                self.loaded.set(Some((name, from_cache)));
                self.phase.set(Phase::Ready);
                if let Some(req) = self.pending.try_update_value(Option::take).flatten() {
                    self.generate(req);
                }
            }
            WorkerOutput::Token { text, tokens } => {
                let now = now_ms();
                if !text.is_empty() {
                    self.output.update(|o| o.push_str(&text));
                }
                self.metrics.update(|m| {
                    m.first_token_at_ms.get_or_insert(now);
                    m.last_token_at_ms = now;
                    m.tokens += tokens;
                });
            }
            WorkerOutput::Done {
                tokens,
                stopped,
                generate_ms,
            } => {
                self.metrics.update(|m| {
                    m.tokens = tokens;
                    m.stopped = Some(stopped);
                    m.generate_ms = Some(generate_ms);
                });
                self.phase.set(Phase::Ready);
            }
            WorkerOutput::Error(e) => {
                // A load that failed: the worker still holds the model it had.
                let loading = matches!(self.phase.get_untracked(), Phase::Downloading { .. });
                if let Some((src, loaded)) = self.before.try_update_value(Option::take).flatten()
                    && loading
                {
                    self.wanted.set(src);
                    self.loaded.set(Some(loaded));
                }
                self.phase.set(Phase::Failed(e));
            }
        }
    }

    /// Loads `src` (when the worker is listening; else as soon as it is).
    pub fn load(self, src: ModelSource) {
        if let Some(loaded) = self.loaded.get_untracked() {
            self.before
                .set_value(Some((self.wanted.get_untracked(), loaded)));
        }
        self.wanted.set(src.clone());
        self.loaded.set(None);
        self.phase.set(Phase::Downloading {
            loaded: 0,
            total: None,
        });
        self.send(&WorkerInput::Load(src));
    }

    pub fn generate(self, req: GenerateRequest) {
        self.output.set(String::new());
        self.metrics.set(Metrics {
            started_ms: now_ms(),
            ..Metrics::default()
        });
        self.phase.set(Phase::Generating);
        self.send(&WorkerInput::Generate(req));
    }

    pub fn stop(self) {
        self.send(&WorkerInput::Stop);
    }
}

fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// `/worker.js` with the hint `public/worker.js` reads: the cache's name when the default model
/// was loaded before (see [`MODEL_CACHED_KEY`]); `public/index.html` builds the same URL.
fn worker_url() -> String {
    let hint = local_storage()
        .and_then(|s| s.get_item(MODEL_CACHED_KEY).ok().flatten())
        .unwrap_or_default();
    format!("/worker.js#{hint}")
}

fn remember_default_cached() {
    // Only a hint: without storage the next visit asks the Cache API first, as it always could.
    if let Some(s) = local_storage() {
        let _ = s.set_item(MODEL_CACHED_KEY, MODEL_CACHE);
    }
}

/// The worker that `public/index.html` started on a cold load of `/`, and the messages (JSON
/// text) it posted before the app took it over; `None` when there is none or it was taken.
fn take_early_worker() -> Option<(Worker, js_sys::Array)> {
    let window = web_sys::window()?;
    let key = JsValue::from_str("onrampWorker");
    let early = js_sys::Reflect::get(&window, &key).ok()?;
    if early.is_undefined() || early.is_null() {
        return None;
    }
    // Taken once: a second page instance (or a test mounting the app again) starts its own.
    let _ = js_sys::Reflect::delete_property(&window, &key);
    let field = |name: &str| js_sys::Reflect::get(&early, &JsValue::from_str(name)).ok();
    let worker = field("worker")?.dyn_into::<Worker>().ok()?;
    let queued = field("early")?.dyn_into::<js_sys::Array>().ok()?;
    Some((worker, queued))
}

pub fn use_model_worker() -> ModelWorker {
    use_context::<ModelWorker>().unwrap_or_else(ModelWorker::install)
}
