//! `onramp datasets upload | list | rm`: an account's datasets on the edge. An upload checks the
//! file here first (what the edge records are the checker's counts), declares it with its
//! SHA-256 and sends the parts the edge does not have yet, one at a time and each sent again
//! when the connection drops, so that an upload cut off resumes where it stopped and a file
//! already stored is not sent again. `onramp datasets` starts here; `check` is `datasets_cmd.rs`'s.

use crate::args::DatasetsAction;
use crate::datasets_cmd::{BAD, counter_for, human, report_of};
use crate::jobs_cmd::{Args, done, edge_for, print_value};
use crate::remote::{Edge, Failure};
use crate::say::{lang, t};
use api::artifacts::part_len;
use api::datasets::declared_name;
use api::{Dataset, DatasetDeleted, DatasetList, NewDataset, human_size as size};
use datacheck::{Counter, Report};
use sha2::{Digest, Sha256};
use std::io::{IsTerminal, Read, Seek, SeekFrom};
use std::path::Path;
use std::process::ExitCode;

pub fn run(a: DatasetsAction) -> Result<ExitCode, String> {
    match a {
        DatasetsAction::Check {
            path,
            model,
            tokenizer,
            seq_len,
            json,
        } => crate::datasets_cmd::check(&path, model.as_deref(), tokenizer, seq_len, json.json),
        DatasetsAction::Upload {
            path,
            model,
            tokenizer,
            seq_len,
            skip_bad_lines,
            remote,
            json,
        } => {
            let counter = match counter_for(model.as_deref(), tokenizer)? {
                Ok(c) => c,
                Err(code) => return Ok(code),
            };
            let how = How {
                seq_len,
                skip_bad_lines,
                json: json.json,
            };
            upload(remote.edge, &path, counter, how)
        }
        DatasetsAction::List { remote, json } => list(remote.edge, json.json),
        DatasetsAction::Rm { id, remote, json } => rm(remote.edge, &id, json.json),
    }
}

/// How an upload is checked and shown.
pub struct How {
    pub seq_len: u32,
    pub skip_bad_lines: bool,
    pub json: bool,
}

/// How many times one part is sent before the upload gives up (a later run resumes it).
const TRIES: u32 = 4;

fn edge(flag: Option<String>) -> Result<Edge, String> {
    edge_for(&Args {
        edge: flag,
        ..Default::default()
    })
}

pub fn upload(
    flag: Option<String>,
    path: &Path,
    counter: Box<dyn Counter>,
    how: How,
) -> Result<ExitCode, String> {
    let shown = path.display().to_string();
    if shown == "-" {
        return Err(t(
            "an upload needs a file, not stdin".into(),
            "上传需要一个文件，不能用标准输入".into(),
        ));
    }
    let report = report_of(&shown, counter, how.seq_len)?;
    if !report.usable() || (report.bad_lines > 0 && !how.skip_bad_lines) {
        eprint!("{}", human(&report, lang()));
        eprintln!(
            "onramp: {}",
            if report.usable() {
                t(
                    format!(
                        "{} line(s) are bad: fix them, or pass --skip-bad-lines to upload anyway (the trainer skips them); nothing was uploaded",
                        report.bad_lines
                    ),
                    format!(
                        "有 {} 行有问题：请修正，或加 --skip-bad-lines 照样上传（训练器会跳过它们）；未上传任何内容",
                        report.bad_lines
                    ),
                )
            } else {
                t(
                    "nothing in this file can be trained on; nothing was uploaded".into(),
                    "文件中没有可训练的样本；未上传任何内容".into(),
                )
            }
        );
        return Ok(ExitCode::from(BAD));
    }
    let edge = edge(flag)?;
    done(send(&edge, path, &report).map(|d| show_uploaded(&d, how.json)))
}

/// The file's size and SHA-256, read as a stream.
/// The file's bytes from its start to where the upload has reached, hashed as the parts are
/// read: the last part goes only when the whole still hashes to the declared SHA-256, so that a
/// file changed while it was uploaded is never stored under the other's id.
#[derive(Default)]
struct Hashed {
    h: Sha256,
    upto: u64,
}

impl Hashed {
    /// `buf`, read at `at`; the bytes before it that this run did not read (parts stored by an
    /// earlier one) are read from `file` first. An upload started over starts the hash over.
    fn take(&mut self, file: &mut std::fs::File, at: u64, buf: &[u8]) -> std::io::Result<()> {
        if at < self.upto {
            *self = Hashed::default();
        }
        if self.upto < at {
            file.seek(SeekFrom::Start(self.upto))?;
            let mut gap = (&mut *file).take(at - self.upto);
            let mut chunk = vec![0u8; 1 << 20];
            loop {
                let n = gap.read(&mut chunk)?;
                if n == 0 {
                    break;
                }
                self.h.update(&chunk[..n]);
            }
        }
        self.h.update(buf);
        self.upto = at + buf.len() as u64;
        Ok(())
    }

