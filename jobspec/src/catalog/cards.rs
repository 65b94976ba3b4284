//! The card catalogue: memory, dense peak FLOPS, interconnect and a default price per card type.
//!
//! Peak figures are *dense* tensor-core numbers (no 2:4 sparsity) with fp32 accumulation, as the
//! vendors publish them. Prices are defaults in fen per card-hour; a deployment overrides them.

use serde::Serialize;

const GIB: u64 = 1 << 30;

const TIB: u64 = 1 << 40;

/// DGX A100 (320 GB) datasheet: 2× AMD EPYC 7742, 1 TB RAM, 15 TB internal NVMe; each A100 on
/// PCIe 4.0 x16. DRAM: 2 sockets × 8 channels × DDR4-3200 (25.6 GB/s each) = 409.6 GB/s.
const DGXA100_320: Node = Node {
    ram_bytes: TIB,
    nvme_bytes: 15 * TIB,
    host_link_gbps: 32.0,
    host_link: "PCIe 4.0 x16",
    mem_gbps: 409.6,
    source: "NVIDIA DGX A100 320GB datasheet (2× EPYC 7742, 1 TB RAM, 15 TB NVMe, PCIe 4.0)",
    source_zh: "NVIDIA DGX A100 320GB 数据手册（2× EPYC 7742，1 TB 内存，15 TB NVMe，PCIe 4.0）",
};

/// DGX A100 (640 GB) datasheet: 2 TB RAM, 30 TB internal NVMe; otherwise as the 320 GB system.
const DGXA100_640: Node = Node {
    ram_bytes: 2 * TIB,
    nvme_bytes: 30 * TIB,
    source: "NVIDIA DGX A100 640GB datasheet (2× EPYC 7742, 2 TB RAM, 30 TB NVMe, PCIe 4.0)",
    source_zh: "NVIDIA DGX A100 640GB 数据手册（2× EPYC 7742，2 TB 内存，30 TB NVMe，PCIe 4.0）",
    ..DGXA100_320
};

/// DGX H100 datasheet: 2× Xeon Platinum 8480C, 2 TB RAM, 30 TB internal NVMe; each H100 on
/// PCIe 5.0 x16. DRAM: 2 sockets × 8 channels × DDR5-4800 (38.4 GB/s each) = 614.4 GB/s.
const DGXH100: Node = Node {
    ram_bytes: 2 * TIB,
    nvme_bytes: 30 * TIB,
    host_link_gbps: 64.0,
    host_link: "PCIe 5.0 x16",
    mem_gbps: 614.4,
    source: "NVIDIA DGX H100 datasheet (2× Xeon 8480C, 2 TB RAM, 30 TB NVMe, PCIe 5.0)",
    source_zh: "NVIDIA DGX H100 数据手册（2× Xeon 8480C，2 TB 内存，30 TB NVMe，PCIe 5.0）",
};

/// A800 servers are built on the HGX A100 8-GPU board: taken as DGX A100 (640 GB)'s host.
const HGX_A800: Node = Node {
    source: "taken as DGX A100 640GB's host (A800 servers use the HGX A100 board)",
    source_zh: "按 DGX A100 640GB 的主机计（A800 服务器使用 HGX A100 基板）",
    ..DGXA100_640
};

/// H800 servers are built on the HGX H100 8-GPU board: taken as DGX H100's host.
const HGX_H800: Node = Node {
    source: "taken as DGX H100's host (H800 servers use the HGX H100 board)",
    source_zh: "按 DGX H100 的主机计（H800 服务器使用 HGX H100 基板）",
    ..DGXH100
};

/// DGX H200 datasheet: the host of DGX H100.
const DGXH200: Node = Node {
    source: "NVIDIA DGX H200 datasheet (2× Xeon 8480C, 2 TB RAM, 30 TB NVMe, PCIe 5.0)",
    source_zh: "NVIDIA DGX H200 数据手册（2× Xeon 8480C，2 TB 内存，30 TB NVMe，PCIe 5.0）",
    ..DGXH100
};

