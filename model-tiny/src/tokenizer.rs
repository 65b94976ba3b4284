//! The llama2.c tokenizer (`tokenizer.bin` / `tok512.bin`): byte-level BPE by merge scores with
//! byte fallback, encoding and decoding exactly as llama2.c's `run.c` does.

use crate::error::{Error, Result};
use std::collections::HashMap;

/// The beginning-of-sequence token, which also ends generation.
pub const BOS: u32 = 1;
/// The end-of-sequence token.
pub const EOS: u32 = 2;
const WHAT: &str = "llama2.c tokenizer";

const fn byte_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = i as u8;
        i += 1;
    }
    t
}
static BYTE_PIECES: [u8; 256] = byte_table();

/// A loaded vocabulary with its merge scores.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    pub(crate) vocab: Vec<Vec<u8>>,
    pub(crate) scores: Vec<f32>,
    pub(crate) max_token_length: u32,
    pub(crate) lookup: HashMap<Vec<u8>, u32>,
    /// A Hugging Face `tokenizer.json`'s rules, where it came from one (`hf_tokenizer.rs`).
    pub(crate) hf: Option<HfRules>,
}

/// How a SentencePiece-style Hugging Face BPE tokenizer differs from llama2.c's: merges by
/// rank (the lowest-ranked adjacent pair first, leftmost on ties) instead of by the merged
/// piece's score, its own BOS (or none), byte pieces found by name, and generation stopping at
/// the model's end-of-sequence tokens.
#[derive(Debug, Clone)]
pub(crate) struct HfRules {
    /// `(left, right) → (rank, merged)`.
    pub(crate) merges: HashMap<(u32, u32), (u32, u32)>,
    /// The token the post-processor puts first, if any.
    pub(crate) bos: Option<u32>,
    /// Whether a space is put before text that does not start with one (Metaspace's
    /// `prepend_scheme`, or a `Prepend` normalizer, which puts it even then).
    pub(crate) prepend: Prepend,
    /// Whether merges stop at spaces (Metaspace's `split`, true unless it says false): each
    /// word, a space and what follows it up to the next one, is merged on its own.
    pub(crate) split: bool,
    /// `<0x00>`…`<0xFF>`, where the vocabulary has them (`byte_fallback`).
    pub(crate) bytes: Option<Vec<u32>>,
    pub(crate) unk: Option<u32>,
    /// Generation ends when one of these comes.
    pub(crate) stop: Vec<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prepend {
    /// Unless the text already starts with a space (Metaspace `first` or `always`).
    UnlessSpace,
    /// Always, when there is text (the `Prepend` normalizer).
    Always,
    Never,
}

impl Tokenizer {
    /// Reads a llama2.c tokenizer file holding exactly `vocab_size` entries (the file itself does
    /// not record its size; it must match the model's vocabulary).
    pub fn from_bytes(bytes: &[u8], vocab_size: usize) -> Result<Self> {
        let mut at = 0usize;
        let read4 = |what: &str, at: &mut usize| -> Result<[u8; 4]> {
            let b = bytes.get(*at..*at + 4).ok_or_else(|| {
                Error::format(
                    WHAT,
                    format!("{what} at byte {at}"),
                    "4 more bytes",
                    "end of file",
                )
            })?;
            *at += 4;
            Ok([b[0], b[1], b[2], b[3]])
        };
        let max_token_length = u32::from_le_bytes(read4("max_token_length", &mut at)?);
        if max_token_length == 0 || max_token_length > 1 << 16 {
            return Err(Error::format(
                WHAT,
                "max_token_length (byte 0)",
                "a number in 1..=65536",
                max_token_length,
            ));
        }
        let mut vocab = Vec::with_capacity(vocab_size);
        let mut scores = Vec::with_capacity(vocab_size);
        for i in 0..vocab_size {
            let score = f32::from_le_bytes(read4(&format!("score of token {i}"), &mut at)?);
            let len = i32::from_le_bytes(read4(&format!("length of token {i}"), &mut at)?);
            if len < 0 || len as u32 > max_token_length {
                return Err(Error::format(
                    WHAT,
                    format!("length of token {i} (byte {})", at - 4),
                    format!("0..={max_token_length}"),
                    len,
                ));
            }
            let piece = bytes.get(at..at + len as usize).ok_or_else(|| {
                Error::format(
                    WHAT,
                    format!("text of token {i} at byte {at}"),
                    format!("{len} bytes"),
                    format!("{} bytes (file truncated)", bytes.len() - at),
                )
            })?;
            at += len as usize;
            // run.c keeps pieces as C strings, so a piece ends at its first NUL byte.
            let end = piece.iter().position(|&b| b == 0).unwrap_or(piece.len());
            vocab.push(piece[..end].to_vec());
            scores.push(score);
        }
        if at != bytes.len() {
            return Err(Error::format(
                WHAT,
                format!("end of token {}", vocab_size.saturating_sub(1)),
                format!("the end of the file ({vocab_size} tokens, the model's vocabulary size)"),
                format!(
                    "{} more bytes (a tokenizer for a larger vocabulary?)",
                    bytes.len() - at
                ),
            ));
        }
        let mut lookup = HashMap::with_capacity(vocab_size);
        for (i, p) in vocab.iter().enumerate() {
            lookup.entry(p.clone()).or_insert(i as u32);
        }
        Ok(Tokenizer {
            vocab,
            scores,
            max_token_length,
            lookup,
            hf: None,
        })
    }

