//! Reading and writing llama2.c checkpoints: the legacy v0 format (a 7-int32 header, negative
//! vocab for an unshared classifier) and the versioned `ak42` exports v1 (fp32) and v2 (Q8_0).

use crate::config::Config;
use crate::error::{Error, Result};
use crate::weights::{LayerWeights, Weights};

/// The magic number of versioned exports: "ak42" read as a little-endian u32.
pub const MAGIC: u32 = 0x616b_3432;
const WHAT: &str = "llama2.c checkpoint";
const V1_HEADER_BYTES: usize = 256;

/// True when `bytes` starts like a versioned llama2.c export.
pub fn is_versioned(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && read_u32(bytes, 0) == MAGIC
}

/// Loads a llama2.c checkpoint of any supported version from its bytes.
pub fn load(bytes: &[u8]) -> Result<Weights> {
    if is_versioned(bytes) {
        if bytes.len() < 8 {
            return Err(Error::format(
                WHAT,
                "header",
                "at least 8 bytes",
                bytes.len(),
            ));
        }
        match read_i32(bytes, 4) {
            1 => load_v1(bytes),
            2 => load_v2(bytes),
            v => Err(Error::format(WHAT, "header field version", "1 or 2", v)),
        }
    } else {
        load_v0(bytes)
    }
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn read_i32(b: &[u8], at: usize) -> i32 {
    read_u32(b, at) as i32
}

/// Parses the seven header ints that every version shares, starting at byte `at`.
fn parse_header(bytes: &[u8], at: usize, shared: Option<bool>) -> Result<Config> {
    if bytes.len() < at + 28 {
        return Err(Error::format(
            WHAT,
            "header",
            format!("at least {} bytes", at + 28),
            format!("{} bytes", bytes.len()),
        ));
    }
    let names = [
        "dim",
        "hidden_dim",
        "n_layers",
        "n_heads",
        "n_kv_heads",
        "vocab_size",
        "seq_len",
    ];
    let mut v = [0i64; 7];
    for (i, name) in names.iter().enumerate() {
        let x = read_i32(bytes, at + 4 * i) as i64;
        // Only the legacy format may carry a negative vocab size (it means "unshared classifier").
        let legacy_vocab = i == 5 && shared.is_none();
        if x <= 0 && !(legacy_vocab && x < 0) {
            return Err(Error::format(
                WHAT,
                format!("header field {name} (byte {})", at + 4 * i),
                "a positive number",
                x,
            ));
        }
        v[i] = x;
    }
    let config = Config {
        dim: v[0] as usize,
        hidden_dim: v[1] as usize,
        n_layers: v[2] as usize,
        n_heads: v[3] as usize,
        n_kv_heads: v[4] as usize,
        vocab_size: v[5].unsigned_abs() as usize,
        seq_len: v[6] as usize,
        shared_classifier: shared.unwrap_or(v[5] > 0),
        ..Config::stories260k()
    };
    config.validate().map_err(|e| match e {
        Error::Format {
            at,
            expected,
            found,
            ..
        } => Error::format(WHAT, format!("header: {at}"), expected, found),
        other => other,
    })?;
    Ok(config)
}

fn check_size(bytes: &[u8], expected: u64, config: &Config) -> Result<()> {
    if bytes.len() as u64 != expected {
        let why = if (bytes.len() as u64) < expected {
            "truncated"
        } else {
            "trailing bytes"
        };
        return Err(Error::format(
            WHAT,
            format!("file size ({why}) for {config:?}"),
            format!("{expected} bytes"),
            format!("{} bytes", bytes.len()),
        ));
    }
    Ok(())
}

/// A cursor over little-endian f32 data whose length was already checked.
struct Floats<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Floats<'_> {
    fn take(&mut self, n: usize) -> Vec<f32> {
        let end = (self.at + 4 * n).min(self.bytes.len());
        let out = self.bytes[self.at..end]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        self.at = end;
        out
    }

    /// `n_layers` consecutive tensors of `n` values each.
    fn take_layers(&mut self, layers: usize, n: usize) -> Vec<Vec<f32>> {
        (0..layers).map(|_| self.take(n)).collect()
    }
}

