//! Estimators: parameters, per-GPU memory, time, cost, the physics check, the per-card
//! comparison and fix suggestions. They accept only a `ValidSpec`.

pub mod compare;
pub mod memory;
pub mod params;
mod quick;
pub mod suggest;
pub mod time;

pub use compare::{CardRow, FitsWith, compare_cards};
pub use memory::{MemoryEstimate, PerGpu, ZeroStates, deepspeed_zero2, deepspeed_zero3};
pub use params::ParamCount;
pub use quick::parameters;
pub use suggest::{OomAdvice, Suggestion, oom_advice, suggest_fixes};
pub use time::{CostEstimate, PhysicsFinding, TimeEstimate, cost_fen};

use crate::diag::Message;
use crate::spec::Offload;
use crate::validate::ValidSpec;
use serde::Serialize;

/// Every figure for one valid spec.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub parameters: ParamCount,
    pub memory: MemoryEstimate,
    pub time: TimeEstimate,
    pub cost: CostEstimate,
    pub physics: Vec<PhysicsFinding>,
    /// How each figure was obtained, for "show the formula".
    pub explain: Vec<Explanation>,
}

/// The formula behind one figure, with the spec's numbers in it, and its assumptions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Explanation {
    pub figure: &'static str,
    pub formula: Message,
    pub assumptions: Message,
}

/// Runs every estimator.
pub fn estimate(v: &ValidSpec) -> Estimate {
    let pc = parameters(v);
    let memory = memory::estimate(v, &pc);
    let t = time::estimate(v, &pc);
    let cost = time::cost(v, &t);
    let physics = time::physics(v, &t);
    let explain = explain(v, &pc, &memory, &t);
    Estimate {
        parameters: pc,
        memory,
        time: t,
        cost,
        physics,
        explain,
    }
}

fn explain(
    v: &ValidSpec,
    pc: &ParamCount,
    m: &MemoryEstimate,
    t: &TimeEstimate,
) -> Vec<Explanation> {
    vec![
        explain_parameters(v, pc),
        explain_model_states(v, pc, m),
        explain_activations(v, m),
        explain_buffers(m),
        explain_host_memory(v, m),
        explain_time(v, pc, t),
        explain_offload_time(v, pc, t),
        explain_cost(v, t),
    ]
}

fn explain_host_memory(v: &ValidSpec, m: &MemoryEstimate) -> Explanation {
    let p = &v.spec().parallel;
    let node = &v.card().node;
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
    Explanation {
        figure: "host_memory",
        formula: Message::new(
            format!(
                "offload optimizer = {}, params = {} at ZeRO-{} over {} node(s): RAM {} of {} per node, NVMe {} of {} per node → {}",
                p.offload_optimizer.as_str(),
                p.offload_params.as_str(),
                p.zero_stage,
                v.spec().resources.nodes.max(1),
                gib(m.cpu_bytes_per_node),
                gib(m.node_ram_bytes),
                gib(m.nvme_bytes_per_node),
                gib(m.node_nvme_bytes),
                if m.host_fits { "fits" } else { "does not fit" }
            ),
            format!(
                "优化器状态卸载 = {}，参数卸载 = {}，ZeRO-{}，{} 个节点：每节点内存 {}（共 {}），NVMe {}（共 {}）→ {}",
                p.offload_optimizer.as_str(),
                p.offload_params.as_str(),
                p.zero_stage,
                v.spec().resources.nodes.max(1),
                gib(m.cpu_bytes_per_node),
                gib(m.node_ram_bytes),
                gib(m.nvme_bytes_per_node),
                gib(m.node_nvme_bytes),
                if m.host_fits {
                    "放得下"
                } else {
                    "放不下"
                }
            ),
        ),
        assumptions: Message::new(
            format!(
                "CPU offload per DeepSpeed's estimators: 12Ψ optimizer + 4Ψ fp32 gradients + 2Ψ 16-bit parameters (stage 3), ×1.5 buffer factor, split over the nodes; NVMe takes the optimizer's 12Ψ and the parameters' 2Ψ; node figures: {}",
                node.source
            ),
            format!(
                "CPU 卸载按 DeepSpeed 估算器：12Ψ 优化器 + 4Ψ fp32 梯度 + 2Ψ 16 位参数（ZeRO-3），×1.5 缓冲系数，按节点均分；NVMe 承担优化器的 12Ψ 和参数的 2Ψ；节点数据：{}",
                node.source_zh
            ),
        ),
    }
}

