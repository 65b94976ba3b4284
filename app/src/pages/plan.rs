//! `/plan`: the job spec editor. The TOML text is the one source of truth: every edit (typed,
//! from the form, a suggestion, a template or a DeepSpeed import) replaces it, and the plan —
//! diagnostics, estimates, card comparison, suggestions, launch files — is recomputed from it.

use crate::i18n::{Key, bytes};
use crate::pages::plan_explain::{ExplainLink, Explanations};
use crate::pages::plan_parts::{Artifacts, CardTable, DsImport, FormView, MemoryBar};
use crate::state::{use_i18n, use_shared};
use jobspec::Plan;
use jobspec::yuan;
use leptos::prelude::*;

#[component]
pub fn PlanPage() -> impl IntoView {
    let i = use_i18n();
    let spec = use_shared().spec;
    let plan = Memo::new(move |_| jobspec::plan_toml(&spec.get()));
    view! {
        <section class="page plan" data-testid="plan">
            <h1>{move || i.t(Key::PlanTitle)}</h1>
            <div class="actions">
                <span>{move || i.t(Key::Templates)}</span>
                <div class="templates">
                    {jobspec::templates().iter().map(|t| view! {
                        <button type="button" data-testid=format!("template-{}", t.id)
                            on:click=move |_| spec.set(t.toml_in(&crate::api::absolute(""), i.lang.get_untracked()))>
                            {move || match i.lang.get() {
                                crate::i18n::Lang::En => t.title_en,
                                crate::i18n::Lang::Zh => t.title_zh,
                            }}
                        </button>
                    }).collect_view()}
                </div>
                <crate::share_ui::CopyLinkButton/>
            </div>
            // The editor spans the page so that a spec's lines are not cut; the figures come
            // right below it, beside the form view.
            <div class="plan-grid">
                <div class="plan-editor">
                    <Editor plan=plan/>
                    <Diagnostics plan=plan/>
                </div>
                <div class="plan-figures">
                    <Estimates plan=plan/>
                    <crate::pages::submit::SubmitPanel plan=plan/>
                    <Suggestions plan=plan/>
                    <Explanations plan=plan/>
                </div>
                <div class="plan-more">
                    <FormView/>
                    <crate::pages::plan_dataset::DatasetCheck plan=plan/>
                    <DsImport plan=plan/>
                    <Artifacts plan=plan/>
                </div>
            </div>
        </section>
    }
}

/// The most lines the gutter numbers.
const GUTTER_LINES: usize = 10_000;

/// The textarea with a line-number gutter that marks the lines with errors.
#[component]
fn Editor(plan: Memo<Plan>) -> impl IntoView {
    let i = use_i18n();
    let spec = use_shared().spec;
    let gutter = NodeRef::<leptos::html::Pre>::new();
    // Numbered up to GUTTER_LINES: a spec of more lines (a share link can hold 120,000 empty
    // ones) would rebuild as many nodes on every key press.
    let lines = move || spec.with(|s| s.split('\n').count().min(GUTTER_LINES));
    let bad_lines = move || {
        plan.with(|p| {
            p.diagnostics
                .iter()
                .filter(|d| d.is_error() && d.line > 0)
                .map(|d| d.line as usize)
                .collect::<std::collections::HashSet<_>>()
        })
    };
    view! {
        <div class="editor-head">
            <label for="plan-toml"><h2>{move || i.t(Key::SpecEditor)}</h2></label>
            <Summary plan=plan/>
        </div>
        <div class="editor">
            <pre class="gutter" aria-hidden="true" node_ref=gutter data-testid="plan-gutter">
                {move || {
                    let bad = bad_lines();
                    (1..=lines()).map(|n| {
                        let class = if bad.contains(&n) { "bad" } else { "" };
                        view! { <span class=class data-line=n>{n}</span>"\n" }
                    }).collect_view()
                }}
            </pre>
            <textarea
                id="plan-toml"
                data-testid="plan-toml"
                spellcheck="false"
                autocomplete="off"
                prop:value=move || spec.get()
                on:input=move |ev| spec.set(event_target_value(&ev))
                on:scroll=move |ev| {
                    let top = event_target::<web_sys::HtmlTextAreaElement>(&ev).scroll_top();
                    if let Some(g) = gutter.get() {
                        g.set_scroll_top(top);
                    }
                }
            ></textarea>
        </div>
    }
}