    /// Reads a llama2.c tokenizer file with however many entries it holds (for training, where
    /// the tokenizer decides the vocabulary size).
    pub fn from_bytes_all(bytes: &[u8]) -> Result<Self> {
        let mut at = 4usize;
        let mut n = 0usize;
        while at < bytes.len() {
            let len = bytes
                .get(at + 4..at + 8)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            match len {
                Some(len) if len >= 0 => at += 8 + len as usize,
                _ => break,
            }
            n += 1;
        }
        Self::from_bytes(bytes, n)
    }

    /// Number of tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// The raw text of token `id` (empty for an unknown id).
    pub fn piece(&self, id: u32) -> &[u8] {
        self.vocab.get(id as usize).map_or(&[], |p| p.as_slice())
    }

    /// The longest piece, in bytes, as recorded in the file.
    pub fn max_token_length(&self) -> u32 {
        self.max_token_length
    }

    /// The tokens generation stops at: BOS for llama2.c (as run.c), the model's end-of-sequence
    /// tokens for a Hugging Face one.
    pub fn stop_tokens(&self) -> &[u32] {
        match &self.hf {
            Some(hf) => &hf.stop,
            None => std::slice::from_ref(&BOS),
        }
    }

    pub(crate) fn id_of(&self, s: &[u8]) -> Option<u32> {
        self.lookup.get(s).copied()
    }

    /// Encodes `text` as run.c does: optional BOS, a dummy-prefix space, one token per UTF-8
    /// code point (bytes `<0xXX>` when the code point is not in the vocabulary), then merges of
    /// the best-scoring adjacent pair (leftmost on ties) until none applies, then optional EOS.
    pub fn encode(&self, text: &str, bos: bool, eos: bool) -> Vec<u32> {
        self.encode_bytes(text.as_bytes(), bos, eos, true)
    }

    /// [`Tokenizer::encode`] on raw bytes (up to the first NUL, as in C), with the dummy prefix
    /// optional so that a long corpus can be encoded line by line.
    pub fn encode_bytes(&self, text: &[u8], bos: bool, eos: bool, dummy_prefix: bool) -> Vec<u32> {
        let text = &text[..text.iter().position(|&b| b == 0).unwrap_or(text.len())];
        if let Some(hf) = &self.hf {
            return self.encode_hf(hf, text, bos, eos, dummy_prefix);
        }
        let mut tokens = Vec::with_capacity(text.len() + 3);
        if bos {
            tokens.push(BOS);
        }
        if dummy_prefix
            && !text.is_empty()
            && let Some(id) = self.id_of(b" ")
        {
            tokens.push(id);
        }
        let mut i = 0;
        while i < text.len() {
            // One code point: a leading byte plus at most three continuation bytes.
            let start = i;
            i += 1;
            while i < text.len() && text[i] & 0xC0 == 0x80 && i - start < 4 {
                i += 1;
            }
            let cp = &text[start..i];
            match self.id_of(cp) {
                Some(id) => tokens.push(id),
                None => {
                    // The first 3 ids are <unk>, <s>, </s>; byte tokens follow.
                    for &b in cp {
                        let id = b as u32 + 3;
                        tokens.push(if (id as usize) < self.vocab.len() {
                            id
                        } else {
                            0
                        });
                    }
                }
            }
        }
        self.merge(&mut tokens);
        if eos {
            tokens.push(EOS);
        }
        tokens
    }

