//! A user's ds_config read back into spec values, with DeepSpeed's own checks (the batch rule
//! above all): every problem a diagnostic, every value found a patch of the spec.

use super::carry::{TOP_KEYS, ZERO_KEYS, carried};
use crate::diag::{Code, Diagnostic, did_you_mean, hint};
use crate::patch::PatchOp;
use crate::spec::{Offload, Optimizer, Precision, Schedule};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// What an imported ds_config says, with every value DeepSpeed would derive filled in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DsImport {
    pub train_batch_size: Option<u64>,
    pub micro_batch: Option<u64>,
    pub grad_accum: Option<u64>,
    pub zero_stage: u8,
    pub offload_optimizer: Offload,
    pub offload_params: Offload,
    pub precision: Option<Precision>,
    pub lr: Option<f64>,
    pub optimizer: Option<Optimizer>,
    pub schedule: Option<Schedule>,
    pub warmup: Option<u64>,
    pub sp: Option<u32>,
    pub tp: Option<u32>,
    /// The optimizer's numbers, gradient clipping and ZeRO's tuning.
    pub tuning: super::tuning::Tuning,
}

impl DsImport {
    /// The spec changes that carry this config into a job spec.
    pub fn patch(&self) -> Vec<PatchOp> {
        let mut ops = vec![
            op("parallel.zero_stage", json!(self.zero_stage)),
            op(
                "parallel.offload_optimizer",
                json!(self.offload_optimizer.as_str()),
            ),
            op(
                "parallel.offload_params",
                json!(self.offload_params.as_str()),
            ),
        ];
        if let Some(m) = self.micro_batch {
            ops.push(op("train.micro_batch", json!(m)));
        }
        if let Some(g) = self.grad_accum {
            ops.push(op("train.grad_accum", json!(g)));
        }
        if let Some(p) = self.precision {
            ops.push(op("train.precision", json!(p.as_str())));
        }
        if let Some(lr) = self.lr {
            ops.push(op("train.lr", json!(lr)));
        }
        if let Some(o) = self.optimizer {
            ops.push(op("train.optimizer", json!(o.as_str())));
        }
        if let Some(s) = self.schedule {
            ops.push(op("train.schedule", json!(s.as_str())));
        }
        // jobspec writes no warm-up as one step of it (DeepSpeed refuses 0): one is none.
        if let Some(w) = self.warmup {
            ops.push(op("train.warmup", json!(if w <= 1 { 0 } else { w })));
        }
        if let Some(sp) = self.sp {
            ops.push(op("parallel.sp", json!(sp)));
        }
        if let Some(tp) = self.tp {
            ops.push(op("parallel.tp", json!(tp)));
        }
        ops.extend(self.tuning.patch());
        ops
    }
}

fn op(path: &str, value: Value) -> PatchOp {
    PatchOp {
        path: path.to_string(),
        value,
    }
}

/// Reads a positive integer, or `None` for absent / `"auto"`.
fn batch_value(cfg: &Map<String, Value>, key: &str, diags: &mut Vec<Diagnostic>) -> Option<u64> {
    match cfg.get(key)? {
        Value::String(s) if s == "auto" => None,
        Value::Number(n) => match n.as_u64().filter(|n| *n > 0) {
            Some(n) => Some(n),
            None => {
                diags.push(Diagnostic::error(
                    Code::OutOfRange,
                    key,
                    format!("`{key}` must be a positive integer"),
                    format!("`{key}` 必须是正整数"),
                ));
                None
            }
        },
        other => {
            diags.push(Diagnostic::error(
                Code::WrongType,
                key,
                format!("`{key}` must be a positive integer or \"auto\", not {other}"),
                format!("`{key}` 必须是正整数或 \"auto\"，而不是 {other}"),
            ));
            None
        }
    }
}

fn enabled(v: Option<&Value>) -> bool {
    v.and_then(|x| x.get("enabled"))
        .is_some_and(|e| e == &Value::Bool(true))
}

fn offload_device(zero: &Map<String, Value>, key: &str, diags: &mut Vec<Diagnostic>) -> Offload {
    let Some(o) = zero.get(key) else {
        return Offload::None;
    };
    match o.get("device").and_then(Value::as_str) {
        None | Some("none") => Offload::None,
        Some("cpu") => Offload::Cpu,
        Some("nvme") => Offload::Nvme,
        Some(other) => {
            diags.push(Diagnostic::error(
                Code::BadValue,
                &format!("zero_optimization.{key}.device"),
                format!("offload device \"{other}\" is not one of: none, cpu, nvme"),
                format!("卸载设备 \"{other}\" 不是 none、cpu、nvme 之一"),
            ));
            Offload::None
        }
    }
}

