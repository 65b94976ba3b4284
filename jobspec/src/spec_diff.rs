//! Two or more specs compared key by key: each read by jobspec with its defaults filled in, so
//! `lr = 1e-4` written out and left to its default compare as what they are. `onramp compare` and
//! the app's comparison page show the same differences. Also the tokens one optimizer step
//! trains, so that curves of runs with different batches can be aligned by tokens.

use serde_json::Value;
use std::collections::BTreeMap;

/// Every `table.key` of a spec as jobspec reads it, defaults filled in; `None` for a spec it
/// cannot read.
pub fn spec_keys(text: &str) -> Option<BTreeMap<String, Value>> {
    let (spec, _) = crate::parse_text(text, format_of(text));
    let value = serde_json::to_value(spec?).ok()?;
    let mut out = BTreeMap::new();
    flatten("", &value, &mut out);
    // The tables a spec leaves out when they hold their defaults, with those defaults: a spec
    // that merges its adapter differs from one that does not in that key alone.
    let skipped = [
        (
            "checkpoint",
            serde_json::to_value(crate::spec::CheckpointSpec::default()),
        ),
        (
            "output",
            serde_json::to_value(crate::spec::OutputSpec::default()),
        ),
        (
            "eval",
            serde_json::to_value(crate::spec::EvalSpec::default()),
        ),
        (
            "deepspeed",
            serde_json::to_value(crate::spec::ZeroTuning::default()),
        ),
    ];
    for (table, defaults) in skipped {
        let mut filled = BTreeMap::new();
        flatten(table, &defaults.ok()?, &mut filled);
        for (k, v) in filled {
            out.entry(k).or_insert(v);
        }
    }
    // Not written when it is the default (the reader refuses it next to `eval.dataset`).
    out.entry("eval.holdout".into())
        .or_insert(crate::eval_spec::DEFAULT_HOLDOUT.into());
    Some(out)
}

fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.clone());
        }
    }
}

/// The keys whose values differ between the specs, each with every spec's value (`null` where a
/// spec lacks the key or could not be read).
pub fn spec_diff(specs: &[&str]) -> Vec<(String, Vec<Value>)> {
    let read: Vec<BTreeMap<String, Value>> = specs
        .iter()
        .map(|s| spec_keys(s).unwrap_or_default())
        .collect();
    let mut keys: Vec<&String> = read.iter().flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let values: Vec<Value> = read
                .iter()
                .map(|m| m.get(k).cloned().unwrap_or(Value::Null))
                .collect();
            values
                .iter()
                .any(|v| *v != values[0])
                .then(|| (k.clone(), values))
        })
        .collect()
}

/// JSON when the text starts with `{`, else TOML (as the edge reads a submitted spec).
fn format_of(text: &str) -> crate::Format {
    if text.trim_start().starts_with('{') {
        crate::Format::Json
    } else {
        crate::Format::Toml
    }
}

/// The tokens one optimizer step of `spec` trains (its run's tokens over its steps), `None` for
/// a spec that does not validate or has no length.
pub fn tokens_per_step(spec: &str) -> Option<f64> {
    let (valid, _) = crate::validate_text(spec, format_of(spec));
    let v = valid?;
    (v.steps() > 0 && v.train_tokens() > 0).then(|| v.train_tokens() as f64 / v.steps() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_left_at_its_defaults_differs_only_in_the_keys_set_elsewhere() {
        let base = A;
        let merged = format!("{base}[output]\nmerge_adapter = true\n");
        let diff = spec_diff(&[&merged, base]);
        let keys: Vec<&str> = diff.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["output.merge_adapter"], "{diff:?}");
        assert_eq!(diff[0].1, [Value::Bool(true), Value::Bool(false)]);
    }
    use serde_json::json;

    const A: &str = "name = \"a\"\ntask = \"lora\"\nmodel = \"qwen2.5-7b\"\n[data]\ndataset = \"d\"\nseq_len = 512\n[train]\nsteps = 10\n[resources]\ncard = \"a100-80g\"\n";

    #[test]
    fn specs_differ_only_where_their_values_do_defaults_included() {
        let b = A
            .replace("steps = 10", "steps = 10\nlr = 0.0002")
            .replace("\"a\"", "\"b\"");
        let c = A
            .replace("seq_len = 512", "seq_len = 1024")
            .replace("\"a\"", "\"c\"");
        let diff = spec_diff(&[A, &b, &c]);
        let keys: Vec<&str> = diff.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["data.seq_len", "name", "train.lr"], "{diff:?}");
        let lr = &diff.iter().find(|(k, _)| k == "train.lr").unwrap().1;
        assert_eq!(lr[1], json!(0.0002));
        assert_eq!(lr[0], lr[2], "the default, the same in both");
        assert!(spec_diff(&[A, A]).is_empty());
    }

    #[test]
    fn a_step_trains_its_batch_of_sequences() {
        // One sequence of 512 a step by default; twice the accumulation, twice the tokens.
        let one = tokens_per_step(A).unwrap();
        let two = tokens_per_step(&A.replace("steps = 10", "steps = 10\ngrad_accum = 2")).unwrap();
        assert_eq!(two, 2.0 * one);
        assert_eq!(one % 512.0, 0.0);
        assert_eq!(tokens_per_step("name = 1"), None);
    }

    #[test]
    fn a_json_spec_compares_with_its_toml_twin() {
        let json = serde_json::to_string(
            &serde_json::to_value(crate::parse_text(A, crate::Format::Toml).0.unwrap()).unwrap(),
        )
        .unwrap();
        assert!(spec_diff(&[A, &json]).is_empty());
    }
}