/// Fits, memory, time and cost in one line above the editor, so that they stay in sight while
/// typing on a window too short to show the full figures below it.
#[component]
fn Summary(plan: Memo<Plan>) -> impl IntoView {
    let i = use_i18n();
    view! {
        <p class="plan-summary" data-testid="plan-summary">
            {move || plan.with(|p| match (&p.estimate, &p.memory_only) {
                (None, Some(mo)) => {
                    let m = mo.estimate.memory;
                    let (fits_key, fits_class) = if m.fits { (Key::Fits, "fits yes") } else { (Key::DoesNotFit, "fits no") };
                    view! {
                        <span class=fits_class>{i.t(fits_key)}</span>
                        {format!(" {} / {} · {}", bytes(m.per_gpu.total_bytes), bytes(m.card_bytes), i.t(Key::NeedsTokens))}
                    }.into_any()
                }
                (None, None) => view! { <span class="muted">{i.t(Key::SummaryInvalid)}</span> }.into_any(),
                (Some(e), _) => {
                    let m = e.memory;
                    let (fits_key, fits_class) = if m.fits { (Key::Fits, "fits yes") } else { (Key::DoesNotFit, "fits no") };
                    view! {
                        <span class=fits_class>{i.t(fits_key)}</span>
                        {format!(" {} / {} · {} · {}", bytes(m.per_gpu.total_bytes), bytes(m.card_bytes),
                            i.duration(e.time.seconds), yuan(e.cost.fen))}
                    }.into_any()
                }
            })}
        </p>
    }
}

#[component]
fn Diagnostics(plan: Memo<Plan>) -> impl IntoView {
    let i = use_i18n();
    view! {
        <h2>{move || i.t(Key::Diagnostics)}</h2>
        <ul class="diags" data-testid="plan-diagnostics" aria-live="polite">
            {move || {
                let lang = i.lang.get();
                plan.with(|p| {
                    if p.diagnostics.is_empty() {
                        return view! { <li data-testid="plan-no-problems">{i.t(Key::NoProblems)}</li> }.into_any();
                    }
                    p.diagnostics.iter().map(|d| {
                        let sev = d.severity.as_str();
                        let at = if d.line > 0 {
                            format!("{} {}, {} {}: ", i.t(Key::Line), d.line, i.t(Key::Column), d.column)
                        } else {
                            String::new()
                        };
                        let help = d.help.as_ref().map(|h| format!(" — {}", h.get(lang)));
                        view! {
                            <li class=format!("sev-{sev}") data-testid="diag" data-severity=sev
                                data-code=d.code.as_str() data-line=d.line data-column=d.column>
                                {at}<code>{d.code.as_str()}</code>" "{d.message.get(lang).to_string()}{help}
                            </li>
                        }
                    }).collect_view().into_any()
                })
            }}
        </ul>
    }
}

/// Memory bar, fit, parameters, time and cost, then the same on every card.
#[component]
fn Estimates(plan: Memo<Plan>) -> impl IntoView {
    let i = use_i18n();
    view! {
        <h2>{move || i.t(Key::MemoryPerGpu)}</h2>
        <div data-testid="plan-estimates" class="estimates">
            {move || plan.with(|p| match (&p.estimate, &p.memory_only) {
                // Short only of data.tokens: the memory verdict stands, time and cost wait.
                (None, Some(mo)) => {
                    let m = mo.estimate.memory;
                    view! {
                        <MemoryFit memory=m/>
                        <p class="muted" data-testid="plan-needs-tokens">{i.t(Key::NeedsTokens)}</p>
                    }.into_any()
                }
                (None, None) => view! { <p class="muted" data-testid="plan-invalid">{i.t(Key::InvalidSpec)}</p> }.into_any(),
                (Some(e), _) => {
                    let m = e.memory;
                    view! {
                        <MemoryFit memory=m/>
                        <p data-testid="plan-time-cost">
                            {format!("{}: {}", i.t(Key::Time), i.duration(e.time.seconds))}
                            <ExplainLink figure="time"/>
                            {(e.time.offload_seconds + e.time.cpu_optimizer_seconds > 0.0).then(|| view! {
                                <span data-testid="plan-offload-time">
                                    {format!(" ({}: {})", i.t(Key::OffloadTime), i.duration(e.time.offload_seconds + e.time.cpu_optimizer_seconds))}
                                </span>
                                <ExplainLink figure="offload_time"/>
                            })}
                            {format!(" · {}: {}", i.t(Key::Cost), yuan(e.cost.fen))}
                            <ExplainLink figure="cost"/>
                        </p>
                    }.into_any()
                }
            })}
        </div>
        <CardTable plan=plan/>
    }
}

