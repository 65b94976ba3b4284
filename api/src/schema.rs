//! JSON Schemas of the wire types for the OpenAPI document (JSON Schema 2020-12, as OpenAPI 3.1
//! uses), and a checker of a JSON value against them, for the tests that hold the edge's real
//! answers to the document.
//!
//! The checker covers what schemars emits for our types (`$ref`, `type`, `properties`,
//! `required`, `additionalProperties`, `items`, `enum`, `const`, `oneOf`/`anyOf`/`allOf`,
//! integer `minimum`); anything else in a schema is accepted.

/// The trait of every wire type, for callers that name it in their own bounds.
pub use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value};

/// Where the OpenAPI document keeps named schemas.
pub const COMPONENTS: &str = "#/components/schemas/";

/// Collects the schemas of many types into one set of named components.
pub struct Schemas {
    generator: SchemaGenerator,
}

impl Default for Schemas {
    fn default() -> Self {
        Schemas::new()
    }
}

impl Schemas {
    pub fn new() -> Schemas {
        let settings = SchemaSettings::draft2020_12().with(|s| {
            s.definitions_path = COMPONENTS.into();
        });
        Schemas {
            generator: settings.into_generator(),
        }
    }

    /// The schema of `T`: a `$ref` to its component for named types.
    pub fn of<T: schemars::JsonSchema>(&mut self) -> Value {
        self.generator.subschema_for::<T>().to_value()
    }

    /// Every component referred to so far, by name.
    pub fn into_components(mut self) -> Map<String, Value> {
        self.generator.take_definitions(true)
    }
}

/// Checks `value` against `schema`; `$ref`s are resolved in `document` (the OpenAPI document or
/// any value with the components at [`COMPONENTS`]). The error names the path at fault.
pub fn check(document: &Value, schema: &Value, value: &Value) -> Result<(), String> {
    check_at(document, schema, value, "$", 0)
}

fn resolve<'a>(document: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    document.pointer(pointer)
}

fn type_ok(name: &str, value: &Value) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        _ => true,
    }
}

fn check_at(
    document: &Value,
    schema: &Value,
    value: &Value,
    path: &str,
    depth: usize,
) -> Result<(), String> {
    if depth > 64 {
        return Err(format!("{path}: schema nests too deeply"));
    }
    let schema = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("{path}: no value is allowed here")),
        Value::Object(o) => o,
        _ => return Ok(()),
    };
    let again = |s: &Value, v: &Value, p: &str| check_at(document, s, v, p, depth + 1);
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let target = resolve(document, r).ok_or_else(|| format!("{path}: unresolved {r}"))?;
        again(target, value, path)?;
    }
    check_value(schema, value, path)?;
    check_alternatives(schema, value, path, &again)?;
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (i, v) in list.iter().enumerate() {
            again(items, v, &format!("{path}[{i}]"))?;
        }
    }
    if let Some(object) = value.as_object() {
        check_fields(schema, object, path, &again)?;
    }
    Ok(())
}

/// A schema's own checks of the value: `type`, `enum`, `const` and `minimum`.
fn check_value(schema: &Map<String, Value>, value: &Value, path: &str) -> Result<(), String> {
    match schema.get("type") {
        Some(Value::String(t)) if !type_ok(t, value) => {
            return Err(format!("{path}: expected {t}, got {value}"));
        }
        Some(Value::Array(ts))
            if !ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| type_ok(t, value)) =>
        {
            return Err(format!("{path}: expected one of {ts:?}, got {value}"));
        }
        _ => {}
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        return Err(format!("{path}: {value} is not one of {allowed:?}"));
    }
    if let Some(c) = schema.get("const")
        && c != value
    {
        return Err(format!("{path}: expected {c}, got {value}"));
    }
    if let (Some(min), Some(n)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) && n < min
    {
        return Err(format!("{path}: {n} is below the minimum {min}"));
    }
    Ok(())
}

/// `allOf` (every one fits), `oneOf` (exactly one) and `anyOf` (at least one).
fn check_alternatives(
    schema: &Map<String, Value>,
    value: &Value,
    path: &str,
    again: &dyn Fn(&Value, &Value, &str) -> Result<(), String>,
) -> Result<(), String> {
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for s in all {
            again(s, value, path)?;
        }
    }
    for (key, exactly_one) in [("oneOf", true), ("anyOf", false)] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let errors: Vec<String> = options
                .iter()
                .filter_map(|s| again(s, value, path).err())
                .collect();
            let passed = options.len() - errors.len();
            if passed == 0 || (exactly_one && passed > 1) {
                return Err(format!(
                    "{path}: {passed} of the {key} alternatives fit ({})",
                    errors.join("; ")
                ));
            }
        }
    }
    Ok(())
}

/// An object's `required` fields, and each field against its `properties` schema or else
/// `additionalProperties`.
fn check_fields(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    path: &str,
    again: &dyn Fn(&Value, &Value, &str) -> Result<(), String>,
) -> Result<(), String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                return Err(format!("{path}: missing field {name:?}"));
            }
        }
    }
    for (name, v) in object {
        let at = format!("{path}.{name}");
        match properties.and_then(|p| p.get(name)) {
            Some(s) => again(s, v, &at)?,
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    return Err(format!("{path}: unexpected field {name:?}"));
                }
                Some(s @ Value::Object(_)) => again(s, v, &at)?,
                _ => {}
            },
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorEnvelope, Job, JobState};
    use serde_json::json;

    fn document_for<T: schemars::JsonSchema>() -> (Value, Value) {
        let mut s = Schemas::new();
        let schema = s.of::<T>();
        let doc = json!({"components": {"schemas": s.into_components()}});
        (doc, schema)
    }

    #[test]
    fn every_sample_fits_its_own_schema() {
        for sample in crate::samples::all() {
            let (doc, schema) = (sample.schema)();
            assert_eq!(
                check(&doc, &schema, &sample.json),
                Ok(()),
                "{}",
                sample.name
            );
        }
    }

    #[test]
    fn the_checker_refuses_what_does_not_fit() {
        let (doc, schema) = document_for::<Job>();
        let mut job = serde_json::to_value(crate::samples::job()).unwrap_or_default();
        assert_eq!(check(&doc, &schema, &job), Ok(()));
        job["state"] = json!("flying");
        assert!(check(&doc, &schema, &job).unwrap_err().contains("$.state"));
        job["state"] = json!(JobState::Running);
        job["cards"] = json!("two");
        assert!(check(&doc, &schema, &job).unwrap_err().contains("$.cards"));
        job.as_object_mut().map(|o| o.remove("cards"));
        assert!(check(&doc, &schema, &job).unwrap_err().contains("cards"));
        let (doc, schema) = document_for::<ErrorEnvelope>();
        let wrong = json!({"error": {"code": "no_such_code", "message": "m", "details": null}});
        assert!(check(&doc, &schema, &wrong).is_err());
        let right = json!({"error": {"code": "backend_refused", "message": "m", "details": null}});
        assert_eq!(check(&doc, &schema, &right), Ok(()));
    }
}
