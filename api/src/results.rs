//! What a run achieved (`results.json`, one of a job's artifacts, written by onramp-train's
//! `evaluate.py`): its eval set, the measures at each evaluation, base against trained, and the
//! prompts both models answered. A job writes it, so readers take it as untrusted: every number
//! may be missing, and a reader shows what it finds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The artifact's name.
pub const RESULTS_ARTIFACT: &str = "results.json";
/// The most bytes of `results.json` a reader takes.
pub const MAX_RESULTS_BYTES: u64 = 4 << 20;
/// The most benchmark rows a page or a terminal shows (a job's trainer writes a few per task, at
/// most 16 tasks; a job that writes more is not let to flood a page).
pub const MAX_BENCHMARK_ROWS: usize = 128;
/// The most rows of the eval set's table a page shows (the trainer writes a handful: a file
/// that holds more is not the trainer's, and is not rendered whole).
pub const MAX_TABLE_ROWS: usize = 128;
/// The most samples a page shows.
pub const MAX_SAMPLES: usize = 64;
/// The most bytes of results an experiment's snapshot keeps (JSON): over it the samples are
/// left out, and results still over it are not kept.
pub const MAX_SNAPSHOT_RESULTS_BYTES: usize = 64 << 10;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunResults {
    pub version: u32,
    pub eval_set: EvalSet,
    #[serde(default)]
    pub history: Vec<EvalPoint>,
    #[serde(default)]
    pub table: Vec<ResultRow>,
    #[serde(default)]
    pub samples: Vec<Sample>,
    /// lm-evaluation-harness tasks (`eval.tasks`), base against trained.
    #[serde(default)]
    pub benchmarks: Vec<BenchmarkRow>,
    pub generation: Generation,
}

impl RunResults {
    /// The table's rows to show: the first [`MAX_TABLE_ROWS`].
    pub fn table_shown(&self) -> &[ResultRow] {
        &self.table[..self.table.len().min(MAX_TABLE_ROWS)]
    }

    /// The samples to show: the first [`MAX_SAMPLES`].
    pub fn samples_shown(&self) -> &[Sample] {
        &self.samples[..self.samples.len().min(MAX_SAMPLES)]
    }

    /// The benchmark rows to show: the first [`MAX_BENCHMARK_ROWS`].
    pub fn benchmarks_shown(&self) -> &[BenchmarkRow] {
        &self.benchmarks[..self.benchmarks.len().min(MAX_BENCHMARK_ROWS)]
    }

    /// The results as an experiment's snapshot keeps them: whole when they fit
    /// [`MAX_SNAPSHOT_RESULTS_BYTES`], else without their samples, else nothing.
    pub fn for_snapshot(mut self) -> Option<RunResults> {
        let fits = |r: &RunResults| {
            serde_json::to_vec(r).is_ok_and(|v| v.len() <= MAX_SNAPSHOT_RESULTS_BYTES)
        };
        if fits(&self) {
            return Some(self);
        }
        self.samples.clear();
        fits(&self).then_some(self)
    }
}

/// What the run was evaluated on: `source` is `holdout` (a `share` of the training data) or
/// `dataset` (a dataset of its own).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EvalSet {
    pub source: String,
    #[serde(default)]
    pub share: Option<f64>,
    #[serde(default)]
    pub dataset: Option<String>,
    pub examples: u64,
}

/// One evaluation: step 0 is the base model, before any update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EvalPoint {
    pub step: u64,
    pub loss: Option<f64>,
    pub perplexity: Option<f64>,
    #[serde(default)]
    pub token_accuracy: Option<f64>,
}

/// One measure, base against trained: `metric` is `loss`, `perplexity` or `token_accuracy`
/// (or, as a comparison lines them up, a benchmark's `task · metric`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResultRow {
    pub metric: String,
    pub base: Option<f64>,
    pub trained: Option<f64>,
    pub change: Option<f64>,
    /// Which way is better, where the measure says so itself (a benchmark's); else it follows
    /// from `metric`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub higher_is_better: Option<bool>,
}

impl ResultRow {
    /// Whether a rise of this measure is an improvement (accuracy) rather than a loss.
    pub fn higher_is_better(&self) -> bool {
        self.higher_is_better
            .unwrap_or(self.metric == "token_accuracy")
    }
}

/// One measure of one benchmark task, base against trained, as lm-evaluation-harness scored it:
/// `metric` is lm-eval's name (`acc`, `acc_norm`, `exact_match (strict-match)`, `perplexity`…).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkRow {
    pub task: String,
    pub metric: String,
    pub base: Option<f64>,
    pub trained: Option<f64>,
    pub change: Option<f64>,
    /// lm-eval's word on the measure; `None` when it gave none.
    #[serde(default)]
    pub higher_is_better: Option<bool>,
    /// Examples of the task scored.
    #[serde(default)]
    pub examples: u64,
    /// Few-shot examples before each question.
    #[serde(default)]
    pub fewshot: u32,
}

