//! A plan as terminal text: diagnostics, the memory breakdown, the card table and artifacts.

use crate::diag::{Diagnostic, Severity};
use crate::money::yuan;
use crate::plan::Plan;
use crate::spec::format_duration;
use crate::validate::is_refused;
use crate::{Estimate, Lang, ValidSpec};
use std::borrow::Cow;
use std::fmt::Write;

/// Binary gigabytes with one decimal, as people read GPU memory.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
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

/// `s` followed by spaces up to `width` terminal columns (a CJK character takes two).
fn pad_end(s: &str, width: usize) -> String {
    let w = unicode_width::UnicodeWidthStr::width(s);
    format!("{s}{}", " ".repeat(width.saturating_sub(w)))
}

/// Spaces up to `width` terminal columns, then `s`.
fn pad_start(s: &str, width: usize) -> String {
    let w = unicode_width::UnicodeWidthStr::width(s);
    format!("{}{s}", " ".repeat(width.saturating_sub(w)))
}

/// A duration as people read it, in the report's language.
fn duration(seconds: f64, zh: bool) -> String {
    if zh {
        crate::spec::format_duration_zh(seconds)
    } else {
        format_duration(seconds)
    }
}

/// A figure's name (the keys of `Estimate::explain`) as the report calls it.
pub fn figure_name(figure: &str, lang: Lang) -> &str {
    if lang == Lang::En {
        return figure;
    }
    match figure {
        "parameters" => "参数",
        "model_states" => "模型状态",
        "activations" => "激活",
        "buffers" => "缓冲",
        "time" => "时间",
        "offload_time" => "卸载耗时",
        "host_memory" => "主机内存",
        "cost" => "费用",
        other => other,
    }
}

/// Renders a plan for a terminal. `artifacts` adds the ds_config, commands and sbatch script.
pub fn render_text(plan: &Plan, lang: Lang, artifacts: bool) -> String {
    render_text_for(plan, lang, artifacts, "")
}

