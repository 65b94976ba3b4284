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

/// The largest first part the edge reads whole to re-check it (`recheck`): the app and the CLI
/// send parts of 8 MiB; a larger first part goes to R2 unread.
pub const RECHECK_BYTES: u64 = 16 << 20;

/// A dataset's part size, as [`api::artifacts::choose_part_size`] chooses one, at most
/// [`RECHECK_BYTES`]: a first part any larger would reach R2 unread, its format and counts
/// taken on trust.
pub fn part_size(size: u64, asked: Option<u64>) -> Result<u64, String> {
    let part = api::artifacts::choose_part_size(size, asked)?;
    if part > RECHECK_BYTES {
        return Err(format!(
            "a dataset is sent in parts of at most {RECHECK_BYTES} bytes (16 MiB), so that the edge \
             can check its first part; part_size is {part}{}",
            if asked.is_some_and(|a| a <= RECHECK_BYTES) {
                " (the most a file of this size needs)"
            } else {
                ""
            }
        ));
    }
    Ok(part)
}

/// What a client declared of a file, which the edge re-checks against what arrives.
#[derive(Debug, Clone, Copy)]
pub struct Declared<'a> {
    pub name: &'a str,
    pub format: &'a str,
    pub examples: u64,
    pub sha256: &'a str,
}

/// Re-checks an upload's first part (`whole`: the part is the whole file) against what the client
/// declared from its own check, by the same checker without the model's tokenizer, which the edge
/// does not hold. A record's structure does not depend on the tokenizer, so the file must hold
/// the declared format, and (whole) at least the declared examples of a padded format, and the
/// declared SHA-256. Refused: 400 naming the declaration's field.
pub fn recheck(d: Declared<'_>, bytes: &[u8], whole: bool) -> Result<(), ApiError> {
    let field =
        |name: &str, why: String| Err(ApiError::new(ErrorCode::InvalidField, why).with_field(name));
    let estimate = datacheck::Estimate {
        why: "the edge re-reads the structure only".into(),
    };
    let mut c = datacheck::Checker::new(Some(d.name), estimate, u32::MAX);
    c.push(bytes);
    let (format, records) = if whole {
        let r = c.finish();
        (r.format, Some(r.records))
    } else {
        (c.format(), None)
    };
    match format {
        Some(f) if f.name() != d.format => {
            return field(
                "format",
                format!(
                    "the file holds {} records, not the declared {}: declare what `onramp datasets check` finds",
                    f.name(),
                    d.format
                ),
            );
        }
        None if whole => {
            return field(
                "format",
                "the file holds no record that can be trained on: `onramp datasets check` names its bad lines".into(),
            );
        }
        _ => {}
    }
    if let Some(records) = records
        && d.format != "text"
        && d.examples > records
    {
        return field(
            "examples",
            format!(
                "{} examples were declared, but the file holds {records} {} records",
                d.examples, d.format
            ),
        );
    }
    if whole {
        let got = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
        if got != d.sha256 {
            return field(
                "sha256",
                format!(
                    "the file's SHA-256 is {got}, not the declared {}: it changed after it was checked, or the declaration is not of this file",
                    d.sha256
                ),
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

    #[test]
    fn a_datasets_parts_are_small_enough_for_its_first_to_be_checked() {
        assert_eq!(part_size(100 << 20, None), Ok(8 << 20));
        assert_eq!(part_size(100 << 20, Some(16 << 20)), Ok(16 << 20));
        let e = part_size(100 << 20, Some(17 << 20)).unwrap_err();
        assert!(e.contains("at most 16777216 bytes"), "{e}");
        // A file so large that its parts would pass 16 MiB is refused too.
        assert!(part_size(200 << 30, None).is_err());
    }

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

    /// The field a re-check refuses, with 400.
    fn refused(d: Declared<'_>, bytes: &[u8], whole: bool) -> String {
        let e = recheck(d, bytes, whole).unwrap_err();
        assert_eq!(e.status, 400, "{e:?}");
        e.details["field"].as_str().unwrap_or_default().to_string()
    }

    #[test]
    fn the_first_part_is_re_read_against_the_declaration() {
        let file = "{\"instruction\": \"a\", \"output\": \"b\"}\n".repeat(3);
        let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(file.as_bytes()));
        let d = Declared {
            name: "mine.jsonl",
            format: "alpaca",
            examples: 3,
            sha256: &sha,
        };
        assert!(recheck(d, file.as_bytes(), true).is_ok());
        // Fewer examples may be declared (the tokenizer may cut some), never more.
        assert!(recheck(Declared { examples: 2, ..d }, file.as_bytes(), true).is_ok());
        assert_eq!(
            refused(Declared { examples: 4, ..d }, file.as_bytes(), true),
            "examples"
        );
        assert_eq!(
            refused(
                Declared {
                    format: "chat",
                    ..d
                },
                file.as_bytes(),
                true
            ),
            "format"
        );
        assert_eq!(
            refused(
                Declared {
                    sha256: &"0".repeat(64),
                    ..d
                },
                file.as_bytes(),
                true
            ),
            "sha256"
        );
        assert_eq!(refused(d, b"[1, 2]\n", true), "format");
    }

    #[test]
    fn a_first_part_of_many_is_re_read_for_its_format() {
        let file = "{\"instruction\": \"a\", \"output\": \"b\"}\n".repeat(3);
        let d = Declared {
            name: "mine.jsonl",
            format: "alpaca",
            examples: 3,
            sha256: "x",
        };
        // Its last line cut off; its SHA-256 and counts are the whole file's.
        let part = &file.as_bytes()[..file.len() - 5];
        assert!(
            recheck(
                Declared {
                    examples: 1000,
                    sha256: "x",
                    ..d
                },
                part,
                false
            )
            .is_ok()
        );
        assert_eq!(
            refused(
                Declared {
                    format: "text",
                    ..d
                },
                part,
                false
            ),
            "format"
        );
        // Text: packed sequences depend on the tokenizer; its format is still checked.
        let text = Declared {
            name: "book.txt",
            format: "text",
            examples: 99,
            ..d
        };
        let book = b"once upon a time\n";
        let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(book));
        assert!(
            recheck(
                Declared {
                    sha256: &sha,
                    ..text
                },
                book,
                true
            )
            .is_ok()
        );
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