/// The per-layer tensors, each a list over layers, in the order of [`LayerWeights`]'s fields.
struct LayerLists {
    attention_norm: Vec<Vec<f32>>,
    wq: Vec<Vec<f32>>,
    wk: Vec<Vec<f32>>,
    wv: Vec<Vec<f32>>,
    wo: Vec<Vec<f32>>,
    ffn_norm: Vec<Vec<f32>>,
    w1: Vec<Vec<f32>>,
    w2: Vec<Vec<f32>>,
    w3: Vec<Vec<f32>>,
}

fn assemble(
    config: Config,
    tok_embeddings: Vec<f32>,
    lists: LayerLists,
    norm: Vec<f32>,
    output: Option<Vec<f32>>,
) -> Result<Weights> {
    let mut ordered = vec![tok_embeddings];
    let LayerLists {
        attention_norm,
        wq,
        wk,
        wv,
        wo,
        ffn_norm,
        w1,
        w2,
        w3,
    } = lists;
    let mut its = [
        attention_norm.into_iter(),
        wq.into_iter(),
        wk.into_iter(),
        wv.into_iter(),
        wo.into_iter(),
        ffn_norm.into_iter(),
        w1.into_iter(),
        w2.into_iter(),
        w3.into_iter(),
    ];
    for _ in 0..config.n_layers {
        for it in its.iter_mut() {
            ordered.push(it.next().unwrap_or_default());
        }
    }
    ordered.push(norm);
    ordered.extend(output);
    Weights::from_ordered(config, ordered).map_err(|e| match e {
        Error::Format {
            at,
            expected,
            found,
            ..
        } => Error::format(WHAT, at, expected, found),
        other => other,
    })
}

fn load_v0(bytes: &[u8]) -> Result<Weights> {
    let c = parse_header(bytes, 0, None)?;
    let (d, h, l, v, kv, hs) = (
        c.dim,
        c.hidden_dim,
        c.n_layers,
        c.vocab_size,
        c.kv_dim(),
        c.head_size(),
    );
    let freq = c.seq_len as u64 * hs as u64;
    check_size(bytes, 28 + 4 * (c.n_params() as u64 + freq), &c)?;
    let mut f = Floats { bytes, at: 28 };
    let tok = f.take(v * d);
    let attention_norm = f.take_layers(l, d);
    let wq = f.take_layers(l, d * d);
    let wk = f.take_layers(l, kv * d);
    let wv = f.take_layers(l, kv * d);
    let wo = f.take_layers(l, d * d);
    let ffn_norm = f.take_layers(l, d);
    let w1 = f.take_layers(l, h * d);
    let w2 = f.take_layers(l, d * h);
    let w3 = f.take_layers(l, h * d);
    let norm = f.take(d);
    // What used to be freq_cis_real and freq_cis_imag (RoPE tables now computed on the fly).
    f.take(c.seq_len * hs);
    let output = (!c.shared_classifier).then(|| f.take(v * d));
    let lists = LayerLists {
        attention_norm,
        wq,
        wk,
        wv,
        wo,
        ffn_norm,
        w1,
        w2,
        w3,
    };
    assemble(c, tok, lists, norm, output)
}

fn versioned_header(bytes: &[u8]) -> Result<Config> {
    if bytes.len() < V1_HEADER_BYTES {
        return Err(Error::format(
            WHAT,
            "versioned header",
            format!("{V1_HEADER_BYTES} bytes"),
            format!("{} bytes", bytes.len()),
        ));
    }
    let shared = match bytes[36] {
        0 => false,
        1 => true,
        b => {
            return Err(Error::format(
                WHAT,
                "header flag shared_classifier (byte 36)",
                "0 or 1",
                b,
            ));
        }
    };
    parse_header(bytes, 8, Some(shared))
}

