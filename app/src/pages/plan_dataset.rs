//! The Plan page's dataset check: the user chooses a file, a Web Worker (`dataset_worker.rs`)
//! checks it a slice at a time while a bar shows how far it got, and the page shows the format,
//! the counts and every bad line with its number; the counts go into `[data]` with one click, so
//! that epochs, time and cost are planned on the data as the trainer batches it. Tokens are
//! counted with the spec's model's own tokenizer where the edge serves it (else estimated, and
//! said so); a change of model checks the chosen file again with the new model's tokenizer.

use crate::dataset_proto::{DATASET_WORKER_URL, DatasetOutput, DatasetSummary};
use crate::i18n::{Key, Lang, bytes};
use crate::pages::plan_parts::patch_spec;
use crate::pages::plan_upload::DatasetUpload;
use crate::state::{use_i18n, use_shared};
use jobspec::Plan;
use jobspec::patch::PatchOp;
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{HtmlInputElement, MessageEvent, Worker};

/// Where a check is.
#[derive(Clone, Debug, PartialEq)]
enum Check {
    Idle,
    Reading {
        read: u64,
        total: u64,
    },
    Done(Box<DatasetSummary>),
    Failed(String),
    /// The browser ended the worker (what it said), or has none (`None`).
    Stopped(Option<String>),
}

/// The checker's worker, started on the first file, and the file it waits to be ready for.
struct Checker {
    worker: Worker,
    ready: bool,
    pending: Option<JsValue>,
}

type Shared = StoredValue<Option<Checker>, LocalStorage>;

/// Ends the worker and what it was checking: nothing it still had to say is heard (a file
/// chosen after it, or another model, must never get the counts of the check before).
fn stop(checker: Shared) {
    if let Some(c) = checker.try_update_value(Option::take).flatten() {
        c.worker.set_onmessage(None);
        c.worker.set_onerror(None);
        c.worker.terminate();
    }
}

/// Sends a check now, or once the worker says it listens.
fn send(checker: Shared, state: RwSignal<Check>, msg: JsValue) {
    if checker.with_value(|c| c.is_none()) {
        match start_worker(checker, state) {
            Some(worker) => checker.set_value(Some(Checker {
                worker,
                ready: false,
                pending: None,
            })),
            None => return state.set(Check::Stopped(None)),
        }
    }
    checker.update_value(|c| {
        if let Some(c) = c {
            if c.ready {
                let _ = c.worker.post_message(&msg);
            } else {
                c.pending = Some(msg);
            }
        }
    });
}

fn start_worker(checker: Shared, state: RwSignal<Check>) -> Option<Worker> {
    let worker = Worker::new(DATASET_WORKER_URL).ok()?;
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let msg = ev
            .data()
            .as_string()
            .and_then(|t| serde_json::from_str::<DatasetOutput>(&t).ok());
        match msg {
            Some(DatasetOutput::Ready) => checker.update_value(|c| {
                if let Some(c) = c {
                    c.ready = true;
                    if let Some(m) = c.pending.take() {
                        let _ = c.worker.post_message(&m);
                    }
                }
            }),
            Some(DatasetOutput::Progress { read, total }) => {
                state.set(Check::Reading { read, total })
            }
            Some(DatasetOutput::Done(s)) => state.set(Check::Done(Box::new(s))),
            Some(DatasetOutput::Error { detail }) => state.set(Check::Failed(detail)),
            // The worker's own start-up messages (an error loading its wasm among them).
            None => {
                if let Some(t) = ev.data().as_string()
                    && t.contains("\"error\"")
                {
                    state.set(Check::Failed(t));
                }
            }
        }
    });
    worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    onmessage.forget();
    // An error the worker did not catch (its wasm trapped, or ran out of memory on a file): the
    // check failed, said so, and the next file starts a new worker.
    let onerror = Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |ev: web_sys::ErrorEvent| {
        stop(checker);
        state.set(Check::Stopped(Some(ev.message())));
    });
    worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
    onerror.forget();
    Some(worker)
}

/// The model whose tokenizer the check counts with: the catalogue model the spec names, or for
/// a model of numbers the tokenizer of its vocabulary (`tok<vocab>`), which onramp-train trains
/// it with.
fn model_of(plan: &Plan) -> Option<String> {
    let valid = plan.valid.as_ref()?;
    match &valid.spec().model {
        jobspec::spec::ModelRef::Id(id) => Some(id.clone()),
        jobspec::spec::ModelRef::Custom(_) => {
            Some(api::datasets::vocab_tokenizer_id(valid.arch().vocab))
        }
    }
}

