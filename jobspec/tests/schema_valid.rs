//! The spec's JSON Schema (`onramp schema`, for editors) accepts what the validator accepts, as
//! far as a schema can say it, checked with a JSON Schema validator that is not ours (`boon`):
//! every template and valid corpus spec passes, and specs with an unknown key, a missing
//! required key, a value of the wrong type or outside its enum fail.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

use serde_json::Value;

fn compiled() -> (boon::Schemas, boon::SchemaIndex) {
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler
        .add_resource("urn:onramp:spec", jobspec::schema::json_schema())
        .unwrap();
    let index = compiler.compile("urn:onramp:spec", &mut schemas).unwrap();
    (schemas, index)
}

/// A TOML spec as the JSON value an editor checks against the schema.
fn as_json(toml_text: &str) -> Value {
    let table: toml::Table = toml::from_str(toml_text).unwrap();
    serde_json::to_value(table).unwrap()
}

fn specs() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("specs");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_valid_spec_passes_the_schema() {
    let (schemas, index) = compiled();
    let mut checked = 0;
    for (name, text) in specs() {
        let (valid, _) = jobspec::validate_toml(&text);
        if valid.is_none() {
            continue;
        }
        let value = as_json(&text);
        if let Err(e) = schemas.validate(&value, index) {
            panic!("{name} is valid but the schema refuses it:\n{e:#}");
        }
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} valid specs");
}

#[test]
fn what_the_validator_refuses_for_its_shape_the_schema_refuses_too() {
    let (schemas, index) = compiled();
    let base = specs()
        .into_iter()
        .find(|(n, _)| n == "7b-lora-4090.toml")
        .unwrap()
        .1;
    let cases = [
        (
            "an unknown key",
            base.replace("micro_batch", "micro_batches"),
        ),
        (
            "a missing name",
            base.replace("name = \"qwen2.5-7b-lora-4090\"", ""),
        ),
        ("a missing card", base.replace("card = \"rtx-4090\"", "")),
        (
            "a missing dataset",
            base.replace("dataset = \"alpaca-zh\"", ""),
        ),
        (
            "a task outside its enum",
            base.replace("task = \"lora\"", "task = \"dance\""),
        ),
        (
            "a string for a number",
            base.replace("seq_len = 2048", "seq_len = \"long\""),
        ),
        (
            "a zero micro batch",
            base.replace("micro_batch = 2", "micro_batch = 0"),
        ),
        ("an unknown section", format!("{base}\n[extras]\nx = 1\n")),
    ];
    for (what, text) in cases {
        let (valid, _) = jobspec::validate_toml(&text);
        assert!(valid.is_none(), "{what}: the validator accepts it");
        assert!(
            schemas.validate(&as_json(&text), index).is_err(),
            "{what}: the schema accepts it"
        );
    }
}

/// Each key's example (shown by editors, and in the guide's reference) is valid for its key.
#[test]
fn every_example_is_valid_for_its_key() {
    let mut checked = 0;
    for (def, key, _, example) in jobspec::schema_doc::KEY_DOCS {
        let at = if def.is_empty() {
            format!("urn:onramp:spec#/properties/{key}")
        } else {
            format!("urn:onramp:spec#/$defs/{def}/properties/{key}")
        };
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource("urn:onramp:spec", jobspec::schema::json_schema())
            .unwrap();
        let index = compiler.compile(&at, &mut schemas).unwrap();
        let value = jobspec::schema_doc::example_json(example).unwrap();
        if let Err(e) = schemas.validate(&value, index) {
            panic!("{def}.{key}: the example {example} is refused:\n{e:#}");
        }
        checked += 1;
    }
    assert!(checked > 50);
}

/// Generated specs, both ways. A spec is a valid template with random edits, each one driven by
/// the schema's own description of a key: a legal value (its example, its default, an enum word,
/// a number at or inside its range), or — once, at the end — one edit of a kind a schema can
/// describe: an unknown key, a wrong type, a word outside the enum, a number outside the range,
/// a required key left out.
/// - Whatever the validator accepts, the schema accepts (an editor never underlines a good spec).
/// - A spec with a broken shape is refused by both.
/// - The reader (the validator's first stage: keys, types, words, ranges) and the schema refuse
///   exactly the same specs, for any value of any type put at any key.
mod generated {
    use super::*;
    use proptest::prelude::*;
    use proptest::sample::Index;

    #[derive(Clone, Debug)]
    enum Break {
        UnknownKey,
        WrongType,
        OffEnum,
        OffRange,
        Missing,
    }

