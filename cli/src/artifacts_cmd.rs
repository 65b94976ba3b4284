//! `onramp artifacts`: a job's artifacts (name, size, sha256), downloading them (streamed to
//! disk, resumed from where a download cut off with `Range`, a progress bar on a terminal, each
//! file checked against its sha256 before it takes its name) and deleting one.

use crate::args::{ArtifactsAction, ArtifactsArgs};
use crate::jobs_cmd::{Args, done, edge_for, print_value};
use crate::remote::{Edge, Failure};
use crate::say::{pad, t};
use api::artifacts::{artifact_path, name_problem};
use api::{Artifact, ArtifactDeleted, ArtifactList, human_size as size};
use sha2::{Digest, Sha256};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(a: ArtifactsArgs) -> Result<ExitCode, String> {
    match a.action {
        None => {
            let args = Args {
                edge: a.remote.edge,
                json: a.json.json,
                ..Default::default()
            };
            let edge = edge_for(&args)?;
            let job = a.job.unwrap_or_default();
            done(list(&edge, &job).map(|(v, l)| show(&v, &l, args.json)))
        }
        Some(ArtifactsAction::Download {
            job,
            name,
            output,
            force,
            remote,
        }) => {
            let edge = edge_for(&Args {
                edge: remote.edge,
                ..Default::default()
            })?;
            let dir = output.unwrap_or_else(|| PathBuf::from("."));
            done(download(&edge, &job.id, name.as_deref(), &dir, force))
        }
        Some(ArtifactsAction::Delete {
            job,
            name,
            remote,
            json,
        }) => {
            let edge = edge_for(&Args {
                edge: remote.edge,
                ..Default::default()
            })?;
            done(delete(&edge, &job.id, &name, json.json))
        }
    }
}

fn list(edge: &Edge, job: &str) -> Result<(serde_json::Value, ArtifactList), Failure> {
    let v = edge.expect_ok(edge.get(&format!("/api/jobs/{job}/artifacts")))?;
    let l = Edge::typed::<ArtifactList>(&v)?;
    Ok((v, l))
}

fn show(v: &serde_json::Value, l: &ArtifactList, json: bool) {
    if json {
        print_value(v);
        return;
    }
    if l.artifacts.is_empty() && l.uploads.is_empty() {
        println!(
            "{}",
            t(
                format!("job {} has no artifacts (yet)", l.job_id),
                format!("作业 {} （还）没有产物", l.job_id),
            )
        );
    }
    for a in &l.artifacts {
        println!(
            "{}  {}  {}",
            pad(&size(a.size), 10),
            &a.sha256[..12.min(a.sha256.len())],
            a.name
        );
    }
    for u in &l.uploads {
        println!(
            "{}  {}",
            pad(&size(u.size), 10),
            t(
                format!(
                    "{} (uploading: {} of {} parts)",
                    u.name, u.received, u.parts
                ),
                format!("{}（上传中：{} / {} 个分片）", u.name, u.received, u.parts),
            )
        );
    }
    println!(
        "{}",
        t(
            format!(
                "account: {} of {} used; artifacts are kept {} days",
                size(l.used_bytes),
                size(l.quota_bytes),
                l.retention_days
            ),
            format!(
                "账户：已用 {} / {}；产物保留 {} 天",
                size(l.used_bytes),
                size(l.quota_bytes),
                l.retention_days
            ),
        )
    );
}

fn download(
    edge: &Edge,
    job: &str,
    name: Option<&str>,
    dir: &Path,
    force: bool,
) -> Result<(), Failure> {
    let (_, l) = list(edge, job)?;
    let chosen: Vec<&Artifact> = match name {
        None => l.artifacts.iter().collect(),
        Some(n) => {
            let a = l.artifacts.iter().find(|a| a.name == n).ok_or_else(|| {
                Failure(t(
                    format!("job {job} has no artifact {n:?} (onramp artifacts {job} lists them)"),
                    format!("作业 {job} 没有产物 {n:?}（onramp artifacts {job} 会列出它们）"),
                ))
            })?;
            vec![a]
        }
    };
    if chosen.is_empty() {
        return Err(Failure(t(
            format!("job {job} has no artifacts to download"),
            format!("作业 {job} 没有可下载的产物"),
        )));
    }
    for a in chosen {
        let path = fetch(edge, job, a, dir, force)?;
        println!("{}  {}", a.sha256, path.display());
    }
    Ok(())
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| {
        Failure(t(
            format!("cannot write {}: {e}", path.display()),
            format!("无法写入 {}：{e}", path.display()),
        ))
    }
}

