//! An account's datasets in R2 (`ARTIFACTS`, under `datasets/`): the owner declares a file with
//! the counts the checker found, uploads it in parts (each streamed on to R2 as it arrives), and
//! lists and deletes them; a job fetches the one its spec names with its own token. A dataset is
//! content-addressed within its account: the same file again is the stored one, at once. The
//! decisions are `crate::datasets`'s and the artifacts' part rules, tested natively.

use super::access::{JobCaller, User};
use super::db::{self, n, now_ms, s};
use super::http::{self, ApiResult};
use super::objects::{self, Object, bucket, holds, r2, serve_object};
use crate::artifacts::{UploadState, check_part};
use crate::datasets::{
    Declared, RECHECK_BYTES, check_declaration, check_quota, object_key, parse_id, recheck,
};
use crate::error::{ApiError, ErrorCode};
use crate::time::format_rfc3339_ms;
use crate::wire::{self, SpecText};
use api::artifacts::part_count;
use api::datasets::{dataset_id, is_dataset_id};
use api::{Dataset, DatasetDeleted, DatasetList, NewDataset};
use serde::Deserialize;
use worker::{Env, Request, Response};

/// Bytes an account's datasets may take when `DATASET_QUOTA_BYTES` is not set (10 GiB).
const QUOTA_BYTES: i64 = 10 << 30;

#[derive(Debug, Deserialize)]
struct Row {
    user_id: String,
    id: String,
    name: String,
    size: i64,
    sha256: String,
    format: String,
    examples: i64,
    tokens: i64,
    exact: i64,
    part_size: i64,
    parts: i64,
    upload_id: Option<String>,
    state: String,
    created_at: i64,
}

const ROW: &str = "user_id, id, name, size, sha256, format, examples, tokens, exact, part_size, \
                   parts, upload_id, state, created_at";

impl Row {
    fn stored(&self) -> bool {
        self.state == "stored"
    }

    fn wire(&self, received: u64) -> Dataset {
        Dataset {
            id: self.id.clone(),
            name: self.name.clone(),
            size: self.size as u64,
            sha256: self.sha256.clone(),
            format: self.format.clone(),
            examples: self.examples as u64,
            tokens: self.tokens as u64,
            exact: self.exact != 0,
            part_size: self.part_size as u64,
            parts: self.parts as u64,
            received: if self.stored() {
                self.parts as u64
            } else {
                received
            },
            complete: self.stored(),
            created_at: format_rfc3339_ms(self.created_at),
        }
    }
}

fn quota(env: &Env) -> u64 {
    db::setting(env, "DATASET_QUOTA_BYTES", QUOTA_BYTES).max(0) as u64
}

async fn row(env: &Env, user_id: &str, id: &str) -> ApiResult<Option<Row>> {
    db::first(
        env,
        &format!("SELECT {ROW} FROM datasets WHERE user_id = ? AND id = ?"),
        &[s(user_id), s(id)],
    )
    .await
}

