//! Per-GPU memory: ZeRO model states (matching DeepSpeed's estimators), activations after
//! Korthikanti et al. 2022, and temporary buffers.

use super::params::{self, ParamCount};
use crate::catalog::Arch;
use crate::spec::{Offload, Optimizer, Precision, Recompute, Task};
use crate::validate::ValidSpec;
use serde::Serialize;

/// What DeepSpeed's `estimate_zero2_model_states_mem_needs` /
/// `estimate_zero3_model_states_mem_needs` return, per GPU and per node's CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ZeroStates {
    /// Bytes on each GPU for parameters, gradients and optimizer states (and, for ZeRO-3, the
    /// gathered largest layer). Equals DeepSpeed's `gpu_mem` for stages 2 and 3.
    pub gpu_bytes: u64,
    /// Bytes of CPU memory per node (DeepSpeed's `cpu_mem`, additional_buffer_factor 1.5,
    /// zero_init on).
    pub cpu_bytes: u64,
    /// ZeRO-3's gathered-layer working buffer: 4 × largest layer (0 below stage 3).
    pub gather_bytes: u64,
}

/// DeepSpeed `deepspeed/runtime/zero/stage_1_and_2.py::estimate_zero2_model_states_mem_needs`:
/// offload: gpu = 2Ψ, cpu = Ψ·max(4·gpus, 16)·1.5; otherwise gpu = 4Ψ + int(16Ψ / gpus),
/// cpu = Ψ·4·gpus_per_node·1.5.
pub fn deepspeed_zero2(
    total_params: u64,
    gpus_per_node: u64,
    nodes: u64,
    cpu_offload: bool,
) -> ZeroStates {
    let gpus = (gpus_per_node * nodes).max(1);
    let p = total_params;
    let (gpu, cpu) = if cpu_offload {
        (2 * p, p as f64 * (4 * gpus).max(16) as f64 * 1.5)
    } else {
        (
            4 * p + 16 * p / gpus,
            p as f64 * 4.0 * gpus_per_node as f64 * 1.5,
        )
    };
    ZeroStates {
        gpu_bytes: gpu,
        cpu_bytes: cpu as u64,
        gather_bytes: 0,
    }
}

/// DeepSpeed `deepspeed/runtime/zero/stage3.py::estimate_zero3_model_states_mem_needs`
/// (zero_init on): largest = 4·L; offload optimizer and params: gpu = largest;
/// optimizer only: gpu = largest + int(2Ψ / gpus); none: gpu = largest + int(18Ψ / gpus).
pub fn deepspeed_zero3(
    total_params: u64,
    largest_layer_params: u64,
    gpus_per_node: u64,
    nodes: u64,
    cpu_offload: bool,
    cpu_offload_params: bool,
) -> ZeroStates {
    let gpus = (gpus_per_node * nodes).max(1);
    let nodes_f = nodes.max(1) as f64;
    let p = total_params;
    let largest = 4 * largest_layer_params;
    let (gpu, cpu) = match (cpu_offload, cpu_offload_params) {
        (true, true) => (largest, p as f64 * 18.0 / nodes_f * 1.5),
        (true, false) => (largest + 2 * p / gpus, p as f64 * 16.0 / nodes_f * 1.5),
        (false, _) => (
            largest + 18 * p / gpus,
            largest_layer_params as f64 * 4.0 * gpus_per_node as f64 * 1.5,
        ),
    };
    ZeroStates {
        gpu_bytes: gpu,
        cpu_bytes: cpu as u64,
        gather_bytes: largest,
    }
}

