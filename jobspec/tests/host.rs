//! The host side of a plan: offloaded states must fit in a node's RAM (or NVMe), offload traffic
//! and the CPU optimizer step count in the time, and the card table names a cluster that fits.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use jobspec::{Code, NodeOverride, ValidSpec, plan_toml, validate_toml};

fn src(model: &str, card: &str, per_node: u32, nodes: u32, parallel: &str) -> String {
    format!(
        "name = \"t\"\ntask = \"sft\"\nmodel = \"{model}\"\n[data]\ndataset = \"d\"\ntokens = 20000000\nseq_len = 2048\n\
         [train]\nmicro_batch = 1\ngrad_accum = 16\ngrad_checkpointing = true\n\
         [parallel]\n{parallel}\n[resources]\ncard = \"{card}\"\ncards_per_node = {per_node}\nnodes = {nodes}\ntime_limit = \"30d\"\n"
    )
}

fn valid(text: &str) -> ValidSpec {
    let (v, diags) = validate_toml(text);
    v.unwrap_or_else(|| panic!("{text}\n{diags:#?}"))
}

const FULL_OFFLOAD: &str = "zero_stage = 3\noffload_optimizer = \"cpu\"\noffload_params = \"cpu\"";

/// The case: a 72B full fine-tune with ZeRO-3 and CPU offload on one RTX 4090 fits the
/// card but needs far more host RAM than a node has, so the plan does not fit.
#[test]
fn offload_past_host_ram_does_not_fit() {
    let text = src("qwen2.5-72b", "rtx-4090", 1, 1, FULL_OFFLOAD);
    let plan = plan_toml(&text);
    let m = plan.estimate.as_ref().unwrap().memory;
    assert!(m.gpu_fits, "the card holds what stays on it: {m:?}");
    assert!(!m.host_fits && !m.fits, "{m:?}");
    assert!(m.cpu_bytes_per_node > m.node_ram_bytes);
    let d = plan
        .diagnostics
        .iter()
        .find(|d| d.code == Code::HostDoesNotFit)
        .expect("a host-does-not-fit error");
    assert!(d.is_error() && d.path == "parallel.offload_params", "{d:?}");
    assert!(
        d.message.en.contains("RAM") && d.message.zh.contains("内存"),
        "{d:?}"
    );
    assert!(!plan.is_submittable());
    // No card row says it fits on the same single card.
    let row = plan.cards.iter().find(|r| r.current).unwrap();
    assert!(!row.fits, "{row:?}");
    // A fix that keeps the offload on one card must not be offered.
    for s in &plan.suggestions {
        let (v, _) = validate_toml(&jobspec::patch::apply_patch_toml(&text, &s.patch).unwrap());
        let m = jobspec::estimate(&v.unwrap()).memory;
        assert!(m.fits, "{}: {m:?}", s.title.en);
    }
}

/// More nodes share the offloaded states: DeepSpeed divides them by the node count.
#[test]
fn more_nodes_share_the_offload() {
    let one = jobspec::estimate(&valid(&src("qwen2.5-72b", "a100-80g", 8, 1, FULL_OFFLOAD)));
    let four = jobspec::estimate(&valid(&src("qwen2.5-72b", "a100-80g", 8, 4, FULL_OFFLOAD)));
    let ratio = one.memory.cpu_bytes_per_node as f64 / four.memory.cpu_bytes_per_node as f64;
    assert!((ratio - 4.0).abs() < 0.01, "{ratio}");
    // 18Ψ × 1.5 over the nodes, as DeepSpeed's estimator says.
    let psi = one.parameters.total as f64;
    let want = psi * 18.0 * 1.5;
    assert!((one.memory.cpu_bytes_per_node as f64 - want).abs() / want < 1e-6);
}

/// NVMe offload moves the optimizer's and the parameters' states out of RAM, not the fp32
/// gradients; and it must fit the node's NVMe.
#[test]
fn nvme_offload_takes_its_share_out_of_ram() {
    let cpu = jobspec::estimate(&valid(&src("qwen2.5-72b", "h100-80g", 8, 1, FULL_OFFLOAD)));
    let nvme = jobspec::estimate(&valid(&src(
        "qwen2.5-72b",
        "h100-80g",
        8,
        1,
        "zero_stage = 3\noffload_optimizer = \"nvme\"\noffload_params = \"nvme\"",
    )));
    let psi = cpu.parameters.total as f64;
    assert!(nvme.memory.cpu_bytes_per_node < cpu.memory.cpu_bytes_per_node / 4);
    let want_ram = psi * 4.0 * 1.5;
    assert!((nvme.memory.cpu_bytes_per_node as f64 - want_ram).abs() / want_ram < 1e-6);
    let want_nvme = psi * 14.0;
    assert!((nvme.memory.nvme_bytes_per_node as f64 - want_nvme).abs() / want_nvme < 1e-6);
    assert!(nvme.memory.host_fits, "{:?}", nvme.memory);
}