/// GeForce cards have no reference server: a common 8-card PCIe 4.0 server (two sockets with 8
/// channels of DDR4-3200, 512 GiB RAM, one 3.84 TB NVMe drive). An assumption, not a datasheet:
/// a backend sets its own nodes' RAM and NVMe.
const PCIE8_GEN4: Node = Node {
    ram_bytes: 512 << 30,
    nvme_bytes: 3_840_000_000_000,
    host_link_gbps: 32.0,
    host_link: "PCIe 4.0 x16",
    mem_gbps: 409.6,
    source: "assumed 8-card PCIe 4.0 server (512 GiB RAM, 3.84 TB NVMe); set node_ram_gib per backend",
    source_zh: "假定为 8 卡 PCIe 4.0 服务器（512 GiB 内存，3.84 TB NVMe）；可在后端设置 node_ram_gib",
};

/// The MXC500 is a PCIe 5.0 x16 card; its 8-card servers are taken as a DGX H100-class host
/// with 1 TiB of RAM and 7.68 TB of NVMe (an assumption: a backend sets its own).
const MXC500_NODE: Node = Node {
    ram_bytes: TIB,
    nvme_bytes: 7_680_000_000_000,
    host_link_gbps: 64.0,
    host_link: "PCIe 5.0 x16",
    mem_gbps: 614.4,
    source: "assumed 8-card PCIe 5.0 server (1 TiB RAM, 7.68 TB NVMe); set node_ram_gib per backend",
    source_zh: "假定为 8 卡 PCIe 5.0 服务器（1 TiB 内存，7.68 TB NVMe）；可在后端设置 node_ram_gib",
};

/// The local runner: its RAM is the "card" memory, nothing is offloaded and nothing crosses a
/// host link; dual-channel DDR4-3200 for the optimizer.
const RUNNER_NODE: Node = Node {
    ram_bytes: 16 << 30,
    nvme_bytes: 0,
    host_link_gbps: 0.0,
    host_link: "none",
    mem_gbps: 51.2,
    source: "the local runner's machine",
    source_zh: "本地 runner 所在的机器",
};

/// One card type.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Card {
    pub id: &'static str,
    pub display: &'static str,
    /// Device memory in bytes (as `nvidia-smi` reports it: 80 GB cards have 80 GiB).
    pub mem_bytes: u64,
    /// Dense bf16 peak, TFLOPS.
    pub bf16_tflops: f64,
    /// Dense fp16 peak, TFLOPS.
    pub fp16_tflops: f64,
    /// fp32 peak used for fp32 training (TF32 tensor cores where the card has them), TFLOPS.
    pub fp32_tflops: f64,
    /// Card-to-card link inside a node.
    pub interconnect: &'static str,
    /// Card-to-card bandwidth inside a node, GB/s (bidirectional, as published).
    pub interconnect_gbps: u32,
    /// Default price in fen (1/100 CNY) per card-hour.
    pub price_fen_per_hour: u64,
    /// The most cards of this type one node holds.
    pub max_per_node: u32,
    /// Whether this is a GPU (the `cpu` entry is the local runner's cores).
    pub is_gpu: bool,
    /// The node such cards usually sit in: what offloaded states must fit in and travel over.
    pub node: Node,
}

/// The host side of a node of one card type: RAM and NVMe for offloaded states, the card's link
/// to the host, and the memory bandwidth the CPU optimizer step runs at. A backend that knows
/// its own nodes overrides RAM and NVMe (`node_ram_gib`, `node_nvme_gib` in `BACKENDS`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Node {
    /// Host RAM per node, bytes.
    pub ram_bytes: u64,
    /// Local NVMe per node (what ZeRO-Infinity can offload to), bytes.
    pub nvme_bytes: u64,
    /// One card's link to the host, GB/s in each direction (the PCIe generation × 16 lanes).
    pub host_link_gbps: f64,
    /// The host link, in words (for `--explain`).
    pub host_link: &'static str,
    /// Peak DRAM bandwidth of the node's CPUs, GB/s (channels × transfer rate × 8 bytes).
    pub mem_gbps: f64,
    /// Where these figures come from, and the same in Chinese.
    pub source: &'static str,
    pub source_zh: &'static str,
}

