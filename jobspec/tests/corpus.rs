//! Snapshot tests over the spec corpus in `jobspec/specs/`: the full terminal report with
//! artifacts, and the JSON plan. `UPDATE_EXPECT=1 cargo test -p jobspec` refreshes them.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use expect_test::{ExpectFile, expect_file};
use jobspec::{Lang, PlanWire, plan_toml, report::render_text};

fn check(src: &str, text: ExpectFile, json: ExpectFile) {
    let plan = plan_toml(src);
    text.assert_eq(&render_text(&plan, Lang::En, true));
    let wire = PlanWire::from(&plan);
    json.assert_eq(&serde_json::to_string_pretty(&wire).unwrap());
}

macro_rules! corpus {
    ($($test:ident => $file:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            check(
                include_str!(concat!("../specs/", $file, ".toml")),
                expect_file![concat!("snapshots/", $file, ".txt")],
                expect_file![concat!("snapshots/", $file, ".json")],
            );
        }
    )*};
}

corpus! {
    lora_7b_4090 => "7b-lora-4090",
    sft_7b_zero3_8xa100 => "7b-sft-zero3-8xa100",
    deepseek_7b_128k_mxc500 => "deepseek-7b-128k-mxc500",
    tiny_train_stories260k => "tiny-train-stories260k",
    full_7b_4090 => "7b-full-4090",
    seed_claim => "seed-claim-1.2t-30h",
    errors_typos => "errors-typos",
}

/// The Chinese report of a spec with mistakes.
#[test]
fn errors_in_chinese() {
    let plan = plan_toml(include_str!("../specs/errors-typos.toml"));
    expect_file!["snapshots/errors-typos.zh.txt"].assert_eq(&render_text(&plan, Lang::Zh, false));
}

/// The full Chinese report of a spec that does not fit: every header, label and verdict in
/// Chinese, the fixes, the card table and the artifacts, then the explanations.
#[test]
fn full_report_in_chinese() {
    let plan = plan_toml(include_str!("../specs/7b-full-4090.toml"));
    let text = format!(
        "{}\n{}",
        render_text(&plan, Lang::Zh, true),
        jobspec::report::render_explain(&plan, Lang::Zh)
    );
    expect_file!["snapshots/7b-full-4090.zh.txt"].assert_eq(&text);
}

/// Chinese tables line up on a terminal: every row of the card table and of the memory
/// breakdown is as wide, in display columns, as its header.
#[test]
fn chinese_tables_align_by_display_width() {
    use unicode_width::UnicodeWidthStr;
    let plan = plan_toml(include_str!("../specs/7b-lora-4090.toml"));
    let text = render_text(&plan, Lang::Zh, false);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("显卡") && l.contains("费用"))
        .unwrap();
    let table = &lines[at..at + 1 + plan.cards.len()];
    let widths: Vec<usize> = table.iter().map(|l| l.width()).collect();
    assert!(
        widths.iter().all(|w| *w == widths[0]),
        "{widths:?}\n{}",
        table.join("\n")
    );
    // The memory rows: the GiB column ends at the same column on every row.
    let from = lines.iter().position(|l| *l == "每卡显存：").unwrap() + 1;
    let memory: Vec<usize> = lines[from..from + 6]
        .iter()
        .map(|l| l.find(" GiB").map_or(0, |i| l[..i].width()))
        .collect();
    assert!(
        memory.iter().all(|w| *w > 0) && memory.iter().all(|w| *w == memory[0]),
        "{memory:?}\n{text}"
    );
}

/// Every template the app offers is valid and can be submitted as it is.
#[test]
fn templates_are_submittable() {
    assert_eq!(jobspec::templates().len(), 4);
    for t in jobspec::templates() {
        let plan = plan_toml(t.toml);
        assert!(plan.is_submittable(), "{}: {:#?}", t.id, plan.diagnostics);
    }
}

/// The seed claim (DeepSeek-7B, 1.2T tokens, 30 hours, 8×MXC500) is flagged as impossible,
/// with a lower bound of roughly two years.
#[test]
fn seed_claim_is_impossible() {
    let plan = plan_toml(include_str!("../specs/seed-claim-1.2t-30h.toml"));
    let codes: Vec<_> = plan.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert!(codes.contains(&"physically-impossible"), "{codes:?}");
    let est = plan.estimate.unwrap();
    let days = est.time.min_seconds / 86_400.0;
    // 6·N·T alone gives ~734 days; attention at 4096 tokens adds ~15%.
    assert!((700.0..900.0).contains(&days), "{days}");
}
