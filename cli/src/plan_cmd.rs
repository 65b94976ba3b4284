//! `onramp plan SPEC`: the plan as text or JSON, the trainer's run, `--fix N`, which writes
//! the spec with one of the plan's fixes applied (comments and layout kept) and plans it again,
//! and `--deepspeed FILE`, which does the same with a ds_config of the user's.

use crate::args::{PlanArgs, exit};
use crate::{input, say};
use jobspec::Format;
use jobspec::patch::PatchOp;
use std::process::ExitCode;

pub fn run(args: &PlanArgs) -> Result<ExitCode, String> {
    let src = input::read(&args.path)?;
    let format = format_of(&args.path);
    let plan = jobspec::plan_text(&src, format);
    if args.trainer_run {
        return trainer_run(&plan, &args.path);
    }
    if let Some(n) = args.fix {
        return fix(args, &src, format, &plan, n);
    }
    if let Some(file) = &args.deepspeed {
        return import_deepspeed(args, &src, format, &plan, file);
    }
    if args.json {
        let wire = jobspec::PlanWire::from(&plan);
        let text =
            serde_json::to_string_pretty(&wire).map_err(|e| format!("cannot write JSON: {e}"))?;
        println!("{text}");
    } else {
        print_plan(args, &plan, &args.path);
    }
    Ok(verdict(&plan))
}

fn format_of(path: &str) -> Format {
    if path.ends_with(".json") {
        Format::Json
    } else {
        Format::Toml
    }
}

fn verdict(plan: &jobspec::Plan) -> ExitCode {
    if plan.has_errors() {
        ExitCode::from(exit::REFUSED)
    } else {
        ExitCode::SUCCESS
    }
}

/// The report, its artifacts shown when asked for, or by default when the plan has no errors
/// (a job that does not fit has nothing worth launching), and the formulas with `--explain`.
fn print_plan(args: &PlanArgs, plan: &jobspec::Plan, origin: &str) {
    let lang = say::lang();
    let artifacts = args.artifacts || (!args.no_artifacts && !plan.has_errors());
    print!(
        "{}",
        jobspec::report::render_text_for(plan, lang, artifacts, origin)
    );
    if plan.has_errors() && !args.no_artifacts && !args.artifacts && plan.artifacts.is_some() {
        println!(
            "\n{}",
            say::t(
                "(launch artifacts left out while the spec has errors; --artifacts prints them)"
                    .into(),
                "（规格有错误，未打印启动文件；加 --artifacts 可打印）".into(),
            )
        );
    }
    if args.explain {
        print!("\n{}", jobspec::report::render_explain(plan, lang));
    }
}

/// `--fix N [-o OUT]`: fix N applied to the spec's text, written over SPEC (or to OUT, or to
/// stdout for `-`), then the patched spec planned and reported.
fn fix(
    args: &PlanArgs,
    src: &str,
    format: Format,
    plan: &jobspec::Plan,
    n: usize,
) -> Result<ExitCode, String> {
    let count = plan.suggestions.len();
    let Some(sg) = n.checked_sub(1).and_then(|i| plan.suggestions.get(i)) else {
        eprintln!(
            "onramp: {}",
            if count == 0 {
                say::t(
                    format!("--fix {n}: the plan of {} lists no fixes", args.path),
                    format!("--fix {n}：{} 的计划没有修复建议", args.path),
                )
            } else {
                say::t(
                    format!(
                        "--fix {n}: the plan of {} lists fixes 1 to {count}",
                        args.path
                    ),
                    format!(
                        "--fix {n}：{} 的计划只有第 1 到 {count} 条修复建议",
                        args.path
                    ),
                )
            }
        );
        return Ok(ExitCode::from(2));
    };
    let patched = patched_text(src, format, plan, &sg.patch)?;
    let title = sg.title.get(say::lang()).to_string();
    write_patched(args, &patched, format, |out| match out {
        None => say::t(
            format!("applied fix {n}: {title}"),
            format!("已应用第 {n} 条修复：{title}"),
        ),
        Some(out) => say::t(
            format!("applied fix {n} to {out}: {title}"),
            format!("已把第 {n} 条修复应用到 {out}：{title}"),
        ),
    })
}

/// The patched spec written over SPEC (or to OUT, or to stdout for `-`, the note then on
/// stderr), then planned and reported. `done` says what was applied, and where (`None`: stdout).
fn write_patched(
    args: &PlanArgs,
    patched: &str,
    format: Format,
    done: impl Fn(Option<&str>) -> String,
) -> Result<ExitCode, String> {
    let out = args.output.as_deref().unwrap_or(&args.path);
    if out == "-" {
        print!("{patched}");
        eprintln!("{}", done(None));
        return Ok(verdict(&jobspec::plan_text(patched, format)));
    }
    write_atomically(out, patched)?;
    println!("{}\n", done(Some(out)));
    let again = jobspec::plan_text(patched, format);
    print_plan(args, &again, out);
    Ok(verdict(&again))
}

