//! JSON Schema of the job spec, generated from the types, for editors (TOML via Taplo/Even Better
//! TOML, JSON via `$schema`).

use crate::spec::JobSpec;

/// The keys the spec reader requires, per table (`""` is the top level; the names are the
/// schema's `$defs`). The types are those of the spec after defaults are filled in, so schemars
/// marks every field required; a key with a default may be left out of a spec, so the schema
/// says what the reader says instead (`tests/schema_valid.rs` checks it with a validator).
const READER_REQUIRED: &[(&str, &[&str])] = &[
    ("", &["name", "task", "model", "data", "resources"]),
    ("DataSpec", &["dataset", "seq_len"]),
    ("ResourcesSpec", &["card"]),
    (
        "CustomModel",
        &["layers", "hidden", "heads", "kv_heads", "ffn", "vocab"],
    ),
    ("TrainSpec", &[]),
    ("ParallelSpec", &[]),
    ("EstimateSpec", &[]),
    ("CheckpointSpec", &[]),
    ("OutputSpec", &[]),
    ("EvalSpec", &[]),
    ("ZeroTuning", &[]),
];

const OPTIM: [(&str, f64, f64); 6] = crate::parse::OPTIM_RANGES;
const HOLDOUT: (f64, f64) = crate::eval_spec::HOLDOUT_RANGE;
const ZMAX: f64 = crate::zero_tuning::MAX_ZERO_ELEMENTS as f64;

/// The ranges the reader holds numbers to (`parse/sections.rs`), per table and key.
const READER_RANGES: &[(&str, &str, f64, f64)] = &[
    ("DataSpec", "tokens", 1.0, 1e15),
    ("DataSpec", "examples", 1.0, 1e12),
    ("DataSpec", "seq_len", 1.0, crate::parse::MAX_SEQ_LEN as f64),
    ("TrainSpec", "epochs", 1e-6, 1e6),
    ("TrainSpec", "steps", 1.0, 1e12),
    ("TrainSpec", "micro_batch", 1.0, 65_536.0),
    ("TrainSpec", "grad_accum", 1.0, 65_536.0),
    (
        "TrainSpec",
        "lr",
        crate::parse::LR_RANGE.0,
        crate::parse::LR_RANGE.1,
    ),
    ("TrainSpec", "warmup", 0.0, 1e12),
    ("TrainSpec", "lora_rank", 1.0, 4096.0),
    ("TrainSpec", "seed", 0.0, 4_294_967_295.0),
    ("TrainSpec", "lora_alpha", 1.0, 65_536.0),
    ("TrainSpec", "weight_decay", OPTIM[0].1, OPTIM[0].2),
    ("TrainSpec", "adam_beta1", OPTIM[1].1, OPTIM[1].2),
    ("TrainSpec", "adam_beta2", OPTIM[2].1, OPTIM[2].2),
    ("TrainSpec", "adam_epsilon", OPTIM[3].1, OPTIM[3].2),
    ("TrainSpec", "momentum", OPTIM[4].1, OPTIM[4].2),
    ("TrainSpec", "max_grad_norm", OPTIM[5].1, OPTIM[5].2),
    ("ZeroTuning", "reduce_bucket_size", 1.0, ZMAX),
    ("ZeroTuning", "allgather_bucket_size", 1.0, ZMAX),
    ("ZeroTuning", "sub_group_size", 1.0, ZMAX),
    ("ZeroTuning", "stage3_prefetch_bucket_size", 1.0, ZMAX),
    (
        "ZeroTuning",
        "stage3_param_persistence_threshold",
        1.0,
        ZMAX,
    ),
    ("ZeroTuning", "stage3_max_live_parameters", 1.0, ZMAX),
    ("ZeroTuning", "stage3_max_reuse_distance", 1.0, ZMAX),
    ("ParallelSpec", "zero_stage", 0.0, 3.0),
    ("ParallelSpec", "tp", 1.0, 1024.0),
    ("ParallelSpec", "pp", 1.0, 1024.0),
    ("ParallelSpec", "sp", 1.0, 1024.0),
    ("ResourcesSpec", "cards_per_node", 1.0, 64.0),
    ("ResourcesSpec", "nodes", 1.0, 4096.0),
    ("CheckpointSpec", "keep", 1.0, 1000.0),
    ("CheckpointSpec", "every_steps", 1.0, 1e9),
    ("CheckpointSpec", "every_minutes", 0.0, 10_080.0),
    ("EstimateSpec", "mfu", 0.01, 1.0),
    ("EvalSpec", "holdout", HOLDOUT.0, HOLDOUT.1),
    ("EvalSpec", "every_steps", 1.0, 1e9),
    (
        "EvalSpec",
        "max_examples",
        1.0,
        crate::eval_spec::MAX_EVAL_EXAMPLES as f64,
    ),
    (
        "EvalSpec",
        "fewshot",
        0.0,
        crate::eval_spec::MAX_FEWSHOT as f64,
    ),
    (
        "EvalSpec",
        "task_max_examples",
        1.0,
        crate::eval_spec::MAX_EVAL_EXAMPLES as f64,
    ),
    (
        "EvalSpec",
        "max_new_tokens",
        1.0,
        crate::eval_spec::MAX_NEW_TOKENS as f64,
    ),
    ("CustomModel", "layers", 1.0, 1024.0),
    ("CustomModel", "hidden", 1.0, 131_072.0),
    ("CustomModel", "heads", 1.0, 1024.0),
    ("CustomModel", "kv_heads", 1.0, 1024.0),
    ("CustomModel", "ffn", 1.0, 1_048_576.0),
    ("CustomModel", "vocab", 1.0, 16_777_216.0),
];

