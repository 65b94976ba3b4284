//! The Plan page's upload of a checked dataset: declared to the edge with the check's counts and
//! SHA-256 (`POST /api/datasets`), then sent a part at a time as slices of the file, which the
//! browser reads from disk as it sends, a bar showing how far it got, each part sent again when
//! the connection drops; a file the account already stored is done at once. Its id then goes
//! into `data.dataset`, with the counts, so that the plan is the plan of that file.

use crate::api::{self, put_blob};
use crate::api_wire::ApiError;
use crate::dataset_proto::DatasetSummary;
use crate::i18n::{Key, bytes};
use crate::pages::auth::Refusal;
use crate::pages::plan_parts::patch_spec;
use crate::state::{use_i18n, use_shared};
use ::api::Dataset;
use jobspec::patch::PatchOp;
use leptos::prelude::*;
use web_sys::File;

/// How many times one part is sent before the upload stops (pressing Upload again resumes it).
const TRIES: u32 = 3;

#[derive(Clone, Debug, PartialEq)]
enum Up {
    Idle,
    Sending { sent: u64, total: u64 },
    Done(String),
    Failed(ApiError),
}

fn declaration(file: &File, s: &DatasetSummary) -> serde_json::Value {
    let name = ::api::datasets::declared_name(&file.name());
    serde_json::json!({
        "name": name,
        "size": file.size() as u64,
        "sha256": s.sha256,
        "format": s.format.clone().unwrap_or_else(|| "text".into()),
        "examples": s.examples.max(1),
        "tokens": s.tokens.max(1),
        "exact": s.exact,
    })
}

async fn send_part(d: &Dataset, file: &File, part: u64) -> Result<Dataset, ApiError> {
    let start = (part - 1) * d.part_size;
    let end = (start + d.part_size).min(d.size);
    let blob = file
        .slice_with_f64_and_f64(start as f64, end as f64)
        .map_err(|e| ApiError::network(format!("{e:?}")))?;
    let path = format!("/api/datasets/{}?part={part}", d.id);
    let mut last = ApiError::network("");
    for _ in 0..TRIES {
        match put_blob::<Dataset>(&path, &blob).await {
            Ok(next) => return Ok(next),
            Err(e) if e.status == 0 || e.status >= 500 || e.status == 429 => last = e,
            Err(e) => return Err(e),
        }
        api::sleep_ms(1000).await;
    }
    Err(last)
}

async fn upload(file: File, s: DatasetSummary, state: RwSignal<Up>) -> Result<Dataset, ApiError> {
    let declared = declaration(&file, &s);
    let mut d: Dataset = api::post("/api/datasets", &declared).await?;
    let mut declared_again = false;
    while !d.complete {
        state.set(Up::Sending {
            sent: (d.received * d.part_size).min(d.size),
            total: d.size,
        });
        d = match send_part(&d, &file, d.received + 1).await {
            // Storage ended the unfinished upload (left too long): what arrived is gone, and the
            // file is declared again and sent whole, once.
            Err(e) if e.code == "upload_expired" && !declared_again => {
                declared_again = true;
                api::post("/api/datasets", &declared).await?
            }
            other => other?,
        };
    }
    Ok(d)
}

#[component]
pub fn DatasetUpload(
    file: StoredValue<Option<File>, LocalStorage>,
    s: DatasetSummary,
) -> impl IntoView {
    let i = use_i18n();
    let spec = use_shared().spec;
    let state = RwSignal::new(Up::Idle);
    let usable = s.examples > 0 && !s.sha256.is_empty();
    let summary = StoredValue::new(s);
    let start = move |_| {
        let Some(f) = file.get_value() else { return };
        let s = summary.get_value();
        state.set(Up::Sending {
            sent: 0,
            total: f.size() as u64,
        });
        leptos::task::spawn_local(async move {
            match upload(f, s.clone(), state).await {
                Ok(d) => {
                    let mut ops = vec![PatchOp {
                        path: "data.dataset".into(),
                        value: d.id.clone().into(),
                    }];
                    ops.extend(s.data_keys().into_iter().map(|(k, n)| PatchOp {
                        path: format!("data.{k}"),
                        value: n.into(),
                    }));
                    patch_spec(spec, &ops);
                    state.set(Up::Done(d.id));
                }
                Err(e) => state.set(Up::Failed(e)),
            }
        });
    };
    view! {
        <div class="actions">
            <button type="button" data-testid="dataset-upload" on:click=start
                disabled=move || !usable || matches!(state.get(), Up::Sending { .. })>
                {move || i.t(Key::DatasetUpload)}
            </button>
        </div>
        {move || match state.get() {
            Up::Idle => ().into_any(),
            Up::Sending { sent, total } => view! {
                <p data-testid="dataset-uploading" aria-live="polite">
                    <progress max=total.max(1).to_string() value=sent.to_string()></progress>
                    " "{format!("{} {} / {}", i.t(Key::DatasetUploading), bytes(sent), bytes(total))}
                </p>
            }.into_any(),
            Up::Done(id) => view! {
                <p data-testid="dataset-uploaded" data-id=id.clone() aria-live="polite">
                    {i.t(Key::DatasetUploaded)}" "<code>{id.clone()}</code>
                </p>
            }.into_any(),
            Up::Failed(e) => view! { <Refusal error=e testid="dataset-upload-error"/> }.into_any(),
        }}
    }
}