/// The owner's dataset, stored or under way, or 404 (another account's id is not found either).
async fn owned(user: &User, env: &Env, segment: &str) -> ApiResult<Row> {
    let id = parse_id(segment)?;
    row(env, &user.id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no dataset {id} in this account")))
}

/// How many parts arrived in order: parts 1..=k are all stored.
async fn received(env: &Env, r: &Row) -> ApiResult<u64> {
    #[derive(Deserialize)]
    struct Part {
        part: i64,
    }
    let parts: Vec<Part> = db::all(
        env,
        "SELECT part FROM dataset_parts WHERE user_id = ? AND id = ? ORDER BY part",
        &[s(&r.user_id), s(&r.id)],
    )
    .await?;
    Ok(parts
        .iter()
        .zip(1i64..)
        .take_while(|(p, want)| p.part == *want)
        .count() as u64)
}

/// The bytes an account's datasets take, uploads under way included.
async fn used_bytes(env: &Env, user_id: &str) -> ApiResult<u64> {
    let sql = "SELECT SUM(size) AS total FROM datasets WHERE user_id = ?";
    db::total(env, sql, &[s(user_id)]).await
}

/// Forgets a dataset: its R2 object or unfinished upload, its parts and its row.
async fn forget(env: &Env, r: &Row) -> ApiResult<()> {
    let b = bucket(env)?;
    let key = object_key(&r.user_id, &r.sha256);
    match (&r.upload_id, r.stored()) {
        (Some(upload), false) => {
            if let Ok(u) = b.resume_multipart_upload(&key, upload) {
                let _ = u.abort().await;
            }
        }
        _ => b.delete(&key).await.map_err(r2("delete"))?,
    }
    for table in ["dataset_parts", "datasets"] {
        db::run(
            env,
            &format!("DELETE FROM {table} WHERE user_id = ? AND id = ?"),
            &[s(&r.user_id), s(&r.id)],
        )
        .await?;
    }
    Ok(())
}

/// `POST /api/datasets`: declares a file. A file this account already stored is answered at
/// once, complete; the same declaration of one under way resumes it (which parts arrived);
/// another declaration of the same content starts it over.
pub async fn create(user: User, mut req: Request, env: &Env) -> ApiResult<Dataset> {
    if !user.email_verified {
        return Err(ApiError::new(
            ErrorCode::EmailNotVerified,
            "verify the account's email first (the link is in the mail sent at sign-up): only a \
             verified account can upload datasets",
        ));
    }
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let d: NewDataset = wire::parse_json(&body)?;
    check_declaration(&d)?;
    let part_size = crate::datasets::part_size(d.size, d.part_size)
        .map_err(|m| ApiError::new(ErrorCode::InvalidField, m).with_field("part_size"))?;
    let id = dataset_id(&d.sha256);
    if let Some(r) = row(env, &user.id, &id).await? {
        let same = r.sha256 == d.sha256
            && r.size as u64 == d.size
            && d.part_size.is_none_or(|p| p == r.part_size as u64);
        if r.stored() && r.sha256 == d.sha256 {
            return Ok(r.wire(r.parts as u64));
        }
        if same {
            let got = received(env, &r).await?;
            return Ok(r.wire(got));
        }
        forget(env, &r).await?;
    }
    check_quota(used_bytes(env, &user.id).await?, d.size, quota(env))?;
    let key = object_key(&user.id, &d.sha256);
    let b = bucket(env)?;
    let upload = b
        .create_multipart_upload(&key)
        .execute()
        .await
        .map_err(r2("create multipart upload"))?;
    let upload_id = upload.upload_id().await;
    let inserted = db::run(
        env,
        "INSERT INTO datasets (user_id, id, name, size, sha256, format, examples, tokens, exact, \
         part_size, parts, upload_id, state, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'uploading', ?) ON CONFLICT DO NOTHING",
        &[
            s(&user.id),
            s(&id),
            s(&d.name),
            n(d.size as i64),
            s(&d.sha256),
            s(&d.format),
            n(d.examples as i64),
            n(d.tokens as i64),
            n(i64::from(d.exact)),
            n(part_size as i64),
            n(part_count(d.size, part_size) as i64),
            s(&upload_id),
            n(now_ms()),
        ],
    )
    .await?;
    if inserted == 0 {
        // A declaration of the same file at the same moment won: it is the upload.
        let _ = upload.abort().await;
    }
    let r = row(env, &user.id, &id)
        .await?
        .ok_or_else(|| ApiError::internal("dataset row vanished"))?;
    if inserted > 0 {
        // Declarations at the same moment each saw room: together, one past the quota withdraws.
        let total = used_bytes(env, &user.id).await?;
        if let Err(refused) = check_quota(total.saturating_sub(d.size), d.size, quota(env)) {
            forget(env, &r).await?;
            return Err(refused);
        }
    }
    let got = received(env, &r).await?;
    Ok(r.wire(got))
}

/// `PUT /api/datasets/{id}?part=N`: one part, streamed on to R2; the last one completes the
/// dataset. The entry does not buffer this route's body (`routes::streams_body`).
pub async fn put_part(
    user: User,
    mut req: Request,
    env: &Env,
    segment: &str,
) -> ApiResult<Dataset> {
    let r = owned(&user, env, segment).await?;
    let query = req.url().ok();
    let query = query.as_ref().and_then(|u| u.query());
    if !query.is_some_and(|q| q.split('&').any(|kv| kv.starts_with("part="))) {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            "say which part this is: ?part=N, from 1",
        )
        .with_details(serde_json::json!({"parameter": "part"})));
    }
    let part = wire::query_u64(query, "part", 0)?;
    if r.stored() && (1..=r.parts as u64).contains(&part) {
        // The answer to the last part was lost and it was sent again: it is stored.
        return Ok(r.wire(r.parts as u64));
    }
    let got = received(env, &r).await?;
    let state = UploadState {
        size: r.size as u64,
        part_size: r.part_size as u64,
        parts: r.parts as u64,
        received: got,
    };
    let length = http::header(&req, "content-length").and_then(|l| l.trim().parse::<u64>().ok());
    check_part(&state, part, length)?;
    let upload_id = r
        .upload_id
        .as_deref()
        .ok_or_else(|| ApiError::internal("an upload without its id"))?;
    let key = object_key(&r.user_id, &r.sha256);
    let b = bucket(env)?;
    let upload = b
        .resume_multipart_upload(&key, upload_id)
        .map_err(r2("resume upload"))?;
    let data = if part == 1 && length.is_some_and(|l| l <= RECHECK_BYTES) {
        worker::Data::Bytes(first_part(env, &r, &mut req, length, state.parts == 1).await?)
    } else {
        match req.inner().body() {
            Some(stream) if length != Some(0) => worker::Data::ReadableStream(stream),
            _ => worker::Data::Bytes(Vec::new()),
        }
    };
    let uploaded = match upload.upload_part(part as u16, data).await {
        Ok(uploaded) => uploaded,
        Err(e) if crate::artifacts::upload_gone(&e.to_string()) => return expired(env, &r).await,
        Err(e) => return Err(objects::part_not_taken(part, &e)),
    };
    let took = (part, uploaded.etag(), length.unwrap_or(0));
    let recorded = objects::record_part(
        env,
        ("datasets", "dataset_parts"),
        [("user_id", &r.user_id), ("id", &r.id)],
        upload_id,
        (took.0, &took.1, took.2),
    )
    .await?;
    if !recorded {
        // The upload was forgotten meanwhile: answered as one storage ended.
        return expired(env, &r).await;
    }
    let got = got.max(part);
    if got < state.parts {
        return Ok(r.wire(got));
    }
    complete(env, &r, upload).await?;
    let done = row(env, &r.user_id, &r.id)
        .await?
        .ok_or_else(|| ApiError::internal("dataset row vanished"))?;
    Ok(done.wire(state.parts))
}