/// The keys of [`READER_RANGES`] whose lower end is left out (`exclusiveMinimum`).
const READER_ABOVE: &[(&str, &str)] = &[("TrainSpec", "lr")];

/// Patterns the reader holds strings to, per table and key; a string must match all of them.
/// A duration (`parse_duration_s`): `H:MM:SS` or `MM:SS`, Slurm's `D-HH`, `D-HH:MM` or
/// `D-HH:MM:SS`, or numbers each with a unit `s`, `m`, `h` or `d`; not zero.
const READER_PATTERNS: &[(&str, &str, &[&str])] = &[
    (
        "ResourcesSpec",
        "time_limit",
        &[
            r"^\s*(?:\+?[0-9]+(?::\+?[0-9]+){1,2}|[0-9]+-[0-9]+(?::[0-9]+){0,2}|(?:[ ]*[0-9][0-9 ]*[smhd])+[ ]*)\s*$",
            "[1-9]",
        ],
    ),
    // A job id (`validate::is_job_id`).
    ("CheckpointSpec", "resume_from", &["^[0-9a-f]{1,64}$"]),
];

/// The JSON Schema (draft 2020-12) of a job spec.
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(JobSpec);
    let mut value = serde_json::to_value(&schema).unwrap_or(serde_json::Value::Null);
    for (def, keys) in READER_REQUIRED {
        let node = if def.is_empty() {
            Some(&mut value)
        } else {
            value.pointer_mut(&format!("/$defs/{def}"))
        };
        let Some(obj) = node.and_then(|n| n.as_object_mut()) else {
            continue;
        };
        if keys.is_empty() {
            obj.remove("required");
        } else {
            obj.insert("required".into(), serde_json::json!(keys));
        }
    }
    add_ranges(&mut value);
    for (def, key, patterns) in READER_PATTERNS {
        if let Some(prop) = value
            .pointer_mut(&format!("/$defs/{def}/properties/{key}"))
            .and_then(|p| p.as_object_mut())
        {
            let all: Vec<serde_json::Value> = patterns
                .iter()
                .map(|p| serde_json::json!({ "pattern": p }))
                .collect();
            prop.insert("allOf".into(), all.into());
        }
    }
    add_exclusions(&mut value);
    let cards = catalogue_words(crate::catalog::card_ids());
    if let Some(card) = value
        .pointer_mut("/$defs/ResourcesSpec/properties/card")
        .and_then(|p| p.as_object_mut())
    {
        card.remove("type");
        card.extend(cards);
    }
    let models = catalogue_words(crate::catalog::model_ids());
    if let Some(id) = value
        .pointer_mut("/$defs/ModelRef/anyOf/0")
        .and_then(|p| p.as_object_mut())
    {
        id.remove("type");
        id.extend(models);
    }
    add_defaults(&mut value);
    for (def, key, _, example) in crate::schema_doc::KEY_DOCS {
        let path = if def.is_empty() {
            format!("/properties/{key}")
        } else {
            format!("/$defs/{def}/properties/{key}")
        };
        if let (Some(prop), Some(ex)) = (
            value.pointer_mut(&path).and_then(|p| p.as_object_mut()),
            crate::schema_doc::example_json(example),
        ) {
            prop.insert("examples".into(), serde_json::json!([ex]));
        }
    }
    value
}

