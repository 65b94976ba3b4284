//! `[eval]`: what a run is measured on while and after it trains, and the prompts it answers
//! before and after.
//!
//! The eval set is a held-out share of the training data (`holdout`, at most `max_examples` of
//! them) or a dataset of its own (`dataset`). Every `every_steps` steps and at the end,
//! `onramp-train` reports its loss, perplexity and token accuracy; before training it measures the
//! base model the same way, so the results say what training changed. The `prompts` are answered
//! by the base model before training and by the trained model after, greedily, `max_new_tokens`
//! long at most. The `tasks` are lm-evaluation-harness benchmarks, scored on the base model
//! before training and on the trained one after (`fewshot` examples each, at most `task_max_examples` per task),
//! from the data the cluster holds: lm-eval's own tasks whose data its operator has cached, and
//! the tasks of its task folder (`ONRAMP_EVAL_TASKS`, lm-eval's `--include_path`), offline.

use schemars::JsonSchema;
use serde::Serialize;

/// The smallest and largest share of the data `eval.holdout` may hold out.
pub const HOLDOUT_RANGE: (f64, f64) = (0.001, 0.5);
/// The most examples `eval.max_examples` may ask for.
pub const MAX_EVAL_EXAMPLES: u32 = 100_000;
/// The longest answer `eval.max_new_tokens` may ask for.
pub const MAX_NEW_TOKENS: u32 = 4096;
/// The share of the data held out when `[eval]` does not say.
pub const DEFAULT_HOLDOUT: f64 = 0.05;
/// The most held-out examples, when `[eval]` does not say.
pub const DEFAULT_MAX_EXAMPLES: u32 = 256;
/// How long an answer to a prompt may grow, when `[eval]` does not say: this many tokens, or
/// half of `data.seq_len` when that is less.
pub const DEFAULT_MAX_NEW_TOKENS: u32 = 64;
/// The most prompts a spec may list.
pub const MAX_PROMPTS: usize = 16;
/// The longest prompt, in characters.
pub const MAX_PROMPT_CHARS: usize = 4000;
/// The fewest bytes a token takes in the catalogue's tokenizers' worst case for a prompt's length
/// check before any tokenizer runs: a prompt of `n` bytes is at least `n / 16` tokens. The
/// trainer checks the exact count with the model's tokenizer before it trains.
pub const MAX_BYTES_PER_TOKEN: usize = 16;

/// Well-known lm-evaluation-harness tasks. A spec may name others (a cluster's task folder holds
/// tasks of its own), with a warning that says the names it may have meant; onramp-train checks
/// before it trains that the cluster has every named task and its data.
pub const KNOWN_TASKS: &[&str] = &[
    "arc_challenge",
    "arc_easy",
    "boolq",
    "ceval-valid",
    "cmmlu",
    "gsm8k",
    "hellaswag",
    "lambada_openai",
    "mmlu",
    "piqa",
    "truthfulqa_mc2",
    "winogrande",
];

/// The most tasks `eval.tasks` may list.
pub const MAX_TASKS: usize = 16;
/// The longest task name.
pub const MAX_TASK_NAME: usize = 64;
/// The most few-shot examples `eval.fewshot` may ask for.
pub const MAX_FEWSHOT: u32 = 25;

/// Whether `name` is spelled as lm-evaluation-harness task names are: ASCII letters, digits,
/// `_`, `-` and `.`, starting with a letter or a digit, at most [`MAX_TASK_NAME`] long. Nothing
/// else reaches the trainer's command or lm-eval's task registry.
pub fn is_task_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_TASK_NAME
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
}

/// How the run is evaluated.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalSpec {
    /// The share of the training data held out for evaluation (0 < holdout ≤ 0.5); not with
    /// `dataset`.
    // Written out only when it is not the default: the reader refuses it next to `dataset`, and
    // a spec with a dataset of its own must read back from its own text.
    #[serde(
        default = "default_holdout",
        skip_serializing_if = "is_default_holdout"
    )]
    pub holdout: f64,
    /// A dataset of its own to evaluate on (an id or a path, as `data.dataset`), instead of a
    /// held-out share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Evaluate every this many optimizer steps, and at the end (default: five times a run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_steps: Option<u64>,
    /// The most examples evaluated each time.
    #[serde(default = "default_max_examples")]
    pub max_examples: u32,
    /// lm-evaluation-harness tasks scored on the base model before training and on the trained
    /// one after, from the data the cluster holds; the scoring counts against the time limit
    /// and is not in the time estimate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
    /// Few-shot examples before each question of `tasks` (0 to 25; default 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fewshot: u32,
    /// The most examples of each task scored (default: all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_max_examples: Option<u32>,
    /// Prompts the base and the trained model answer (default: the first prompts of the eval
    /// set).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<String>,
    /// The longest answer to a prompt, in tokens (default: 64, or half of `data.seq_len` when
    /// that is less).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_new_tokens: Option<u32>,
}

fn default_holdout() -> f64 {
    DEFAULT_HOLDOUT
}

fn is_default_holdout(share: &f64) -> bool {
    *share == DEFAULT_HOLDOUT
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn default_max_examples() -> u32 {
    DEFAULT_MAX_EXAMPLES
}

impl Default for EvalSpec {
    fn default() -> Self {
        EvalSpec {
            holdout: DEFAULT_HOLDOUT,
            dataset: None,
            every_steps: None,
            max_examples: DEFAULT_MAX_EXAMPLES,
            tasks: Vec::new(),
            fewshot: 0,
            task_max_examples: None,
            prompts: Vec::new(),
            max_new_tokens: None,
        }
    }
}

impl EvalSpec {
    pub fn is_default(&self) -> bool {
        *self == EvalSpec::default()
    }

    /// The longest answer, with the default filled in for sequences of `seq_len`.
    pub fn max_new_tokens(&self, seq_len: u32) -> u32 {
        self.max_new_tokens
            .unwrap_or_else(|| DEFAULT_MAX_NEW_TOKENS.min(seq_len / 2).max(1))
    }

    /// The fewest tokens `prompt` can be, before any tokenizer has seen it.
    pub fn min_prompt_tokens(prompt: &str) -> usize {
        prompt.len().div_ceil(MAX_BYTES_PER_TOKEN)
    }
}

/// The keys `[eval]` accepts.
pub const EVAL_KEYS: &[&str] = &[
    "holdout",
    "dataset",
    "every_steps",
    "max_examples",
    "tasks",
    "fewshot",
    "task_max_examples",
    "prompts",
    "max_new_tokens",
];
