//! The project's Python environments. The trainer's: a virtual environment under
//! `~/.cache/onramp/tools/trainer-venv-<hash>`, keyed by `trainer/requirements.lock` and the
//! interpreter, installed once per machine with exactly the locked versions and reused by every
//! clone. The trainer itself is not installed into it: its source is on `PYTHONPATH`, so that
//! every clone runs its own `trainer/src` with the shared packages. The contract fuzzer's
//! (schemathesis, `tests/contract/requirements.lock`) is made the same way.

use crate::cmd::{self, repo_root, tools_dir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Written last by a complete install: a folder without it is a broken one and is redone.
const STAMP: &str = ".onramp-complete";

/// Where the trainer's environment is.
#[derive(Debug, Clone)]
pub struct TrainerEnv {
    /// The environment's interpreter (`python -m onramp_train`, `-m torch.distributed.run`).
    pub python: PathBuf,
    /// Its `bin/`: on `PATH` for every rank, since DeepSpeed JIT-builds ops with its `ninja`.
    pub bin: PathBuf,
    /// `trainer/src` of this checkout, for `PYTHONPATH`.
    pub src: PathBuf,
}

impl TrainerEnv {
    /// A command running the environment's interpreter with the trainer importable.
    pub fn python(&self) -> Command {
        let mut c = Command::new(&self.python);
        c.env("PYTHONPATH", &self.src)
            .env("PATH", cmd::path_with(std::slice::from_ref(&self.bin)));
        c
    }
}

/// `/usr/bin/python3.11` (Debian's, present on every machine of this kind), else `python3.11`.
fn interpreter() -> Result<(PathBuf, String), String> {
    for candidate in ["/usr/bin/python3.11", "python3.11"] {
        if let Some(v) = cmd::output(Command::new(candidate).arg("--version")) {
            return Ok((PathBuf::from(candidate), v.trim().to_string()));
        }
    }
    Err("the trainer needs Python 3.11 (/usr/bin/python3.11 or python3.11 on PATH)".into())
}

pub fn ensure() -> Result<TrainerEnv, String> {
    let root = repo_root();
    let dir = locked_venv(
        "trainer",
        &root.join("trainer/requirements.lock"),
        "PyTorch, Transformers, PEFT, DeepSpeed; once per machine, a few minutes",
    )?;
    Ok(TrainerEnv {
        python: dir.join("bin/python"),
        bin: dir.join("bin"),
        src: root.join("trainer/src"),
    })
}

/// The contract fuzzer's `st` (schemathesis, `tests/contract/requirements.lock`), in an
/// environment of its own made the same way as the trainer's.
pub fn schemathesis() -> Result<PathBuf, String> {
    let dir = locked_venv(
        "contract",
        &repo_root().join("tests/contract/requirements.lock"),
        "schemathesis; once per machine, under a minute",
    )?;
    Ok(dir.join("bin/st"))
}

/// `~/.cache/onramp/tools/<name>-venv-<hash>`, keyed by `lock` and the interpreter, holding
/// exactly `lock`'s packages: installed when it is missing or was left half-made.
fn locked_venv(name: &str, lock_path: &Path, what: &str) -> Result<PathBuf, String> {
    let lock = std::fs::read(lock_path)
        .map_err(|e| format!("cannot read {}: {e}", lock_path.display()))?;
    let (python, version) = interpreter()?;
    let mut keyed = lock.clone();
    keyed.extend_from_slice(version.as_bytes());
    let key = &crate::models::sha256_hex(&keyed)[..16];
    let dir = tools_dir().join(format!("{name}-venv-{key}"));
    if dir.join(STAMP).is_file() && dir.join("bin/python").exists() {
        return Ok(dir);
    }
    install(&python, &dir, lock_path, what)?;
    Ok(dir)
}

fn install(python: &Path, dir: &Path, lock: &Path, what: &str) -> Result<(), String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .map_err(|e| format!("cannot remove the broken {}: {e}", dir.display()))?;
    }
    cmd::run(
        &format!("python venv {}", dir.display()),
        Command::new(python).args(["-m", "venv"]).arg(dir),
    )?;
    // --no-deps: the lock already lists every package of the environment, resolved once.
    cmd::run(
        &format!("pip install {} ({what})", lock.display()),
        Command::new(dir.join("bin/pip"))
            .args([
                "install",
                "--no-deps",
                "--no-input",
                "--disable-pip-version-check",
                "--quiet",
                "-r",
            ])
            .arg(lock),
    )?;
    std::fs::write(dir.join(STAMP), b"")
        .map_err(|e| format!("cannot write {}: {e}", dir.join(STAMP).display()))
}
