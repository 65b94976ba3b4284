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
