//! The run.c-compatible default command: same flags, same stdout, tokens/s on stderr.

use crate::args::{atof, atoi};
use model_tiny::generate::Generator;
use model_tiny::{Error, Result, SamplerConfig, Tokenizer, Transformer, load_weights};
use std::ffi::OsString;
use std::io::Write;
use std::time::Instant;

pub const USAGE: &str = "Usage:   model-tiny <checkpoint> [options]
Example: model-tiny model.bin -n 256 -i \"Once upon a time\"
Options:
  -t <float>  temperature in [0,inf], default 1.0
  -p <float>  p value in top-p (nucleus) sampling in [0,1] default 0.9
  -s <int>    random seed, default time(NULL)
  -n <int>    number of steps to run for, default 256. 0 = max_seq_len
  -i <string> input prompt
  -z <string> optional path to custom tokenizer
  -m <string> mode: generate (chat is not supported)
The checkpoint is a llama2.c .bin (v0, v1 or v2), a model-tiny .safetensors, or a Hugging Face
Llama folder (config.json, model.safetensors, and its tokenizer.json unless -z names one).
Other commands: model-tiny train --help, model-tiny bench --help
";

/// A prompt's bytes as given (on Unix, any bytes; elsewhere its text).
fn prompt_bytes(arg: &OsString) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        arg.as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        arg.to_string_lossy().as_bytes().to_vec()
    }
}

fn usage() -> Error {
    Error::Usage(USAGE.to_string())
}

pub fn read(path: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

pub fn main(args: &[OsString]) -> Result<()> {
    let checkpoint = args
        .first()
        .ok_or_else(usage)?
        .to_string_lossy()
        .into_owned();
    let mut tokenizer_path = None;
    let (mut temperature, mut topp, mut steps) = (1.0f32, 0.9f32, 256i64);
    let mut seed: u64 = 0;
    let mut prompt = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let (flag, raw) = (args[i].to_str(), args.get(i + 1).ok_or_else(usage)?);
        let value = raw.to_string_lossy();
        let Some(flag) = flag.filter(|f| f.starts_with('-') && f.len() == 2) else {
            return Err(usage());
        };
        match &flag[1..] {
            "t" => temperature = atof(&value) as f32,
            "p" => topp = atof(&value) as f32,
            // run.c stores atoi's int in an unsigned long long: negative seeds wrap.
            "s" => seed = atoi(&value) as i64 as u64,
            "n" => steps = atoi(&value) as i64,
            "i" => prompt = prompt_bytes(raw),
            "z" => tokenizer_path = Some(value.into_owned()),
            "m" if value == "generate" => {}
            // The system prompt is chat's, which is not supported: run.c ignores it in generate.
            "y" => {}
            _ => return Err(usage()),
        }
        i += 2;
    }
    if seed == 0 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs());
        seed = u64::from(now as u32);
    }
    if temperature < 0.0 {
        temperature = 0.0;
    }
    if !(0.0..=1.0).contains(&topp) {
        topp = 0.9;
    }
    let steps = steps.max(0) as usize;

    let (weights, tokenizer) = load(&checkpoint, tokenizer_path)?;
    let mut model = Transformer::new(&weights);
    drop(weights);
    let sampler = SamplerConfig {
        temperature,
        topp,
        seed,
    };
    let mut generator = Generator::new_bytes(&mut model, &tokenizer, &prompt, steps, sampler);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut start: Option<Instant> = None;
    while let Some(tok) = generator.next_token()? {
        if let Some(piece) = tokenizer.decode_printable(tok.prev, tok.id) {
            out.write_all(piece).map_err(|e| Error::io("stdout", e))?;
            out.flush().map_err(|e| Error::io("stdout", e))?;
        }
        start.get_or_insert_with(Instant::now);
    }
    writeln!(out).map_err(|e| Error::io("stdout", e))?;
    let pos = generator.pos();
    if let (true, Some(start)) = (pos > 1, start) {
        let secs = start.elapsed().as_secs_f64();
        eprintln!("achieved tok/s: {:.6}", (pos - 1) as f64 / secs);
    }
    Ok(())
}

/// The model at `checkpoint` (a file, or a Hugging Face folder) and its tokenizer: `-z`'s, else
/// the folder's `tokenizer.json`, else run.c's default `tokenizer.bin`.
pub fn load(
    checkpoint: &str,
    tokenizer: Option<String>,
) -> Result<(model_tiny::Weights, Tokenizer)> {
    let folder = std::path::Path::new(checkpoint);
    if !folder.is_dir() {
        let weights = load_weights(&read(checkpoint)?).map_err(|e| in_file(checkpoint, e))?;
        let path = tokenizer.unwrap_or_else(|| "tokenizer.bin".into());
        let tok = Tokenizer::from_bytes(&read(&path)?, weights.config.vocab_size)
            .map_err(|e| in_file(&path, e))?;
        return Ok((weights, tok));
    }
    let file = |name: &str| folder.join(name).display().to_string();
    let (weights, hf) = model_tiny::hf::load(
        &read(&file("config.json"))?,
        &read(&file("model.safetensors"))?,
    )
    .map_err(|e| in_file(checkpoint, e))?;
    let vocab = weights.config.vocab_size;
    let tok = match tokenizer {
        Some(path) if !path.ends_with(".json") => {
            Tokenizer::from_bytes(&read(&path)?, vocab).map_err(|e| in_file(&path, e))?
        }
        path => {
            let path = path.unwrap_or_else(|| file("tokenizer.json"));
            Tokenizer::from_hf_json(&read(&path)?, vocab, &hf.eos).map_err(|e| in_file(&path, e))?
        }
    };
    Ok((weights, tok))
}

fn in_file(path: &str, e: Error) -> Error {
    match e {
        Error::Format {
            what,
            at,
            expected,
            found,
        } => Error::Format {
            what: format!("{what} {path}"),
            at,
            expected,
            found,
        },
        e => e,
    }
}
