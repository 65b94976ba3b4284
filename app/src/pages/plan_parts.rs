//! The pieces of the Plan page below the editor: the memory bar, the card table, the form view,
//! the DeepSpeed import and the launch files.

use crate::i18n::{Key, bytes};
use crate::state::{use_i18n, use_shared};
use jobspec::estimate::MemoryEstimate;
use jobspec::patch::PatchOp;
use jobspec::yuan;
use jobspec::{Format, Plan};
use leptos::prelude::*;
use serde_json::{Value, json};

/// Applies a patch to the spec text in place (keeping comments); false when it cannot.
pub(crate) fn patch_spec(spec: RwSignal<String>, ops: &[PatchOp]) -> bool {
    match jobspec::patch::apply_patch_toml(&spec.get_untracked(), ops) {
        Some(t) => {
            spec.set(t);
            true
        }
        None => false,
    }
}

/// Parameters, gradients, optimizer states, activations and buffers as one stacked bar, scaled
/// so that the card's memory is a marked line (the bar runs past it when the job does not fit).
#[component]
pub fn MemoryBar(memory: MemoryEstimate) -> impl IntoView {
    let i = use_i18n();
    let g = memory.per_gpu;
    // The last field: the figure whose explanation the legend entry links to.
    let parts = [
        ("params", Key::Params, g.params_bytes, "model_states"),
        ("grads", Key::Grads, g.grads_bytes, "model_states"),
        (
            "optimizer",
            Key::Optimizer,
            g.optimizer_bytes,
            "model_states",
        ),
        (
            "activations",
            Key::Activations,
            g.activations_bytes,
            "activations",
        ),
        ("buffers", Key::Buffers, g.buffers_bytes, "buffers"),
    ];
    let scale = g.total_bytes.max(memory.card_bytes).max(1) as f64;
    let pct = |b: u64| format!("{:.2}%", b as f64 * 100.0 / scale);
    view! {
        <div class="bar" role="img" data-testid="plan-memory-bar"
            aria-label=move || format!("{}: {} / {}", i.t(Key::MemoryPerGpu), bytes(g.total_bytes), bytes(memory.card_bytes))>
            {parts.iter().map(|(class, _, b, _)| view! { <span class=*class style:width=pct(*b)></span> }).collect_view()}
            <span class="limit" style:left=pct(memory.card_bytes)></span>
        </div>
        <ul class="legend">
            {parts.into_iter().map(|(class, key, b, figure)| view! {
                <li>
                    <i class=format!("bar-key {class}")></i>{move || format!("{} {}", i.t(key), bytes(b))}
                    <crate::pages::plan_explain::ExplainLink figure=figure/>
                </li>
            }).collect_view()}
        </ul>
    }
}