fn unknown_keys(
    map: &Map<String, Value>,
    known: &[&str],
    prefix: &str,
    diags: &mut Vec<Diagnostic>,
) {
    for k in map.keys() {
        if !known.contains(&k.as_str()) {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            diags.push(
                Diagnostic::warning(
                    Code::UnknownKey,
                    &path,
                    format!("DeepSpeed does not know `{path}`; it will be ignored"),
                    format!("DeepSpeed 不认识 `{path}`，将被忽略"),
                )
                .with_help(hint(did_you_mean(k, known.iter().copied()))),
            );
        }
    }
}

/// Imports and checks a ds_config. `dp_size` is the data-parallel size it will run with, when
/// known (DeepSpeed takes it from the launcher); without it the batch rule is checked as far as
/// it can be.
pub fn import_ds_config(text: &str, dp_size: Option<u32>) -> (Option<DsImport>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let Some(cfg) = parse_object(text, &mut diags) else {
        return (None, diags);
    };
    unknown_keys(&cfg, TOP_KEYS, "", &mut diags);

    let train = batch_value(&cfg, "train_batch_size", &mut diags);
    let micro = batch_value(&cfg, "train_micro_batch_size_per_gpu", &mut diags);
    let accum = batch_value(&cfg, "gradient_accumulation_steps", &mut diags);
    let (train, micro, accum) = batch_rule(train, micro, accum, dp_size.map(u64::from), &mut diags);
    let precision = precision(&cfg, &mut diags);
    let (stage, offload_optimizer, offload_params) = zero_settings(&cfg, &mut diags);
    let lr = cfg
        .get("optimizer")
        .and_then(|o| o.get("params"))
        .and_then(|p| p.get("lr"))
        .and_then(Value::as_f64);
    let c = carried(&cfg, &mut diags);
    let tuning = super::tuning::tuning(&cfg, &mut diags);

    super::carry::locate(text, &mut diags);
    let ok = !diags.iter().any(Diagnostic::is_error);
    let import = DsImport {
        train_batch_size: train,
        micro_batch: micro,
        grad_accum: accum,
        zero_stage: stage,
        offload_optimizer,
        offload_params,
        precision,
        lr,
        optimizer: c.optimizer,
        schedule: c.schedule,
        warmup: c.warmup,
        sp: c.sp,
        tp: c.tp,
        tuning,
    };
    (ok.then_some(import), diags)
}

/// The config as a JSON object, or a diagnostic that says why it is not one.
fn parse_object(text: &str, diags: &mut Vec<Diagnostic>) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Some(m),
        Ok(_) => {
            diags.push(Diagnostic::error(
                Code::WrongType,
                "",
                "a ds_config must be a JSON object",
                "ds_config 必须是 JSON 对象",
            ));
            None
        }
        Err(e) => {
            let mut d = Diagnostic::error(
                Code::Syntax,
                "",
                format!("JSON syntax error: {e}"),
                format!("JSON 语法错误：{e}"),
            );
            d.line = u32::try_from(e.line()).unwrap_or(0);
            d.column = u32::try_from(e.column()).unwrap_or(0);
            diags.push(d);
            None
        }
    }
}

/// `fp16` and `bf16`: exclusive; `None` when they leave the choice to the spec ("auto").
fn precision(cfg: &Map<String, Value>, diags: &mut Vec<Diagnostic>) -> Option<Precision> {
    let fp16 = enabled(cfg.get("fp16"));
    let bf16 = enabled(cfg.get("bf16")) || enabled(cfg.get("bfloat16"));
    if fp16 && bf16 {
        diags.push(Diagnostic::error(
            Code::Conflict,
            "bf16",
            "fp16 and bf16 cannot both be enabled",
            "fp16 与 bf16 不能同时启用",
        ));
    }
    if bf16 {
        Some(Precision::Bf16)
    } else if fp16 {
        Some(Precision::Fp16)
    } else if cfg.get("fp16").is_some() || cfg.get("bf16").is_some() {
        // Present but "auto" or disabled: let the spec decide.
        None
    } else {
        Some(Precision::Fp32)
    }
}

