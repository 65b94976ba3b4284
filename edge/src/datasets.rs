//! An account's datasets, decided without the runtime: where one lives in R2, whether a
//! declaration may be stored, and the quota's refusal. The handlers are `worker/datasets.rs`;
//! the wire types are `api::datasets`, and the part arithmetic the artifacts'.

use crate::artifacts::check_sha256;
use crate::error::{ApiError, ErrorCode};
use api::NewDataset;
use api::datasets::{MAX_COUNT, file_name_problem, is_dataset_id};

/// The formats a dataset may hold: datacheck's names.
pub const FORMATS: [&str; 4] = ["chat", "alpaca", "prompt_completion", "text"];

/// The R2 key of an account's dataset: one object per content.
pub fn object_key(user_id: &str, sha256: &str) -> String {
    format!("datasets/{user_id}/{sha256}")
}

/// A dataset id from a URL path segment, or 404: a string of another shape names no dataset.
pub fn parse_id(segment: &str) -> Result<String, ApiError> {
    if is_dataset_id(segment) {
        Ok(segment.to_string())
    } else {
        Err(ApiError::not_found(format!(
            "no dataset {:?}: a dataset id is ds_ and 32 hex digits, as `onramp datasets list` shows",
            segment.chars().take(80).collect::<String>()
        )))
    }
}

/// Refuses a declaration that cannot be stored, naming its field.
pub fn check_declaration(d: &NewDataset) -> Result<(), ApiError> {
    let field =
        |name: &str, why: String| Err(ApiError::new(ErrorCode::InvalidField, why).with_field(name));
    if let Some(why) = file_name_problem(&d.name) {
        return field("name", why);
    }
    check_sha256(&d.sha256)?;
    if d.size == 0 {
        return field("size", "an empty file holds nothing to train on".into());
    }
    if !FORMATS.contains(&d.format.as_str()) {
        return field(
            "format",
            format!(
                "format {:?} is none of {}: it is what `onramp datasets check` found",
                d.format.chars().take(40).collect::<String>(),
                FORMATS.join(", ")
            ),
        );
    }
    for (name, v) in [("examples", d.examples), ("tokens", d.tokens)] {
        if !(1..=MAX_COUNT).contains(&v) {
            return field(
                name,
                format!("{name} must be from 1 to {MAX_COUNT}; it is {v}"),
            );
        }
    }
    Ok(())
}

/// Refuses an upload of `asked` bytes when the account's datasets (`used`, uploads under way
/// included) would pass `quota`: 409 `limit_reached`, naming the quota and what to delete.
pub fn check_quota(used: u64, asked: u64, quota: u64) -> Result<(), ApiError> {
    if used.checked_add(asked).is_some_and(|total| total <= quota) {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::LimitReached,
        format!(
            "the account's dataset quota is {quota} bytes and {used} are in use, so {asked} more do not fit; \
             delete datasets you no longer need (onramp datasets rm ID) or ask the operator for a larger quota"
        ),
    )
    .with_details(serde_json::json!({
        "limit": "dataset_bytes",
        "quota_bytes": quota,
        "used_bytes": used,
        "asked_bytes": asked,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl() -> NewDataset {
        NewDataset {
            name: "mine.jsonl".into(),
            size: 10,
            sha256: "a".repeat(64),
            format: "alpaca".into(),
            examples: 3,
            tokens: 40,
            exact: false,
            part_size: None,
        }
    }

    /// A change to a good declaration, and the field it makes bad.
    type Case = (fn(&mut NewDataset), &'static str);

    #[test]
    fn declarations_are_checked_field_by_field() {
        assert!(check_declaration(&decl()).is_ok());
        let cases: [Case; 6] = [
            (|d| d.name = "../x".into(), "name"),
            (|d| d.sha256 = "A".repeat(64), "sha256"),
            (|d| d.size = 0, "size"),
            (|d| d.format = "csv".into(), "format"),
            (|d| d.examples = 0, "examples"),
            (|d| d.tokens = MAX_COUNT + 1, "tokens"),
        ];
        for (change, field) in cases {
            let mut d = decl();
            change(&mut d);
            let e = check_declaration(&d).unwrap_err();
            assert_eq!(e.status, 400, "{field}");
            assert_eq!(e.details["field"], field, "{e:?}");
        }
    }

    #[test]
    fn ids_other_than_a_datasets_name_nothing_and_the_quota_names_itself() {
        assert!(parse_id(&api::datasets::dataset_id(&"b".repeat(64))).is_ok());
        assert_eq!(parse_id("../etc").unwrap_err().status, 404);
        assert!(check_quota(5, 5, 10).is_ok());
        let e = check_quota(6, 5, 10).unwrap_err();
        assert_eq!(e.status, 409);
        assert!(e.message.contains("dataset quota"), "{e:?}");
        assert!(check_quota(u64::MAX, 1, u64::MAX).is_err());
    }
}