/// The first part, read whole and re-checked against the declaration (`recheck`; `whole`: it is
/// the whole file). A declaration the file belies is withdrawn, its upload aborted, so that
/// nothing of it stays; the client declares the file again as it is.
async fn first_part(
    env: &Env,
    r: &Row,
    req: &mut Request,
    length: Option<u64>,
    whole: bool,
) -> ApiResult<Vec<u8>> {
    let cut = |why: String| {
        ApiError::new(
            ErrorCode::InvalidPart,
            format!("part 1 did not arrive whole ({why}); send it again"),
        )
        .with_details(serde_json::json!({"part": 1}))
    };
    let bytes = req.bytes().await.map_err(|e| cut(e.to_string()))?;
    if Some(bytes.len() as u64) != length {
        return Err(cut(format!("{} bytes of {length:?}", bytes.len())));
    }
    let declared = Declared {
        name: &r.name,
        format: &r.format,
        examples: r.examples.max(0) as u64,
        sha256: &r.sha256,
    };
    if let Err(mut refused) = recheck(declared, &bytes, whole) {
        forget(env, r).await?;
        refused.message.push_str(
            "; the declaration is withdrawn and nothing of it is kept: check the file and declare it again",
        );
        return Err(refused);
    }
    Ok(bytes)
}

/// R2 no longer knows the upload: `Ok` when another request just completed it, else storage
/// ended it (the bucket's lifecycle), and it is forgotten: declared again, it starts over.
async fn expired(env: &Env, r: &Row) -> ApiResult<Dataset> {
    // Unless declared again meanwhile: that upload is not this one's to forget.
    let mine = row(env, &r.user_id, &r.id)
        .await?
        .is_some_and(|now| !now.stored() && now.upload_id == r.upload_id);
    if mine
        && holds(
            env,
            r.created_at,
            &object_key(&r.user_id, &r.sha256),
            r.size as u64,
        )
        .await?
    {
        mark_stored(env, r).await?;
    } else if mine {
        forget(env, r).await?;
    }
    if let Some(now) = row(env, &r.user_id, &r.id).await?.filter(Row::stored) {
        return Ok(now.wire(now.parts as u64));
    }
    Err(ApiError::new(
        ErrorCode::UploadExpired,
        format!(
            "storage ended the unfinished upload of {:?} before its last part came; declare it \
             again with POST /api/datasets and send every part",
            r.name
        ),
    ))
}

