//! What a spec means beyond what it says: the card count and data-parallel size, the run's
//! length in steps and tokens, LoRA's defaults and the utilisation the estimators assume. Pure
//! functions of the spec: the rules (`rules.rs`) check their results and word what is wrong,
//! and `ValidSpec` carries them.

use crate::catalog::{self, Card, Family, Model};
use crate::spec::{EvalSpec, JobSpec, ModelRef};

/// Default model FLOPs utilisation on GPUs: a typical well-tuned dense-transformer figure
/// (Megatron-LM and PaLM report 0.4–0.55; 0.4 is the conservative end).
pub const DEFAULT_MFU_GPU: f64 = 0.40;
/// Default utilisation of the local runner's CPU cores for candle training.
pub const DEFAULT_MFU_CPU: f64 = 0.20;

/// LoRA's rank when the spec gives none (alpha is twice the rank unless given).
pub const DEFAULT_LORA_RANK: u32 = 16;

/// How the spec's model names its layers: the catalogue's family, Llama's for an architecture
/// given by its numbers (the trainer builds it as a Llama).
pub fn family(spec: &JobSpec) -> Family {
    catalogue_model(spec).map_or(Family::Llama, |m| m.family)
}

/// The catalogue entry the spec names, if it names one (not an architecture of numbers).
pub fn catalogue_model(spec: &JobSpec) -> Option<&'static Model> {
    match &spec.model {
        ModelRef::Id(id) => catalog::model(id),
        ModelRef::Custom(_) => None,
    }
}

/// Total cards, and the data-parallel size (`None` when tp × pp × sp does not divide them).
pub fn world_and_dp(spec: &JobSpec) -> (u32, Option<u32>) {
    let (p, r) = (&spec.parallel, &spec.resources);
    let world = r.cards_per_node.saturating_mul(r.nodes);
    let model_par = p.tp.saturating_mul(p.pp).saturating_mul(p.sp);
    let dp = (model_par > 0 && world.is_multiple_of(model_par)).then(|| world / model_par);
    (world, dp)
}

/// How long a run is, or why the spec does not say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLength {
    /// Optimizer steps and the tokens they train on.
    Run { steps: u64, tokens: u64 },
    /// Both `train.epochs` and `train.steps`.
    BothGiven,
    /// Epochs (given, or the default one) without `data.tokens` or `data.examples`.
    NoTokens,
}

/// The examples onramp-train holds out to evaluate on (evaluate.py `split`): `eval.holdout` of
/// them, rounded down, at most `eval.max_examples`; none when `[eval]` names a dataset of its
/// own. An epoch is a pass over the rest.
pub fn held_out(examples: u64, eval: &EvalSpec) -> u64 {
    if eval.dataset.is_some() {
        return 0;
    }
    let share = (examples as f64 * eval.holdout + 1e-9).floor() as u64;
    share.min(u64::from(eval.max_examples))
}

/// `train.steps`, or epochs (one when neither is given) of the data as the trainer batches it:
/// with `data.examples` (padded: one example per sequence), the examples it trains on over the
/// global batch; else (packed text) the whole sequences of `seq_len` that `data.tokens` make,
/// less those held out, over the global batch (micro batch × accumulation × `dp` sequences).
/// Both rounded up.
pub fn run_length(spec: &JobSpec, dp: u32) -> RunLength {
    let t = &spec.train;
    let global_batch = u64::from(t.micro_batch) * u64::from(t.grad_accum) * u64::from(dp);
    let tokens_per_step = global_batch.saturating_mul(u64::from(spec.data.seq_len));
    let epochs = t.epochs.unwrap_or(1.0);
    match (t.epochs, t.steps, spec.data.tokens, spec.data.examples) {
        (Some(_), Some(_), _, _) => RunLength::BothGiven,
        (None, Some(s), _, _) => RunLength::Run {
            steps: s,
            tokens: s.saturating_mul(tokens_per_step),
        },
        (_, None, tokens, Some(examples)) => {
            let trained = examples - held_out(examples, &spec.eval);
            let total = (trained as f64 * epochs).min(1e15).ceil() as u64;
            let steps = total.div_ceil(global_batch.max(1));
            // The tokens really in those examples when counted, else their padded bound.
            let per_example =
                tokens.map_or(f64::from(spec.data.seq_len), |n| n as f64 / examples as f64);
            RunLength::Run {
                steps,
                tokens: (total as f64 * per_example).min(1e18) as u64,
            }
        }
        (_, None, None, None) => RunLength::NoTokens,
        (_, None, Some(tokens), None) => {
            // Packed text: the trainer cuts the tokens into whole sequences of seq_len (the rest
            // of the last is dropped) and holds some of them out, as it does examples.
            let seq_len = u64::from(spec.data.seq_len).max(1);
            let sequences = tokens / seq_len;
            let trained = sequences - held_out(sequences, &spec.eval);
            let total = (trained as f64 * epochs).min(1e15).ceil() as u64;
            RunLength::Run {
                steps: total.div_ceil(global_batch.max(1)),
                tokens: total.saturating_mul(seq_len),
            }
        }
    }
}

