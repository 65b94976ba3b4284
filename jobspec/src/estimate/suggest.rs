//! Fix suggestions: the cheapest changes that make a non-fitting spec fit, each as a patch
//! (`crate::patch`).

use crate::catalog::{self, CARDS};
use crate::diag::Message;
use crate::patch::{PatchOp, apply_patch_fast};
use crate::spec::{JobSpec, Offload, Recompute, Task};
use crate::validate::{ValidSpec, validate_spec};
use serde::Serialize;
use serde_json::{Value, json};

fn op(path: &str, value: Value) -> PatchOp {
    PatchOp {
        path: path.to_string(),
        value,
    }
}

/// One way to make the job fit, with what it would then need and cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Suggestion {
    pub title: Message,
    pub patch: Vec<PatchOp>,
    pub per_gpu_bytes: u64,
    pub card_bytes: u64,
    pub seconds: f64,
    pub fen: u64,
    /// Host RAM per node the offloaded states need (0 without offload): check the nodes have it.
    pub cpu_bytes_per_node: u64,
}

struct Change {
    title: Message,
    ops: Vec<PatchOp>,
}

fn change(en: String, zh: String, ops: Vec<PatchOp>) -> Change {
    Change {
        title: Message::new(en, zh),
        ops,
    }
}

/// Single changes worth trying for this spec.
fn candidates(v: &ValidSpec) -> Vec<Change> {
    let mut out = Vec::new();
    if !v.card().is_gpu {
        return out;
    }
    memory_changes(v, &mut out);
    task_changes(v.spec(), &mut out);
    sequence_split(v, &mut out);
    card_changes(v, &mut out);
    out
}

/// What lowers the memory per card on the same cards: recomputation, ZeRO, offload, smaller
/// micro-batches, FlashAttention.
fn memory_changes(v: &ValidSpec, out: &mut Vec<Change>) {
    let s = v.spec();
    let p = &s.parallel;
    let t = &s.train;
    if t.grad_checkpointing != Recompute::Full {
        out.push(change(
            "enable gradient checkpointing".into(),
            "开启梯度检查点（激活重计算）".into(),
            vec![op("train.grad_checkpointing", json!(true))],
        ));
    }
    if p.pp == 1 && p.zero_stage < 2 {
        out.push(change(
            "use ZeRO-2".into(),
            "使用 ZeRO-2".into(),
            vec![op("parallel.zero_stage", json!(2))],
        ));
    }
    if p.pp == 1 && p.zero_stage < 3 {
        out.push(change(
            "use ZeRO-3".into(),
            "使用 ZeRO-3".into(),
            vec![op("parallel.zero_stage", json!(3))],
        ));
    }
    if p.pp == 1 && p.offload_optimizer == Offload::None {
        out.push(change(
            "enable ZeRO-3 + CPU optimizer offload".into(),
            "启用 ZeRO-3 + 优化器卸载到 CPU".into(),
            vec![
                op("parallel.zero_stage", json!(3)),
                op("parallel.offload_optimizer", json!("cpu")),
            ],
        ));
    }
    if p.pp == 1 && p.offload_params == Offload::None {
        out.push(change(
            "enable ZeRO-3 + CPU offload of optimizer and parameters".into(),
            "启用 ZeRO-3 + 优化器与参数卸载到 CPU".into(),
            vec![
                op("parallel.zero_stage", json!(3)),
                op("parallel.offload_optimizer", json!("cpu")),
                op("parallel.offload_params", json!("cpu")),
            ],
        ));
    }
    if t.micro_batch > 1 {
        let accum = u64::from(t.grad_accum) * u64::from(t.micro_batch);
        out.push(change(
            format!("micro_batch = 1, grad_accum = {accum} (same global batch)"),
            format!("改为 micro_batch = 1，grad_accum = {accum}（全局批量不变）"),
            vec![
                op("train.micro_batch", json!(1)),
                op("train.grad_accum", json!(accum)),
            ],
        ));
    }
    if !t.flash_attention {
        out.push(change(
            "enable FlashAttention".into(),
            "开启 FlashAttention".into(),
            vec![op("train.flash_attention", json!(true))],
        ));
    }
}

/// Training adapters instead of every weight.
fn task_changes(s: &JobSpec, out: &mut Vec<Change>) {
    if matches!(s.task, Task::Sft | Task::Pretrain) {
        out.push(change(
            "switch to LoRA r=16".into(),
            "改用 LoRA r=16".into(),
            vec![op("task", json!("lora")), op("train.lora_rank", json!(16))],
        ));
    }
    if matches!(s.task, Task::Sft | Task::Lora) {
        out.push(change(
            "switch to QLoRA r=16 (4-bit base)".into(),
            "改用 QLoRA r=16（4 位底座）".into(),
            vec![op("task", json!("qlora")), op("train.lora_rank", json!(16))],
        ));
    }
}

