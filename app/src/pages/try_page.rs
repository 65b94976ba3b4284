//! `/`: the playground. A tiny model runs in a Web Worker; tokens stream into the page with time
//! to first token and tokens per second, and a Stop button ends the generation. On a first visit
//! the page starts writing on its own as soon as the model is ready — not when the user prefers
//! reduced motion, nor when they come back to a page whose writing they stopped.

use crate::i18n::Key;
use crate::state::{use_i18n, use_shared};
use crate::worker_client::{ModelWorker, Phase, use_model_worker};
use crate::worker_proto::{
    ErrorKind, GenerateRequest, MAX_PROMPT_BYTES, ModelSource, parse_checkpoint_list,
};
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// Extra models from `GET /api/checkpoints`; a missing endpoint (404) or any failure means
/// "none", since the default model is always there.
async fn fetch_checkpoints() -> Vec<ModelSource> {
    let Some(w) = web_sys::window() else {
        return Vec::new();
    };
    let Ok(resp) = JsFuture::from(w.fetch_with_str("/api/checkpoints")).await else {
        return Vec::new();
    };
    let resp: web_sys::Response = resp.unchecked_into();
    if !resp.ok() {
        return Vec::new();
    }
    let Ok(text) = resp.text() else {
        return Vec::new();
    };
    let text = JsFuture::from(text).await.ok().and_then(|t| t.as_string());
    match text.as_deref().map(parse_checkpoint_list) {
        Some(Ok(list)) => list,
        Some(Err(e)) => {
            web_sys::console::warn_1(&format!("GET /api/checkpoints: {e}").into());
            Vec::new()
        }
        None => Vec::new(),
    }
}

/// Set in localStorage when the user presses Stop: the page no longer starts on its own.
const STOPPED_KEY: &str = "onramp-try-stopped";

/// Whether the page started writing on its own, and if not why (the section's `data-autostart`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Autostart {
    /// The model is not ready yet.
    Waiting,
    Started,
    ReducedMotion,
    StoppedBefore,
    /// Something was generated already (the user is back from another page of the app).
    AlreadyRan,
}

impl Autostart {
    fn as_str(self) -> &'static str {
        match self {
            Autostart::Waiting => "waiting",
            Autostart::Started => "started",
            Autostart::ReducedMotion => "reduced-motion",
            Autostart::StoppedBefore => "stopped-before",
            Autostart::AlreadyRan => "already-ran",
        }
    }

    /// What to do once the model is ready.
    fn decide(mw: crate::worker_client::ModelWorker) -> Autostart {
        let stopped_before = crate::browser::local_storage()
            .and_then(|s| s.get_item(STOPPED_KEY).ok().flatten())
            .is_some();
        if mw.metrics.get_untracked() != crate::worker_client::Metrics::default() {
            Autostart::AlreadyRan
        } else if stopped_before {
            Autostart::StoppedBefore
        } else if crate::browser::prefers_reduced_motion() {
            Autostart::ReducedMotion
        } else {
            Autostart::Started
        }
    }
}

fn error_key(kind: ErrorKind) -> Key {
    match kind {
        ErrorKind::Download => Key::ErrDownload,
        ErrorKind::Format => Key::ErrFormat,
        ErrorKind::Generate => Key::ErrGenerate,
        ErrorKind::BadInput => Key::ErrBadInput,
        ErrorKind::NotReady => Key::ErrWorker,
        ErrorKind::TooLarge => Key::ErrModelTooLarge,
        ErrorKind::AdapterOnly => Key::ErrAdapterOnly,
    }
}

#[component]
pub fn TryPage() -> impl IntoView {
    let i = use_i18n();
    let mw = use_model_worker();
    mw.ensure_started();
    open_requested_model(mw);
    let extra = checkpoints_once_settled(mw);
    let input_error = RwSignal::new(None::<String>);
    let pg = use_shared().playground;

    let generate = move || {
        let p = pg.get_untracked();
        let req = GenerateRequest {
            prompt: p.prompt,
            temperature: p.temperature,
            top_p: p.top_p,
            seed: p.seed,
            max_tokens: p.max_tokens,
        };
        match req.check() {
            Ok(()) => {
                input_error.set(None);
                mw.generate(req);
            }
            Err(_) if req.prompt.len() > MAX_PROMPT_BYTES => {
                input_error.set(Some(i.t(Key::ErrPromptTooLong).to_string()));
            }
            Err(e) => input_error.set(Some(e.detail)),
        }
    };
    let generating = move || mw.phase.get() == Phase::Generating;
    let can_generate = move || mw.loaded.get().is_some() && !generating();
    let autostart = autostart_once_ready(mw, generate);
    let stop = move || {
        // Only a preference: without storage the next visit starts on its own again.
        if let Some(s) = crate::browser::local_storage() {
            let _ = s.set_item(STOPPED_KEY, "1");
        }
        mw.stop();
    };

    view! {
        <section class="page try" data-testid="try" data-state=move || mw.phase.get().as_str()
            data-autostart=move || autostart.get().as_str()>
            <h1>{move || i.t(Key::TryTitle)}</h1>
            <p class="muted">{move || i.t(Key::TryIntro)}</p>
            {controls(mw, extra, input_error)}
            <div class="actions">
                <button
                    type="button"
                    class="primary"
                    data-testid="try-generate"
                    prop:disabled=move || !can_generate()
                    on:click=move |_| generate()
                >
                    {move || i.t(Key::Generate)}
                </button>
                <button
                    type="button"
                    data-testid="try-stop"
                    prop:disabled=move || !generating()
                    on:click=move |_| stop()
                >
                    {move || i.t(Key::Stop)}
                </button>
                <crate::share_ui::CopyLinkButton/>
            </div>
            <StatusLine/>
            <p class="error" role="alert" data-testid="try-input-error">
                {move || input_error.get().map(|e| format!("{}: {e}", i.t(Key::ErrBadInput)))}
            </p>
            <h2 class="sr-only">{move || i.t(Key::Output)}</h2>
            <pre class="output" data-testid="try-output" aria-live="polite" aria-busy=move || generating().to_string()>
                {move || mw.output.get()}
            </pre>
            <Metrics/>
        </section>
    }
}

