//! Counting tokens: with the model's own tokenizer (`hf`), or an estimate marked as one.

use crate::problem::Problem;
use crate::record::Record;
use serde::Serialize;

/// What turns records into token counts, rendered as onramp-train renders them.
pub trait Counter {
    /// A padded example: the tokens of its prompt (masked) and of the whole example.
    fn example(&mut self, rec: &Record) -> Result<(u64, u64), Problem>;
    /// A `{"text": …}` document: its tokens and the end-of-sequence token after it.
    fn document(&mut self, text: &str) -> Result<u64, Problem>;
    /// A piece of a plain-text line.
    fn piece(&mut self, text: &str) -> u64;
    /// Whether these are the tokenizer's own counts.
    fn exact(&self) -> bool;
    /// What counts: the tokenizer's place, or (estimating) why there is none.
    fn describe(&self) -> String;
}

/// A counter chosen at run time (the tokenizer when it loads, else the estimate).
impl<C: Counter + ?Sized> Counter for Box<C> {
    fn example(&mut self, rec: &Record) -> Result<(u64, u64), Problem> {
        (**self).example(rec)
    }
    fn document(&mut self, text: &str) -> Result<u64, Problem> {
        (**self).document(text)
    }
    fn piece(&mut self, text: &str) -> u64 {
        (**self).piece(text)
    }
    fn exact(&self) -> bool {
        (**self).exact()
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
}

/// Bytes of UTF-8 per token the estimate assumes: about four for English under the BPE
/// vocabularies of the catalogue's models (fewer for CJK text, which it then undercounts).
pub const BYTES_PER_TOKEN: u64 = 4;

/// Tokens estimated from the text's length, when the model's tokenizer is not at hand.
#[derive(Clone, Debug, Default)]
pub struct Estimate {
    pub why: String,
}

fn estimate(s: &str) -> u64 {
    (s.len() as u64).div_ceil(BYTES_PER_TOKEN)
}

/// Tokens of the chat layout around each message (a header and an end marker).
const PER_MESSAGE: u64 = 4;

impl Counter for Estimate {
    fn example(&mut self, rec: &Record) -> Result<(u64, u64), Problem> {
        Ok(match rec {
            Record::Chat(msgs) => {
                let (last, head) = msgs.split_last().map_or((0, &[][..]), |(l, h)| {
                    (estimate(&l.content) + PER_MESSAGE, h)
                });
                let prompt: u64 = head
                    .iter()
                    .map(|m| estimate(&m.content) + PER_MESSAGE)
                    .sum();
                (prompt, prompt + last)
            }
            Record::PromptCompletion { prompt, completion } => {
                let p = estimate(prompt);
                (p, p + estimate(completion) + 1)
            }
            Record::Text(t) => (0, estimate(t)),
        })
    }

    fn document(&mut self, text: &str) -> Result<u64, Problem> {
        Ok(estimate(text) + 1)
    }

    fn piece(&mut self, text: &str) -> u64 {
        estimate(text)
    }

    fn exact(&self) -> bool {
        false
    }

    fn describe(&self) -> String {
        self.why.clone()
    }
}

/// The distribution of tokens per record.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Lengths {
    pub min: u32,
    pub p50: u32,
    pub p90: u32,
    pub p99: u32,
    pub max: u32,
    pub mean: f64,
    /// Records per power-of-two bucket: `[upper bound, count]`, the bound inclusive.
    pub buckets: Vec<(u32, u64)>,
}

impl Lengths {
    pub fn of(lengths: &mut [u32]) -> Lengths {
        if lengths.is_empty() {
            return Lengths::default();
        }
        lengths.sort_unstable();
        let at = |q: f64| lengths[((lengths.len() - 1) as f64 * q).round() as usize];
        let sum: u64 = lengths.iter().map(|&n| u64::from(n)).sum();
        let mut buckets: Vec<(u32, u64)> = Vec::new();
        for &n in lengths.iter() {
            let bound = n.max(1).checked_next_power_of_two().unwrap_or(u32::MAX);
            match buckets.last_mut() {
                Some((b, c)) if *b == bound => *c += 1,
                _ => buckets.push((bound, 1)),
            }
        }
        Lengths {
            min: lengths[0],
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            max: lengths[lengths.len() - 1],
            mean: sum as f64 / lengths.len() as f64,
            buckets,
        }
    }
}
