//! A catalogue model's tokenizer files, as the edge keeps them in its bucket for the browser's
//! dataset check (`GET /api/models/{id}/tokenizer/{name}`; an operator stores them with
//! `PUT /api/admin/models/{id}/tokenizer/{name}`): which model and file a request names, where
//! that file lies in R2, and whether an upload is such a file.

use crate::error::ApiError;
use api::ErrorCode;
use api::datasets::{MAX_TOKENIZER_FILE_BYTES, TOKENIZER_FILES};

/// A tokenizer file a request names: the catalogue's model and one of [`TOKENIZER_FILES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizerFile {
    /// The catalogue's id (a request may write it in another case), or `tok<vocab>` for the
    /// tokenizer of a model of numbers (`api::datasets::vocab_tokenizer_id`).
    pub model: String,
    pub name: &'static str,
}

impl TokenizerFile {
    /// The file `name` of the model `model` names (its catalogue id in any case, its Hugging
    /// Face repo id with the `/` as `%2F`, or `tok<vocab>` for a model of numbers); 404 for a
    /// model or file there is none of.
    pub fn named(model: &str, name: &str) -> Result<TokenizerFile, ApiError> {
        let model = model.replace("%2F", "/").replace("%2f", "/");
        let id = match api::datasets::vocab_of_tokenizer_id(&model) {
            Some(vocab) => api::datasets::vocab_tokenizer_id(vocab),
            None => jobspec::catalog::model(&model)
                .or_else(|| jobspec::catalog::model_by_repo(&model))
                .map(|entry| entry.id.to_string())
                .ok_or_else(|| {
                    ApiError::not_found(format!(
                        "no model {model:?} in the catalogue (`onramp models` lists them), and \
                         not `tok<vocab>`, the tokenizer of a model of numbers"
                    ))
                })?,
        };
        let name = TOKENIZER_FILES
            .iter()
            .find(|f| **f == name)
            .ok_or_else(|| {
                ApiError::not_found(format!(
                    "{name:?} is not a tokenizer file; one of {}",
                    TOKENIZER_FILES.join(", ")
                ))
            })?;
        Ok(TokenizerFile { model: id, name })
    }

    /// Where it lies in the bucket.
    pub fn key(&self) -> String {
        format!("tokenizers/{}/{}", self.model, self.name)
    }

    /// The content type it is served with.
    pub fn content_type(&self) -> &'static str {
        if self.name.ends_with(".json") {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        }
    }

    /// Why `bytes` cannot be this file, if they cannot: a JSON file must be one JSON object,
    /// the template UTF-8 text, and none larger than [`MAX_TOKENIZER_FILE_BYTES`] or empty. (A
    /// `tokenizer.json` that the tokenizers library cannot read is the check's to say: the page
    /// then counts with an estimate and says why.)
    pub fn refuse(&self, bytes: &[u8]) -> Option<ApiError> {
        if bytes.is_empty() {
            return Some(
                ApiError::new(ErrorCode::InvalidField, format!("{} is empty", self.name))
                    .with_field("body"),
            );
        }
        if bytes.len() as u64 > MAX_TOKENIZER_FILE_BYTES {
            return Some(
                ApiError::new(
                    ErrorCode::BodyTooLarge,
                    format!(
                        "{} has {} bytes; a tokenizer file may have at most {MAX_TOKENIZER_FILE_BYTES}",
                        self.name,
                        bytes.len()
                    ),
                )
                .with_details(serde_json::json!({"limit_bytes": MAX_TOKENIZER_FILE_BYTES})),
            );
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            return Some(ApiError::new(
                ErrorCode::InvalidEncoding,
                format!("{} is not UTF-8 text", self.name),
            ));
        };
        if self.name.ends_with(".json") {
            return match serde_json::from_str::<serde_json::Value>(text) {
                Ok(serde_json::Value::Object(_)) => None,
                Ok(_) => Some(
                    ApiError::new(
                        ErrorCode::InvalidField,
                        format!("{} must hold one JSON object", self.name),
                    )
                    .with_field("body"),
                ),
                Err(e) => Some(
                    ApiError::new(
                        ErrorCode::InvalidJson,
                        format!("{} is not JSON: {e}", self.name),
                    )
                    .with_details(serde_json::json!({"line": e.line(), "column": e.column()})),
                ),
            };
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalogue_model_and_a_tokenizer_file_name_a_key() {
        let f = TokenizerFile::named("Qwen2.5-7B", "tokenizer.json").unwrap();
        assert_eq!(f.key(), "tokenizers/qwen2.5-7b/tokenizer.json");
        assert_eq!(f.content_type(), "application/json");
        let by_repo = TokenizerFile::named("Qwen%2FQwen2.5-7B", "chat_template.jinja").unwrap();
        assert_eq!(by_repo.key(), "tokenizers/qwen2.5-7b/chat_template.jinja");
        assert!(by_repo.content_type().starts_with("text/plain"));
        // A model of numbers' tokenizer, by its vocabulary: one key for each.
        let numbers = TokenizerFile::named("TOK512", "tokenizer_config.json").unwrap();
        assert_eq!(numbers.key(), "tokenizers/tok512/tokenizer_config.json");
        for (model, name) in [
            ("tok", "tokenizer.json"),
            ("tok0512", "tokenizer.json"),
            ("tok-1", "tokenizer.json"),
            ("tok5x", "tokenizer.json"),
            ("tok99999999999", "tokenizer.json"),
            ("no-such-model", "tokenizer.json"),
            ("qwen2.5-7b", "config.json"),
            ("qwen2.5-7b", "..%2Ftokenizer.json"),
            ("..", "tokenizer.json"),
            ("qwen2.5-7b", ""),
        ] {
            let e = TokenizerFile::named(model, name).unwrap_err();
            assert_eq!(
                e.envelope().error.code,
                ErrorCode::NotFound,
                "{model} {name}"
            );
        }
    }

    #[test]
    fn an_upload_must_be_what_its_name_says() {
        let json = TokenizerFile::named("qwen2.5-7b", "tokenizer_config.json").unwrap();
        assert!(json.refuse(br#"{"chat_template": "x"}"#).is_none());
        let code = |e: Option<ApiError>| e.map(|e| e.envelope().error.code);
        assert_eq!(code(json.refuse(b"")), Some(ErrorCode::InvalidField));
        assert_eq!(code(json.refuse(b"[1]")), Some(ErrorCode::InvalidField));
        assert_eq!(code(json.refuse(b"{\"a\":")), Some(ErrorCode::InvalidJson));
        assert_eq!(
            code(json.refuse(b"\xff{}")),
            Some(ErrorCode::InvalidEncoding)
        );
        let too_big = vec![b' '; MAX_TOKENIZER_FILE_BYTES as usize + 1];
        assert_eq!(code(json.refuse(&too_big)), Some(ErrorCode::BodyTooLarge));
        let template = TokenizerFile::named("qwen2.5-7b", "chat_template.jinja").unwrap();
        assert!(template.refuse("{{ messages }} 你好".as_bytes()).is_none());
        assert_eq!(
            code(template.refuse(b"\xc3")),
            Some(ErrorCode::InvalidEncoding)
        );
    }
}