/// Where a `Content-Range: bytes START-END/SIZE` starts.
fn starts_at(content_range: Option<&str>) -> Option<u64> {
    let (start, _) = content_range?
        .trim()
        .strip_prefix("bytes ")?
        .split_once('-')?;
    start.trim().parse().ok()
}

/// Downloads one artifact into `dir` (its folders as folders): into a hidden part file named
/// after it and its sha256 (`.NAME.<sha256 start>.part`, so that another job's file of the same
/// name never continues it) first, from where an earlier try stopped, then checked and renamed.
/// A file already there with the same sha256 is kept as it is; one that differs is replaced only
/// with `force`; a link at the name, or at a folder on the way, is never written through.
fn fetch(
    edge: &Edge,
    job: &str,
    a: &Artifact,
    dir: &Path,
    force: bool,
) -> Result<PathBuf, Failure> {
    // The edge's names never leave their folder, and this checks again before writing.
    if let Some(why) = name_problem(&a.name) {
        return Err(Failure(format!(
            "the edge listed an artifact name that is not safe to write ({why})"
        )));
    }
    let path = dir.join(&a.name);
    let part = part_path(&path, &a.sha256);
    no_links(dir, &a.name, &part)?;
    if path.is_file() {
        if sha256_of(&path).map_err(io(&path))? == a.sha256 {
            return Ok(path);
        }
        if !force {
            return Err(Failure(t(
                format!(
                    "{} is already there and differs from job {job}'s {}; it was kept. Download \
                     into another folder (-o DIR), or pass --force to replace it",
                    path.display(),
                    a.name
                ),
                format!(
                    "{} 已存在，且与作业 {job} 的 {} 不同；已保留原文件。请下载到其他文件夹（-o DIR），\
                     或加 --force 替换它",
                    path.display(),
                    a.name
                ),
            )));
        }
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    let mut have = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
    if have > a.size || (a.size == 0 && !part.exists()) {
        // Not a start of this file (or an empty file, which no request fetches): start over.
        std::fs::File::create(&part).map_err(io(&part))?;
        have = 0;
    }
    if have < a.size {
        rest(edge, job, a, &part, have)?;
    }
    let sha = sha256_of(&part).map_err(io(&part))?;
    if sha != a.sha256 {
        let _ = std::fs::remove_file(&part);
        return Err(Failure(t(
            format!(
                "{} does not match its sha256 ({sha}, expected {}); it was removed, download it again",
                a.name, a.sha256
            ),
            format!(
                "{} 与其 sha256 不符（{sha}，应为 {}）；已删除，请重新下载",
                a.name, a.sha256
            ),
        )));
    }
    std::fs::rename(&part, &path).map_err(io(&path))?;
    Ok(path)
}

/// Fetches what `part` (which has the first `have` bytes) lacks of `a`: the rest, or the whole
/// file again when the edge sends it whole.
fn rest(edge: &Edge, job: &str, a: &Artifact, part: &Path, mut have: u64) -> Result<(), Failure> {
    let range = format!("bytes={have}-");
    // The range only of the version listed (the edge's ETag is the sha256): if the file
    // changed since, the edge sends it whole.
    let version = format!("\"{}\"", a.sha256);
    let headers: Vec<(&str, &str)> = if have > 0 {
        vec![("range", range.as_str()), ("if-range", version.as_str())]
    } else {
        vec![]
    };
    let got = edge.stream(&artifact_path(job, &a.name), &headers)?;
    let mut body = got.body;
    // 200: the whole file (the edge did not take the range, or the file changed): start
    // over. A 206 must start where the .part ends.
    let append = got.status == 206;
    if append && starts_at(got.content_range.as_deref()) != Some(have) {
        let _ = std::fs::remove_file(part);
        return Err(Failure(t(
            format!(
                "the edge sent a part of {} that does not start at byte {have}; the partial \
                 file was removed, run the same command again",
                a.name
            ),
            format!(
                "服务端发来的 {} 片段不是从第 {have} 字节开始；已删除未完成的文件，请再次运行同一命令",
                a.name
            ),
        )));
    }
    if !append {
        have = 0;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(part)
        .map_err(io(part))?;
    copy_with_progress(&mut body, &mut file, have, a.size, &a.name).map_err(|e| {
        Failure(t(
            format!(
                "the download of {} stopped ({e}); run the same command again to resume",
                a.name
            ),
            format!("{} 的下载中断（{e}）；再次运行同一命令即可续传", a.name),
        ))
    })?;
    Ok(())
}

/// Copies the body to the file, drawing a progress bar on stderr when it is a terminal.
fn copy_with_progress(
    body: &mut dyn Read,
    file: &mut std::fs::File,
    mut done: u64,
    total: u64,
    name: &str,
) -> std::io::Result<()> {
    let bar = std::io::stderr().is_terminal();
    let mut buf = vec![0u8; 1 << 16];
    let mut shown = u64::MAX;
    loop {
        let n = body.read(&mut buf)?;
        if n == 0 {
            break;
        }
        file.write_all(&buf[..n])?;
        done += n as u64;
        let percent = (done * 100).checked_div(total).unwrap_or(100);
        if bar && percent != shown {
            shown = percent;
            let filled = (percent as usize * 30 / 100).min(30);
            eprint!(
                "\r[{}{}] {percent:>3}% {} / {}  {name}",
                "#".repeat(filled),
                " ".repeat(30 - filled),
                size(done),
                size(total)
            );
        }
    }
    if bar {
        eprintln!();
    }
    file.flush()?;
    if done < total {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("{done} of {total} bytes"),
        ));
    }
    Ok(())
}