fn explain_offload_time(v: &ValidSpec, pc: &ParamCount, t: &TimeEstimate) -> Explanation {
    let node = &v.card().node;
    let off = time::offload(v, pc);
    Explanation {
        figure: "offload_time",
        formula: Message::new(
            format!(
                "{} steps × ({:.3e} bytes per card over {} at {:.0} GB/s × {:.0}% = {:.1} s + CPU Adam {:.1} s) = {:.0} s link + {:.0} s optimizer",
                v.steps(),
                off.bytes_per_step,
                node.host_link,
                node.host_link_gbps,
                time::HOST_LINK_EFFICIENCY * 100.0,
                off.link_seconds_per_step,
                off.optimizer_seconds_per_step,
                t.offload_seconds,
                t.cpu_optimizer_seconds
            ),
            format!(
                "{} 步 × （每卡 {:.3e} 字节，经 {}，{:.0} GB/s × {:.0}% = {:.1} 秒 + CPU Adam {:.1} 秒）= 传输 {:.0} 秒 + 优化器 {:.0} 秒",
                v.steps(),
                off.bytes_per_step,
                node.host_link,
                node.host_link_gbps,
                time::HOST_LINK_EFFICIENCY * 100.0,
                off.link_seconds_per_step,
                off.optimizer_seconds_per_step,
                t.offload_seconds,
                t.cpu_optimizer_seconds
            ),
        ),
        assumptions: Message::new(
            format!(
                "per micro-batch the card fetches its 16-bit parameter partition for every pass (forward, backward, recomputed forward) and sends its gradient partition; the CPU Adam step touches {} bytes per parameter at {:.0}% of the node's {:.1} GB/s DRAM bandwidth; no overlap with compute (an upper bound); {}",
                time::CPU_ADAM_BYTES_PER_PARAM,
                time::HOST_MEM_EFFICIENCY * 100.0,
                node.mem_gbps,
                node.source
            ),
            format!(
                "每个微批次中，每一遍（前向、反向、重算的前向）都要取回本卡的 16 位参数分片，并送出梯度分片；CPU Adam 每个参数读写 {} 字节，按节点 {:.1} GB/s 内存带宽的 {:.0}% 计；不与计算重叠（上界）；{}",
                time::CPU_ADAM_BYTES_PER_PARAM,
                node.mem_gbps,
                time::HOST_MEM_EFFICIENCY * 100.0,
                node.source_zh
            ),
        ),
    }
}

/// The model-state formula of the spec's ZeRO stage and offload (per DeepSpeed's estimators),
/// or the frozen base and its adapters for LoRA and QLoRA.
fn zero_formula(v: &ValidSpec, pc: &ParamCount) -> Message {
    let s = v.spec();
    let p = &s.parallel;
    if s.task.is_adapter() {
        let qlora = s.task == crate::spec::Task::Qlora;
        return Message::new(
            format!(
                "frozen base ({} at {}) + adapters A = {} × 16 bytes (2 weights + 2 grads + 12 Adam), partitioned by ZeRO-{} (base too at stage 3)",
                pc.total,
                if qlora {
                    "NF4 4.127 bits, embeddings 2 bytes"
                } else {
                    "2 bytes"
                },
                pc.adapter,
                p.zero_stage
            ),
            format!(
                "冻结底座（{} 个参数，{}）+ 适配器 A = {} × 16 字节（2 权重 + 2 梯度 + 12 Adam），按 ZeRO-{} 切分（ZeRO-3 时底座也切分）",
                pc.total,
                if qlora {
                    "NF4 每参数 4.127 位，嵌入 2 字节"
                } else {
                    "每参数 2 字节"
                },
                pc.adapter,
                p.zero_stage
            ),
        );
    }
    let (en, zh) = match (
        p.zero_stage,
        p.offload_optimizer != Offload::None,
        p.offload_params != Offload::None,
    ) {
        (0, _, _) => (
            "16Ψ: 2Ψ bf16 params + 2Ψ grads + 12Ψ Adam (fp32 master, m, v) — ZeRO paper §3",
            "16Ψ：2Ψ bf16 参数 + 2Ψ 梯度 + 12Ψ Adam（fp32 主权重、m、v）— ZeRO 论文 §3",
        ),
        (1, false, _) => (
            "4Ψ + 12Ψ/N — ZeRO paper §5.1 (P_os)",
            "4Ψ + 12Ψ/N — ZeRO 论文 §5.1（P_os）",
        ),
        (2, false, _) => (
            "4Ψ + int(16Ψ/N) — DeepSpeed estimate_zero2_model_states_mem_needs",
            "4Ψ + int(16Ψ/N) — DeepSpeed estimate_zero2_model_states_mem_needs",
        ),
        (1 | 2, true, _) => (
            "2Ψ — DeepSpeed estimate_zero2_model_states_mem_needs (cpu_offload)",
            "2Ψ — DeepSpeed estimate_zero2_model_states_mem_needs（cpu_offload）",
        ),
        (_, false, false) => (
            "4·L + int(18Ψ/N) — DeepSpeed estimate_zero3_model_states_mem_needs",
            "4·L + int(18Ψ/N) — DeepSpeed estimate_zero3_model_states_mem_needs",
        ),
        (_, true, false) => (
            "4·L + int(2Ψ/N) — DeepSpeed estimate_zero3 (offload optimizer)",
            "4·L + int(2Ψ/N) — DeepSpeed estimate_zero3（卸载优化器状态）",
        ),
        (_, true, true) => (
            "4·L — DeepSpeed estimate_zero3 (offload optimizer and params)",
            "4·L — DeepSpeed estimate_zero3（卸载优化器状态与参数）",
        ),
        (_, false, true) => (
            "4·L + 16Ψ/N — params offloaded, optimizer on GPU (not a DeepSpeed estimator case)",
            "4·L + 16Ψ/N — 参数卸载、优化器状态留在 GPU（DeepSpeed 估算器未覆盖此情形）",
        ),
    };
    Message::new(en, zh)
}

