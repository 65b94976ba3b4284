//! JSON Schema of the job spec, generated from the types, for editors (TOML via Taplo/Even Better
//! TOML, JSON via `$schema`).

use crate::spec::JobSpec;

/// The JSON Schema (draft 2020-12) of a job spec.
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(JobSpec);
    serde_json::to_value(&schema).unwrap_or(serde_json::Value::Null)
}

/// The schema as pretty JSON text.
pub fn json_schema_text() -> String {
    serde_json::to_string_pretty(&json_schema()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
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
        let mut model = properties(&s, Some("CustomModel"));
        model.push("id".into());
        model.sort();
        assert_eq!(model, sorted(parse::MODEL_KEYS));
    }

    #[test]
    fn schema_snapshot() {
        expect_test::expect_file!["../schema/jobspec.schema.json"]
            .assert_eq(&(json_schema_text() + "\n"));
    }
}