/// The memory bar, whether it fits on the card, and the host lines: what a plan shows of its
/// memory, with or without a run length.
#[component]
fn MemoryFit(memory: jobspec::estimate::MemoryEstimate) -> impl IntoView {
    let i = use_i18n();
    let m = memory;
    let (fits_key, fits_class) = if m.fits {
        (Key::Fits, "fits yes")
    } else {
        (Key::DoesNotFit, "fits no")
    };
    view! {
        <MemoryBar memory=m/>
        <p>
            <span class=fits_class data-testid="plan-fits" data-fits=m.fits.to_string()>{move || i.t(fits_key)}</span>
            {move || format!(": {} / {} ({})", bytes(m.per_gpu.total_bytes), bytes(m.card_bytes), i.t(Key::CardMemory))}
        </p>
        <HostLines memory=m/>
    }
}

/// Host RAM and NVMe per node for what the spec offloads, against what one node has.
#[component]
fn HostLines(memory: jobspec::estimate::MemoryEstimate) -> impl IntoView {
    let i = use_i18n();
    let m = memory;
    let lines = [
        (
            Key::HostRamPerNode,
            m.cpu_bytes_per_node,
            m.node_ram_bytes,
            "ram",
        ),
        (
            Key::NvmePerNode,
            m.nvme_bytes_per_node,
            m.node_nvme_bytes,
            "nvme",
        ),
    ];
    lines
        .into_iter()
        .filter(|l| l.1 > 0)
        .map(|(key, need, have, what)| {
            let fits = need <= have;
            let (fits_key, class) = if fits {
                (Key::Fits, "fits yes")
            } else {
                (Key::DoesNotFit, "fits no")
            };
            view! {
                <p data-testid="plan-host" data-host=what data-fits=fits.to_string()>
                    {format!("{}: {} / {} · ", i.t(key), bytes(need), bytes(have))}
                    <span class=class>{i.t(fits_key)}</span>
                    <ExplainLink figure="host_memory"/>
                </p>
            }
        })
        .collect_view()
}

#[component]
fn Suggestions(plan: Memo<Plan>) -> impl IntoView {
    let i = use_i18n();
    let spec = use_shared().spec;
    let apply = move |ops: Vec<jobspec::patch::PatchOp>| {
        let src = spec.get_untracked();
        let patched = jobspec::patch::apply_patch_toml(&src, &ops).or_else(|| {
            // The text could not be patched in place: rebuild it from the patched spec.
            let (parsed, _) = jobspec::parse_text(&src, jobspec::Format::Toml);
            let patched = jobspec::patch::apply_patch(&parsed?, &ops).ok()?;
            Some(patched.to_toml())
        });
        if let Some(t) = patched {
            spec.set(t);
        }
    };
    move || {
        plan.with(|p| {
            (!p.suggestions.is_empty()).then(|| {
                let lang = i.lang.get();
                view! {
                    <h2>{i.t(Key::Suggestions)}</h2>
                    <ul class="suggestions" data-testid="plan-suggestions">
                        {p.suggestions.iter().map(|s| {
                            let ops = s.patch.clone();
                            let fits = s.per_gpu_bytes <= s.card_bytes;
                            view! {
                                <li>
                                    <span>{s.title.get(lang).to_string()}
                                        <span class="muted">{format!(" ({} / {}, {})", bytes(s.per_gpu_bytes), bytes(s.card_bytes), yuan(s.fen))}</span>
                                    </span>
                                    <button type="button" data-testid="suggestion-apply" data-fits=fits.to_string()
                                        on:click=move |_| apply(ops.clone())>{i.t(Key::Apply)}</button>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }
            })
        })
    }
}