    fn is(&self, sha256: &str) -> bool {
        format!("{:x}", self.h.clone().finalize()) == sha256
    }
}

fn digest(path: &Path) -> std::io::Result<(u64, String)> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        h.update(&buf[..n]);
    }
    Ok((size, format!("{:x}", h.finalize())))
}

fn io_failure(path: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| {
        let shown = path.display().to_string();
        Failure(crate::input::cannot_read(&shown, &shown, &e))
    }
}

fn send(edge: &Edge, path: &Path, report: &Report) -> Result<Dataset, Failure> {
    let (bytes, sha256) = digest(path).map_err(io_failure(path))?;
    let declared_sha256 = sha256.clone();
    let name = path
        .file_name()
        .map_or_else(|| "dataset".into(), |n| declared_name(&n.to_string_lossy()));
    let declaration = NewDataset {
        name,
        size: bytes,
        sha256,
        format: report.format.map_or("text", |f| f.name()).to_string(),
        examples: report.examples,
        tokens: report.tokens.max(1),
        exact: report.exact,
        part_size: None,
    };
    let body = serde_json::to_value(&declaration).map_err(|e| Failure(e.to_string()))?;
    let mut d = declare(edge, &body)?;
    let mut file = std::fs::File::open(path).map_err(io_failure(path))?;
    let terminal = std::io::stderr().is_terminal();
    let already = if d.complete { d.parts } else { d.received };
    let mut sent = 0;
    let mut declared_again = false;
    let mut hashed = Hashed::default();
    while !d.complete {
        let part = d.received + 1;
        let len = part_len(d.size, d.part_size, part);
        let mut buf = vec![0u8; len as usize];
        let at = (part - 1) * d.part_size;
        file.seek(SeekFrom::Start(at))
            .and_then(|_| file.read_exact(&mut buf))
            .and_then(|_| hashed.take(&mut file, at, &buf))
            .map_err(io_failure(path))?;
        if part == d.parts && !hashed.is(&declared_sha256) {
            // The last part would store under the declared id what is not that file.
            return Err(Failure(t(
                format!(
                    "{} changed while it was uploaded (its bytes no longer hash to what was declared); nothing was stored: upload it again once it is written",
                    path.display()
                ),
                format!(
                    "{} 在上传过程中被改动（内容与声明的哈希不符）；未存储任何内容：写完后请重新上传",
                    path.display()
                ),
            )));
        }
        match put_part(edge, &d.id, part, buf) {
            Ok(next) => d = next,
            // Storage ended the unfinished upload (it was left too long): what arrived is gone,
            // and the file is declared again and sent whole, once.
            Err(Refused::Expired(_)) if !declared_again => {
                declared_again = true;
                d = declare(edge, &body)?;
                continue;
            }
            Err(Refused::Expired(f) | Refused::Other(f)) => return Err(f),
        }
        sent += 1;
        if terminal {
            let done = (d.received * d.part_size).min(d.size);
            eprint!("\r{} / {}   ", size(done), size(d.size));
        }
    }
    if terminal {
        eprintln!();
    }
    // What went up now, and what an earlier, cut-off upload (or the same file before) had
    // already stored: only the parts the edge lacked are sent.
    eprintln!(
        "{}",
        t(
            format!(
                "sent {sent} of {} parts ({already} already stored)",
                d.parts
            ),
            format!("本次发送 {sent} / {} 个分片（已存 {already} 个）", d.parts),
        )
    );
    Ok(d)
}

/// The declaration, sent again when the connection drops or the edge answers 5xx or 429 (a
/// runtime that restarted under it answers 503 without a body): declaring the same file again is
/// answered with the same upload, so a retry never makes a second one.
fn declare(edge: &Edge, body: &serde_json::Value) -> Result<Dataset, Failure> {
    let mut last = Failure(String::new());
    for attempt in 0..TRIES {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(250 << attempt));
        }
        match edge.post_json("/api/datasets", body) {
            Ok(a) if a.ok() => return Edge::typed(&a.json),
            Ok(a) if a.status >= 500 || a.status == 429 => last = crate::remote::describe_error(&a),
            Ok(a) => return Err(crate::remote::describe_error(&a)),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Why a part was not taken: storage ended the upload (`upload_expired`), or anything else.
enum Refused {
    Expired(Failure),
    Other(Failure),
}

/// One part, sent again when the connection drops or the edge answers 5xx or 429.
fn put_part(edge: &Edge, id: &str, part: u64, buf: Vec<u8>) -> Result<Dataset, Refused> {
    let path = format!("/api/datasets/{id}?part={part}");
    let mut last = Failure(String::new());
    for attempt in 0..TRIES {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(250 << attempt));
        }
        let headers = [("content-type", "application/octet-stream")];
        match edge.call("PUT", &path, Some(buf.clone()), &headers) {
            Ok(a) if a.ok() => return Edge::typed(&a.json).map_err(Refused::Other),
            Ok(a) if a.status >= 500 || a.status == 429 => last = crate::remote::describe_error(&a),
            Ok(a) if a.json["error"]["code"] == "upload_expired" => {
                return Err(Refused::Expired(crate::remote::describe_error(&a)));
            }
            Ok(a) => return Err(Refused::Other(crate::remote::describe_error(&a))),
            Err(e) => last = e,
        }
    }
    Err(Refused::Other(Failure(t(
        format!("{}; run the same upload again to resume it", last.0),
        format!("{}；再运行一次同样的上传即可续传", last.0),
    ))))
}