    /// The score and id of the merge of `a` and `b`, if the concatenation is a token (for a
    /// Hugging Face tokenizer: if the pair is one of its merges, the lower rank scoring higher).
    fn pair(&self, buf: &mut Vec<u8>, a: u32, b: u32) -> Option<(f32, u32)> {
        if let Some(hf) = &self.hf {
            return hf
                .merges
                .get(&(a, b))
                .map(|&(rank, id)| (-(rank as f32), id));
        }
        buf.clear();
        buf.extend_from_slice(self.piece(a));
        buf.extend_from_slice(self.piece(b));
        self.id_of(buf).map(|id| (self.scores[id as usize], id))
    }

    pub(crate) fn merge(&self, tokens: &mut Vec<u32>) {
        // Same result as run.c's rescan of every pair per merge, but each pair is looked up once:
        // after a merge only the two pairs touching the new token change.
        let mut buf = Vec::new();
        let mut pairs: Vec<Option<(f32, u32)>> = tokens
            .windows(2)
            .map(|w| self.pair(&mut buf, w[0], w[1]))
            .collect();
        loop {
            let mut best: Option<(usize, f32, u32)> = None;
            for (i, p) in pairs.iter().enumerate() {
                if let Some((score, id)) = *p
                    && score > best.map_or(-1e10, |b| b.1)
                {
                    best = Some((i, score, id));
                }
            }
            let Some((idx, _, id)) = best else { break };
            tokens[idx] = id;
            tokens.remove(idx + 1);
            pairs.remove(idx);
            if idx < pairs.len() {
                pairs[idx] = self.pair(&mut buf, tokens[idx], tokens[idx + 1]);
            }
            if idx > 0 {
                pairs[idx - 1] = self.pair(&mut buf, tokens[idx - 1], tokens[idx]);
            }
        }
    }

    /// The bytes that follow `prev` when `token` comes next, as run.c's `decode`: the leading
    /// space is stripped after BOS and `<0xXX>` pieces become the raw byte.
    pub fn decode(&self, prev: u32, token: u32) -> &[u8] {
        let mut piece = self.piece(token);
        if prev == BOS && piece.first() == Some(&b' ') {
            piece = &piece[1..];
        }
        if let Some(b) = parse_byte_piece(piece) {
            return std::slice::from_ref(&BYTE_PIECES[b as usize]);
        }
        piece
    }

    /// [`Tokenizer::decode`], or `None` where run.c's `safe_printf` prints nothing (an empty
    /// piece, or a single byte that is neither printable ASCII nor whitespace).
    pub fn decode_printable(&self, prev: u32, token: u32) -> Option<&[u8]> {
        let piece = self.decode(prev, token);
        match piece {
            [] => None,
            [b] if !(b.is_ascii_graphic() || *b == b' ' || is_c_space(*b)) => None,
            _ => Some(piece),
        }
    }
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Parses `<0xXX>` the way `sscanf(piece, "<0x%02hhX>", ...)` accepts it: one or two hex digits.
fn parse_byte_piece(piece: &[u8]) -> Option<u8> {
    let rest = piece.strip_prefix(b"<0x")?;
    let digits: Vec<u8> = rest
        .iter()
        .take(2)
        .take_while(|b| b.is_ascii_hexdigit())
        .copied()
        .collect();
    if digits.is_empty() {
        return None;
    }
    let s = std::str::from_utf8(&digits).ok()?;
    u8::from_str_radix(s, 16).ok()
}