/// A catalogue id as the reader takes it: any of the ids, in any case. The `enum` branch is what
/// editors complete from; the pattern (each letter as `[aA]`, so it needs no regex flags) is what
/// accepts `RTX-4090` as the reader does.
fn catalogue_words(
    ids: impl Iterator<Item = &'static str>,
) -> serde_json::Map<String, serde_json::Value> {
    let ids: Vec<&str> = ids.collect();
    let alternatives: Vec<String> = ids
        .iter()
        .map(|id| {
            id.chars()
                .map(|c| {
                    if c.is_ascii_alphabetic() {
                        format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                    } else if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c.to_string()
                    } else {
                        format!("\\{c}")
                    }
                })
                .collect()
        })
        .collect();
    let mut out = serde_json::Map::new();
    out.insert(
        "anyOf".into(),
        serde_json::json!([
            { "type": "string", "enum": ids },
            { "type": "string", "pattern": format!("^(?:{})$", alternatives.join("|")) },
        ]),
    );
    out
}

/// Each key that has a default says it on the key itself (editors show it there); schemars puts
/// the defaults of a table's keys only on the table.
fn add_defaults(value: &mut serde_json::Value) {
    use crate::spec::{CheckpointSpec, EstimateSpec, OutputSpec, ParallelSpec, TrainSpec};
    use serde_json::to_value as v;
    let tables = [
        ("TrainSpec", v(TrainSpec::default())),
        ("ParallelSpec", v(ParallelSpec::default())),
        ("CheckpointSpec", v(CheckpointSpec::default())),
        ("OutputSpec", v(OutputSpec::default())),
        ("EvalSpec", v(crate::eval_spec::EvalSpec::default())),
        ("EstimateSpec", v(EstimateSpec::default())),
        ("ZeroTuning", v(crate::zero_tuning::ZeroTuning::defaults())),
    ];
    for (def, defaults) in tables {
        let Ok(serde_json::Value::Object(defaults)) = defaults else {
            continue;
        };
        for (key, default) in defaults {
            if let Some(prop) = value
                .pointer_mut(&format!("/$defs/{def}/properties/{key}"))
                .and_then(|p| p.as_object_mut())
            {
                prop.entry("default").or_insert(default);
            }
        }
    }
    // Not written when it is the default, or not a table's own default (the reader or the
    // derivation fills them in), so not in the serialised defaults above: the same constants.
    use crate::deepspeed as ds;
    let filled: [(&str, serde_json::Value); 12] = [
        (
            "EvalSpec/properties/holdout",
            crate::eval_spec::DEFAULT_HOLDOUT.into(),
        ),
        (
            "TrainSpec/properties/seed",
            crate::spec::DEFAULT_SEED.into(),
        ),
        (
            "TrainSpec/properties/lora_rank",
            crate::validate::derive::DEFAULT_LORA_RANK.into(),
        ),
        (
            "ResourcesSpec/properties/cards_per_node",
            crate::spec::DEFAULT_CARDS_PER_NODE.into(),
        ),
        (
            "ResourcesSpec/properties/nodes",
            crate::spec::DEFAULT_NODES.into(),
        ),
        (
            "ResourcesSpec/properties/time_limit",
            crate::spec::DEFAULT_TIME_LIMIT.into(),
        ),
        // With adamw; sgd's is 0.
        (
            "TrainSpec/properties/weight_decay",
            ds::ADAMW_WEIGHT_DECAY.into(),
        ),
        ("TrainSpec/properties/adam_beta1", ds::ADAMW_BETAS[0].into()),
        ("TrainSpec/properties/adam_beta2", ds::ADAMW_BETAS[1].into()),
        ("TrainSpec/properties/adam_epsilon", ds::ADAMW_EPS.into()),
        ("TrainSpec/properties/momentum", ds::SGD_MOMENTUM.into()),
        ("TrainSpec/properties/max_grad_norm", ds::GRAD_CLIP.into()),
    ];
    for (at, default) in filled {
        if let Some(prop) = value
            .pointer_mut(&format!("/$defs/{at}"))
            .and_then(|p| p.as_object_mut())
        {
            prop.insert("default".into(), default);
        }
    }
}