fn show_uploaded(d: &Dataset, json: bool) {
    if json {
        print_value(&serde_json::to_value(d).unwrap_or_default());
        return;
    }
    let approx = if d.exact { "" } else { "≈ " };
    println!("{}", d.id);
    // The [data] keys a spec training by epochs takes (the edge fills those a spec leaves out).
    let mut keys = format!("[data]\ndataset = \"{}\"\n", d.id);
    if d.format != "text" {
        keys.push_str(&format!("examples = {}\n", d.examples));
    }
    keys.push_str(&format!("tokens = {}", d.tokens.max(1)));
    println!(
        "{}",
        t(
            format!(
                "{}: {}, {} examples, {approx}{} tokens per epoch, {}\nname it in a spec:\n{keys}",
                d.name,
                d.format,
                d.examples,
                d.tokens,
                size(d.size),
            ),
            format!(
                "{}：{}，每轮 {} 个样本、{approx}{} 个 token，{}\n在规格中引用：\n{keys}",
                d.name,
                d.format,
                d.examples,
                d.tokens,
                size(d.size),
            ),
        )
    );
}

pub fn list(flag: Option<String>, json: bool) -> Result<ExitCode, String> {
    let edge = edge(flag)?;
    done((|| {
        let v = edge.expect_ok(edge.get("/api/datasets"))?;
        if json {
            print_value(&v);
            return Ok(());
        }
        let l: DatasetList = Edge::typed(&v)?;
        for d in &l.datasets {
            let state = if d.complete {
                t("stored".into(), "已存储".into())
            } else {
                t(
                    format!("uploading, part {} of {}", d.received, d.parts),
                    format!("上传中，第 {} / {} 块", d.received, d.parts),
                )
            };
            println!(
                "{}  {}  {}  {}  {}  {}  {state}",
                d.id,
                d.name,
                d.format,
                d.examples,
                d.tokens,
                size(d.size)
            );
        }
        println!(
            "{}",
            t(
                format!("{} of {} used", size(l.used_bytes), size(l.quota_bytes)),
                format!("已用 {} / {}", size(l.used_bytes), size(l.quota_bytes)),
            )
        );
        Ok(())
    })())
}

pub fn rm(flag: Option<String>, id: &str, json: bool) -> Result<ExitCode, String> {
    if !api::datasets::is_dataset_id(id) {
        return Err(t(
            format!(
                "{id:?} is no dataset id: ids are ds_ and 32 hex digits (onramp datasets list)"
            ),
            format!(
                "{id:?} 不是数据集 id：id 是 ds_ 加 32 位十六进制数（见 onramp datasets list）"
            ),
        ));
    }
    let edge = edge(flag)?;
    done((|| {
        let v = edge.expect_ok(edge.call("DELETE", &format!("/api/datasets/{id}"), None, &[]))?;
        if json {
            print_value(&v);
            return Ok(());
        }
        let d: DatasetDeleted = Edge::typed(&v)?;
        println!(
            "{}",
            t(
                format!("deleted {}: {} freed", d.id, size(d.freed_bytes)),
                format!("已删除 {}：释放 {}", d.id, size(d.freed_bytes)),
            )
        );
        Ok(())
    })())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_hash_of_what_was_sent_covers_parts_stored_before_and_a_file_changed_since() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let declared = format!("{:x}", Sha256::digest(&data));
        let path = std::env::temp_dir().join(format!("onramp-hashed-{}", std::process::id()));
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(&data))
            .unwrap();
        let mut file = std::fs::File::open(&path).unwrap();
        // Parts of 4096: the first was stored by an earlier run; this one reads parts 2 and 3.
        let mut h = Hashed::default();
        h.take(&mut file, 4096, &data[4096..8192]).unwrap();
        assert!(!h.is(&declared));
        h.take(&mut file, 8192, &data[8192..]).unwrap();
        assert!(h.is(&declared));
        // Started over from part 1 (the upload was declared again): the hash starts over too.
        h.take(&mut file, 0, &data[..4096]).unwrap();
        h.take(&mut file, 4096, &data[4096..8192]).unwrap();
        h.take(&mut file, 8192, &data[8192..]).unwrap();
        assert!(h.is(&declared));
        // A last part that is not what was declared.
        let mut changed = Hashed::default();
        changed.take(&mut file, 8192, b"not the same tail").unwrap();
        assert!(!changed.is(&declared));
        std::fs::remove_file(&path).unwrap();
    }
}