impl Card {
    /// Peak FLOPS (not TFLOPS) for a training precision.
    pub fn peak_flops(&self, precision: crate::spec::Precision) -> f64 {
        let t = match precision {
            crate::spec::Precision::Bf16 => self.bf16_tflops,
            crate::spec::Precision::Fp16 => self.fp16_tflops,
            crate::spec::Precision::Fp32 => self.fp32_tflops,
        };
        t * 1e12
    }
}

/// Every card type, in the order the comparison table shows them.
pub const CARDS: &[Card] = &[
    // NVIDIA A100 Tensor Core GPU datasheet (2021): 40 GB HBM2, BF16/FP16 312 TFLOPS dense,
    // TF32 156 TFLOPS, NVLink 600 GB/s (SXM4).
    Card {
        id: "a100-40g",
        display: "A100 40GB",
        mem_bytes: 40 * GIB,
        bf16_tflops: 312.0,
        fp16_tflops: 312.0,
        fp32_tflops: 156.0,
        interconnect: "NVLink 3",
        interconnect_gbps: 600,
        price_fen_per_hour: 700,
        max_per_node: 8,
        is_gpu: true,
        node: DGXA100_320,
    },
    // NVIDIA A100 datasheet: 80 GB HBM2e, same compute as the 40 GB part, NVLink 600 GB/s.
    Card {
        id: "a100-80g",
        display: "A100 80GB",
        mem_bytes: 80 * GIB,
        bf16_tflops: 312.0,
        fp16_tflops: 312.0,
        fp32_tflops: 156.0,
        interconnect: "NVLink 3",
        interconnect_gbps: 600,
        price_fen_per_hour: 1000,
        max_per_node: 8,
        is_gpu: true,
        node: DGXA100_640,
    },
    // NVIDIA A800 80GB SXM product brief (China export variant of A100): 312 TFLOPS BF16 dense,
    // NVLink cut to 400 GB/s.
    Card {
        id: "a800-80g",
        display: "A800 80GB",
        mem_bytes: 80 * GIB,
        bf16_tflops: 312.0,
        fp16_tflops: 312.0,
        fp32_tflops: 156.0,
        interconnect: "NVLink 3 (400 GB/s)",
        interconnect_gbps: 400,
        price_fen_per_hour: 1000,
        max_per_node: 8,
        is_gpu: true,
        node: HGX_A800,
    },
    // NVIDIA H800 SXM5 (China variant of H100 SXM): 80 GB HBM3, BF16 989 TFLOPS dense
    // (1979 with sparsity), NVLink 400 GB/s.
    Card {
        id: "h800",
        display: "H800 80GB",
        mem_bytes: 80 * GIB,
        bf16_tflops: 989.0,
        fp16_tflops: 989.0,
        fp32_tflops: 494.0,
        interconnect: "NVLink 4 (400 GB/s)",
        interconnect_gbps: 400,
        price_fen_per_hour: 1800,
        max_per_node: 8,
        is_gpu: true,
        node: HGX_H800,
    },
    // NVIDIA H100 Tensor Core GPU datasheet, SXM5: 80 GB HBM3, BF16 989 TFLOPS dense
    // (1979 with sparsity), TF32 494 dense, NVLink 900 GB/s.
    Card {
        id: "h100-80g",
        display: "H100 80GB SXM",
        mem_bytes: 80 * GIB,
        bf16_tflops: 989.0,
        fp16_tflops: 989.0,
        fp32_tflops: 494.0,
        interconnect: "NVLink 4",
        interconnect_gbps: 900,
        price_fen_per_hour: 2000,
        max_per_node: 8,
        is_gpu: true,
        node: DGXH100,
    },
    // NVIDIA H200 datasheet, SXM: 141 GB HBM3e, same Hopper compute as H100 SXM (989 TFLOPS
    // BF16 dense), NVLink 900 GB/s.
    Card {
        id: "h200",
        display: "H200 141GB",
        mem_bytes: 141_000_000_000,
        bf16_tflops: 989.0,
        fp16_tflops: 989.0,
        fp32_tflops: 494.0,
        interconnect: "NVLink 4",
        interconnect_gbps: 900,
        price_fen_per_hour: 2600,
        max_per_node: 8,
        is_gpu: true,
        node: DGXH200,
    },
    // NVIDIA Ada Lovelace architecture whitepaper (v2.1), Appendix A, GeForce RTX 4090: 24 GB
    // GDDR6X, peak FP16/BF16 tensor TFLOPS with FP32 accumulate 165.2 dense, TF32 82.6.
    // No NVLink: cards talk over PCIe 4.0 x16 (64 GB/s bidirectional).
    Card {
        id: "rtx-4090",
        display: "RTX 4090 24GB",
        mem_bytes: 24 * GIB,
        bf16_tflops: 165.2,
        fp16_tflops: 165.2,
        fp32_tflops: 82.6,
        interconnect: "PCIe 4.0 x16",
        interconnect_gbps: 64,
        price_fen_per_hour: 200,
        max_per_node: 8,
        is_gpu: true,
        node: PCIE8_GEN4,
    },
    // NVIDIA Ampere GA102 whitepaper, GeForce RTX 3090: 24 GB GDDR6X, peak FP16/BF16 tensor
    // TFLOPS with FP32 accumulate 71 dense, TF32 35.6; NVLink bridge 112.5 GB/s (2 cards).
    Card {
        id: "rtx-3090",
        display: "RTX 3090 24GB",
        mem_bytes: 24 * GIB,
        bf16_tflops: 71.0,
        fp16_tflops: 71.0,
        fp32_tflops: 35.6,
        interconnect: "PCIe 4.0 x16 / NVLink bridge",
        interconnect_gbps: 64,
        price_fen_per_hour: 130,
        max_per_node: 8,
        is_gpu: true,
        node: PCIE8_GEN4,
    },
    // MetaX (沐曦) 曦云 MXC500: 64 GB HBM2e; 98 TFLOPS fp16 as stated in the Onramp design
    // (DESIGN.md "Catalogues"), taken for bf16 too; MetaXLink between cards. Confirm against the
    // vendor's current datasheet before quoting prices on it.
    Card {
        id: "mxc500",
        display: "MetaX MXC500 64GB",
        mem_bytes: 64 * GIB,
        bf16_tflops: 98.0,
        fp16_tflops: 98.0,
        fp32_tflops: 24.5,
        interconnect: "MetaXLink",
        interconnect_gbps: 64,
        price_fen_per_hour: 600,
        max_per_node: 8,
        is_gpu: true,
        node: MXC500_NODE,
    },
    // The local runner's CPU: 16 GiB of RAM for the job and about 1 TFLOPS fp32 (a 16-core AVX2
    // machine's order of magnitude); priced at a token 0.10 CNY per hour.
    Card {
        id: "cpu",
        display: "CPU (local runner)",
        mem_bytes: 16 * GIB,
        bf16_tflops: 0.5,
        fp16_tflops: 0.5,
        fp32_tflops: 1.0,
        interconnect: "none",
        interconnect_gbps: 0,
        price_fen_per_hour: 10,
        max_per_node: 1,
        is_gpu: false,
        node: RUNNER_NODE,
    },
];

/// Looks a card up by id (case-insensitive).
pub fn card(id: &str) -> Option<&'static Card> {
    CARDS.iter().find(|c| c.id.eq_ignore_ascii_case(id))
}

/// Every card id, for "did you mean".
pub fn card_ids() -> impl Iterator<Item = &'static str> {
    CARDS.iter().map(|c| c.id)
}
