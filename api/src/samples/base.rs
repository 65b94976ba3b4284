//! What every sample is built with: the `Sample` shape, the helper that makes one, the fixed
//! times, and the values several samples share (a job, a metric point, a diagnostic).

use crate::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// A sample value of a wire type, serialised, with the type's schema and the components its
/// `$ref`s point into.
pub struct Sample {
    /// The golden file's name, without `.json`.
    pub name: &'static str,
    pub json: Value,
    /// Builds `(document, schema)` for [`crate::schema::check`].
    pub schema: Box<dyn Fn() -> (Value, Value)>,
    /// Whether the JSON reads back as the same value.
    pub round_trips: bool,
}

pub(super) fn sample<T>(name: &'static str, value: T) -> Sample
where
    T: Serialize + DeserializeOwned + PartialEq + schemars::JsonSchema + 'static,
{
    let json = serde_json::to_value(&value).unwrap_or(Value::Null);
    let round_trips = serde_json::from_value::<T>(json.clone()).is_ok_and(|back| back == value);
    Sample {
        name,
        json,
        schema: Box::new(|| {
            let mut s = schema::Schemas::new();
            let schema = s.of::<T>();
            (
                json!({"components": {"schemas": s.into_components()}}),
                schema,
            )
        }),
        round_trips,
    }
}

pub(super) const T0: &str = "2026-11-29T18:00:00.000Z";
pub(super) const T1: &str = "2026-11-29T18:02:03.456Z";

pub fn job() -> Job {
    Job {
        id: "0f1e2d3c4b5a69788796a5b4c3d2e1f0".into(),
        name: "tiny".into(),
        state: JobState::Queued,
        backend: "hpc".into(),
        card: "a100-80g".into(),
        cards: 2,
        hold_fen: 1200,
        charged_fen: None,
        created_at: T0.into(),
        started_at: None,
        ended_at: None,
        message: Some("waiting for resources: not enough free GPUs or nodes right now".into()),
        reason: Some("Resources".into()),
        reason_messages: Some(Messages {
            en: "waiting for resources: not enough free GPUs or nodes right now".into(),
            zh_cn: "等待资源：目前空闲的 GPU 或节点不足".into(),
        }),
        checkpoint: false,
        spec: "name = \"tiny\"\ntask = \"tiny-train\"\n".into(),
        attempts: Vec::new(),
    }
}

pub(super) fn metric() -> MetricPoint {
    MetricPoint {
        step: 10,
        loss: 2.5,
        val_loss: Some(2.75),
        lr: Some(0.001),
        tokens_per_s: Some(1500.0),
        elapsed_s: 3.5,
        grad_norm: None,
        epoch: None,
        peak_mem_bytes: None,
    }
}

pub(super) fn diagnostic() -> SpecDiagnostic {
    SpecDiagnostic {
        severity: Severity::Error,
        code: "E_UNKNOWN_CARD".into(),
        path: "resources.card".into(),
        message: "unknown card `H900`".into(),
        messages: Messages {
            en: "unknown card `H900`".into(),
            zh_cn: "未知的卡型 `H900`".into(),
        },
        help: Some(Messages {
            en: "did you mean `h100`?".into(),
            zh_cn: "是否想用 `h100`？".into(),
        }),
        line: 7,
        column: 8,
    }
}

/// A job that ran and succeeded.
pub(super) fn finished() -> Job {
    Job {
        state: JobState::Succeeded,
        charged_fen: Some(7),
        started_at: Some(T0.into()),
        ended_at: Some(T1.into()),
        message: None,
        reason: None,
        reason_messages: None,
        checkpoint: true,
        ..job()
    }
}

pub(super) fn cards() -> BTreeMap<String, u32> {
    [("a100-80g".to_string(), 8)].into()
}