/// Completes an upload whose parts all arrived: R2 joins them, and the dataset is stored.
async fn complete(env: &Env, r: &Row, upload: worker::MultipartUpload) -> ApiResult<()> {
    #[derive(Deserialize)]
    struct Part {
        part: i64,
        etag: String,
    }
    let parts: Vec<Part> = db::all(
        env,
        "SELECT part, etag FROM dataset_parts WHERE user_id = ? AND id = ? ORDER BY part",
        &[s(&r.user_id), s(&r.id)],
    )
    .await?;
    let completed = upload
        .complete(
            parts
                .into_iter()
                .map(|p| worker::UploadedPart::new(p.part as u16, p.etag)),
        )
        .await;
    match completed {
        Err(e) if crate::artifacts::upload_gone(&e.to_string()) => {
            return expired(env, r).await.map(drop);
        }
        other => other.map_err(r2("complete upload"))?,
    };
    mark_stored(env, r).await
}

/// The row of an upload R2 has joined, while it is still this upload's: stored, its parts
/// forgotten.
async fn mark_stored(env: &Env, r: &Row) -> ApiResult<()> {
    let tables = ("datasets", "dataset_parts");
    let key = [("user_id", r.user_id.as_str()), ("id", r.id.as_str())];
    objects::mark_stored(env, tables, key, r.upload_id.as_deref()).await
}

/// `GET /api/datasets`: the account's datasets, newest first, and its use of the quota.
pub async fn list(user: User, env: &Env) -> ApiResult<DatasetList> {
    let rows: Vec<Row> = db::all(
        env,
        &format!("SELECT {ROW} FROM datasets WHERE user_id = ? ORDER BY created_at DESC, id"),
        &[s(&user.id)],
    )
    .await?;
    let mut datasets = Vec::with_capacity(rows.len());
    for r in &rows {
        let got = if r.stored() {
            r.parts as u64
        } else {
            received(env, r).await?
        };
        datasets.push(r.wire(got));
    }
    Ok(DatasetList {
        datasets,
        used_bytes: used_bytes(env, &user.id).await?,
        quota_bytes: quota(env),
    })
}

/// `GET /api/datasets/{id}`: one dataset of the account.
pub async fn get(user: User, env: &Env, segment: &str) -> ApiResult<Dataset> {
    let r = owned(&user, env, segment).await?;
    let got = received(env, &r).await?;
    Ok(r.wire(got))
}

/// `DELETE /api/datasets/{id}`: the dataset (or its upload under way) is gone. A job already
/// running on it has its own copy.
pub async fn delete(user: User, env: &Env, segment: &str) -> ApiResult<DatasetDeleted> {
    let r = owned(&user, env, segment).await?;
    forget(env, &r).await?;
    Ok(DatasetDeleted {
        id: r.id,
        freed_bytes: r.size as u64,
    })
}

/// How long an upload may stay unfinished (`DATASET_UPLOAD_RETENTION`, a duration; 6 days by
/// default, in seconds: R2 drops a multipart upload it has not completed after a week, and a part
/// sent then could not land).
const UPLOAD_RETENTION_S: u64 = 6 * 86_400;

/// The cron sweep's share: uploads declared longer ago than `DATASET_UPLOAD_RETENTION` and never
/// finished are deleted, freeing their bytes from the quota (a later upload of the file starts
/// over). At most `limit` per run; how many went.
pub async fn sweep(env: &Env, limit: i64) -> ApiResult<u64> {
    // Past a week R2 has dropped the multipart upload anyway.
    let keep_s =
        db::duration_setting(env, "DATASET_UPLOAD_RETENTION", UPLOAD_RETENTION_S).min(7 * 86_400);
    let cutoff = db::ago_ms(keep_s);
    let rows: Vec<Row> = db::all(
        env,
        &format!("SELECT {ROW} FROM datasets WHERE state = 'uploading' AND created_at < ? LIMIT ?"),
        &[n(cutoff), n(limit)],
    )
    .await?;
    let mut gone = 0;
    for r in &rows {
        forget(env, r).await?;
        gone += 1;
    }
    Ok(gone)
}

/// The dataset id a spec trains on, if it names an uploaded one (`data.dataset = "ds_…"`).
pub fn named_in(spec: &jobspec::JobSpec) -> Option<&str> {
    let d = spec.data.dataset.as_str();
    is_dataset_id(d).then_some(d)
}