/// Ulysses sequence parallelism for long sequences: the largest power of two that the cards,
/// heads and sequence allow.
fn sequence_split(v: &ValidSpec, out: &mut Vec<Change>) {
    let s = v.spec();
    let p = &s.parallel;
    if s.data.seq_len >= 16_384 && p.sp == 1 {
        let a = v.arch();
        let mut sp = 1u32;
        while sp * 2 <= v.world_size() / (p.tp * p.pp).max(1)
            && a.heads.is_multiple_of(sp * 2)
            && s.data.seq_len.is_multiple_of(sp * 2)
        {
            sp *= 2;
        }
        if sp > 1 {
            out.push(change(
                format!("split each sequence over {sp} cards (DeepSpeed-Ulysses sp = {sp})"),
                format!("把每条序列切分到 {sp} 张卡上（DeepSpeed-Ulysses，sp = {sp}）"),
                vec![op("parallel.sp", json!(sp))],
            ));
        }
    }
}

/// More cards in the node, a full node of 80 GB-class cards, or bigger cards.
fn card_changes(v: &ValidSpec, out: &mut Vec<Change>) {
    let s = v.spec();
    let p = &s.parallel;
    let per_node = s.resources.cards_per_node;
    let max = v.card().max_per_node;
    if per_node < max {
        out.push(change(
            format!("use {max} × {} in one node", v.card().display),
            format!("使用单节点 {max} 张 {}", v.card().display),
            vec![op("resources.cards_per_node", json!(max))],
        ));
    }
    // A full node of 80 GB-class cards with ZeRO-3: the usual answer for full fine-tuning.
    if v.world_size() == 1 && !s.task.is_adapter() && p.pp == 1 {
        for id in ["a100-80g", "h800"] {
            if let Some(card) = catalog::card(id).filter(|c| c.id != v.card().id) {
                out.push(change(
                    format!("use 8 × {} with ZeRO-3", card.display),
                    format!("改用 8 张 {} 并启用 ZeRO-3", card.display),
                    vec![
                        op("resources.card", json!(card.id)),
                        op("resources.cards_per_node", json!(8)),
                        op("parallel.zero_stage", json!(3)),
                    ],
                ));
            }
        }
    }
    // Bigger cards, same shape.
    for card in CARDS
        .iter()
        .filter(|c| c.is_gpu && c.mem_bytes > v.card().mem_bytes)
    {
        out.push(change(
            format!("use {} × {}", v.world_size(), card.display),
            format!("改用 {} 张 {}", v.world_size(), card.display),
            vec![op("resources.card", json!(card.id))],
        ));
    }
}

/// The cheapest fixes (by estimated cost of the run, then by how little they change) that
/// make the spec fit. Empty when it already fits.
pub fn suggest_fixes(v: &ValidSpec) -> Vec<Suggestion> {
    let (m, _, _) = super::quick::quick(v);
    if m.fits {
        return Vec::new();
    }
    let singles = candidates(v);
    let mut tries: Vec<(Message, Vec<PatchOp>)> = singles
        .iter()
        .map(|c| (c.title.clone(), c.ops.clone()))
        .collect();
    // Pairs: many specs need two changes (ZeRO-3 and checkpointing, LoRA and sp, …).
    for (i, a) in singles.iter().enumerate() {
        for b in singles.iter().skip(i + 1) {
            let mut ops = a.ops.clone();
            if b.ops.iter().any(|o| ops.iter().any(|x| x.path == o.path)) {
                continue;
            }
            ops.extend(b.ops.iter().cloned());
            let title = Message::new(
                format!("{} and {}", a.title.en, b.title.en),
                // A space between 并 and a key or number that starts the second part.
                if b.title.zh.starts_with(|c: char| c.is_ascii()) {
                    format!("{}，并 {}", a.title.zh, b.title.zh)
                } else {
                    format!("{}，并{}", a.title.zh, b.title.zh)
                },
            );
            tries.push((title, ops));
        }
    }
    let mut found: Vec<Suggestion> = Vec::new();
    for (title, ops) in tries {
        let Some(patched) = apply_patch_fast(v.spec(), &ops) else {
            continue;
        };
        let (Some(pv), _) = validate_spec(patched) else {
            continue;
        };
        let pv = v.carry_overrides(pv);
        let (m, t, c) = super::quick::quick(&pv);
        if m.fits {
            found.push(Suggestion {
                title,
                patch: ops,
                per_gpu_bytes: m.per_gpu.total_bytes,
                card_bytes: m.card_bytes,
                seconds: t.seconds,
                fen: c.fen,
                cpu_bytes_per_node: m.cpu_bytes_per_node,
            });
        }
    }
    found.extend(cluster_fixes(v));
    found.sort_by(|a, b| a.fen.cmp(&b.fen).then(a.patch.len().cmp(&b.patch.len())));
    // A pair whose first half already fits on its own adds nothing.
    let mut kept: Vec<Suggestion> = Vec::new();
    for s in found {
        let redundant = kept
            .iter()
            .any(|k| k.patch.iter().all(|o| s.patch.contains(o)));
        if !redundant {
            kept.push(s);
        }
        if kept.len() == 5 {
            break;
        }
    }
    kept
}