fn load_v1(bytes: &[u8]) -> Result<Weights> {
    let c = versioned_header(bytes)?;
    let (d, h, l, v, kv) = (c.dim, c.hidden_dim, c.n_layers, c.vocab_size, c.kv_dim());
    check_size(bytes, V1_HEADER_BYTES as u64 + 4 * c.n_params() as u64, &c)?;
    let mut f = Floats {
        bytes,
        at: V1_HEADER_BYTES,
    };
    let attention_norm = f.take_layers(l, d);
    let ffn_norm = f.take_layers(l, d);
    let norm = f.take(d);
    let tok = f.take(v * d);
    let wq = f.take_layers(l, d * d);
    let wk = f.take_layers(l, kv * d);
    let wv = f.take_layers(l, kv * d);
    let wo = f.take_layers(l, d * d);
    let w1 = f.take_layers(l, h * d);
    let w2 = f.take_layers(l, d * h);
    let w3 = f.take_layers(l, h * d);
    let output = (!c.shared_classifier).then(|| f.take(v * d));
    let lists = LayerLists {
        attention_norm,
        wq,
        wk,
        wv,
        wo,
        ffn_norm,
        w1,
        w2,
        w3,
    };
    assemble(c, tok, lists, norm, output)
}

fn load_v2(bytes: &[u8]) -> Result<Weights> {
    let c = versioned_header(bytes)?;
    let (d, h, l, v, kv) = (c.dim, c.hidden_dim, c.n_layers, c.vocab_size, c.kv_dim());
    let gs = read_i32(bytes, 37);
    if gs <= 0 {
        return Err(Error::format(
            WHAT,
            "header field group_size (byte 37)",
            "a positive number",
            gs,
        ));
    }
    let gs = gs as usize;
    let mut sizes = vec![v * d];
    for n in [d * d, kv * d, kv * d, d * d, h * d, d * h, h * d] {
        sizes.extend(std::iter::repeat_n(n, l));
    }
    if !c.shared_classifier {
        sizes.push(v * d);
    }
    if let Some(n) = sizes.iter().find(|n| *n % gs != 0) {
        return Err(Error::format(
            WHAT,
            "header field group_size",
            format!("a divisor of every matrix size (one has {n} values)"),
            gs,
        ));
    }
    // In u64: on wasm32 a matrix's bytes and scales (up to 5 bytes a value) can pass usize.
    let quantized: u64 = sizes.iter().map(|&n| n as u64 + 4 * (n / gs) as u64).sum();
    check_size(
        bytes,
        V1_HEADER_BYTES as u64 + 4 * (2 * l * d + d) as u64 + quantized,
        &c,
    )?;
    let mut f = Floats {
        bytes,
        at: V1_HEADER_BYTES,
    };
    let attention_norm = f.take_layers(l, d);
    let ffn_norm = f.take_layers(l, d);
    let norm = f.take(d);
    let mut at = f.at;
    let mut dequant = |n: usize| {
        let q = &bytes[at..at + n];
        at += n;
        let mut s = Floats { bytes, at };
        let scales = s.take(n / gs);
        at = s.at;
        q.iter()
            .enumerate()
            .map(|(i, &b)| (b as i8) as f32 * scales[i / gs])
            .collect::<Vec<f32>>()
    };
    let tok = dequant(v * d);
    let mut lists = Vec::new();
    for n in [d * d, kv * d, kv * d, d * d, h * d, d * h, h * d] {
        lists.push((0..l).map(|_| dequant(n)).collect::<Vec<_>>());
    }
    let output = (!c.shared_classifier).then(|| dequant(v * d));
    let mut it = lists.into_iter();
    let mut next = || it.next().unwrap_or_default();
    let lists = LayerLists {
        attention_norm,
        wq: next(),
        wk: next(),
        wv: next(),
        wo: next(),
        ffn_norm,
        w1: next(),
        w2: next(),
        w3: next(),
    };
    assemble(c, tok, lists, norm, output)
}

