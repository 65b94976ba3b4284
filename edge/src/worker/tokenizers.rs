//! A catalogue model's tokenizer files in the bucket (`crate::tokenizer_files`): served to
//! anyone, since the page checks a dataset before its user has an account, and stored by the
//! operator from the model's Hugging Face folder.

use super::access::Admin;
use super::db::store_limit;
use super::deadline::within;
use super::http::{self, ApiResult};
use super::objects::{bucket, r2};
use crate::error::ApiError;
use crate::tokenizer_files::TokenizerFile;
use api::TokenizerFileStored;
use sha2::{Digest, Sha256};
use worker::{Env, Request, Response};

/// `GET /api/models/{id}/tokenizer/{name}`: the file, or 404 saying the operator has not
/// stored it (the page then counts with an estimate and says why).
pub async fn get(env: &Env, model: &str, name: &str) -> ApiResult<Response> {
    let file = TokenizerFile::named(model, name)?;
    let b = bucket(env)?;
    let key = file.key();
    let bytes = within("the bucket", store_limit(env), async {
        match b.get(&key).execute().await.map_err(r2("get"))? {
            Some(object) => match object.body() {
                Some(body) => body.bytes().await.map(Some).map_err(r2("read")),
                None => Ok(Some(Vec::new())),
            },
            None => Ok(None),
        }
    })
    .await?
    .ok_or_else(|| {
        ApiError::not_found(format!(
            "the tokenizer of {} has no {} on this Onramp (an operator stores it with PUT /api/admin/models/{}/tokenizer/{})",
            file.model, file.name, file.model, file.name
        ))
    })?;
    let mut resp = Response::from_bytes(bytes).map_err(http::internal("response"))?;
    let h = resp.headers_mut();
    let set = |k: &str, v: &str| h.set(k, v).map_err(http::internal("header"));
    set("content-type", file.content_type())?;
    // The same for everyone, and replaced seldom: a browser may keep it a while.
    set("cache-control", "public, max-age=3600")?;
    Ok(resp)
}

/// `PUT /api/admin/models/{id}/tokenizer/{name}`: stores the body as that file (the entry has
/// read it whole, up to `api::datasets::MAX_TOKENIZER_FILE_BYTES`).
pub async fn put(
    _: Admin,
    mut req: Request,
    env: &Env,
    model: &str,
    name: &str,
) -> ApiResult<TokenizerFileStored> {
    let file = TokenizerFile::named(model, name)?;
    let bytes = req.bytes().await.map_err(http::internal("request body"))?;
    if let Some(refusal) = file.refuse(&bytes) {
        return Err(refusal);
    }
    let sha256 = format!("{:x}", Sha256::digest(&bytes));
    let size = bytes.len() as u64;
    let b = bucket(env)?;
    let key = file.key();
    within("the bucket", store_limit(env), async {
        b.put(&key, bytes).execute().await.map_err(r2("put"))
    })
    .await?;
    Ok(TokenizerFileStored {
        model: file.model.clone(),
        name: file.name.to_string(),
        size,
        sha256,
    })
}