/// The changes a larger cluster is tried with: ZeRO-3, gradient checkpointing and
/// micro-batches of one (the accumulation keeping the global batch), with their names.
fn cluster_base(s: &JobSpec) -> (Vec<PatchOp>, Vec<&'static str>, Vec<&'static str>) {
    let mut base = Vec::new();
    let mut en = Vec::new();
    let mut zh = Vec::new();
    if s.parallel.zero_stage < 3 {
        base.push(op("parallel.zero_stage", json!(3)));
        en.push("ZeRO-3");
        zh.push("ZeRO-3");
    }
    if s.train.grad_checkpointing != Recompute::Full {
        base.push(op("train.grad_checkpointing", json!(true)));
        en.push("gradient checkpointing");
        zh.push("梯度检查点");
    }
    if s.train.micro_batch > 1 {
        let accum = u64::from(s.train.grad_accum) * u64::from(s.train.micro_batch);
        base.push(op("train.micro_batch", json!(1)));
        base.push(op("train.grad_accum", json!(accum)));
        en.push("micro_batch = 1");
        zh.push("micro_batch = 1");
    }
    (base, en, zh)
}

/// Where no change on a node fits: the fewest cards (of the spec's type and of the 80 GB class)
/// that hold the job with ZeRO-3, gradient checkpointing and micro-batches of one, found as the
/// card table finds its "fits with" counts.
fn cluster_fixes(v: &ValidSpec) -> Vec<Suggestion> {
    let s = v.spec();
    if !v.card().is_gpu || s.parallel.pp > 1 {
        return Vec::new();
    }
    let (base, en, zh) = cluster_base(s);
    let Some(patched) = apply_patch_fast(s, &base) else {
        return Vec::new();
    };
    let (Some(pv), _) = validate_spec(patched) else {
        return Vec::new();
    };
    let pv = v.carry_overrides(pv);
    let mut cards = vec![v.card()];
    cards.extend(
        ["a100-80g", "h800"]
            .iter()
            .filter_map(|id| catalog::card(id))
            .filter(|c| c.id != v.card().id),
    );
    let with = |list: &[&str], sep: &str| {
        if list.is_empty() {
            String::new()
        } else {
            format!(
                "{sep}{}",
                list.join(if sep == " with " { ", " } else { "、" })
            )
        }
    };
    cards
        .into_iter()
        .filter_map(|card| {
            let f = super::compare::fits_with(&pv, card)?;
            let mut patch = base.clone();
            patch.push(op("resources.card", json!(card.id)));
            patch.push(op("resources.cards_per_node", json!(f.cards_per_node)));
            patch.push(op("resources.nodes", json!(f.nodes)));
            let (m, _, _) = super::quick::quick(&validate_spec(apply_patch_fast(s, &patch)?).0?);
            Some(Suggestion {
                title: Message::new(
                    format!(
                        "use {} × {} ({} node(s) of {}){}",
                        f.cards,
                        card.display,
                        f.nodes,
                        f.cards_per_node,
                        with(&en, " with ")
                    ),
                    format!(
                        "改用 {} 张 {}（{} 个节点，每节点 {} 张）{}",
                        f.cards,
                        card.display,
                        f.nodes,
                        f.cards_per_node,
                        with(&zh, "，并启用 ")
                    ),
                ),
                patch,
                per_gpu_bytes: f.per_gpu_bytes,
                card_bytes: card.mem_bytes,
                seconds: f.seconds,
                fen: f.fen,
                cpu_bytes_per_node: m.cpu_bytes_per_node,
            })
        })
        .collect()
}

