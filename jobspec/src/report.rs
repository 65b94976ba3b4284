//! A plan as terminal text: diagnostics, the memory breakdown, the card table and artifacts.

use crate::diag::{Lang, Severity};
use crate::plan::Plan;
use crate::spec::format_duration;
use std::fmt::Write;

/// Binary gigabytes with one decimal, as people read GPU memory.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Fen as yuan: `¥1,234.56`.
pub fn yuan(fen: u64) -> String {
    let yuan = fen / 100;
    let cents = fen % 100;
    let digits = yuan.to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("¥{grouped}.{cents:02}")
}

fn big(n: u64) -> String {
    let x = n as f64;
    if x >= 1e12 {
        format!("{:.2}T", x / 1e12)
    } else if x >= 1e9 {
        format!("{:.2}B", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}K", x / 1e3)
    } else {
        n.to_string()
    }
}

/// Renders a plan for a terminal. `artifacts` adds the ds_config, commands and sbatch script.
pub fn render_text(plan: &Plan, lang: Lang, artifacts: bool) -> String {
    render_text_for(plan, lang, artifacts, "")
}

/// As `render_text`, with diagnostics prefixed by `origin` (a file name) as compilers do.
pub fn render_text_for(plan: &Plan, lang: Lang, artifacts: bool, origin: &str) -> String {
    let zh = lang == Lang::ZhCn;
    let mut o = String::new();
    let origin = if origin.is_empty() {
        String::new()
    } else {
        format!("{origin}:")
    };
    for d in &plan.diagnostics {
        let sev = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        let place = if d.line > 0 {
            format!("{}:{}: ", d.line, d.column)
        } else if d.path.is_empty() {
            String::new()
        } else {
            format!("{}: ", d.path)
        };
        let _ = writeln!(
            o,
            "{origin}{place}{sev}[{}]: {}",
            d.code.as_str(),
            d.message.get(lang)
        );
        if let Some(h) = &d.help {
            let _ = writeln!(o, "    help: {}", h.get(lang));
        }
    }
    let (Some(v), Some(e)) = (&plan.valid, &plan.estimate) else {
        if plan.diagnostics.is_empty() {
            o.push_str("no spec\n");
        }
        return o;
    };
    if !plan.diagnostics.is_empty() {
        o.push('\n');
    }
    let s = v.spec();
    let _ = writeln!(
        o,
        "{} — {} {} on {} × {}",
        s.name,
        s.task.as_str(),
        v.model_name(),
        v.world_size(),
        v.card().display,
    );
    let p = &e.parameters;
    let _ = writeln!(
        o,
        "{}: total {}  trainable {}  largest layer {}",
        if zh { "参数" } else { "parameters" },
        big(p.total),
        big(p.trainable),
        big(p.largest_layer)
    );
    let m = &e.memory;
    let g = &m.per_gpu;
    let _ = writeln!(
        o,
        "{}:",
        if zh {
            "每卡显存"
        } else {
            "memory per card"
        }
    );
    let rows = [
        (if zh { "参数" } else { "params" }, g.params_bytes),
        (if zh { "梯度" } else { "gradients" }, g.grads_bytes),
        (
            if zh { "优化器状态" } else { "optimizer" },
            g.optimizer_bytes,
        ),
        (if zh { "激活" } else { "activations" }, g.activations_bytes),
        (if zh { "缓冲" } else { "buffers" }, g.buffers_bytes),
    ];
    for (label, bytes) in rows {
        let _ = writeln!(o, "  {label:<12} {:>10}", gib(bytes));
    }
    let verdict = match (m.fits, zh) {
        (true, false) => format!("fits, {} free", gib(m.headroom_bytes.unsigned_abs())),
        (true, true) => format!("放得下，剩余 {}", gib(m.headroom_bytes.unsigned_abs())),
        (false, false) => format!(
            "DOES NOT FIT, {} over",
            gib(m.headroom_bytes.unsigned_abs())
        ),
        (false, true) => format!("放不下，超出 {}", gib(m.headroom_bytes.unsigned_abs())),
    };
    let _ = writeln!(
        o,
        "  {:<12} {:>10} / {} — {verdict}",
        if zh { "合计" } else { "total" },
        gib(g.total_bytes),
        gib(m.card_bytes)
    );
    let _ = writeln!(
        o,
        "  model states (ZeRO-{}): {}",
        s.parallel.zero_stage,
        gib(g.model_states_bytes)
    );
    if m.cpu_bytes_per_node > 0 {
        let _ = writeln!(
            o,
            "  offloaded states, CPU RAM per node: {}",
            gib(m.cpu_bytes_per_node)
        );
    }
    let t = &e.time;
    let _ = writeln!(
        o,
        "{}: {} at MFU {:.0}% ({:.2e} FLOPs, {} tokens, {} steps; ≥ {} at 100%)",
        if zh { "时间" } else { "time" },
        format_duration(t.seconds),
        t.mfu * 100.0,
        t.flops,
        big(t.tokens),
        v.steps(),
        format_duration(t.min_seconds)
    );
    let _ = writeln!(
        o,
        "{}: {} ({:.1} card-hours × {}/h); hold for the time limit {}",
        if zh { "费用" } else { "cost" },
        yuan(e.cost.fen),
        e.cost.card_hours,
        yuan(e.cost.price_fen_per_hour),
        yuan(e.cost.max_fen)
    );
    if !plan.suggestions.is_empty() {
        let _ = writeln!(
            o,
            "\n{}:",
            if zh {
                "修复建议（按费用排序）"
            } else {
                "fixes (cheapest first)"
            }
        );
        for sg in &plan.suggestions {
            let _ = writeln!(
                o,
                "  - {}: {} / {}, {}, {}",
                sg.title.get(lang),
                gib(sg.per_gpu_bytes),
                gib(sg.card_bytes),
                format_duration(sg.seconds),
                yuan(sg.fen)
            );
            if sg.cpu_bytes_per_node > 0 {
                let _ = writeln!(
                    o,
                    "      {} {}",
                    if zh {
                        "每节点需要主机内存"
                    } else {
                        "needs host RAM per node:"
                    },
                    gib(sg.cpu_bytes_per_node)
                );
            }
            for op in &sg.patch {
                let _ = writeln!(o, "      {} = {}", op.path, op.value);
            }
        }
    }
    let _ = writeln!(
        o,
        "\n{}:",
        if zh {
            "各卡型对比"
        } else {
            "on every card type"
        }
    );
    let _ = writeln!(
        o,
        "  {:<20} {:>5} {:>12} {:>10} {:>5} {:>12} {:>14}",
        "card", "cards", "per card", "memory", "fits", "time", "cost"
    );
    for r in &plan.cards {
        let _ = writeln!(
            o,
            "{} {:<20} {:>5} {:>12} {:>10} {:>5} {:>12} {:>14}",
            if r.current { "*" } else { " " },
            r.display,
            r.cards,
            gib(r.per_gpu_bytes),
            gib(r.card_bytes),
            if r.fits { "yes" } else { "no" },
            format_duration(r.seconds),
            yuan(r.fen)
        );
    }
    if artifacts && let Some(a) = &plan.artifacts {
        if !a.ds_config.is_empty() {
            let _ = writeln!(o, "\nds_config.json:\n{}", a.ds_config);
        }
        let _ = writeln!(o, "\ndeepspeed:\n{}", a.deepspeed);
        let _ = writeln!(o, "\ntorchrun:\n{}", a.torchrun);
        let _ = writeln!(o, "\nsbatch:\n{}", a.sbatch);
    }
    o
}

/// The formula and assumptions behind every figure ("show the formula").
pub fn render_explain(plan: &Plan, lang: Lang) -> String {
    let mut o = String::new();
    if let Some(e) = &plan.estimate {
        for x in &e.explain {
            let _ = writeln!(
                o,
                "{}:\n  {}\n  {}",
                x.figure,
                x.formula,
                x.assumptions.get(lang)
            );
        }
    }
    o
}