/// `--deepspeed FILE [-o OUT]`: the user's ds_config carried into the spec (its batch,
/// precision, ZeRO and offload, optimizer, schedule; what it leaves to "auto" stays the spec's),
/// written as `--fix` writes, with every setting the job's own ds_config will not carry listed.
/// A config DeepSpeed would refuse changes nothing.
fn import_deepspeed(
    args: &PlanArgs,
    src: &str,
    format: Format,
    plan: &jobspec::Plan,
    file: &str,
) -> Result<ExitCode, String> {
    let text = input::read(file)?;
    let lang = say::lang();
    let dp = plan.valid.as_ref().map(|v| v.dp());
    let (import, diags) = jobspec::deepspeed::import_ds_config(&text, dp);
    eprint!(
        "{}",
        jobspec::report::render_diagnostics(&diags, lang, file)
    );
    let Some(import) = import else {
        eprintln!(
            "onramp: {}",
            say::t(
                format!("{file} was not imported: {} is unchanged", args.path),
                format!("未导入 {file}：{} 保持不变", args.path),
            )
        );
        return Ok(ExitCode::from(exit::REFUSED));
    };
    let patched = patched_text(src, format, plan, &import.patch())?;
    if let Some(v) = jobspec::plan_text(&patched, format).valid {
        let ours = jobspec::deepspeed::ds_config(&v);
        let left = jobspec::deepspeed::not_carried(&text, &ours);
        eprint!("{}", jobspec::report::render_diagnostics(&left, lang, file));
    }
    write_patched(args, &patched, format, |out| match out {
        None => say::t(format!("imported {file}"), format!("已导入 {file}")),
        Some(out) => say::t(
            format!("imported {file} into {out}"),
            format!("已把 {file} 导入 {out}"),
        ),
    })
}

/// The spec with `ops` applied: TOML in place (comments and layout kept), JSON by key.
fn patched_text(
    src: &str,
    format: Format,
    plan: &jobspec::Plan,
    ops: &[PatchOp],
) -> Result<String, String> {
    match format {
        Format::Toml => jobspec::patch::apply_patch_toml(src, ops)
            .or_else(|| {
                // Inline tables cannot be patched in place: the spec is written anew.
                let spec = plan.valid.as_ref()?.spec();
                jobspec::patch::apply_patch(spec, ops)
                    .ok()
                    .map(|s| s.to_toml())
            })
            .ok_or_else(|| "the fix cannot be applied to this spec's text".to_string()),
        Format::Json => {
            let mut value: serde_json::Value =
                serde_json::from_str(src).map_err(|e| format!("the spec is not JSON: {e}"))?;
            for op in ops {
                set_path(&mut value, &op.path, op.value.clone())?;
            }
            serde_json::to_string_pretty(&value)
                .map(|t| t + "\n")
                .map_err(|e| format!("cannot write JSON: {e}"))
        }
    }
}

/// Sets `a.b` in a JSON object, making the table `a` when it is absent.
fn set_path(
    root: &mut serde_json::Value,
    path: &str,
    value: serde_json::Value,
) -> Result<(), String> {
    let mut at = root;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let obj = at
            .as_object_mut()
            .ok_or_else(|| format!("cannot set {path}: its table is not an object"))?;
        if i + 1 == parts.len() {
            obj.insert((*part).to_string(), value);
            return Ok(());
        }
        at = obj
            .entry((*part).to_string())
            .or_insert_with(|| serde_json::json!({}));
    }
    Ok(())
}

/// Writes beside the target and renames over it, so a failure leaves the old spec whole.
fn write_atomically(path: &str, text: &str) -> Result<(), String> {
    let target = std::path::Path::new(path);
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "spec".into());
    let tmp = dir.join(format!(".{name}.onramp-fix.{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, target).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {path}: {e}")
    })
}

/// `onramp plan --trainer-run`: the run to stdout, or the spec's errors (as `onramp plan` says
/// them) to stderr with the refusal's exit code.
fn trainer_run(plan: &jobspec::Plan, path: &str) -> Result<ExitCode, String> {
    let lang = say::lang();
    let Some(v) = plan.valid.as_ref().filter(|_| !plan.has_errors()) else {
        eprint!(
            "{}",
            jobspec::report::render_text_for(plan, lang, false, path)
        );
        return Ok(ExitCode::from(exit::REFUSED));
    };
    if v.spec().task == jobspec::spec::Task::TinyTrain {
        eprintln!(
            "{}",
            say::t(
                "task = \"tiny-train\" is trained by onramp-runner tiny-train, not onramp-train: it has no trainer run".into(),
                "task = \"tiny-train\" 由 onramp-runner tiny-train 训练，不经过 onramp-train，因此没有训练运行文件".into(),
            )
        );
        return Ok(ExitCode::from(exit::REFUSED));
    }
    print!("{}", jobspec::trainer::run_json(v));
    Ok(ExitCode::SUCCESS)
}