fn explain_parameters(v: &ValidSpec, pc: &ParamCount) -> Explanation {
    let a = v.arch();
    Explanation {
        figure: "parameters",
        formula: {
            let (lora_en, lora_zh) = if pc.adapter > 0 {
                let targets = v.lora_targets().join(",");
                (
                    format!(
                        "; LoRA r={} on {targets}: Σ r·(in+out) × L = {}",
                        v.lora_rank(),
                        pc.adapter
                    ),
                    format!(
                        "；LoRA r={}，作用于 {targets}：Σ r·(in+out) × L = {}",
                        v.lora_rank(),
                        pc.adapter
                    ),
                )
            } else {
                (String::new(), String::new())
            };
            let base = |norms: &str| {
                format!(
                    "V·h ({}) ×{} + L ({}) × [q,k,v,o + 3·h·ffn + {norms}] ({}) + h = {}",
                    pc.embedding,
                    if a.tied_embeddings { 1 } else { 2 },
                    a.layers,
                    pc.per_layer,
                    pc.total,
                )
            };
            Message::new(base("norms") + &lora_en, base("归一化") + &lora_zh)
        },
        assumptions: Message::new(
            "llama-family decoder: gated MLP (3 matrices), RMSNorm, no biases except q/k/v where the model has them",
            "llama 系列解码器：门控 MLP（3 个矩阵）、RMSNorm，除 q/k/v（若模型有）外无偏置",
        ),
    }
}

fn explain_model_states(v: &ValidSpec, pc: &ParamCount, m: &MemoryEstimate) -> Explanation {
    let p = &v.spec().parallel;
    let n = u64::from(v.world_size()) / (u64::from(p.tp) * u64::from(p.pp)).max(1);
    let zero = zero_formula(v, pc);
    Explanation {
        figure: "model_states",
        formula: Message::new(
            format!(
                "ZeRO-{} with Ψ = {} params per model shard, N = {n} ranks, L = {} largest layer: {} = {} bytes",
                p.zero_stage,
                pc.total / (u64::from(p.tp) * u64::from(p.pp)).max(1),
                pc.largest_layer,
                zero.en,
                m.per_gpu.model_states_bytes
            ),
            format!(
                "ZeRO-{}，每个模型分片 Ψ = {} 个参数，N = {n} 个进程，最大层 L = {} 个参数：{} = {} 字节",
                p.zero_stage,
                pc.total / (u64::from(p.tp) * u64::from(p.pp)).max(1),
                pc.largest_layer,
                zero.zh,
                m.per_gpu.model_states_bytes
            ),
        ),
        assumptions: Message::new(
            "mixed precision with Adam (SGD saves 4 bytes/param); LoRA/QLoRA: frozen base at 2 bytes (NF4: 4.127 bits) plus 16 bytes per adapter param",
            "混合精度 + Adam（SGD 每参数少 4 字节）；LoRA/QLoRA：冻结底座 2 字节（NF4 为 4.127 位），适配器每参数 16 字节",
        ),
    }
}