/// The per-GPU memory breakdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PerGpu {
    pub params_bytes: u64,
    pub grads_bytes: u64,
    pub optimizer_bytes: u64,
    pub activations_bytes: u64,
    /// ZeRO-3 gather buffer, the loss's logits, and the CUDA context / NCCL buffers.
    pub buffers_bytes: u64,
    /// Parameters + gradients + optimizer states + ZeRO-3 gather buffer: DeepSpeed's figure.
    pub model_states_bytes: u64,
    pub total_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MemoryEstimate {
    pub per_gpu: PerGpu,
    pub card_bytes: u64,
    pub fits: bool,
    /// Card memory minus the total: negative when it does not fit.
    pub headroom_bytes: i64,
    /// Activation bytes of one transformer block for one micro-batch on one GPU.
    pub activations_per_layer_bytes: u64,
    pub logits_bytes: u64,
    pub runtime_overhead_bytes: u64,
    /// Host RAM per node the offloaded states need (DeepSpeed's `cpu_mem` for CPU offload),
    /// 0 without offload.
    pub cpu_bytes_per_node: u64,
    /// NVMe per node the states offloaded there need (ZeRO-Infinity), 0 without NVMe offload.
    pub nvme_bytes_per_node: u64,
    /// Host RAM and NVMe of one node (the catalogue's for the card type, or the backend's).
    pub node_ram_bytes: u64,
    pub node_nvme_bytes: u64,
    /// The per-card total fits in the card's memory.
    pub gpu_fits: bool,
    /// The offloaded states fit in the node's RAM and NVMe.
    pub host_fits: bool,
    /// DeepSpeed's own figure for the same inputs, for stages 2 and 3.
    pub deepspeed_gpu_bytes: Option<u64>,
}

/// CUDA context, cuBLAS workspace and NCCL buffers: about 1 GiB per GPU in practice.
pub const RUNTIME_OVERHEAD_BYTES: u64 = 1 << 30;

/// Bytes per parameter of a QLoRA NF4 base with double quantization: 4 bits + 0.127 bits of
/// quantization constants (Dettmers et al. 2023, QLoRA, §3 "Double Quantization").
const NF4_BITS_X1000: u64 = 4127;

/// Estimates per-GPU memory for a valid spec.
pub fn estimate(v: &ValidSpec, pc: &ParamCount) -> MemoryEstimate {
    let s = v.spec();
    let p = &s.parallel;
    let model_par = u64::from(p.tp) * u64::from(p.pp);
    // ZeRO partitions across every rank that holds the same model shard: dp × sp.
    let zero_n = (u64::from(v.world_size()) / model_par.max(1)).max(1);
    let (params_b, grads_b, opt_b, states, cpu_b, ds) = if s.task.is_adapter() {
        adapter_states(v, pc, model_par, zero_n)
    } else {
        full_states(v, pc, model_par, zero_n)
    };
    let gather = states.unwrap_or(0);
    let (cpu_b, nvme_b) = host_placement(v, pc, model_par, cpu_b);

    let act = activations(v);
    let logits = logits_bytes(v);
    let overhead = if v.card().is_gpu {
        RUNTIME_OVERHEAD_BYTES
    } else {
        0
    };
    // Saturating: absurd (but valid) specs must give absurd numbers, never an overflow.
    let sum = |xs: &[u64]| xs.iter().fold(0u64, |acc, x| acc.saturating_add(*x));
    let buffers = sum(&[gather, logits, overhead]);
    let model_states = sum(&[params_b, grads_b, opt_b, gather]);
    let total = sum(&[params_b, grads_b, opt_b, act.total, buffers]);
    let card = v.card().mem_bytes;
    let headroom = i128::from(card) - i128::from(total);
    let (ram, nvme) = (v.node_ram_bytes(), v.node_nvme_bytes());
    let host_fits = cpu_b <= ram && nvme_b <= nvme;
    MemoryEstimate {
        per_gpu: PerGpu {
            params_bytes: params_b,
            grads_bytes: grads_b,
            optimizer_bytes: opt_b,
            activations_bytes: act.total,
            buffers_bytes: buffers,
            model_states_bytes: model_states,
            total_bytes: total,
        },
        card_bytes: card,
        fits: total <= card && host_fits,
        headroom_bytes: i64::try_from(headroom).unwrap_or(i64::MIN),
        activations_per_layer_bytes: act.per_layer,
        logits_bytes: logits,
        runtime_overhead_bytes: overhead,
        cpu_bytes_per_node: cpu_b,
        nvme_bytes_per_node: nvme_b,
        node_ram_bytes: ram,
        node_nvme_bytes: nvme,
        gpu_fits: total <= card,
        host_fits,
        deepspeed_gpu_bytes: ds,
    }
}