/// The hidden file an artifact is downloaded into before it is checked: `.NAME.<16 hex>.part`.
fn part_path(path: &Path, sha256: &str) -> PathBuf {
    let file = path
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or("artifact");
    let sha: String = sha256.chars().take(16).collect();
    path.with_file_name(format!(".{file}.{sha}.part"))
}

/// Refuses to write through a link: at any folder of `name` below `dir`, at its own path, or at
/// its part file (a link planted there would have the download's bytes written to its target).
fn no_links(dir: &Path, name: &str, part: &Path) -> Result<(), Failure> {
    let mut at = dir.to_path_buf();
    let mut paths = Vec::new();
    for c in Path::new(name).components() {
        at.push(c);
        paths.push(at.clone());
    }
    paths.push(part.to_path_buf());
    for p in paths {
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Failure(t(
                format!(
                    "{} is a link: the download does not write through it; remove it, or \
                     download into another folder (-o DIR)",
                    p.display()
                ),
                format!(
                    "{} 是一个链接：下载不会写入链接指向的文件；请删除它，或下载到其他文件夹（-o DIR）",
                    p.display()
                ),
            )));
        }
    }
    Ok(())
}

fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn delete(edge: &Edge, job: &str, name: &str, json: bool) -> Result<(), Failure> {
    // A name no artifact can have (`spec.toml?x` would reach the edge as `spec.toml`).
    if let Some(why) = name_problem(name) {
        return Err(Failure(t(
            format!("{name:?} is no artifact's name ({why}); onramp artifacts {job} lists them"),
            format!("{name:?} 不是产物的名称（{why}）；onramp artifacts {job} 会列出它们"),
        )));
    }
    let v = edge.expect_ok(edge.call("DELETE", &artifact_path(job, name), None, &[]))?;
    if json {
        print_value(&v);
        return Ok(());
    }
    let d: ArtifactDeleted = Edge::typed(&v)?;
    println!(
        "{}",
        t(
            format!("deleted {}: {} freed", d.name, size(d.freed_bytes)),
            format!("已删除 {}：释放 {}", d.name, size(d.freed_bytes)),
        )
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{no_links, part_path, starts_at};
    use std::path::Path;

    #[test]
    fn the_part_file_is_hidden_and_named_after_the_files_sha256() {
        let p = part_path(Path::new("out/adapter/model.safetensors"), &"ab".repeat(32));
        assert_eq!(
            p,
            Path::new("out/adapter/.model.safetensors.abababababababab.part")
        );
    }

    #[test]
    fn a_link_on_the_way_to_a_download_is_refused() {
        let dir = std::env::temp_dir().join(format!("onramp-cli-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("real")).unwrap();
        let part = |n: &str| part_path(&dir.join(n), &"0".repeat(64));
        assert!(no_links(&dir, "real/a.bin", &part("real/a.bin")).is_ok());
        std::os::unix::fs::symlink("/tmp", dir.join("adapter")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.join("log.txt")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", part("real/b.bin")).unwrap();
        for name in ["adapter/x.bin", "log.txt", "real/b.bin"] {
            let err = no_links(&dir, name, &part(name)).unwrap_err().0;
            assert!(err.contains("is a link"), "{name}: {err}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_content_range_says_where_it_starts() {
        assert_eq!(
            starts_at(Some("bytes 7340032-9999999/10000000")),
            Some(7340032)
        );
        assert_eq!(starts_at(Some(" bytes 0-0/1")), Some(0));
        for bad in ["bytes */100", "items 0-1/2", "bytes x-1/2", ""] {
            assert_eq!(starts_at(Some(bad)), None, "{bad}");
        }
        assert_eq!(starts_at(None), None);
    }
}