    /// The table a key lives in, as a path into the TOML (`""` is the top level).
    fn table_of(def: &str) -> Option<&'static str> {
        Some(match def {
            "" => "",
            "CustomModel" => "model",
            "DataSpec" => "data",
            "TrainSpec" => "train",
            "ParallelSpec" => "parallel",
            "ResourcesSpec" => "resources",
            "CheckpointSpec" => "checkpoint",
            "OutputSpec" => "output",
            "EvalSpec" => "eval",
            "EstimateSpec" => "estimate",
            "ZeroTuning" => "deepspeed",
            _ => return None,
        })
    }

    fn prop<'a>(schema: &'a Value, def: &str, key: &str) -> &'a Value {
        if def.is_empty() {
            &schema["properties"][key]
        } else {
            &schema["$defs"][def]["properties"][key]
        }
    }

    fn is_type(p: &Value, kind: &str) -> bool {
        match &p["type"] {
            Value::String(s) => s == kind,
            Value::Array(a) => a.iter().any(|t| t == kind),
            _ => false,
        }
    }

    fn to_toml(v: &Value) -> Option<toml::Value> {
        toml::Value::try_from(v).ok()
    }

    /// The table a key of `def` lives in, made when absent; a custom architecture replaces a
    /// catalogue id when a `[model]` key is edited.
    fn table_mut<'a>(spec: &'a mut toml::Table, def: &str) -> &'a mut toml::Table {
        let name = table_of(def).unwrap();
        if name.is_empty() {
            return spec;
        }
        if !spec.get(name).is_some_and(|v| v.is_table()) {
            let mut t = toml::Table::new();
            if def == "CustomModel" {
                for (d, k, _, ex) in jobspec::schema_doc::KEY_DOCS {
                    if *d == "CustomModel" {
                        let v = jobspec::schema_doc::example_json(ex).unwrap();
                        t.insert(k.to_string(), to_toml(&v).unwrap());
                    }
                }
            }
            spec.insert(name.to_string(), toml::Value::Table(t));
        }
        spec.get_mut(name).and_then(|v| v.as_table_mut()).unwrap()
    }

    /// A legal value for a key, picked by `pick` among its example, its default, its enum words
    /// and the ends and middle of its range.
    fn legal(schema: &Value, def: &str, key: &str, pick: Index) -> Option<toml::Value> {
        let p = prop(schema, def, key);
        let mut options: Vec<Value> = p["examples"].as_array().cloned().unwrap_or_default();
        options.extend(p.get("default").cloned());
        options.extend(
            jobspec::schema_doc::enum_words(schema, p)
                .into_iter()
                .map(Value::from),
        );
        if let (Some(lo), Some(hi)) = (p["minimum"].as_f64(), p["maximum"].as_f64()) {
            if is_type(p, "integer") {
                let (lo, hi) = (lo as i64, hi as i64);
                options.extend([lo, hi, lo + (hi - lo) / 3].map(Value::from));
            } else {
                options.extend([lo, hi, (lo + hi) / 2.0].map(Value::from));
            }
        }
        let v = options.get(pick.index(options.len().max(1)))?;
        to_toml(v)
    }

    /// A value of any type and size, whatever the key: the reader and the schema must agree on
    /// it.
    fn wild(pick: Index) -> toml::Value {
        let pool = [
            toml::Value::Integer(-1),
            toml::Value::Integer(0),
            toml::Value::Integer(1),
            toml::Value::Integer(3),
            toml::Value::Integer(4),
            toml::Value::Integer(65),
            toml::Value::Integer(256),
            toml::Value::Integer(200_000),
            toml::Value::Integer(i64::MAX),
            toml::Value::Float(0.5),
            toml::Value::Float(1e-9),
            toml::Value::Float(11.0),
            toml::Value::Float(2e6),
            toml::Value::String(String::new()),
            toml::Value::String("full".into()),
            toml::Value::String("cpu".into()),
            toml::Value::String("0h".into()),
            toml::Value::String("1h 30m".into()),
            toml::Value::String("1:30:00".into()),
            toml::Value::String("1-12:00:00".into()),
            toml::Value::String("24".into()),
            toml::Value::String("RTX-4090".into()),
            toml::Value::String("rtx 4090".into()),
            toml::Value::Boolean(true),
            toml::Value::Array(vec![]),
            toml::Value::Array(vec![toml::Value::String("tensorboard".into())]),
            toml::Value::Array(vec![toml::Value::Integer(1)]),
        ];
        pool[pick.index(pool.len())].clone()
    }

    /// One edit that breaks the shape, or None when this key cannot carry that kind.
    fn broken(schema: &Value, def: &str, key: &str, kind: &Break) -> Option<toml::Value> {
        let p = prop(schema, def, key);
        match kind {
            Break::WrongType if is_type(p, "integer") || is_type(p, "number") => {
                Some(toml::Value::String("many".into()))
            }
            Break::WrongType if is_type(p, "boolean") => Some(toml::Value::String("yes".into())),
            Break::WrongType if is_type(p, "string") => Some(toml::Value::Integer(7)),
            Break::WrongType if is_type(p, "array") => Some(toml::Value::Integer(7)),
            Break::OffEnum if !jobspec::schema_doc::enum_words(schema, p).is_empty() => {
                Some(toml::Value::String("no-such-word".into()))
            }
            Break::OffRange => {
                let (lo, hi) = (p["minimum"].as_f64()?, p["maximum"].as_f64()?);
                if is_type(p, "integer") {
                    Some(toml::Value::Integer(hi as i64 + 1))
                } else if lo > 0.0 {
                    Some(toml::Value::Float(lo / 2.0))
                } else {
                    Some(toml::Value::Float(hi * 2.0))
                }
            }
            _ => None,
        }
    }

    fn keys() -> Vec<(&'static str, &'static str)> {
        jobspec::schema_doc::KEY_DOCS
            .iter()
            .filter(|(d, k, _, _)| {
                !(d.is_empty()
                    && matches!(
                        *k,
                        "data"
                            | "train"
                            | "parallel"
                            | "resources"
                            | "estimate"
                            | "checkpoint"
                            | "output"
                            | "model"
                    ))
            })
            .map(|(d, k, _, _)| (*d, *k))
            .collect()
    }

    fn valid_templates() -> Vec<String> {
        specs()
            .into_iter()
            .filter(|(_, t)| jobspec::validate_toml(t).0.is_some())
            .map(|(_, t)| t)
            .collect()
    }

    fn breaks() -> impl Strategy<Value = Option<(Break, Index)>> {
        prop::option::of((
            prop_oneof![
                Just(Break::UnknownKey),
                Just(Break::WrongType),
                Just(Break::OffEnum),
                Just(Break::OffRange),
                Just(Break::Missing),
            ],
            any::<Index>(),
        ))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256)
        ))]
        #[test]
        fn schema_and_validator_agree_on_generated_specs(
            base in any::<Index>(),
            edits in prop::collection::vec((any::<Index>(), any::<Index>(), any::<bool>()), 0..5),
            brk in breaks(),
        ) {
            let schema = jobspec::schema::json_schema();
            let (schemas, index) = compiled();
            let templates = valid_templates();
            let mut spec: toml::Table =
                toml::from_str(&templates[base.index(templates.len())]).unwrap();
            let keys = keys();
            for (k, pick, wide) in edits {
                let (def, key) = keys[k.index(keys.len())];
                let value = if wide { Some(wild(pick)) } else { legal(&schema, def, key, pick) };
                if let Some(v) = value {
                    table_mut(&mut spec, def).insert(key.to_string(), v);
                }
            }
            let mut what = None;
            if let Some((kind, at)) = brk {
                let (def, key) = keys[at.index(keys.len())];
                match kind {
                    Break::UnknownKey => {
                        table_mut(&mut spec, def).insert(format!("{key}_x"), toml::Value::Integer(1));
                        what = Some(format!("unknown key {key}_x in {def}"));
                    }
                    Break::Missing => {
                        let required = if def.is_empty() {
                            &schema["required"]
                        } else {
                            &schema["$defs"][def]["required"]
                        };
                        if required.as_array().is_some_and(|r| r.iter().any(|x| x == key))
                            && (def != "CustomModel" || spec.get("model").is_some_and(|m| m.is_table()))
                        {
                            table_mut(&mut spec, def).remove(key);
                            what = Some(format!("{def}.{key} left out"));
                        }
                    }
                    kind => {
                        if let Some(v) = broken(&schema, def, key, &kind) {
                            table_mut(&mut spec, def).insert(key.to_string(), v);
                            what = Some(format!("{kind:?} at {def}.{key}"));
                        }
                    }
                }
            }
            let text = toml::to_string(&spec).unwrap();
            let (valid, diags) = jobspec::validate_toml(&text);
            let by_schema = schemas.validate(&as_json(&text), index).map_err(|e| format!("{e:#}"));
            // The reader is the part of the validator that a schema describes (keys, types,
            // words, ranges); the rules after it (does the card exist, do the keys agree) are
            // beyond any schema.
            let (_, read) = jobspec::parse_text(&text, jobspec::Format::Toml);
            let refused: Vec<String> = read
                .iter()
                .filter(|d| d.is_error())
                .map(|d| format!("{}: {}", d.path, d.message.en))
                .collect();
            prop_assert_eq!(
                refused.is_empty(),
                by_schema.is_ok(),
                "the reader says {:?}, the schema says {:?}\n{}",
                refused,
                by_schema,
                text
            );
            if valid.is_some() {
                prop_assert!(by_schema.is_ok(), "valid, yet the schema refuses:\n{text}\n{by_schema:?}");
            }
            if let Some(what) = what {
                prop_assert!(valid.is_none(), "{what}: the validator accepts\n{text}");
                prop_assert!(by_schema.is_err(), "{what}: the schema accepts\n{text}\n{diags:?}");
            }
        }
    }
}