/// A spec training by epochs on one of this account's stored datasets takes the counts the
/// checker recorded for it where it gives none: `data.examples` for a padded format (so that an
/// epoch is its examples over the global batch, not packed tokens) and `data.tokens`. The spec
/// as stored then shows them. Anything else (another account's id, a spec that does not parse) is left as it
/// is, for the checks after it to refuse.
pub async fn with_counts(env: &Env, user_id: &str, spec: SpecText) -> ApiResult<SpecText> {
    let (text, format) = match &spec {
        SpecText::Toml(t) => (t.as_str(), jobspec::validate::Format::Toml),
        SpecText::Json(j) => (j.as_str(), jobspec::validate::Format::Json),
    };
    let Some(parsed) = jobspec::validate::parse_text(text, format).0 else {
        return Ok(spec);
    };
    let Some(id) = named_in(&parsed) else {
        return Ok(spec);
    };
    let Some(r) = row(env, user_id, id).await?.filter(Row::stored) else {
        return Ok(spec);
    };
    let ops = api::datasets::count_ops(
        &parsed,
        &r.format,
        r.examples.max(0) as u64,
        r.tokens.max(0) as u64,
    );
    let json = matches!(spec, SpecText::Json(_));
    // A JSON spec is stored in its TOML form anyway.
    Ok(api::datasets::patched_toml(text, json, &parsed, &ops).map_or(spec, SpecText::Toml))
}

/// Refuses a spec naming an uploaded dataset (to train on or to evaluate on) that this account
/// has not stored (another account's id is not found either): 422 at the key that names it,
/// before any money moves.
pub async fn check_named(env: &Env, user_id: &str, spec: &jobspec::JobSpec) -> ApiResult<()> {
    for (key, id) in api::datasets::named_in_spec(spec) {
        match row(env, user_id, id).await? {
            Some(r) if r.stored() => {}
            found => {
                return Err(ApiError::new(
                    ErrorCode::InvalidField,
                    if found.is_some() {
                        format!("{key} = {id:?} is still uploading: send its last parts first")
                    } else {
                        format!(
                            "{key} = {id:?} is no dataset of this account: upload the file \
                             (onramp datasets upload FILE, or the Plan page) and use the id it gives"
                        )
                    },
                )
                .with_field(key));
            }
        }
    }
    Ok(())
}

/// `GET /api/jobs/{id}/dataset[?id=ds_…]` (the job's own token): an uploaded dataset the job's
/// spec names (`?id=` picks one, as the eval set's; without it, the one it trains on), streamed
/// from R2 (one range when asked), with its SHA-256 in `x-onramp-sha256` for the job to check
/// and its declared name's extension in `x-onramp-extension`.
pub async fn job_fetch(caller: JobCaller, req: Request, env: &Env) -> ApiResult<Response> {
    let job = caller.job();
    // Read, not checked again: a spec the edge accepted names what it names, whatever rules
    // came since.
    let spec = jobspec::parse_text(&job.spec, jobspec::Format::Toml).0;
    let named: Vec<String> = spec.as_ref().map_or_else(Vec::new, |v| {
        api::datasets::named_in_spec(v)
            .into_iter()
            .map(|(_, id)| id.to_string())
            .collect()
    });
    let url = req.url().ok();
    let asked = url
        .as_ref()
        .and_then(|u| u.query_pairs().find(|(k, _)| k == "id"))
        .map(|(_, v)| v.into_owned());
    let id = match asked {
        Some(a) => named.into_iter().find(|n| *n == a).ok_or_else(|| {
            ApiError::not_found(format!(
                "job {} names no uploaded dataset {:?}",
                job.id,
                a.chars().take(64).collect::<String>()
            ))
        })?,
        None => spec
            .as_ref()
            .and_then(|v| named_in(v).map(str::to_string))
            .ok_or_else(|| {
                ApiError::not_found(format!("job {} names no uploaded dataset", job.id))
            })?,
    };
    let r = row(env, &job.user_id, &id)
        .await?
        .filter(Row::stored)
        .ok_or_else(|| ApiError::not_found(format!("the dataset {id} is no longer stored")))?;
    let object = Object {
        key: object_key(&r.user_id, &r.sha256),
        size: r.size as u64,
        sha256: &r.sha256,
        file: &r.id,
    };
    let mut resp = serve_object(env, object, &req, || {
        format!("the dataset {id} is no longer stored")
    })
    .await?;
    // The declared name's extension, by which the checker chose the layout: so does the trainer.
    if let Some(ext) = datacheck::scan::extension(&r.name)
        .filter(|e| e.len() <= 16 && e.bytes().all(|b| b.is_ascii_alphanumeric()))
    {
        resp.headers_mut()
            .set("x-onramp-extension", &ext)
            .map_err(http::internal("header"))?;
    }
    Ok(resp)
}