/// `zero_optimization`: the stage and the offload devices, with DeepSpeed's rules between them.
fn zero_settings(cfg: &Map<String, Value>, diags: &mut Vec<Diagnostic>) -> (u8, Offload, Offload) {
    let empty = Map::new();
    let zero = match cfg.get("zero_optimization") {
        Some(Value::Object(z)) => z,
        Some(_) => {
            diags.push(Diagnostic::error(
                Code::WrongType,
                "zero_optimization",
                "`zero_optimization` must be an object",
                "`zero_optimization` 必须是对象",
            ));
            &empty
        }
        None => &empty,
    };
    unknown_keys(zero, ZERO_KEYS, "zero_optimization", diags);
    let stage = match zero.get("stage") {
        None => 0,
        Some(v) => match v.as_u64().filter(|s| *s <= 3) {
            Some(s) => u8::try_from(s).unwrap_or(0),
            None => {
                diags.push(Diagnostic::error(
                    Code::OutOfRange,
                    "zero_optimization.stage",
                    format!("ZeRO stage must be 0 to 3, not {v}"),
                    format!("ZeRO 阶段必须是 0 到 3，而不是 {v}"),
                ));
                0
            }
        },
    };
    let offload_optimizer = offload_device(zero, "offload_optimizer", diags);
    let offload_params = offload_device(zero, "offload_param", diags);
    if offload_optimizer.is_on() && stage == 0 {
        diags.push(Diagnostic::error(
            Code::Conflict,
            "zero_optimization.offload_optimizer",
            "offload_optimizer needs ZeRO stage 1, 2 or 3",
            "offload_optimizer 需要 ZeRO 1、2 或 3",
        ));
    }
    if offload_params.is_on() && stage != 3 {
        diags.push(Diagnostic::error(
            Code::Conflict,
            "zero_optimization.offload_param",
            "offload_param needs ZeRO stage 3",
            "offload_param 需要 ZeRO 3",
        ));
    }
    (stage, offload_optimizer, offload_params)
}

/// DeepSpeed's batch rule: fills in what two values determine and reports contradictions.
fn batch_rule(
    train: Option<u64>,
    micro: Option<u64>,
    accum: Option<u64>,
    dp: Option<u64>,
    diags: &mut Vec<Diagnostic>,
) -> (Option<u64>, Option<u64>, Option<u64>) {
    let Some(dp) = dp.filter(|d| *d > 0) else {
        if let (Some(t), Some(m), Some(a)) = (train, micro, accum)
            && t % m.saturating_mul(a) != 0
        {
            diags.push(mismatch(
                format!(
                    "train_batch_size {t} is not a multiple of micro batch {m} × accumulation {a}"
                ),
                format!("train_batch_size {t} 不是 micro batch {m} × 梯度累积 {a} 的整数倍"),
            ));
        }
        return (train, micro, accum);
    };
    match (train, micro, accum) {
        (Some(t), Some(m), Some(a)) => {
            if t != m.saturating_mul(a).saturating_mul(dp) {
                let product = m.saturating_mul(a).saturating_mul(dp);
                diags.push(mismatch(
                    format!(
                        "train_batch_size {t} ≠ micro batch {m} × accumulation {a} × data-parallel size {dp} = {product}"
                    ),
                    format!(
                        "train_batch_size {t} ≠ micro batch {m} × 梯度累积 {a} × 数据并行数 {dp} = {product}"
                    ),
                ));
            }
            (Some(t), Some(m), Some(a))
        }
        (Some(t), Some(m), None) => divide(
            t,
            m.saturating_mul(dp),
            "gradient_accumulation_steps",
            diags,
        )
        .map_or((Some(t), Some(m), None), |a| (Some(t), Some(m), Some(a))),
        (Some(t), None, Some(a)) => divide(
            t,
            a.saturating_mul(dp),
            "train_micro_batch_size_per_gpu",
            diags,
        )
        .map_or((Some(t), None, Some(a)), |m| (Some(t), Some(m), Some(a))),
        (None, Some(m), Some(a)) => (
            Some(m.saturating_mul(a).saturating_mul(dp)),
            Some(m),
            Some(a),
        ),
        (Some(t), None, None) => divide(t, dp, "train_micro_batch_size_per_gpu", diags)
            .map_or((Some(t), None, Some(1)), |m| (Some(t), Some(m), Some(1))),
        (None, Some(m), None) => (Some(m.saturating_mul(dp)), Some(m), Some(1)),
        (None, None, _) => {
            diags.push(Diagnostic::info(
                Code::Defaulted,
                "train_batch_size",
                "neither train_batch_size nor train_micro_batch_size_per_gpu is set (\"auto\"): the spec's batch settings apply",
                "train_batch_size 与 train_micro_batch_size_per_gpu 都未设置（\"auto\"）：使用 spec 的批量设置",
            ));
            (None, None, accum)
        }
    }
}

fn divide(total: u64, by: u64, what: &str, diags: &mut Vec<Diagnostic>) -> Option<u64> {
    if by > 0 && total.is_multiple_of(by) && total >= by {
        Some(total / by)
    } else {
        diags.push(mismatch(
            format!("train_batch_size {total} is not divisible by {by}: no whole {what} fits"),
            format!("train_batch_size {total} 不能被 {by} 整除：{what} 得不到整数"),
        ));
        None
    }
}

fn mismatch(en: String, zh: String) -> Diagnostic {
    Diagnostic::error(
        Code::BatchMismatch,
        "train_batch_size",
        en,
        format!("批量不一致：{zh}"),
    )
}