fn push_header_ints(out: &mut Vec<u8>, c: &Config, vocab: i64) {
    for x in [
        c.dim as i64,
        c.hidden_dim as i64,
        c.n_layers as i64,
        c.n_heads as i64,
        c.n_kv_heads as i64,
        vocab,
        c.seq_len as i64,
    ] {
        out.extend_from_slice(&(x as i32).to_le_bytes());
    }
}

fn push_floats(out: &mut Vec<u8>, xs: &[f32]) {
    for x in xs {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn push_layers(out: &mut Vec<u8>, w: &Weights, field: fn(&LayerWeights) -> &[f32]) {
    for l in &w.layers {
        push_floats(out, field(l));
    }
}

/// Writes `weights` as a legacy (v0) llama2.c checkpoint, the format `run.c` reads (which has no
/// place for biases: weights with them are refused).
pub fn export_v0(w: &Weights) -> Result<Vec<u8>> {
    w.without_biases("a llama2.c file")?;
    let c = &w.config;
    let mut out = Vec::with_capacity(28 + 4 * (c.n_params() + c.seq_len * c.head_size()));
    let vocab = if c.shared_classifier {
        c.vocab_size as i64
    } else {
        -(c.vocab_size as i64)
    };
    push_header_ints(&mut out, c, vocab);
    push_floats(&mut out, &w.tok_embeddings);
    push_layers(&mut out, w, |l| &l.attention_norm);
    push_layers(&mut out, w, |l| &l.wq);
    push_layers(&mut out, w, |l| &l.wk);
    push_layers(&mut out, w, |l| &l.wv);
    push_layers(&mut out, w, |l| &l.wo);
    push_layers(&mut out, w, |l| &l.ffn_norm);
    push_layers(&mut out, w, |l| &l.w1);
    push_layers(&mut out, w, |l| &l.w2);
    push_layers(&mut out, w, |l| &l.w3);
    push_floats(&mut out, &w.norm);
    // The RoPE tables older readers expect; run.c skips them, so their content does not matter.
    let hs = c.head_size();
    for part in 0..2 {
        for p in 0..c.seq_len {
            for i in 0..hs / 2 {
                let freq = 1.0 / crate::config::ROPE_THETA.powf((2 * i) as f32 / hs as f32);
                let a = p as f32 * freq;
                out.extend_from_slice(&(if part == 0 { a.cos() } else { a.sin() }).to_le_bytes());
            }
        }
    }
    if let Some(o) = &w.output {
        push_floats(&mut out, o);
    }
    Ok(out)
}

/// Writes `weights` as a version-1 (fp32, 256-byte header) llama2.c export (without biases, as
/// [`export_v0`]).
pub fn export_v1(w: &Weights) -> Result<Vec<u8>> {
    w.without_biases("a llama2.c file")?;
    let c = &w.config;
    let mut out = Vec::with_capacity(V1_HEADER_BYTES + 4 * c.n_params());
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&1i32.to_le_bytes());
    push_header_ints(&mut out, c, c.vocab_size as i64);
    out.push(u8::from(c.shared_classifier));
    out.resize(V1_HEADER_BYTES, 0);
    push_layers(&mut out, w, |l| &l.attention_norm);
    push_layers(&mut out, w, |l| &l.ffn_norm);
    push_floats(&mut out, &w.norm);
    push_floats(&mut out, &w.tok_embeddings);
    push_layers(&mut out, w, |l| &l.wq);
    push_layers(&mut out, w, |l| &l.wk);
    push_layers(&mut out, w, |l| &l.wv);
    push_layers(&mut out, w, |l| &l.wo);
    push_layers(&mut out, w, |l| &l.w1);
    push_layers(&mut out, w, |l| &l.w2);
    push_layers(&mut out, w, |l| &l.w3);
    if let Some(o) = &w.output {
        push_floats(&mut out, o);
    }
    Ok(out)
}
