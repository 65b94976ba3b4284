//! Reading `[eval]` (the rules between its keys and the rest of the spec are validation's:
//! `validate/eval.rs`).

use super::*;
use crate::eval_spec::*;

impl Reader {
    pub(super) fn eval(&mut self, t: &Table<'_>) -> EvalSpec {
        let d = EvalSpec::default();
        let (lo, hi) = HOLDOUT_RANGE;
        if let (Some(_), Some(node)) = (t.get("dataset"), t.get("holdout")) {
            self.push(
                Diagnostic::error(
                    Code::Conflict,
                    "eval.holdout",
                    "`eval.holdout` holds out a share of the training data and `eval.dataset` names a dataset of its own: keep one of them",
                    "`eval.holdout` 从训练数据中留出一部分，`eval.dataset` 另给一个数据集：请只保留其一",
                )
                .with_span(node.span),
            );
        }
        EvalSpec {
            holdout: self.float(t, "holdout", lo, hi).unwrap_or(d.holdout),
            dataset: self.string(t, "dataset").map(|(s, _)| s),
            every_steps: self.uint(t, "every_steps", 1, 1_000_000_000),
            max_examples: self
                .uint32(t, "max_examples", 1, MAX_EVAL_EXAMPLES)
                .unwrap_or(d.max_examples),
            tasks: self.string_list(t, "tasks").unwrap_or_default(),
            fewshot: self
                .uint32(t, "fewshot", 0, MAX_FEWSHOT)
                .unwrap_or(d.fewshot),
            task_max_examples: self.uint32(t, "task_max_examples", 1, MAX_EVAL_EXAMPLES),
            prompts: self.string_list(t, "prompts").unwrap_or_default(),
            max_new_tokens: self.uint32(t, "max_new_tokens", 1, MAX_NEW_TOKENS),
        }
    }
}
