//! The ranges the text reader enforces, checked again for a spec built in code (the form view).

use super::checker::Checker;
use crate::diag::Code;
use crate::spec::*;

/// The ranges the text reader enforces, again, for specs built in code (the form view).
pub(super) fn check_ranges(c: &mut Checker<'_>, spec: &JobSpec) {
    let max_seq = u32::try_from(crate::parse::MAX_SEQ_LEN).unwrap_or(u32::MAX);
    let checks: [(&str, u64, u64, u64); 10] = [
        (
            "data.seq_len",
            u64::from(spec.data.seq_len),
            1,
            u64::from(max_seq),
        ),
        (
            "train.micro_batch",
            u64::from(spec.train.micro_batch),
            1,
            65_536,
        ),
        (
            "train.grad_accum",
            u64::from(spec.train.grad_accum),
            1,
            65_536,
        ),
        (
            "parallel.zero_stage",
            u64::from(spec.parallel.zero_stage),
            0,
            3,
        ),
        ("parallel.tp", u64::from(spec.parallel.tp), 1, 1024),
        ("parallel.pp", u64::from(spec.parallel.pp), 1, 1024),
        ("parallel.sp", u64::from(spec.parallel.sp), 1, 1024),
        (
            "resources.cards_per_node",
            u64::from(spec.resources.cards_per_node),
            1,
            64,
        ),
        ("resources.nodes", u64::from(spec.resources.nodes), 1, 4096),
        (
            "train.steps",
            spec.train.steps.unwrap_or(1),
            1,
            1_000_000_000_000,
        ),
    ];
    for (path, value, min, max) in checks {
        if value < min || value > max {
            c.error(
                Code::OutOfRange,
                path,
                format!("`{path}` = {value} is out of range ({min} to {max})"),
                format!("`{path}` = {value} 超出范围（{min} 到 {max}）"),
            );
        }
    }
    let (above, max) = crate::parse::LR_RANGE;
    let lr = spec.train.lr;
    if !lr.is_finite() || lr <= above || lr > max {
        let (en, zh) = crate::parse::out_of_range_above("train.lr", lr, (above, max));
        c.error(Code::OutOfRange, "train.lr", en, zh);
    }
    let floats = [
        ("train.epochs", spec.train.epochs, 1e-6, 1e6),
        ("estimate.mfu", spec.estimate.mfu, 0.01, 1.0),
    ];
    for (path, value, min, max) in floats {
        if let Some(v) = value
            && (!v.is_finite() || v < min || v > max)
        {
            c.error(
                Code::OutOfRange,
                path,
                format!("`{path}` = {v} is out of range ({min} to {max})"),
                format!("`{path}` = {v} 超出范围（{min} 到 {max}）"),
            );
        }
    }
}

/// `[train]`'s optimizer numbers and `[deepspeed]`'s sizes.
pub(super) fn check_tuning_ranges(c: &mut Checker<'_>, spec: &JobSpec) {
    let t = &spec.train;
    let values = [
        t.weight_decay,
        t.adam_beta1,
        t.adam_beta2,
        t.adam_epsilon,
        t.momentum,
        t.max_grad_norm,
    ];
    for ((key, min, max), value) in crate::parse::OPTIM_RANGES.iter().zip(values) {
        if let Some(v) = value
            && (!v.is_finite() || v < *min || v > *max)
        {
            let path = format!("train.{key}");
            c.error(
                Code::OutOfRange,
                &path,
                format!("`{path}` = {v} is out of range ({min} to {max})"),
                format!("`{path}` = {v} 超出范围（{min} 到 {max}）"),
            );
        }
    }
    for (key, value) in spec.deepspeed.entries() {
        let max = crate::zero_tuning::MAX_ZERO_ELEMENTS;
        if let Some(n) = value.as_u64()
            && !(1..=max).contains(&n)
        {
            let path = format!("deepspeed.{key}");
            c.error(
                Code::OutOfRange,
                &path,
                format!("`{path}` = {n} is out of range (1 to {max})"),
                format!("`{path}` = {n} 超出范围（1 到 {max}）"),
            );
        }
    }
}