fn seq_len_of(plan: &Plan) -> Option<u32> {
    plan.valid.as_ref().map(|v| v.spec().data.seq_len)
}

/// The message that checks `file` with the plan's `seq_len` and model's tokenizer, and that
/// model.
fn check_message(plan: Memo<Plan>, file: &web_sys::File) -> (JsValue, Option<String>) {
    let (seq_len, model) = plan.with_untracked(|p| {
        let seq_len = p.valid.as_ref().map(|v| v.spec().data.seq_len);
        (seq_len, model_of(p))
    });
    let msg = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&msg, &"file".into(), file);
    let _ = js_sys::Reflect::set(
        &msg,
        &"seq_len".into(),
        &f64::from(seq_len.unwrap_or(2048)).into(),
    );
    if let Some(m) = &model {
        let _ = js_sys::Reflect::set(&msg, &"model".into(), &m.into());
    }
    (msg.into(), model)
}

#[component]
pub fn DatasetCheck(plan: Memo<Plan>) -> impl IntoView {
    let i = use_i18n();
    let spec = use_shared().spec;
    let state = RwSignal::new(Check::Idle);
    let used = RwSignal::new(false);
    let checker: Shared = StoredValue::new_local(None);
    let chosen = StoredValue::new_local(None::<web_sys::File>);
    // The model and seq_len the last check counted with.
    let checked_with = StoredValue::new_local((None::<String>, None::<u32>));
    let check = move |file: web_sys::File| {
        if matches!(state.get_untracked(), Check::Reading { .. }) {
            // A check under way is of another file or model: it ends unheard.
            stop(checker);
        }
        let (msg, model) = check_message(plan, &file);
        checked_with.set_value((model, plan.with_untracked(seq_len_of)));
        used.set(false);
        state.set(Check::Reading {
            read: 0,
            total: file.size() as u64,
        });
        send(checker, state, msg);
    };
    let take = move |file: web_sys::File| {
        chosen.set_value(Some(file.clone()));
        check(file);
    };
    let choose = move |ev: leptos::ev::Event| {
        let input = ev
            .target()
            .and_then(|t| t.dyn_into::<HtmlInputElement>().ok());
        if let Some(file) = input.and_then(|i| i.files()).and_then(|f| f.get(0)) {
            take(file);
        }
    };
    // Another model, or another seq_len, counts the same file otherwise (its tokenizer, the
    // examples cut): check it again.
    Effect::new(move |_| {
        let now = (plan.with(model_of), plan.with(seq_len_of));
        let changed = now.0.is_some() && now.1.is_some() && checked_with.with_value(|c| *c != now);
        if let Some(file) = chosen.get_value().filter(|_| changed) {
            check(file);
        }
    });
    let use_counts = move |_| {
        if let Check::Done(s) = state.get_untracked() {
            let ops = count_ops(&s);
            used.set(!ops.is_empty() && patch_spec(spec, &ops));
        }
    };
    view! {
        <h2><label for="dataset-file">{move || i.t(Key::DatasetCheck)}</label></h2>
        <p class="hint">{move || i.t(Key::DatasetHint)}</p>
        <DropArea on_file=take>
            <input type="file" id="dataset-file" data-testid="dataset-file"
                accept=".jsonl,.json,.txt,.md,.ndjson" on:change=choose/>
        </DropArea>
        {move || match state.get() {
            Check::Idle => ().into_any(),
            Check::Reading { read, total } => view! {
                <p data-testid="dataset-progress" aria-live="polite">
                    <progress max=total.max(1).to_string() value=read.to_string()></progress>
                    " "{format!("{} {} / {}", i.t(Key::DatasetReading), bytes(read), bytes(total))}
                </p>
            }.into_any(),
            Check::Failed(e) => view! { <p class="error" data-testid="dataset-error">{e}</p> }.into_any(),
            Check::Stopped(said) => view! {
                <p class="error" data-testid="dataset-error">{stopped(i, said)}</p>
            }.into_any(),
            Check::Done(s) => view! {
                <Summary s=(*s).clone() lang=i.lang.get()/>
                <div class="actions">
                    <button type="button" data-testid="dataset-use" on:click=use_counts>{move || i.t(Key::DatasetUse)}</button>
                    <span aria-live="polite" data-testid="dataset-used">{move || used.get().then(|| i.t(Key::DatasetUsed))}</span>
                </div>
                <DatasetUpload file=chosen s=*s/>
            }.into_any(),
        }}
    }
}