/// The reader's ranges on each key: `minimum` (or `exclusiveMinimum`) and `maximum`.
fn add_ranges(value: &mut serde_json::Value) {
    for (def, key, min, max) in READER_RANGES {
        if let Some(prop) = value
            .pointer_mut(&format!("/$defs/{def}/properties/{key}"))
            .and_then(|p| p.as_object_mut())
        {
            let number = |x: f64| {
                if x.fract() == 0.0 && x.abs() < 9e15 {
                    serde_json::json!(x as i64)
                } else {
                    serde_json::json!(x)
                }
            };
            let above = READER_ABOVE.contains(&(*def, *key));
            let lower = if above { "exclusiveMinimum" } else { "minimum" };
            prop.insert(lower.into(), number(*min));
            prop.insert("maximum".into(), number(*max));
        }
    }
}

/// Keys the reader refuses together: an eval table that both holds out a share and names a
/// dataset of its own.
fn add_exclusions(value: &mut serde_json::Value) {
    if let Some(eval) = value
        .pointer_mut("/$defs/EvalSpec")
        .and_then(|p| p.as_object_mut())
    {
        eval.insert(
            "not".into(),
            serde_json::json!({ "required": ["holdout", "dataset"] }),
        );
    }
}

/// The schema as pretty JSON text.
pub fn json_schema_text() -> String {
    serde_json::to_string_pretty(&json_schema()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use crate::Lang;
    use crate::schema_doc::*;

    /// Every key of every table has an English description (from the types), a Chinese one
    /// and an example, and the table names no key the schema does not have.
    #[test]
    fn every_key_is_documented_in_both_languages() {
        let schema = json_schema();
        let mut seen = 0;
        for (def, _) in TABLES {
            let props = node(&schema, def)["properties"].as_object().unwrap();
            for (key, prop) in props {
                let en = prop["description"]
                    .as_str()
                    .or_else(|| target(&schema, prop)["description"].as_str());
                assert!(
                    en.is_some_and(|d| !d.is_empty()),
                    "{def}.{key}: no description"
                );
                let (zh, example) = key_doc(def, key).unwrap_or_else(|| panic!("{def}.{key}"));
                assert!(
                    !zh.is_empty() && example_json(example).is_some(),
                    "{def}.{key}"
                );
                seen += 1;
            }
        }
        assert_eq!(
            seen,
            KEY_DOCS.len(),
            "KEY_DOCS names a key the schema lacks"
        );
    }

    #[test]
    fn the_reference_has_a_row_per_key_with_its_default() {
        let en = reference_markdown(&json_schema(), Lang::En);
        assert!(
            en.contains("| `micro_batch` | integer 1–65536 | `1` | `4` |"),
            "{en}"
        );
        assert!(
            en.contains("| `card` | one of `a100-40g`, `a100-80g`"),
            "{en}"
        );
        // The defaults the reader fills in, from the same constants.
        for row in [
            "| `lora_rank` | integer 1–4096 | `16` |",
            "| `time_limit` | string | `\"24h\"` |",
            "| `cards_per_node` | integer 1–64 | `1` |",
            "| `nodes` | integer 1–4096 | `1` |",
        ] {
            assert!(en.contains(row), "{row} in\n{en}");
        }
        assert!(
            en.contains("| `lora_alpha` | integer 1–65536 | not set |"),
            "{en}"
        );
        let zh = reference_markdown(&json_schema(), Lang::Zh);
        assert!(
            zh.contains("| `zero_stage` | 整数 0–3 | `0` | `3` | DeepSpeed ZeRO 阶段"),
            "{zh}"
        );
        assert_eq!(en.matches("\n| `").count(), KEY_DOCS.len() - 9);
    }

    use super::*;
    use crate::parse;

    fn properties(schema: &serde_json::Value, def: Option<&str>) -> Vec<String> {
        let node = match def {
            None => schema,
            Some(d) => &schema["$defs"][d],
        };
        let mut keys: Vec<String> = node["properties"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        keys
    }

    fn sorted(keys: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        v.sort();
        v
    }

    /// Every table the schema marks required keys in is one the reader's list speaks for, so a
    /// new table cannot bring schemars' "everything is required" back.
    #[test]
    fn required_keys_are_the_readers() {
        let s = json_schema();
        let named: Vec<&str> = READER_REQUIRED.iter().map(|(d, _)| *d).collect();
        for (def, node) in s["$defs"].as_object().into_iter().flatten() {
            if node["type"] == "object" && node.get("required").is_some() {
                assert!(
                    named.contains(&def.as_str()),
                    "{def} has required keys of its own"
                );
            }
        }
        assert_eq!(s["$defs"]["TrainSpec"].get("required"), None);
        for (def, key, _, _) in READER_RANGES {
            let prop = &s["$defs"][def]["properties"][key];
            let lower = if READER_ABOVE.contains(&(*def, *key)) {
                "exclusiveMinimum"
            } else {
                "minimum"
            };
            assert!(
                prop[lower].is_number() && prop["maximum"].is_number(),
                "{def}.{key} is not in the schema"
            );
        }
        assert_eq!(
            s["$defs"]["ResourcesSpec"]["required"],
            serde_json::json!(["card"])
        );
    }

    /// The reader's key lists and the serde types (hence the schema) never drift apart.
    #[test]
    fn reader_keys_match_schema() {
        let s = json_schema();
        assert_eq!(properties(&s, None), sorted(parse::ROOT_KEYS));
        assert_eq!(properties(&s, Some("DataSpec")), sorted(parse::DATA_KEYS));
        assert_eq!(properties(&s, Some("TrainSpec")), sorted(parse::TRAIN_KEYS));
        assert_eq!(
            properties(&s, Some("ParallelSpec")),
            sorted(parse::PARALLEL_KEYS)
        );
        assert_eq!(
            properties(&s, Some("ResourcesSpec")),
            sorted(parse::RESOURCES_KEYS)
        );
        assert_eq!(
            properties(&s, Some("EstimateSpec")),
            sorted(parse::ESTIMATE_KEYS)
        );
        assert_eq!(
            properties(&s, Some("ZeroTuning")),
            sorted(crate::zero_tuning::ZERO_TUNING_KEYS)
        );
        let mut model = properties(&s, Some("CustomModel"));
        model.push("id".into());
        model.sort();
        assert_eq!(model, sorted(parse::MODEL_KEYS));
    }

    /// What a client reads from the served text is the schema itself: every number survives
    /// serde_json's own parser (1e-30, for one, does not).
    #[test]
    fn the_schema_survives_a_json_round_trip() {
        let back: serde_json::Value = serde_json::from_str(&json_schema_text()).unwrap();
        assert_eq!(back, json_schema());
    }

    #[test]
    fn schema_snapshot() {
        expect_test::expect_file!["../schema/jobspec.schema.json"]
            .assert_eq(&(json_schema_text() + "\n"));
    }
}