/// LoRA's rank, alpha and targets, the spec's or the defaults.
pub fn lora(spec: &JobSpec) -> (u32, u32, Vec<String>) {
    let t = &spec.train;
    let rank = t.lora_rank.unwrap_or(DEFAULT_LORA_RANK);
    let alpha = t.lora_alpha.unwrap_or(rank.saturating_mul(2));
    let targets = t.lora_targets.clone().unwrap_or_else(|| {
        family(spec)
            .default_lora_targets()
            .iter()
            .map(|t| t.to_string())
            .collect()
    });
    (rank, alpha, targets)
}

/// The model FLOPs utilisation the estimators assume: the spec's, else the card kind's default.
pub fn mfu(spec: &JobSpec, card: Option<&Card>) -> f64 {
    spec.estimate
        .mfu
        .unwrap_or(if card.is_some_and(|k| !k.is_gpu) {
            DEFAULT_MFU_CPU
        } else {
            DEFAULT_MFU_GPU
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(extra_train: &str, data_tokens: &str, parallel: &str) -> JobSpec {
        let src = format!(
            "name = \"d\"\ntask = \"lora\"\nmodel = \"stories260K\"\n[data]\ndataset = \"x\"\n\
             seq_len = 128\n{data_tokens}\n[train]\nmicro_batch = 2\ngrad_accum = 3\n\
             {extra_train}\n[parallel]\n{parallel}\n[resources]\ncard = \"a100-80g\"\n\
             cards_per_node = 8\nnodes = 2\n"
        );
        let (root, _) = crate::node::from_toml(&src);
        crate::parse::Reader::new().spec(&root).expect("parses")
    }

    #[test]
    fn the_run_length_follows_steps_or_epochs_of_the_data() {
        let (world, dp) = world_and_dp(&spec("", "", "tp = 2"));
        assert_eq!((world, dp), (16, Some(8)));
        assert_eq!(world_and_dp(&spec("", "", "tp = 3")).1, None);
        // 2 × 3 × 8 sequences of 128 tokens a step.
        let per_step = 2 * 3 * 8 * 128;
        assert_eq!(
            run_length(&spec("steps = 10", "", "tp = 2"), 8),
            RunLength::Run {
                steps: 10,
                tokens: 10 * per_step
            }
        );
        // Packed text: 30721 tokens make 240 whole sequences of 128; 12 (5 %) are held out, and
        // two epochs of the other 228 take 456 / 48 steps, rounded up.
        let tokens = format!("tokens = {}", per_step * 5 + 1);
        assert_eq!(
            run_length(&spec("epochs = 2", &tokens, "tp = 2"), 8),
            RunLength::Run {
                steps: 10,
                tokens: 456 * 128
            }
        );
        // Less than one sequence trains nothing (the validator says so).
        assert_eq!(
            run_length(&spec("", "tokens = 127", "tp = 2"), 8),
            RunLength::Run {
                steps: 0,
                tokens: 0
            }
        );
        assert_eq!(run_length(&spec("", "", ""), 8), RunLength::NoTokens);
        assert_eq!(
            run_length(&spec("steps = 1\nepochs = 1", "", ""), 8),
            RunLength::BothGiven
        );
    }

    #[test]
    fn padded_examples_count_one_sequence_each_less_the_held_out() {
        // 1000 examples of ~400 tokens at seq_len 128 would be ~3 "epochs" by packed tokens;
        // padded, one epoch is 1000 - 50 held out over 48 sequences a step.
        let data = "examples = 1000\ntokens = 400000";
        assert_eq!(
            run_length(&spec("epochs = 2", data, "tp = 2"), 8),
            RunLength::Run {
                steps: (2 * 950_u64).div_ceil(48),
                tokens: 2 * 950 * 400
            }
        );
        // Without a token count, each example is bounded by seq_len.
        assert_eq!(
            run_length(&spec("", "examples = 10", "tp = 2"), 8),
            RunLength::Run {
                steps: 1,
                tokens: 10 * 128
            }
        );
        let e = EvalSpec::default();
        assert_eq!(
            (
                held_out(19, &e),
                held_out(20, &e),
                held_out(1000, &e),
                held_out(10_000, &e)
            ),
            (0, 1, 50, 256)
        );
        let own = EvalSpec {
            dataset: Some("eval.jsonl".into()),
            ..EvalSpec::default()
        };
        let tenth = EvalSpec {
            holdout: 0.1,
            max_examples: 30,
            ..EvalSpec::default()
        };
        assert_eq!(
            (
                held_out(1000, &own),
                held_out(99, &tenth),
                held_out(1000, &tenth)
            ),
            (0, 9, 30)
        );
    }

    #[test]
    fn lora_defaults_are_rank_16_alpha_twice_and_the_attention_projections() {
        assert_eq!(
            lora(&spec("", "", "")),
            (
                16,
                32,
                ["q_proj", "k_proj", "v_proj", "o_proj"]
                    .map(String::from)
                    .to_vec()
            )
        );
        let (r, a, t) = lora(&spec(
            "lora_rank = 4\nlora_targets = [\"all-linear\"]",
            "",
            "",
        ));
        assert_eq!((r, a, t), (4, 8, vec!["all-linear".to_string()]));
    }
}