/// As `render_text`, with diagnostics prefixed by `origin` (a file name) as compilers do.
pub fn render_text_for(plan: &Plan, lang: Lang, artifacts: bool, origin: &str) -> String {
    let zh = lang == Lang::Zh;
    let mut o = String::new();
    o.push_str(&render_diagnostics(&plan.diagnostics, lang, origin));
    let (Some(v), Some(e)) = (&plan.valid, &plan.estimate) else {
        if let Some(m) = &plan.memory_only {
            o.push('\n');
            memory_text(&mut o, &m.probe, &m.estimate, zh);
            o.push_str(if zh {
                "时间与费用：需要 `data.tokens`（每个 epoch 的 token 数）\n"
            } else {
                "time and cost: need `data.tokens` (the tokens in one epoch)\n"
            });
        } else if plan.diagnostics.is_empty() {
            o.push_str(if zh {
                "没有作业规格\n"
            } else {
                "no spec\n"
            });
        }
        return o;
    };
    if !plan.diagnostics.is_empty() {
        o.push('\n');
    }
    summary_text(&mut o, v, e, zh);
    memory_text(&mut o, v, e, zh);
    time_and_cost_text(&mut o, v, e, zh);
    suggestions_text(&mut o, plan, lang);
    let _ = writeln!(
        o,
        "\n{}",
        if zh {
            "各卡型对比："
        } else {
            "on every card type:"
        }
    );
    card_table(&mut o, plan, zh);
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

/// `text` with each character that could break, clear or forge a terminal line (a control
/// character such as ESC, a line break, a text-direction or an invisible character) written as
/// its code point, `\u{1b}`: diagnostics quote what a spec holds, and a spec may be anyone's.
fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_refused) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_refused(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Every diagnostic as a compiler writes one, `origin:line:column: severity[code]: message`
/// (the key's path where there is no line), each with its help below it; one line each, whatever
/// user text they quote (see [`visible`]).
pub fn render_diagnostics(diags: &[Diagnostic], lang: Lang, origin: &str) -> String {
    let mut o = String::new();
    let zh = lang == Lang::Zh;
    // Chinese text takes the full-width colon.
    let colon = if zh { "：" } else { ": " };
    let origin = if origin.is_empty() {
        String::new()
    } else {
        format!("{}:", visible(origin))
    };
    for d in diags {
        let sev = match (d.severity, zh) {
            (Severity::Error, false) => "error",
            (Severity::Warning, false) => "warning",
            (Severity::Info, false) => "info",
            (Severity::Error, true) => "错误",
            (Severity::Warning, true) => "警告",
            (Severity::Info, true) => "提示",
        };
        let place = if d.line > 0 {
            format!("{}:{}: ", d.line, d.column)
        } else if d.path.is_empty() {
            String::new()
        } else {
            format!("{}: ", visible(&d.path))
        };
        let _ = writeln!(
            o,
            "{origin}{place}{sev}[{}]{colon}{}",
            d.code.as_str(),
            visible(d.message.get(lang))
        );
        if let Some(h) = &d.help {
            let _ = writeln!(
                o,
                "    {}{colon}{}",
                if zh { "建议" } else { "help" },
                visible(h.get(lang))
            );
        }
    }
    o
}

/// The job in one line, and its parameters.
fn summary_text(o: &mut String, v: &ValidSpec, e: &Estimate, zh: bool) {
    let s = v.spec();
    let (task, model, n, card) = (
        s.task.as_str(),
        v.model_name(),
        v.world_size(),
        &v.card().display,
    );
    let _ = if zh {
        writeln!(o, "{} — {task} {model}，{n} × {card}", s.name)
    } else {
        writeln!(o, "{} — {task} {model} on {n} × {card}", s.name)
    };
    let p = &e.parameters;
    let (total, trainable, largest) = (big(p.total), big(p.trainable), big(p.largest_layer));
    let _ = if zh {
        writeln!(
            o,
            "参数：总计 {total}  可训练 {trainable}  最大层 {largest}"
        )
    } else {
        writeln!(
            o,
            "parameters: total {total}  trainable {trainable}  largest layer {largest}"
        )
    };
}

/// The memory per card, part by part, against the card's.
fn memory_text(o: &mut String, v: &ValidSpec, e: &Estimate, zh: bool) {
    let s = v.spec();
    let m = &e.memory;
    let g = &m.per_gpu;
    let _ = writeln!(
        o,
        "{}",
        if zh {
            "每卡显存："
        } else {
            "memory per card:"
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
        let _ = writeln!(o, "  {} {:>10}", pad_end(label, 12), gib(bytes));
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
        "  {} {:>10} / {} — {verdict}",
        pad_end(if zh { "合计" } else { "total" }, 12),
        gib(g.total_bytes),
        gib(m.card_bytes)
    );
    let (stage, states) = (s.parallel.zero_stage, gib(g.model_states_bytes));
    let _ = if zh {
        writeln!(o, "  模型状态（ZeRO-{stage}）：{states}")
    } else {
        writeln!(o, "  model states (ZeRO-{stage}): {states}")
    };
    host_text(o, m, zh);
}

/// Host RAM (and NVMe) per node for the offloaded states, against what a node has.
fn host_text(o: &mut String, m: &crate::estimate::MemoryEstimate, zh: bool) {
    let lines = [
        (
            m.cpu_bytes_per_node,
            m.node_ram_bytes,
            "host RAM per node",
            "每节点主机内存",
        ),
        (
            m.nvme_bytes_per_node,
            m.node_nvme_bytes,
            "NVMe per node",
            "每节点 NVMe",
        ),
    ];
    for (need, have, en, zh_label) in lines.into_iter().filter(|l| l.0 > 0) {
        let verdict = match (need <= have, zh) {
            (true, false) => "fits".to_string(),
            (true, true) => "放得下".to_string(),
            (false, false) => format!("DOES NOT FIT, {} over", gib(need - have)),
            (false, true) => format!("放不下，超出 {}", gib(need - have)),
        };
        let _ = if zh {
            writeln!(
                o,
                "  卸载的状态，{zh_label}：{} / {} — {verdict}",
                gib(need),
                gib(have)
            )
        } else {
            writeln!(
                o,
                "  offloaded states, {en}: {} / {} — {verdict}",
                gib(need),
                gib(have)
            )
        };
    }
}

/// The time at the assumed MFU, and the cost with the hold.
fn time_and_cost_text(o: &mut String, v: &ValidSpec, e: &Estimate, zh: bool) {
    let t = &e.time;
    let (took, mfu, tokens, steps, floor) = (
        duration(t.seconds, zh),
        t.mfu * 100.0,
        big(t.tokens),
        v.steps(),
        duration(t.min_seconds, zh),
    );
    let _ = if zh {
        writeln!(
            o,
            "时间：{took}，MFU {mfu:.0}%（{:.2e} FLOPs，{tokens} token，{steps} 步；MFU 100% 时 ≥ {floor}）",
            t.flops
        )
    } else {
        writeln!(
            o,
            "time: {took} at MFU {mfu:.0}% ({:.2e} FLOPs, {tokens} tokens, {steps} steps; ≥ {floor} at 100%)",
            t.flops
        )
    };
    if t.offload_seconds + t.cpu_optimizer_seconds > 0.0 {
        let (c, l, cpu) = (
            duration(t.compute_seconds, zh),
            duration(t.offload_seconds, zh),
            duration(t.cpu_optimizer_seconds, zh),
        );
        let _ = if zh {
            writeln!(o, "  其中：GPU 计算 {c}，卸载传输 {l}，CPU 优化器 {cpu}")
        } else {
            writeln!(
                o,
                "  of which: GPU compute {c}, offload traffic {l}, CPU optimizer {cpu}"
            )
        };
    }
    let (fen, price, max) = (
        yuan(e.cost.fen),
        yuan(e.cost.price_fen_per_hour),
        yuan(e.cost.max_fen),
    );
    let _ = if zh {
        writeln!(
            o,
            "费用：{fen}（{:.1} 卡时 × {price}/小时）；按时限预扣 {max}",
            e.cost.card_hours
        )
    } else {
        writeln!(
            o,
            "cost: {fen} ({:.1} card-hours × {price}/h); hold for the time limit {max}",
            e.cost.card_hours
        )
    };
}

/// The fixes, cheapest first, each with its figures and its patch.
fn suggestions_text(o: &mut String, plan: &Plan, lang: Lang) {
    let zh = lang == Lang::Zh;
    let colon = if zh { "：" } else { ": " };
    if !plan.suggestions.is_empty() {
        let _ = writeln!(
            o,
            "\n{}",
            if zh {
                "修复建议（按费用排序）："
            } else {
                "fixes (cheapest first):"
            }
        );
        for (i, sg) in plan.suggestions.iter().enumerate() {
            let _ = writeln!(
                o,
                "  {}. {}{colon}{} / {}{sep}{}{sep}{}",
                i + 1,
                sg.title.get(lang),
                gib(sg.per_gpu_bytes),
                gib(sg.card_bytes),
                duration(sg.seconds, zh),
                yuan(sg.fen),
                sep = if zh { "，" } else { ", " },
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
            for line in patch_toml(&sg.patch).lines() {
                let _ = writeln!(o, "      {line}");
            }
        }
        let _ = writeln!(
            o,
            "  {}",
            if zh {
                "应用其中一条：onramp plan SPEC --fix N（保留注释；-o OUT 写到另一个文件）"
            } else {
                "apply one: onramp plan SPEC --fix N (comments kept; -o OUT writes another file)"
            }
        );
    }
}

/// A fix as TOML that pastes into a spec as it stands: top-level keys first, then each table's
/// keys under its header (`[train]` then `micro_batch = 1`), never `train.micro_batch = 1`,
/// which under another table's header would land in that table.
pub fn patch_toml(ops: &[crate::patch::PatchOp]) -> String {
    let mut top = String::new();
    let mut tables: Vec<(&str, String)> = Vec::new();
    for op in ops {
        let value = toml_value(&op.value);
        match op.path.split_once('.') {
            None => {
                let _ = writeln!(top, "{} = {value}", op.path);
            }
            Some((table, key)) => {
                let at = match tables.iter().position(|(t, _)| *t == table) {
                    Some(i) => i,
                    None => {
                        tables.push((table, String::new()));
                        tables.len() - 1
                    }
                };
                let _ = writeln!(tables[at].1, "{key} = {value}");
            }
        }
    }
    for (table, keys) in tables {
        let _ = write!(top, "[{table}]\n{keys}");
    }
    top
}

/// A JSON value of a fix as TOML (strings, numbers, booleans and arrays of them).
fn toml_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

/// The per-card comparison, its columns aligned by display width.
fn card_table(o: &mut String, plan: &Plan, zh: bool) {
    // At least the widths English has always had; wider cells widen their column.
    const WIDTHS: [usize; 8] = [20, 5, 12, 10, 5, 12, 14, 10];
    let header = if zh {
        [
            "显卡",
            "卡数",
            "每卡需要",
            "显存",
            "放得下",
            "时间",
            "费用",
            "放得下的卡数",
        ]
    } else {
        [
            "card",
            "cards",
            "per card",
            "memory",
            "fits",
            "time",
            "cost",
            "fits with",
        ]
    };
    let mut rows = vec![(" ", header.map(String::from))];
    for r in &plan.cards {
        let fits = match (r.fits, zh) {
            (true, false) => "yes",
            (false, false) => "no",
            (true, true) => "是",
            (false, true) => "否",
        };
        rows.push((
            if r.current { "*" } else { " " },
            [
                r.display.to_string(),
                r.cards.to_string(),
                gib(r.per_gpu_bytes),
                gib(r.card_bytes),
                fits.to_string(),
                duration(r.seconds, zh),
                yuan(r.fen),
                match (&r.fits_with, r.fits) {
                    (_, true) => String::new(),
                    (Some(f), false) => format!("{} × {}", f.cards, r.display),
                    (None, false) => "—".to_string(),
                },
            ],
        ));
    }
    let mut widths = WIDTHS;
    for (_, cells) in &rows {
        for (w, cell) in widths.iter_mut().zip(cells) {
            *w = (*w).max(unicode_width::UnicodeWidthStr::width(cell.as_str()));
        }
    }
    // "fits with" only where some row needs it.
    let columns = if plan.cards.iter().all(|r| r.fits) {
        7
    } else {
        8
    };
    for (mark, cells) in rows {
        let mut line = format!("{mark} {}", pad_end(&cells[0], widths[0]));
        for (cell, width) in cells.iter().zip(widths).skip(1).take(columns - 1) {
            line.push(' ');
            line.push_str(&pad_start(cell, width));
        }
        let _ = writeln!(o, "{}", line.trim_end());
    }
}

/// The formula and assumptions behind every figure ("show the formula").
pub fn render_explain(plan: &Plan, lang: Lang) -> String {
    let mut o = String::new();
    if let Some(e) = &plan.estimate {
        for x in &e.explain {
            let _ = writeln!(
                o,
                "{}{}\n  {}\n  {}",
                figure_name(x.figure, lang),
                if lang == Lang::Zh { "：" } else { ":" },
                x.formula.get(lang),
                x.assumptions.get(lang)
            );
        }
    }
    o
}