/// What the trainer says when a GPU runs out of memory: the plan's estimate for this spec and
/// the changes that lower it. The job carries it in its trainer run (`crate::trainer::RUN_FILE`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OomAdvice {
    pub card: String,
    pub card_bytes: u64,
    pub per_gpu_bytes: u64,
    /// Whether the plan expected the job to fit (an out-of-memory then means the estimate was
    /// short: fragmentation, a longer sequence than the data's average, another process).
    pub fits: bool,
    /// The plan's fixes when it did not fit; else the single changes that lower the estimate
    /// most, at most three, each with the estimate it would have.
    pub fixes: Vec<Suggestion>,
}

/// The advice for `v` (see [`OomAdvice`]).
pub fn oom_advice(v: &ValidSpec) -> OomAdvice {
    let (m, _, _) = super::quick::quick(v);
    let mut fixes = suggest_fixes(v);
    if fixes.is_empty() {
        for c in candidates(v) {
            let Some(patched) = apply_patch_fast(v.spec(), &c.ops) else {
                continue;
            };
            let (Some(pv), _) = validate_spec(patched) else {
                continue;
            };
            let pv = v.carry_overrides(pv);
            let (pm, t, cost) = super::quick::quick(&pv);
            // Only changes that keep the same card count and lower the need per GPU.
            if pm.per_gpu.total_bytes < m.per_gpu.total_bytes && pv.world_size() == v.world_size() {
                fixes.push(Suggestion {
                    title: c.title,
                    patch: c.ops,
                    per_gpu_bytes: pm.per_gpu.total_bytes,
                    card_bytes: pm.card_bytes,
                    seconds: t.seconds,
                    fen: cost.fen,
                    cpu_bytes_per_node: pm.cpu_bytes_per_node,
                });
            }
        }
        fixes.sort_by_key(|s| (s.per_gpu_bytes, s.patch.len()));
        fixes.truncate(3);
    }
    OomAdvice {
        card: v.card().id.to_string(),
        card_bytes: m.card_bytes,
        per_gpu_bytes: m.per_gpu.total_bytes,
        fits: m.fits,
        fixes,
    }
}

/// Catalogue cards in the order suggestions consider them (kept public for the app's picker).
pub fn gpu_cards() -> impl Iterator<Item = &'static catalog::Card> {
    CARDS.iter().filter(|c| c.is_gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path and the general one agree on every candidate of every corpus spec.
    #[test]
    fn fast_patch_agrees_with_apply_patch() {
        let specs = [
            include_str!("../../specs/7b-full-4090.toml"),
            include_str!("../../specs/7b-lora-4090.toml"),
            include_str!("../../specs/deepseek-7b-128k-mxc500.toml"),
            include_str!("../../specs/7b-sft-zero3-8xa100.toml"),
        ];
        let mut checked = 0;
        for src in specs {
            let (Some(v), _) = crate::validate_toml(src) else {
                panic!("invalid corpus spec")
            };
            for c in candidates(&v) {
                let slow = crate::patch::apply_patch(v.spec(), &c.ops).ok();
                assert_eq!(apply_patch_fast(v.spec(), &c.ops), slow, "{}", c.title.en);
                checked += 1;
            }
        }
        assert!(checked > 30);
    }

    /// A spec that fits gets the changes that lower its need per GPU most; one that does not
    /// gets the plan's fixes, which fit.
    #[test]
    fn oom_advice_lowers_the_need_per_gpu() {
        let src = include_str!("../../specs/7b-lora-4090.toml");
        let (Some(v), _) = crate::validate_toml(src) else {
            panic!("invalid corpus spec")
        };
        let a = oom_advice(&v);
        assert!(a.fits && a.card == "rtx-4090", "{a:?}");
        assert!(!a.fixes.is_empty() && a.fixes.len() <= 3, "{a:?}");
        assert!(a.fixes.iter().all(|f| f.per_gpu_bytes < a.per_gpu_bytes));
        assert!(
            a.fixes
                .windows(2)
                .all(|w| w[0].per_gpu_bytes <= w[1].per_gpu_bytes)
        );
        let src = include_str!("../../specs/7b-full-4090.toml");
        let (Some(v), _) = crate::validate_toml(src) else {
            panic!("invalid corpus spec")
        };
        let a = oom_advice(&v);
        assert!(!a.fits, "{a:?}");
        assert_eq!(a.fixes, suggest_fixes(&v));
        assert!(a.fixes.iter().all(|f| f.per_gpu_bytes <= f.card_bytes));
    }
}