/// Where ZeRO-3's offloaded states live per node: RAM, and NVMe for what ZeRO-Infinity swaps
/// there. DeepSpeed's 18Ψ of CPU offload is 12Ψ optimizer (fp32 master, m, v), 4Ψ fp32
/// gradients and 2Ψ 16-bit parameters; NVMe takes the optimizer's 12Ψ and the parameters' 2Ψ
/// when they go there, while the gradients stay in (pinned) RAM. RAM keeps DeepSpeed's 1.5
/// buffer factor; parameters offloaded with the optimizer on the GPU need their 2Ψ in RAM too
/// (a case DeepSpeed's estimator leaves out). Below stage 3, and for LoRA's adapters, the
/// figure from the states is kept (DeepSpeed offloads to NVMe only at stage 3).
fn host_placement(v: &ValidSpec, pc: &ParamCount, model_par: u64, cpu_b: u64) -> (u64, u64) {
    let s = v.spec();
    let p = &s.parallel;
    if p.zero_stage < 3 || s.task.is_adapter() {
        let adapter = if s.task.is_adapter() && p.offload_optimizer != Offload::None {
            let nodes = f64::from(s.resources.nodes.max(1));
            to_bytes(pc.adapter as f64 * 16.0 * 1.5 / nodes)
        } else {
            0
        };
        return (cpu_b.max(adapter), 0);
    }
    let psi = (pc.total / model_par.max(1)) as f64 / f64::from(s.resources.nodes.max(1));
    let (opt, par) = (p.offload_optimizer, p.offload_params);
    let mut ram = 0.0;
    let mut nvme = 0.0;
    match opt {
        Offload::None => {}
        Offload::Cpu => ram += 16.0 * psi,
        Offload::Nvme => {
            ram += 4.0 * psi;
            nvme += 12.0 * psi;
        }
    }
    match par {
        Offload::None => {}
        Offload::Cpu => ram += 2.0 * psi,
        Offload::Nvme => nvme += 2.0 * psi,
    }
    (to_bytes(ram * 1.5), to_bytes(nvme))
}

/// Full training: every weight trains, its states placed by the ZeRO stage and offload as
/// DeepSpeed's estimators place them (the ZeRO paper's formula for stage 1 without offload).
fn full_states(
    v: &ValidSpec,
    pc: &ParamCount,
    model_par: u64,
    zero_n: u64,
) -> (u64, u64, u64, Option<u64>, u64, Option<u64>) {
    let s = v.spec();
    let p = &s.parallel;
    let nodes = u64::from(s.resources.nodes).max(1);
    let per_node = (zero_n / nodes).max(1);
    let off_opt = p.offload_optimizer != Offload::None;
    let off_par = p.offload_params != Offload::None;
    // SGD keeps one fp32 buffer where Adam keeps two: 4 bytes/param less in every formula.
    let sgd_saving = |psi: u64| {
        if s.train.optimizer == Optimizer::Sgd {
            4 * psi
        } else {
            0
        }
    };
    let psi = pc.total / model_par.max(1);
    let largest = pc.largest_layer / u64::from(p.tp).max(1);
    match p.zero_stage {
        0 => {
            let opt = 12 * psi - sgd_saving(psi);
            (2 * psi, 2 * psi, opt, None, 0, None)
        }
        1 if !off_opt => {
            // ZeRO paper (Rajbhandari et al. 2020) §5.1, P_os: 4Ψ + KΨ/N with K = 12.
            let opt = (12 * psi).saturating_sub(sgd_saving(psi)) / zero_n;
            (2 * psi, 2 * psi, opt, None, 0, None)
        }
        1 | 2 => {
            let z = deepspeed_zero2(psi, per_node, nodes, off_opt);
            let opt = z.gpu_bytes.saturating_sub(4 * psi);
            let (g, o) = if off_opt {
                (0, 0)
            } else {
                (2 * psi, opt.saturating_sub(sgd_saving(psi) / zero_n))
            };
            let ds = (!off_opt || p.zero_stage == 2).then_some(z.gpu_bytes);
            (
                2 * psi,
                g,
                o,
                None,
                if off_opt { z.cpu_bytes } else { 0 },
                ds,
            )
        }
        _ => {
            let z = deepspeed_zero3(psi, largest, per_node, nodes, off_opt, off_par);
            let shard = 2 * psi / zero_n;
            let states = z.gpu_bytes - z.gather_bytes;
            let (pb, gb, ob) = match (off_opt, off_par) {
                (true, true) => (0, 0, 0),
                (true, false) => (states, 0, 0),
                (false, true) => (0, shard, (16 * psi / zero_n).saturating_sub(shard)),
                (false, false) => (shard, shard, states.saturating_sub(2 * shard)),
            };
            let ob = ob.saturating_sub(if off_opt { 0 } else { sgd_saving(psi) / zero_n });
            let ds = (!off_par || off_opt).then_some(z.gpu_bytes);
            (
                pb,
                gb,
                ob,
                Some(z.gather_bytes),
                if off_opt || off_par { z.cpu_bytes } else { 0 },
                ds,
            )
        }
    }
}