impl BenchmarkRow {
    /// The row as a comparison lines it up beside the eval set's measures: `task · metric`.
    pub fn as_result_row(&self) -> ResultRow {
        ResultRow {
            metric: format!("{} · {}", self.task, self.metric),
            base: self.base,
            trained: self.trained,
            change: self.change,
            higher_is_better: self.higher_is_better,
        }
    }

    /// Whether the change is an improvement (`Some(true)`), a loss (`Some(false)`), or neither
    /// said nor seen (no change, or lm-eval gave no direction).
    pub fn improved(&self) -> Option<bool> {
        let c = self.change.filter(|c| c.is_finite() && *c != 0.0)?;
        Some((c > 0.0) == self.higher_is_better?)
    }
}

/// A measure as a page or a terminal shows it: four decimals, or scientific notation for one
/// very large or very small (a job may report any number, and `1e308` written out in full is
/// 309 digits), `—` for none.
pub fn show_measure(x: Option<f64>) -> String {
    show(x, false)
}

/// A change as a page or a terminal shows it, with its sign.
pub fn show_change(x: Option<f64>) -> String {
    show(x, true)
}

fn show(x: Option<f64>, signed: bool) -> String {
    match x {
        Some(v) if v.is_finite() => {
            let text = if v.abs() >= 1e5 || (v != 0.0 && v.abs() < 1e-3) {
                format!("{v:.3e}")
            } else {
                format!("{v:.4}")
            };
            if signed && v >= 0.0 {
                format!("+{text}")
            } else {
                text
            }
        }
        _ => "—".into(),
    }
}

/// A prompt and the base and trained models' answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sample {
    pub prompt: String,
    pub base: Option<String>,
    pub trained: Option<String>,
}

/// How the answers were generated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Generation {
    pub max_new_tokens: u32,
    pub greedy: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trainers_document_reads_and_unknown_keys_are_ignored() {
        let text = r#"{"version":1,"eval_set":{"source":"holdout","share":0.1,"examples":20},
            "history":[{"step":0,"loss":5.5,"perplexity":244.7,"token_accuracy":0.01},
                       {"step":30,"loss":null,"perplexity":null}],
            "table":[{"metric":"loss","base":5.5,"trained":1.5,"change":-4.0}],
            "samples":[{"prompt":"Say hi","prompt_ids":[1,2],"base":"x","base_ids":[3],
                        "trained":null,"trained_ids":null}],
            "benchmarks":[{"task":"sky","metric":"acc","base":0.0,"trained":1.0,"change":1.0,
                           "higher_is_better":true,"examples":4,"fewshot":0},
                          {"task":"sky","metric":"perplexity","base":9.0,"trained":3.0,
                           "change":-6.0,"higher_is_better":false},
                          {"task":"sky","metric":"x","base":1.0,"trained":2.0,"change":1.0}],
            "generation":{"max_new_tokens":8,"greedy":true}}"#;
        let r: RunResults = serde_json::from_str(text).unwrap();
        let improved: Vec<_> = r.benchmarks.iter().map(BenchmarkRow::improved).collect();
        assert_eq!(improved, [Some(true), Some(true), None]);
        assert_eq!(r.benchmarks[1].examples, 0);
        assert_eq!(r.history[1].loss, None);
        assert_eq!(r.table[0].change, Some(-4.0));
        assert!(!r.table[0].higher_is_better());
        assert_eq!(r.samples[0].trained, None);
    }

    #[test]
    fn a_snapshot_keeps_results_that_fit_dropping_samples_first() {
        let sample = |n: usize| Sample {
            prompt: "p".repeat(n),
            base: None,
            trained: None,
        };
        let r = RunResults {
            version: 2,
            eval_set: EvalSet {
                source: "holdout".into(),
                share: Some(0.05),
                dataset: None,
                examples: 10,
            },
            history: Vec::new(),
            table: Vec::new(),
            samples: vec![sample(10)],
            benchmarks: Vec::new(),
            generation: Generation {
                max_new_tokens: 8,
                greedy: true,
            },
        };
        assert_eq!(r.clone().for_snapshot(), Some(r.clone()));
        let big = RunResults {
            samples: vec![sample(MAX_SNAPSHOT_RESULTS_BYTES)],
            ..r.clone()
        };
        let kept = big.for_snapshot().unwrap();
        assert!(kept.samples.is_empty());
        let huge = RunResults {
            eval_set: EvalSet {
                dataset: Some("d".repeat(MAX_SNAPSHOT_RESULTS_BYTES)),
                ..r.eval_set.clone()
            },
            ..r
        };
        assert_eq!(huge.for_snapshot(), None);
    }

    #[test]
    fn extreme_numbers_show_short() {
        assert_eq!(show_measure(Some(1e308)), "1.000e308");
        assert_eq!(show_measure(Some(2.5)), "2.5000");
        assert_eq!(show_measure(Some(1e-9)), "1.000e-9");
        assert_eq!(show_measure(None), "—");
        assert_eq!(show_change(Some(-4.0)), "-4.0000");
        assert_eq!(show_change(Some(-1e300)), "-1.000e300");
    }
}
