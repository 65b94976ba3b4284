//! The numbers of a user's ds_config that tune rather than shape the run: the optimizer's betas,
//! epsilon, weight decay and momentum, `gradient_clipping`, and ZeRO's bucket, prefetch and
//! persistence sizes. Each becomes a spec key (`train.adam_beta1`, `deepspeed.reduce_bucket_size`)
//! so that the job's ds_config, written from the spec, holds them too.

use crate::diag::{Code, Diagnostic};
use crate::parse::OPTIM_RANGES;
use crate::patch::PatchOp;
use crate::zero_tuning::{MAX_ZERO_ELEMENTS, ZERO_SIZE_KEYS, ZERO_TUNING_KEYS, ZeroTuning};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// What a ds_config says of the optimizer's numbers and ZeRO's tuning; `None` for what it leaves
/// out or to "auto".
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Tuning {
    pub weight_decay: Option<f64>,
    pub adam_beta1: Option<f64>,
    pub adam_beta2: Option<f64>,
    pub adam_epsilon: Option<f64>,
    pub momentum: Option<f64>,
    pub max_grad_norm: Option<f64>,
    pub zero: ZeroTuning,
}

impl Tuning {
    /// The spec changes that carry these numbers.
    pub fn patch(&self) -> Vec<PatchOp> {
        let train = [
            ("weight_decay", self.weight_decay),
            ("adam_beta1", self.adam_beta1),
            ("adam_beta2", self.adam_beta2),
            ("adam_epsilon", self.adam_epsilon),
            ("momentum", self.momentum),
            ("max_grad_norm", self.max_grad_norm),
        ];
        let mut ops: Vec<PatchOp> = train
            .into_iter()
            .filter_map(|(k, v)| {
                v.map(|v| PatchOp {
                    path: format!("train.{k}"),
                    value: json!(v),
                })
            })
            .collect();
        ops.extend(self.zero.entries().into_iter().map(|(k, value)| PatchOp {
            path: format!("deepspeed.{k}"),
            value,
        }));
        ops
    }
}

/// Reads [`Tuning`] from a config; a value out of the spec's range or of the wrong kind is an
/// error at its ds_config path.
pub(crate) fn tuning(cfg: &Map<String, Value>, diags: &mut Vec<Diagnostic>) -> Tuning {
    let params = cfg
        .get("optimizer")
        .and_then(|o| o.get("params"))
        .and_then(Value::as_object);
    let param = |key: &str| params.and_then(|p| p.get(key));
    let mut t = Tuning::default();
    let num = |v: Option<&Value>, path: &str, key: &str, diags: &mut Vec<Diagnostic>| {
        number(v?, path, key, diags)
    };
    t.weight_decay = num(
        param("weight_decay"),
        "optimizer.params.weight_decay",
        "weight_decay",
        diags,
    );
    t.adam_epsilon = num(param("eps"), "optimizer.params.eps", "adam_epsilon", diags);
    t.momentum = num(
        param("momentum"),
        "optimizer.params.momentum",
        "momentum",
        diags,
    );
    t.max_grad_norm = num(
        cfg.get("gradient_clipping"),
        "gradient_clipping",
        "max_grad_norm",
        diags,
    );
    match param("betas") {
        None => {}
        Some(Value::String(s)) if s == "auto" => {}
        Some(Value::Array(b)) if b.len() == 2 => {
            t.adam_beta1 = num(b.first(), "optimizer.params.betas", "adam_beta1", diags);
            t.adam_beta2 = num(b.get(1), "optimizer.params.betas", "adam_beta2", diags);
        }
        Some(other) => diags.push(Diagnostic::error(
            Code::WrongType,
            "optimizer.params.betas",
            format!("`optimizer.params.betas` must be two numbers or \"auto\", not {other}"),
            format!("`optimizer.params.betas` 必须是两个数或 \"auto\"，而不是 {other}"),
        )),
    }
    if let Some(Value::Object(zero)) = cfg.get("zero_optimization") {
        t.zero = zero_tuning(zero, diags);
    }
    t
}

/// A number in the range `key` has in `[train]`, or `None` for "auto".
fn number(v: &Value, path: &str, key: &str, diags: &mut Vec<Diagnostic>) -> Option<f64> {
    let (_, min, max) = OPTIM_RANGES.iter().find(|(k, _, _)| *k == key)?;
    match v {
        Value::String(s) if s == "auto" => None,
        Value::Number(n) => {
            let f = n.as_f64().filter(|f| f.is_finite() && f >= min && f <= max);
            if f.is_none() {
                diags.push(Diagnostic::error(
                    Code::OutOfRange,
                    path,
                    format!("`{path}` = {n} is out of range ({min} to {max})"),
                    format!("`{path}` = {n} 超出范围（{min} 到 {max}）"),
                ));
            }
            f
        }
        other => {
            diags.push(Diagnostic::error(
                Code::WrongType,
                path,
                format!("`{path}` must be a number or \"auto\", not {other}"),
                format!("`{path}` 必须是数字或 \"auto\"，而不是 {other}"),
            ));
            None
        }
    }
}

/// The `[deepspeed]` keys of `zero_optimization`: sizes as whole numbers (`5e8` too), switches
/// as booleans; "auto" leaves jobspec's own.
fn zero_tuning(zero: &Map<String, Value>, diags: &mut Vec<Diagnostic>) -> ZeroTuning {
    let mut z = ZeroTuning::default();
    for key in ZERO_TUNING_KEYS {
        let Some(v) = zero.get(*key) else { continue };
        if v == "auto" {
            continue;
        }
        let path = format!("zero_optimization.{key}");
        let value = if ZERO_SIZE_KEYS.contains(key) {
            let whole = v.as_u64().or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            });
            match whole {
                Some(n) if (1..=MAX_ZERO_ELEMENTS).contains(&n) => json!(n),
                _ => {
                    diags.push(Diagnostic::error(
                        Code::OutOfRange,
                        &path,
                        format!("`{path}` must be a whole number of elements, 1 to {MAX_ZERO_ELEMENTS}, or \"auto\", not {v}"),
                        format!("`{path}` 必须是 1 到 {MAX_ZERO_ELEMENTS} 的整数（元素个数）或 \"auto\"，而不是 {v}"),
                    ));
                    continue;
                }
            }
        } else if v.is_boolean() {
            v.clone()
        } else {
            diags.push(Diagnostic::error(
                Code::WrongType,
                &path,
                format!("`{path}` must be true or false, not {v}"),
                format!("`{path}` 必须是 true 或 false，而不是 {v}"),
            ));
            continue;
        };
        z.set(key, &value);
    }
    z
}
