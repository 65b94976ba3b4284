//! `onramp datasets check FILE`: datacheck over a file here, offline, with the model's own
//! tokenizer when it is on this machine (`--tokenizer DIR`, or `ONRAMP_MODELS/<model>/`), else
//! an estimate that says it is one.

use crate::say::{Lang, lang, t};
use datacheck::hf::HfCounter;
use datacheck::{Counter, Estimate, Report};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code when the file has bad lines or nothing usable.
pub(crate) const BAD: u8 = 1;
/// Exit code when the file (or the tokenizer named) cannot be read.
const UNREADABLE: u8 = 3;

/// The tokenizer folder to count with: the one named, else the model's under ONRAMP_MODELS.
fn tokenizer_dir(model: Option<&str>, named: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(dir) = named {
        return Ok(dir);
    }
    let Some(id) = model else {
        return Err(t(
            "no --model or --tokenizer was given".into(),
            "未给出 --model 或 --tokenizer".into(),
        ));
    };
    match std::env::var_os("ONRAMP_MODELS") {
        Some(root) => {
            let dir = PathBuf::from(root).join(id);
            if dir.join("tokenizer.json").is_file() {
                Ok(dir)
            } else {
                Err(t(
                    format!("{} has no tokenizer.json", dir.display()),
                    format!("{} 中没有 tokenizer.json", dir.display()),
                ))
            }
        }
        None => Err(t(
            format!("ONRAMP_MODELS is not set, so the tokenizer of `{id}` is not on this machine"),
            format!("未设置 ONRAMP_MODELS，本机没有 `{id}` 的分词器"),
        )),
    }
}

/// The counter a check uses: the model's (or the named) tokenizer, else an estimate that says
/// why; `Ok(Err(code))` when a tokenizer was named and cannot be read (said on stderr).
pub(crate) fn counter_for(
    model: Option<&str>,
    tokenizer: Option<PathBuf>,
) -> Result<Result<Box<dyn Counter>, ExitCode>, String> {
    if let Some(id) = model
        && jobspec::catalog::model(id).is_none()
    {
        return Err(t(
            format!("`{id}` is not a catalogue model (onramp plan lists them)"),
            format!("`{id}` 不是目录中的模型"),
        ));
    }
    let named = tokenizer.is_some();
    if let Some(dir) = &tokenizer {
        let file = dir.join("tokenizer.json");
        if let Err(e) = std::fs::metadata(&file) {
            let shown = file.display().to_string();
            eprintln!("onramp: {}", crate::input::cannot_read(&shown, &shown, &e));
            return Ok(Err(ExitCode::from(UNREADABLE)));
        }
    }
    Ok(Ok(match tokenizer_dir(model, tokenizer) {
        Ok(dir) => match HfCounter::from_folder(&dir, model) {
            Ok(c) => Box::new(c),
            Err(e) if named => {
                eprintln!("onramp: {}", t(e.clone(), format!("分词器无法使用（{e}）")));
                return Ok(Err(ExitCode::from(UNREADABLE)));
            }
            Err(e) => Box::new(Estimate { why: e }),
        },
        Err(why) => Box::new(Estimate { why }),
    }))
}

/// The checker's report of a file (`-`: stdin), with progress on stderr for a big file.
pub(crate) fn report_of(
    path: &str,
    counter: Box<dyn Counter>,
    seq_len: u32,
) -> Result<Report, String> {
    let name = (path != "-").then_some(path);
    if path == "-" {
        datacheck::check_reader(None, std::io::stdin().lock(), counter, seq_len, |_| {})
    } else {
        let file =
            std::fs::File::open(path).map_err(|e| crate::input::cannot_read(path, path, &e))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut shown = 0u64;
        datacheck::check_reader(name, file, counter, seq_len, |read| {
            // Progress on stderr for big files, every 64 MiB.
            if size > 256 << 20 && read - shown >= 64 << 20 {
                shown = read;
                eprint!("\r{} / {} MiB", read >> 20, size >> 20);
            }
        })
    }
    .map_err(|e| crate::input::cannot_read(path, path, &e))
}

