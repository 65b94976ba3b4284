//! Token-by-token generation with run.c's exact loop: the prompt (with BOS) is forced, then tokens
//! are sampled until BOS comes back (a Hugging Face model's end-of-sequence token) or the step
//! budget is spent.

use crate::error::Result;
use crate::forward::Transformer;
use crate::sampler::{Sampler, SamplerConfig};
use crate::tokenizer::{BOS, Tokenizer};

/// One step of generation: the token that follows `prev`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    /// The new token.
    pub id: u32,
    /// The token before it (decoding depends on it: a leading space is dropped after BOS).
    pub prev: u32,
    /// Its position in the sequence (1 for the first token after BOS).
    pub pos: usize,
    /// True while the prompt is being replayed, false once the model chooses.
    pub from_prompt: bool,
}

/// A running generation; each [`Generator::next_token`] runs the model once.
pub struct Generator<'a> {
    model: &'a mut Transformer,
    sampler: Sampler,
    prompt: Vec<u32>,
    token: u32,
    pos: usize,
    steps: usize,
    finished: bool,
    /// The tokens that end generation.
    stop: Vec<u32>,
    /// The prompt's first token, when it is not BOS (a tokenizer without one), not yet returned.
    first: Option<u32>,
}

/// run.c's rule for the step budget: 0 or more than the sequence length means the sequence length.
pub fn clamp_steps(steps: usize, seq_len: usize) -> usize {
    if steps == 0 || steps > seq_len {
        seq_len
    } else {
        steps
    }
}

impl<'a> Generator<'a> {
    /// Starts generating after `prompt` (encoded with BOS and the dummy prefix, as run.c does).
    /// `steps` counts forward passes including the prompt's, as run.c's `-n`.
    pub fn new(
        model: &'a mut Transformer,
        tokenizer: &Tokenizer,
        prompt: &str,
        steps: usize,
        sampler: SamplerConfig,
    ) -> Self {
        Self::new_bytes(model, tokenizer, prompt.as_bytes(), steps, sampler)
    }

    /// [`Generator::new`] on a prompt's raw bytes (run.c's prompt is any C string, UTF-8 or not).
    pub fn new_bytes(
        model: &'a mut Transformer,
        tokenizer: &Tokenizer,
        prompt: &[u8],
        steps: usize,
        sampler: SamplerConfig,
    ) -> Self {
        let prompt = tokenizer.encode_bytes(prompt, true, false, true);
        let mut g = Self::from_tokens(model, prompt, steps, sampler);
        g.stop = tokenizer.stop_tokens().to_vec();
        g
    }

    /// Starts generating after already encoded `prompt` tokens (the first one is fed first).
    pub fn from_tokens(
        model: &'a mut Transformer,
        mut prompt: Vec<u32>,
        steps: usize,
        sampler: SamplerConfig,
    ) -> Self {
        if prompt.is_empty() {
            prompt.push(BOS);
        }
        let steps = clamp_steps(steps, model.config().seq_len);
        Generator {
            first: (prompt[0] != BOS).then_some(prompt[0]),
            stop: vec![BOS],
            token: prompt[0],
            model,
            sampler: Sampler::new(sampler),
            prompt,
            pos: 0,
            steps,
            finished: false,
        }
    }

    /// Runs the model once and returns the next token, or `None` when a stop token was produced
    /// or the step budget is spent. A prompt that does not start with BOS returns its first token
    /// first (as if it followed BOS), without running the model, so that its text is shown too.
    pub fn next_token(&mut self) -> Result<Option<Token>> {
        if let Some(id) = self.first.take() {
            return Ok(Some(Token {
                id,
                prev: BOS,
                pos: 0,
                from_prompt: true,
            }));
        }
        if self.finished || self.pos >= self.steps {
            self.finished = true;
            return Ok(None);
        }
        let logits = self.model.forward(self.token, self.pos)?;
        let from_prompt = self.pos + 1 < self.prompt.len();
        let next = if from_prompt {
            self.prompt[self.pos + 1]
        } else {
            self.sampler.sample(logits)
        };
        self.pos += 1;
        if self.stop.contains(&next) {
            self.finished = true;
            return Ok(None);
        }
        let tok = Token {
            id: next,
            prev: self.token,
            pos: self.pos,
            from_prompt,
        };
        self.token = next;
        Ok(Some(tok))
    }

    /// Number of forward passes run so far.
    pub fn pos(&self) -> usize {
        self.pos
    }
}

impl Iterator for Generator<'_> {
    type Item = Result<Token>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_token().transpose()
    }
}

/// Generates and returns the text exactly as run.c prints it (without its final newline),
/// together with the generated token ids (prompt tokens after BOS included).
pub fn generate_text(
    model: &mut Transformer,
    tokenizer: &Tokenizer,
    prompt: &str,
    steps: usize,
    sampler: SamplerConfig,
) -> Result<(Vec<u8>, Vec<u32>)> {
    let mut text = Vec::new();
    let mut ids = Vec::new();
    for tok in Generator::new(model, tokenizer, prompt, steps, sampler) {
        let tok = tok?;
        ids.push(tok.id);
        if let Some(piece) = tokenizer.decode_printable(tok.prev, tok.id) {
            text.extend_from_slice(piece);
        }
    }
    Ok((text, ids))
}
