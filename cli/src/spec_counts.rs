//! `onramp submit`'s completion of a spec that trains by epochs on an uploaded dataset: the
//! counts the account's record holds, where the spec gives none (as the edge does on
//! submission), so that the spec is checked here as the job will run.

use crate::remote::Edge;

/// A spec training by epochs on an uploaded dataset (`ds_…`) without its counts takes them from
/// the account's record of it, as the edge would on submission, so that it is checked here as
/// the job will run (a JSON spec so completed goes as its TOML form). Any other spec, or one the
/// edge cannot tell about, is left as it is. The text, and whether it is JSON.
pub fn with_dataset_counts(
    edge: impl FnOnce() -> Result<Edge, String>,
    text: String,
    json_spec: bool,
) -> Result<(String, bool), String> {
    let format = if json_spec {
        jobspec::Format::Json
    } else {
        jobspec::Format::Toml
    };
    let unchanged = |text| Ok((text, json_spec));
    let Some(spec) = jobspec::validate::parse_text(&text, format).0 else {
        return unchanged(text);
    };
    let id = spec.data.dataset.as_str();
    if !api::datasets::is_dataset_id(id) || api::datasets::count_ops(&spec, "chat", 1, 1).is_empty()
    {
        return unchanged(text);
    }
    let edge = edge()?;
    let answer = edge.call("GET", &format!("/api/datasets/{id}"), None, &[]);
    let Some(d) = edge
        .expect_ok(answer)
        .ok()
        .and_then(|v| serde_json::from_value::<api::Dataset>(v).ok())
    else {
        return unchanged(text);
    };
    let ops = api::datasets::count_ops(&spec, &d.format, d.examples, d.tokens);
    match api::datasets::patched_toml(&text, json_spec, &spec, &ops) {
        Some(t) => Ok((t, false)),
        None => unchanged(text),
    }
}