pub(crate) fn check(
    path: &str,
    model: Option<&str>,
    tokenizer: Option<PathBuf>,
    seq_len: u32,
    json: bool,
) -> Result<ExitCode, String> {
    let counter = match counter_for(model, tokenizer)? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let report = report_of(path, counter, seq_len)?;
    if json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", human(&report, lang()));
        let _ = std::io::stdout().flush();
    }
    Ok(if report.bad_lines > 0 || !report.usable() {
        ExitCode::from(BAD)
    } else {
        ExitCode::SUCCESS
    })
}

/// How many bad lines the terminal shows (the JSON has the first `MAX_LISTED`).
const SHOWN: usize = 20;

/// The report for a terminal, in the run's language.
pub fn human(r: &Report, lang: Lang) -> String {
    let zh = lang == Lang::Zh;
    let mut out = String::new();
    let format = r.format.map_or("-", |f| f.name());
    let approx = if r.exact { "" } else { "≈ " };
    if zh {
        out += &format!("格式：{format}\n记录：{}\n", r.records);
        out += &format!(
            "每轮样本：{}（{}）\n每轮 token：{approx}{}（截断前 {approx}{}）\n",
            r.examples,
            if r.format.is_some_and(|f| f.packed()) {
                "按 seq_len 打包"
            } else {
                "每条一个序列，填充"
            },
            r.tokens,
            r.tokens_uncut
        );
        out += &format!("超过 seq_len={} 被截断的样本：{}\n", r.seq_len, r.truncated);
        out += &format!(
            "每条记录的 token：最少 {}，中位 {}，p90 {}，p99 {}，最多 {}\n",
            r.lengths.min, r.lengths.p50, r.lengths.p90, r.lengths.p99, r.lengths.max
        );
        out += &if r.exact {
            format!("计数所用的分词器：{}\n", r.counted_with)
        } else {
            format!(
                "计数：估算（每 {} 字节约 1 个 token），因为没有模型的分词器：{}\n",
                datacheck::count::BYTES_PER_TOKEN,
                r.counted_with
            )
        };
    } else {
        out += &format!("format: {format}\nrecords: {}\n", r.records);
        out += &format!(
            "examples per epoch: {} ({})\ntokens per epoch: {approx}{} ({approx}{} before cutting)\n",
            r.examples,
            if r.format.is_some_and(|f| f.packed()) {
                "packed into seq_len"
            } else {
                "one per sequence, padded"
            },
            r.tokens,
            r.tokens_uncut
        );
        out += &format!("examples cut at seq_len={}: {}\n", r.seq_len, r.truncated);
        out += &format!(
            "tokens per record: min {}, median {}, p90 {}, p99 {}, max {}\n",
            r.lengths.min, r.lengths.p50, r.lengths.p90, r.lengths.p99, r.lengths.max
        );
        out += &if r.exact {
            format!("counted with the tokenizer at {}\n", r.counted_with)
        } else {
            format!(
                "counts are an ESTIMATE of one token per {} bytes, since the model's tokenizer is not here: {}\n",
                datacheck::count::BYTES_PER_TOKEN,
                r.counted_with
            )
        };
    }
    out += &bad_lines(r, zh);
    out
}

/// The bad lines, the first `SHOWN` of them, and whether anything is usable.
fn bad_lines(r: &Report, zh: bool) -> String {
    let mut out = String::new();
    for b in r.bad.iter().take(SHOWN) {
        let text = if zh { &b.zh } else { &b.en };
        out += &if zh {
            format!("第 {} 行：{text}\n", b.line)
        } else {
            format!("line {}: {text}\n", b.line)
        };
    }
    let more = r.bad_lines.saturating_sub(SHOWN as u64);
    if more > 0 {
        out += &if zh {
            format!("……另有 {more} 行有问题\n")
        } else {
            format!("… and {more} more bad lines\n")
        };
    }
    if !r.usable() {
        out += if zh {
            "文件中没有可用于训练的样本\n"
        } else {
            "nothing in this file can be trained on\n"
        };
    }
    out
}