/// A backend that knows its nodes overrides the catalogue: bigger nodes make it fit, smaller
/// ones make it not.
#[test]
fn a_backend_node_override_decides_the_host_fit() {
    let v = valid(&src("qwen2.5-72b", "rtx-4090", 1, 1, FULL_OFFLOAD));
    assert!(!jobspec::estimate(&v).memory.host_fits);
    let big = v.clone().with_node(NodeOverride {
        ram_bytes: Some(4 << 40),
        nvme_bytes: None,
    });
    let m = jobspec::estimate(&big).memory;
    assert!(
        m.host_fits && m.fits && m.node_ram_bytes == 4 << 40,
        "{m:?}"
    );
    let small = valid(&src("qwen2.5-7b", "a100-80g", 1, 1, FULL_OFFLOAD)).with_node(NodeOverride {
        ram_bytes: Some(8 << 30),
        nvme_bytes: None,
    });
    assert!(!jobspec::estimate(&small).memory.host_fits);
}

/// Offloading costs time: the same job with its states offloaded takes longer than without, by
/// the link traffic and the CPU optimizer step, and `--explain` shows both.
#[test]
fn offload_adds_link_and_cpu_time() {
    let plain = jobspec::estimate(&valid(&src(
        "qwen2.5-7b",
        "h100-80g",
        8,
        1,
        "zero_stage = 3",
    )));
    assert_eq!(plain.time.offload_seconds, 0.0);
    assert_eq!(plain.time.cpu_optimizer_seconds, 0.0);
    let v = valid(&src("qwen2.5-7b", "h100-80g", 8, 1, FULL_OFFLOAD));
    let off = jobspec::estimate(&v);
    assert!(off.time.offload_seconds > 0.0 && off.time.cpu_optimizer_seconds > 0.0);
    let sum = off.time.compute_seconds + off.time.offload_seconds + off.time.cpu_optimizer_seconds;
    assert!((off.time.seconds - sum).abs() < 1e-6 * sum);
    assert!((off.time.compute_seconds - plain.time.compute_seconds).abs() < 1e-6);
    // Per step and card: 16 micro-batches × (3 passes with recomputation + 1 gradient) × 2Ψ/N.
    let psi = off.parameters.total as f64;
    let want = 16.0 * 4.0 * 2.0 * psi / 8.0;
    assert!((off.time.offload_bytes_per_step - want).abs() / want < 1e-9);
    // The slower host link of PCIe 4.0 takes twice as long for the same bytes.
    let a100 = jobspec::estimate(&valid(&src("qwen2.5-7b", "a100-80g", 8, 1, FULL_OFFLOAD)));
    let r = a100.time.offload_seconds / off.time.offload_seconds;
    assert!((r - 2.0).abs() < 1e-6, "{r}");
    for figure in ["host_memory", "offload_time"] {
        let x = off.explain.iter().find(|x| x.figure == figure).unwrap();
        assert!(
            !x.formula.en.is_empty() && !x.formula.zh.is_empty() && !x.assumptions.zh.is_empty(),
            "{x:?}"
        );
    }
    let t = off.explain.iter().find(|x| x.figure == "time").unwrap();
    assert!(t.formula.en.contains("offload"), "{}", t.formula.en);
    assert!(t.formula.zh.contains("卸载"), "{}", t.formula.zh);
}