/// The spec on every card: memory, fit, time and cost.
#[component]
pub fn CardTable(plan: Memo<Plan>) -> impl IntoView {
    let i = use_i18n();
    move || {
        plan.with(|p| {
            (!p.cards.is_empty()).then(|| view! {
                <h2>{i.t(Key::AcrossCards)}</h2>
                <div class="table-wrap">
                    <table data-testid="plan-cards">
                        <thead><tr>
                            <th scope="col">{i.t(Key::Card)}</th>
                            <th scope="col">{i.t(Key::Cards)}</th>
                            <th scope="col">{i.t(Key::Memory)}</th>
                            <th scope="col">{i.t(Key::Time)}</th>
                            <th scope="col">{i.t(Key::Cost)}</th>
                        </tr></thead>
                        <tbody>
                            {p.cards.iter().map(|c| {
                                let fit = if c.fits { i.t(Key::Fits) } else { i.t(Key::DoesNotFit) };
                                view! {
                                    <tr class:current=c.current data-card=c.card data-fits=c.fits.to_string()>
                                        <td>{c.display}</td>
                                        <td>{c.cards}</td>
                                        <td>
                                            {format!("{} / {} · {fit}", bytes(c.per_gpu_bytes), bytes(c.card_bytes))}
                                            {c.fits_with.as_ref().map(|f| view! {
                                                <span class="muted" data-testid="fits-with" data-cards=f.cards.to_string()>
                                                    {format!(" · {} {} × {}", i.t(Key::FitsOnCards), f.cards, c.display)}
                                                </span>
                                            })}
                                        </td>
                                        <td>{i.duration(c.seconds)}</td>
                                        <td>{yuan(c.fen)}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            })
        })
    }
}

/// The main settings as form fields, read from the TOML on every edit and written back into it
/// as a patch, so both views always show the same spec.
#[component]
pub fn FormView() -> impl IntoView {
    let i = use_i18n();
    let spec = use_shared().spec;
    let parsed = Memo::new(move |_| jobspec::parse_text(&spec.get(), Format::Toml).0);
    let text_field = move |key: Key,
                           id: &'static str,
                           path: &'static str,
                           read: fn(&jobspec::JobSpec) -> String,
                           numeric: bool| {
        view! {
            <label class="field" for=id>
                <span>{move || i.t(key)}</span>
                <input id=id data-testid=id type=if numeric { "number" } else { "text" } min="0"
                    prop:value=move || parsed.with(|p| p.as_ref().map(read).unwrap_or_default())
                    on:change=move |ev| {
                        let v = event_target_value(&ev);
                        let value = if numeric {
                            match v.trim().parse::<u64>() {
                                Ok(n) => json!(n),
                                Err(_) => return,
                            }
                        } else {
                            Value::String(v)
                        };
                        patch_spec(spec, &[PatchOp { path: path.into(), value }]);
                    }
                />
            </label>
        }
    };
    view! {
        <h2>{move || i.t(Key::FormView)}</h2>
        <fieldset class="form-view" data-testid="plan-form" prop:disabled=move || parsed.with(Option::is_none)>
            {move || parsed.with(Option::is_none).then(|| view! { <p class="muted">{i.t(Key::FormNeedsValidToml)}</p> })}
            {text_field(Key::FieldName, "form-name", "name", |s| s.name.clone(), false)}
            <label class="field" for="form-card">
                <span>{move || i.t(Key::FieldCard)}</span>
                <select id="form-card" data-testid="form-card"
                    on:change=move |ev| {
                        let v = event_target_value(&ev);
                        patch_spec(spec, &[PatchOp { path: "resources.card".into(), value: Value::String(v) }]);
                    }>
                    {jobspec::catalog::CARDS.iter().map(|c| view! {
                        <option value=c.id
                            selected=move || parsed.with(|p| p.as_ref().is_some_and(|s| s.resources.card == c.id))>
                            {c.display}
                        </option>
                    }).collect_view()}
                </select>
            </label>
            {text_field(Key::FieldCardsPerNode, "form-cards-per-node", "resources.cards_per_node", |s| s.resources.cards_per_node.to_string(), true)}
            {text_field(Key::FieldNodes, "form-nodes", "resources.nodes", |s| s.resources.nodes.to_string(), true)}
            {text_field(Key::FieldMicroBatch, "form-micro-batch", "train.micro_batch", |s| s.train.micro_batch.to_string(), true)}
            {text_field(Key::FieldSeqLen, "form-seq-len", "data.seq_len", |s| s.data.seq_len.to_string(), true)}
            {text_field(Key::FieldZero, "form-zero", "parallel.zero_stage", |s| s.parallel.zero_stage.to_string(), true)}
        </fieldset>
    }
}

/// Paste a DeepSpeed config: its settings are patched into the spec, its problems listed.
#[component]
pub fn DsImport(plan: Memo<Plan>) -> impl IntoView {
    let i = use_i18n();
    let spec = use_shared().spec;
    let text = RwSignal::new(String::new());
    let findings = RwSignal::new(Vec::<jobspec::Diagnostic>::new());
    let imported = RwSignal::new(false);
    let import = move |_| {
        let dp = plan.with_untracked(|p| p.valid.as_ref().map(|v| v.dp()));
        let config = text.get_untracked();
        let (ds, mut diags) = jobspec::deepspeed::import_ds_config(&config, dp);
        let done = ds.is_some_and(|ds| patch_spec(spec, &ds.patch()));
        // What the job's own ds_config, for the spec as it now is, does not run as written.
        if done && let (Some(v), _) = jobspec::validate_toml(&spec.get_untracked()) {
            let ours = jobspec::deepspeed::ds_config(&v);
            diags.extend(jobspec::deepspeed::not_carried(&config, &ours));
        }
        findings.set(diags);
        imported.set(done);
    };
    view! {
        <h2><label for="ds-json">{move || i.t(Key::ImportDs)}</label></h2>
        <textarea id="ds-json" data-testid="ds-json" rows="4" spellcheck="false"
            prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
        <div class="actions">
            <button type="button" data-testid="ds-import" on:click=import>{move || i.t(Key::ImportButton)}</button>
            <span aria-live="polite" data-testid="ds-status">{move || imported.get().then(|| i.t(Key::Imported))}</span>
        </div>
        <ul class="diags" data-testid="ds-diagnostics">
            {move || {
                let lang = i.lang.get();
                findings.get().into_iter().map(|d| view! {
                    <li data-code=d.code.as_str()>{format!("{} {}: ", i.t(Key::Line), d.line)}<code>{d.code.as_str()}</code>" "{d.message.get(lang).to_string()}</li>
                }).collect_view()
            }}
        </ul>
    }
}

/// ds_config, launch commands and the sbatch script, each with a copy button.
#[component]
pub fn Artifacts(plan: Memo<Plan>) -> impl IntoView {
    let i = use_i18n();
    let block = move |name: &'static str, body: String| {
        let copied = RwSignal::new(false);
        let copy_text = body.clone();
        (!body.is_empty()).then(|| view! {
            <div class="artifact" data-testid=format!("artifact-{name}")>
                <div class="actions">
                    <strong>{name}</strong>
                    <button type="button" data-testid=format!("copy-{name}") on:click=move |_| {
                        if let Some(w) = web_sys::window() {
                            let p = w.navigator().clipboard().write_text(&copy_text);
                            leptos::task::spawn_local(async move {
                                copied.set(wasm_bindgen_futures::JsFuture::from(p).await.is_ok());
                            });
                        }
                    }>{move || i.t(if copied.get() { Key::Copied } else { Key::Copy })}</button>
                </div>
                <pre>{body}</pre>
            </div>
        })
    };
    move || {
        plan.with(|p| {
            p.artifacts.clone().map(|a| {
                view! {
                    <h2>{i.t(Key::Artifacts)}</h2>
                    {block("ds_config.json", a.ds_config)}
                    {block("deepspeed", a.deepspeed)}
                    {block("torchrun", a.torchrun)}
                    {block("sbatch", a.sbatch)}
                }
            })
        })
    }
}