/// Why a check could not run or stopped: no Web Workers, or what the browser said of the worker
/// it ended.
fn stopped(i: crate::state::I18n, said: Option<String>) -> String {
    match said {
        Some(said) => format!("{}: {said}", i.t(Key::DatasetCheckStopped)),
        None => i.t(Key::DatasetNoWorkers).to_string(),
    }
}

/// The `[data]` keys a check's counts set in the spec.
fn count_ops(s: &DatasetSummary) -> Vec<PatchOp> {
    s.data_keys()
        .into_iter()
        .map(|(k, n)| PatchOp {
            path: format!("data.{k}"),
            value: n.into(),
        })
        .collect()
}

/// The area around the file input: a file dropped on it goes to `on_file`, as one chosen.
#[component]
fn DropArea<F>(on_file: F, children: Children) -> impl IntoView
where
    F: Fn(web_sys::File) + Copy + 'static,
{
    let i = use_i18n();
    let dragging = RwSignal::new(false);
    let drop = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        dragging.set(false);
        if let Some(file) = ev
            .data_transfer()
            .and_then(|d| d.files())
            .and_then(|f| f.get(0))
        {
            on_file(file);
        }
    };
    let over = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        dragging.set(true);
    };
    view! {
        <div class="drop" class:dragging=move || dragging.get() data-testid="dataset-drop"
            on:dragover=over on:dragleave=move |_| dragging.set(false) on:drop=drop>
            <p>{move || i.t(Key::DatasetDrop)}</p>
            {children()}
        </div>
    }
}

/// The check's figures and its bad lines.
#[component]
fn Summary(s: DatasetSummary, lang: Lang) -> impl IntoView {
    let t = |k: Key| k.text(lang);
    let approx = if s.exact { "" } else { "≈ " };
    let usable = s.examples > 0;
    let how = if s.exact {
        Key::DatasetExact
    } else {
        Key::DatasetEstimate
    };
    view! {
        <dl class="dataset" data-testid="dataset-summary" data-examples=s.examples.to_string()
            data-tokens=s.tokens.to_string() data-format=s.format.clone().unwrap_or_default()
            data-exact=s.exact.to_string() data-counted-with=s.counted_with.clone()
            data-seq-len=s.seq_len.to_string() data-truncated=s.truncated.to_string()>
            <dt>{t(Key::DatasetFormat)}</dt><dd>{s.format.clone().unwrap_or_else(|| "-".into())}</dd>
            <dt>{t(Key::DatasetRecords)}</dt><dd>{s.records}</dd>
            <dt>{t(Key::DatasetExamples)}</dt><dd>{s.examples}</dd>
            <dt>{t(Key::DatasetTokens)}</dt>
            <dd>{format!("{approx}{}", s.tokens)}" "<small data-testid="dataset-counted">{t(how)}</small></dd>
            <dt>{t(Key::DatasetCut)}</dt><dd>{format!("{} (seq_len = {})", s.truncated, s.seq_len)}</dd>
            <dt>{t(Key::DatasetLengths)}</dt><dd>{format!("{approx}{} / {approx}{} / {approx}{}", s.p50, s.p90, s.max)}</dd>
            <dt>{t(Key::DatasetBad)}</dt><dd data-testid="dataset-bad-count">{s.bad_lines}</dd>
        </dl>
        {(!usable).then(|| view! { <p class="error" data-testid="dataset-unusable">{t(Key::DatasetUnusable)}</p> })}
        <ul class="diags" data-testid="dataset-bad">
            {s.bad.iter().map(|b| view! {
                <li data-line=b.line.to_string() data-code=b.code.clone()>
                    {format!("{} {}: ", t(Key::Line), b.line)}<code>{b.code.clone()}</code>" "
                    {match lang { Lang::En => b.en.clone(), Lang::Zh => b.zh.clone() }}
                </li>
            }).collect_view()}
        </ul>
    }
}