/// Where the spec's count does not fit, the table names the fewest cards that do, and that
/// count does fit when planned; a fix offers the cluster too.
#[test]
fn the_card_table_names_a_count_that_fits() {
    let text = src("qwen2.5-72b", "a100-80g", 1, 1, "zero_stage = 3");
    let plan = plan_toml(&text);
    let row = plan.cards.iter().find(|r| r.current).unwrap();
    assert!(!row.fits);
    let f = row.fits_with.as_ref().expect("a count that fits");
    assert!(
        f.cards > 1 && f.cards == f.cards_per_node * f.nodes,
        "{f:?}"
    );
    let bigger = src(
        "qwen2.5-72b",
        "a100-80g",
        f.cards_per_node,
        f.nodes,
        "zero_stage = 3",
    );
    let m = plan_toml(&bigger).estimate.unwrap().memory;
    assert!(m.fits, "{m:?}");
    // One size smaller does not fit (the count is the fewest the search tries).
    if f.nodes > 1 {
        let fewer = src("qwen2.5-72b", "a100-80g", 8, f.nodes - 1, "zero_stage = 3");
        let m = plan_toml(&fewer).estimate.unwrap().memory;
        assert!(!m.fits || f.nodes - 1 < 2, "{m:?}");
    }
    // Rows that fit name nothing.
    assert!(
        plan.cards
            .iter()
            .filter(|r| r.fits)
            .all(|r| r.fits_with.is_none())
    );
    // ZeRO-0 never fits on more cards of the same size: the full-model fix is a cluster.
    let ddp = plan_toml(&src("qwen2.5-72b", "rtx-4090", 1, 1, "zero_stage = 0"));
    assert!(ddp.cards.iter().all(|r| r.fits_with.is_none()));
    let cluster = ddp
        .suggestions
        .iter()
        .find(|s| s.patch.iter().any(|o| o.path == "resources.nodes"))
        .expect("a cluster fix");
    assert!(cluster.per_gpu_bytes <= cluster.card_bytes, "{cluster:?}");
}

/// The text report shows the host line with its verdict, the time split, and the count column.
#[test]
fn the_report_shows_host_memory_and_offload_time() {
    let plan = plan_toml(&src("qwen2.5-72b", "rtx-4090", 1, 1, FULL_OFFLOAD));
    let en = jobspec::report::render_text(&plan, jobspec::Lang::En, false);
    assert!(
        en.contains("host RAM per node:") && en.contains("DOES NOT FIT"),
        "{en}"
    );
    assert!(en.contains("of which: GPU compute"), "{en}");
    let zh = jobspec::report::render_text(&plan, jobspec::Lang::Zh, false);
    assert!(
        zh.contains("每节点主机内存") && zh.contains("其中：GPU 计算"),
        "{zh}"
    );
    let plan = plan_toml(&src("qwen2.5-72b", "a100-80g", 1, 1, "zero_stage = 3"));
    let en = jobspec::report::render_text(&plan, jobspec::Lang::En, false);
    assert!(
        en.contains("fits with") && en.contains("× A100 80GB"),
        "{en}"
    );
}

/// A spec that trains by epochs but gives no `data.tokens` still gets its memory verdict (which
/// does not depend on how long the job runs), the same as with tokens, host memory included;
/// time, cost and the card table wait for the tokens. Any other error leaves no verdict.
#[test]
fn the_memory_verdict_stands_without_data_tokens() {
    for parallel in ["zero_stage = 0", FULL_OFFLOAD] {
        let with = src("qwen2.5-72b", "rtx-4090", 1, 1, parallel)
            .replace("[train]\n", "[train]\nepochs = 2\n");
        let without = with.replace("tokens = 20000000\n", "");
        let full = plan_toml(&with);
        let plan = plan_toml(&without);
        assert!(plan.valid.is_none() && plan.estimate.is_none());
        let m = plan
            .memory_only
            .as_ref()
            .expect("a memory verdict")
            .estimate
            .memory;
        assert_eq!(m, full.estimate.as_ref().unwrap().memory, "{parallel}");
        let codes = |p: &jobspec::Plan| -> Vec<Code> {
            p.diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(|d| d.code)
                .collect()
        };
        let mut want: Vec<Code> = codes(&full)
            .into_iter()
            .filter(|c| matches!(c, Code::DoesNotFit | Code::HostDoesNotFit))
            .collect();
        want.insert(0, Code::MissingKey);
        assert_eq!(codes(&plan), want, "{parallel}");
        let wire = serde_json::to_value(jobspec::PlanWire::from(&plan)).unwrap();
        assert_eq!(wire["memory"]["fits"], serde_json::json!(m.fits));
        assert!(wire["parameters"]["total"].as_u64().unwrap() > 70_000_000_000);
        assert!(
            wire.get("time").is_none() && wire.get("cost").is_none(),
            "{wire}"
        );
        assert_eq!(wire["cards"], serde_json::json!([]));
        let text = jobspec::report::render_text_for(&plan, jobspec::Lang::En, false, "");
        assert!(
            text.contains("memory per card:") && text.contains("time and cost: need `data.tokens`"),
            "{text}"
        );
    }
    let other = src("qwen2.5-72b", "no-such-card", 1, 1, "zero_stage = 0")
        .replace("[train]\n", "[train]\nepochs = 2\n")
        .replace("tokens = 20000000\n", "");
    assert!(plan_toml(&other).memory_only.is_none());
}