/// LoRA / QLoRA: a frozen base (16-bit or NF4) plus adapters trained with the usual 16 bytes
/// per parameter, partitioned by ZeRO like any trainable weights.
fn adapter_states(
    v: &ValidSpec,
    pc: &ParamCount,
    model_par: u64,
    zero_n: u64,
) -> (u64, u64, u64, Option<u64>, u64, Option<u64>) {
    let s = v.spec();
    let p = &s.parallel;
    let a = pc.adapter / model_par.max(1);
    let base_bytes = if s.task == Task::Qlora {
        let q = params::quantizable(v.arch());
        let rest = pc.total - q;
        (q * NF4_BITS_X1000).div_ceil(8000) + 2 * rest
    } else {
        s.train.precision.bytes() * pc.total
    } / model_par.max(1);
    let stage3 = p.zero_stage == 3;
    let base = if stage3 {
        base_bytes / zero_n
    } else {
        base_bytes
    };
    let opt_full = if s.train.optimizer == Optimizer::Sgd {
        8 * a
    } else {
        12 * a
    };
    let (ap, ag, ao) = match p.zero_stage {
        0 => (2 * a, 2 * a, opt_full),
        1 => (2 * a, 2 * a, opt_full / zero_n),
        2 => (2 * a, 2 * a / zero_n, opt_full / zero_n),
        _ => (2 * a / zero_n, 2 * a / zero_n, opt_full / zero_n),
    };
    let ao = if p.offload_optimizer != Offload::None {
        0
    } else {
        ao
    };
    let gather = stage3.then(|| 4 * pc.largest_layer / u64::from(p.tp).max(1));
    (base + ap, ag, ao, gather, 0, None)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Activations {
    pub per_layer: u64,
    pub total: u64,
}

/// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
/// §4 and Table 2: bytes per layer = s·b·h·(34 + 5·a·s/h) / t with tensor + sequence
/// parallelism (16-bit activations, 1-byte dropout masks). Selective recomputation (or
/// FlashAttention, which never stores the s×s scores) leaves 34·s·b·h / t; full recomputation
/// keeps only each layer's input, 2·s·b·h / t, plus one layer's working set during backward.
/// Ulysses sequence parallelism (sp) divides s. With pipeline parallelism under 1F1B the first
/// stage holds L layers' worth in flight, so L layers are counted whatever pp is.
pub fn activations(v: &ValidSpec) -> Activations {
    let s = v.spec();
    let a: &Arch = v.arch();
    let seq = f64::from(s.data.seq_len) / f64::from(s.parallel.sp.max(1));
    let b = f64::from(s.train.micro_batch);
    let h = f64::from(a.hidden);
    let heads = f64::from(a.heads);
    let t = f64::from(s.parallel.tp.max(1));
    // The full sequence attends: scores are (s_local·heads/sp) × s with Ulysses, i.e. the same
    // total as heads × s_local × s; a·s/h uses the full s.
    let full_s = f64::from(s.data.seq_len);
    let scale = if s.train.precision == Precision::Fp32 {
        2.0
    } else {
        1.0
    };
    let sbh = seq * b * h;
    let attention_scores = if s.train.flash_attention {
        0.0
    } else {
        5.0 * heads * full_s / h
    };
    let layer_full = sbh * (34.0 + attention_scores) / t * scale;
    let layer_selective = sbh * 34.0 / t * scale;
    let layers = f64::from(a.layers);
    let (per_layer, total) = match s.train.grad_checkpointing {
        Recompute::None => (layer_full, layer_full * layers),
        Recompute::Selective => (layer_selective, layer_selective * layers),
        Recompute::Full => {
            let kept = 2.0 * sbh / t * scale;
            (kept, kept * layers + layer_full)
        }
    };
    Activations {
        per_layer: to_bytes(per_layer),
        total: to_bytes(total),
    }
}

/// The loss needs the logits of one micro-batch: 16-bit logits plus their fp32 upcast for the
/// softmax (Hugging Face's default causal-LM loss), vocab split by tp, sequence by sp.
pub fn logits_bytes(v: &ValidSpec) -> u64 {
    let s = v.spec();
    let seq = f64::from(s.data.seq_len) / f64::from(s.parallel.sp.max(1));
    let vocab = f64::from(v.arch().vocab) / f64::from(s.parallel.tp.max(1));
    let bytes = (s.train.precision.bytes() + 4) as f64;
    to_bytes(seq * f64::from(s.train.micro_batch) * vocab * bytes)
}

fn to_bytes(x: f64) -> u64 {
    if x.is_finite() && x > 0.0 {
        x.min(u64::MAX as f64 / 2.0) as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// t5-small as DeepSpeed's `estimate_zero3_model_states_mem_needs_all_live` reports it
    /// (60M total params, 16M largest layer, 1 node × 1 GPU; output quoted in
    /// blog.csdn.net/u012327567/article/details/132278598): per GPU 0.06 GB (offload params and
    /// optimizer), 0.17 GB (offload optimizer), 1.08 GB (no offload), with GB = 2^30 bytes.
    #[test]
    fn deepspeed_zero3_t5_small() {
        let psi = 60_506_624;
        let largest = 16_449_536; // the shared 32128 × 512 embedding
        let gb = |b: u64| format!("{:.2}", b as f64 / (1u64 << 30) as f64);
        assert_eq!(
            gb(deepspeed_zero3(psi, largest, 1, 1, true, true).gpu_bytes),
            "0.06"
        );
        assert_eq!(
            gb(deepspeed_zero3(psi, largest, 1, 1, true, false).gpu_bytes),
            "0.17"
        );
        assert_eq!(
            gb(deepspeed_zero3(psi, largest, 1, 1, false, false).gpu_bytes),
            "1.08"
        );
        // And the exact integers of DeepSpeed's formula.
        assert_eq!(
            deepspeed_zero3(psi, largest, 1, 1, false, false).gpu_bytes,
            1_154_917_376
        );
    }

    #[test]
    fn deepspeed_zero2_formula() {
        let psi = 7_000_000_000;
        assert_eq!(
            deepspeed_zero2(psi, 8, 1, false).gpu_bytes,
            4 * psi + 16 * psi / 8
        );
        assert_eq!(deepspeed_zero2(psi, 8, 1, true).gpu_bytes, 2 * psi);
        assert_eq!(
            deepspeed_zero2(psi, 8, 2, false).gpu_bytes,
            4 * psi + 16 * psi / 16
        );
    }
}