/// `/?model=<job id>` (the job page's "open in playground") loads that job's checkpoint: at once
/// when the worker is listening, else as the first model it loads.
fn open_requested_model(mw: ModelWorker) {
    let query = web_sys::window().and_then(|w| w.location().search().ok());
    if let Some(src) = query.as_deref().and_then(crate::api_wire::playground_model) {
        if mw.phase.get_untracked() == Phase::Starting {
            mw.wanted.set(src);
        } else {
            mw.load(src);
        }
    }
}

/// The other models (trained checkpoints), asked for once the default one has loaded (or
/// failed), so that on a cold load the listing does not compete with the model's download.
fn checkpoints_once_settled(mw: ModelWorker) -> RwSignal<Vec<ModelSource>> {
    let extra = RwSignal::new(Vec::<ModelSource>::new());
    let asked = StoredValue::new(false);
    Effect::new(move |_| {
        let settled = !matches!(mw.phase.get(), Phase::Starting | Phase::Downloading { .. });
        if settled && !asked.get_value() {
            asked.set_value(true);
            leptos::task::spawn_local(async move {
                let _ = extra.try_set(fetch_checkpoints().await);
            });
        }
    });
    extra
}

/// Whether the page starts writing on its own, decided once, when the model is first ready here.
fn autostart_once_ready(
    mw: ModelWorker,
    generate: impl Fn() + Copy + 'static,
) -> RwSignal<Autostart> {
    let autostart = RwSignal::new(Autostart::Waiting);
    Effect::new(move |_| {
        let ready = mw.phase.get() == Phase::Ready && mw.loaded.with(Option::is_some);
        if ready && autostart.get_untracked() == Autostart::Waiting {
            let decision = Autostart::decide(mw);
            autostart.set(decision);
            if decision == Autostart::Started {
                generate();
            }
        }
    });
    autostart
}

/// The model picker, the prompt and the sampling settings.
fn controls(
    mw: ModelWorker,
    extra: RwSignal<Vec<ModelSource>>,
    input_error: RwSignal<Option<String>>,
) -> impl IntoView {
    let i = use_i18n();
    let pg = use_shared().playground;
    let generating = move || mw.phase.get() == Phase::Generating;
    // The model asked for is listed too (a job's, from `/?model=`): selected, so that picking
    // another one, the default after it failed to load, is a change the select reports.
    let models = move || {
        let mut all = vec![ModelSource::stories260k()];
        all.extend(extra.get());
        let wanted = mw.wanted.get();
        if !all.iter().any(|m| m.model_url == wanted.model_url) {
            all.push(wanted);
        }
        all
    };
    let number =
        move |key, id, limits, get, set| number_field(key, id, limits, get, set, input_error);
    view! {
            <div class="controls">
                <label class="field" for="try-model">
                    <span>{move || i.t(Key::Model)}</span>
                    <select
                        id="try-model"
                        data-testid="try-model"
                        prop:disabled=generating
                        on:change=move |ev| {
                            let url = event_target_value(&ev);
                            if let Some(m) = models().into_iter().find(|m| m.model_url == url) {
                                mw.load(m);
                            }
                        }
                    >
                        {move || models().into_iter().map(|m| {
                            let selected = mw.wanted.get().model_url == m.model_url;
                            view! { <option value=m.model_url.clone() selected=selected>{m.name.clone()}</option> }
                        }).collect_view()}
                    </select>
                </label>
                <label class="field wide" for="try-prompt">
                    <span>{move || i.t(Key::Prompt)}</span>
                    <textarea
                        id="try-prompt"
                        data-testid="try-prompt"
                        rows="2"
                        placeholder=move || i.t(Key::PromptPlaceholder)
                        prop:value=move || pg.get().prompt
                        on:input=move |ev| {
                            let v = event_target_value(&ev);
                            pg.update(|p| p.prompt = v);
                        }
                    ></textarea>
                </label>
                {number(Key::Temperature, "try-temperature", ["0", "2", "0.1"],
                    |p| p.temperature.to_string(),
                    |p, v| v.trim().parse().map(|x| p.temperature = x).is_ok())}
                {number(Key::TopP, "try-top-p", ["0", "1", "0.05"],
                    |p| p.top_p.to_string(),
                    |p, v| v.trim().parse().map(|x| p.top_p = x).is_ok())}
                {number(Key::Seed, "try-seed", ["1", "", "1"],
                    |p| p.seed.to_string(),
                    |p, v| v.trim().parse().map(|x| p.seed = x).is_ok())}
                {number(Key::MaxTokens, "try-max-tokens", ["1", "4096", "1"],
                    |p| p.max_tokens.to_string(),
                    |p, v| v.trim().parse().map(|x| p.max_tokens = x).is_ok())}
            </div>
    }
}