fn explain_activations(v: &ValidSpec, m: &MemoryEstimate) -> Explanation {
    let (s, a) = (v.spec(), v.arch());
    let p = &s.parallel;
    Explanation {
        figure: "activations",
        formula: {
            let values = format!(
                "s = {}, b = {}, h = {}, a = {}, t = {}, sp = {}, recompute = {}, flash = {}",
                s.data.seq_len,
                s.train.micro_batch,
                a.hidden,
                a.heads,
                p.tp,
                p.sp,
                s.train.grad_checkpointing.as_str(),
                s.train.flash_attention,
            );
            let (per, total) = (m.activations_per_layer_bytes, m.per_gpu.activations_bytes);
            Message::new(
                format!(
                    "Korthikanti et al. 2022: s·b·h·(34 + 5·a·s/h)/t per layer; {values} → {per} bytes/layer, {total} total"
                ),
                format!(
                    "Korthikanti 等 2022：每层 s·b·h·(34 + 5·a·s/h)/t；{values} → 每层 {per} 字节，共 {total} 字节"
                ),
            )
        },
        assumptions: Message::new(
            "16-bit activations with the paper's dropout masks (an upper bound for dropout-free models); FlashAttention removes the 5·a·s/h term; tensor parallelism with sequence parallelism; full recomputation keeps 2·s·b·h per layer plus one layer's working set",
            "16 位激活并按论文计入 dropout 掩码（对无 dropout 模型是上界）；FlashAttention 去掉 5·a·s/h 项；张量并行配合序列并行；完全重计算每层保留 2·s·b·h，外加一层的工作集",
        ),
    }
}

fn explain_buffers(m: &MemoryEstimate) -> Explanation {
    Explanation {
        figure: "buffers",
        formula: Message::new(
            format!(
                "ZeRO-3 gather 4·L + logits s·b·V·(2+4) ({}) + runtime {} = {} bytes",
                m.logits_bytes, m.runtime_overhead_bytes, m.per_gpu.buffers_bytes
            ),
            format!(
                "ZeRO-3 收集 4·L + logits s·b·V·(2+4)（{}）+ 运行时 {} = {} 字节",
                m.logits_bytes, m.runtime_overhead_bytes, m.per_gpu.buffers_bytes
            ),
        ),
        assumptions: Message::new(
            "the loss materialises 16-bit logits and their fp32 copy (no fused/chunked cross-entropy); ~1 GiB CUDA context and NCCL buffers",
            "损失计算会生成 16 位 logits 及其 fp32 副本（未用融合/分块交叉熵）；约 1 GiB 的 CUDA 上下文与 NCCL 缓冲",
        ),
    }
}

fn explain_time(v: &ValidSpec, pc: &ParamCount, t: &TimeEstimate) -> Explanation {
    let s = v.spec();
    let (dense, attn) = time::flops_per_token(v, pc);
    Explanation {
        figure: "time",
        formula: Message::new(
            format!(
                "({dense:.3e} dense + {attn:.3e} attention) FLOPs/token × {} tokens = {:.3e} FLOPs; × {:.3} recompute / ({} cards × {:.1} TFLOPS × MFU {:.2}) = {:.0} s; + offload {:.0} s + CPU optimizer {:.0} s = {:.0} s",
                t.tokens,
                t.flops,
                t.recompute_factor,
                v.world_size(),
                v.card().peak_flops(s.train.precision) / 1e12,
                t.mfu,
                t.compute_seconds,
                t.offload_seconds,
                t.cpu_optimizer_seconds,
                t.seconds
            ),
            format!(
                "（稠密 {dense:.3e} + 注意力 {attn:.3e}）FLOPs/token × {} token = {:.3e} FLOPs；× 重计算 {:.3} /（{} 张卡 × {:.1} TFLOPS × MFU {:.2}）= {:.0} 秒；+ 卸载 {:.0} 秒 + CPU 优化器 {:.0} 秒 = {:.0} 秒",
                t.tokens,
                t.flops,
                t.recompute_factor,
                v.world_size(),
                v.card().peak_flops(s.train.precision) / 1e12,
                t.mfu,
                t.compute_seconds,
                t.offload_seconds,
                t.cpu_optimizer_seconds,
                t.seconds
            ),
        ),
        assumptions: Message::new(
            "6·N per token for full training, 4·N with a frozen base; attention 12·L·h·s per token; MFU is a stated, adjustable default ([estimate] mfu); communication is folded into MFU; offload traffic and the CPU optimizer step are added (see offload_time)",
            "全参训练每 token 6·N，冻结底座 4·N；注意力每 token 12·L·h·s；MFU 为可调默认值（[estimate] mfu）；通信开销计入 MFU；卸载传输与 CPU 优化器步骤另行相加（见 offload_time）",
        ),
    }
}

fn explain_cost(v: &ValidSpec, t: &TimeEstimate) -> Explanation {
    Explanation {
        figure: "cost",
        formula: Message::new(
            format!(
                "{} cards × {:.2} h × {} fen/card-hour, rounded up",
                v.world_size(),
                t.seconds / 3600.0,
                v.price_fen_per_hour()
            ),
            format!(
                "{} 张卡 × {:.2} 小时 × 每卡时 {} 分，向上取整",
                v.world_size(),
                t.seconds / 3600.0,
                v.price_fen_per_hour()
            ),
        ),
        assumptions: Message::new(
            "default catalogue prices; a deployment may override them",
            "目录默认价格；部署方可以覆盖",
        ),
    }
}