/// A number field of the playground's settings; `limits` are the input's min, max and step.
fn number_field(
    key: Key,
    id: &'static str,
    [min, max, step]: [&'static str; 3],
    get: fn(&jobspec::share::Playground) -> String,
    set: fn(&mut jobspec::share::Playground, &str) -> bool,
    input_error: RwSignal<Option<String>>,
) -> impl IntoView {
    let i = use_i18n();
    let pg = use_shared().playground;
    view! {
        <label class="field" for=id>
            <span>{move || i.t(key)}</span>
            <input
                id=id
                type="number"
                min=min
                max=max
                step=step
                data-testid=id
                prop:value=move || get(&pg.get())
                on:change=move |ev| {
                    let v = event_target_value(&ev);
                    let mut ok = true;
                    pg.update(|p| ok = set(p, &v));
                    input_error.set((!ok).then(|| format!("{}: {v:?}", i.t(key))));
                }
            />
        </label>
    }
}

/// The worker's state in one line of fixed height: progress while downloading, where the model
/// came from, or the error.
#[component]
fn StatusLine() -> impl IntoView {
    let i = use_i18n();
    let mw = use_model_worker();
    view! {
        <div class="status-line" data-testid="try-status" aria-live="polite">
            {move || match mw.phase.get() {
                Phase::Starting => view! { <span>{i.t(Key::StartingWorker)}</span> }.into_any(),
                Phase::Downloading { loaded, total } => view! {
                    <label for="try-progress">{i.t(Key::Downloading)}</label>
                    <progress
                        id="try-progress"
                        data-testid="try-progress"
                        max=total.unwrap_or(0).max(1).to_string()
                        value=loaded.to_string()
                    ></progress>
                    <span class="muted">{crate::i18n::bytes(loaded)}</span>
                }.into_any(),
                Phase::Failed(e) => view! {
                    <span class="error" role="alert" data-testid="try-error" data-kind=format!("{:?}", e.kind)>
                        {format!("{}: {}", i.t(error_key(e.kind)), e.detail)}
                    </span>
                }.into_any(),
                Phase::Generating => view! { <span>{i.t(Key::Generating)}</span> }.into_any(),
                Phase::Ready => {
                    let (name, cached) = mw.loaded.get().unwrap_or_default();
                    let how = if cached { Key::LoadedFromCache } else { Key::LoadedFromNetwork };
                    view! {
                        <span data-testid="try-loaded" data-from-cache=cached.to_string()
                            data-ms=mw.loaded_at_ms.get().map(|t| format!("{t:.0}"))>
                            {format!("{name} — {}", i.t(how))}
                        </span>
                    }.into_any()
                }
            }}
        </div>
    }
}

/// Time to first token, tokens per second and the count, always laid out so that figures
/// arriving do not move anything.
#[component]
fn Metrics() -> impl IntoView {
    let i = use_i18n();
    let mw = use_model_worker();
    let m = mw.metrics;
    view! {
        <dl class="metrics">
            <div>
                <dt>{move || i.t(Key::TimeToFirstToken)}</dt>
                <dd data-testid="try-ttft">{move || m.get().ttft_ms().map(|t| format!("{t:.0} ms")).unwrap_or_else(|| "—".into())}</dd>
            </div>
            <div>
                <dt>{move || i.t(Key::TokensPerSecond)}</dt>
                <dd data-testid="try-tps">{move || m.get().tokens_per_s().map(|t| format!("{t:.0}")).unwrap_or_else(|| "—".into())}</dd>
            </div>
            <div>
                <dt>{move || i.t(Key::Tokens)}</dt>
                <dd data-testid="try-tokens" data-done=move || m.get().stopped.map(|s| if s { "stopped" } else { "finished" })>
                    {move || m.get().tokens}
                    {move || m.get().stopped.map(|s| format!(" · {}", i.t(if s { Key::Stopped } else { Key::Finished })))}
                </dd>
            </div>
            // Milliseconds from navigation start to the first token, for the benchmark.
            <div hidden=true data-testid="try-first-token-at" data-ms=move || m.get().first_token_at_ms.map(|t| format!("{t:.0}"))></div>
        </dl>
    }
}
