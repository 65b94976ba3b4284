"""Shared helpers: the reference data, a model folder made on the spot, the run jobspec derives
from a spec (through the `onramp` CLI, as a launch does), and running the trainer as a job would
(a process group of its own, killed whatever happens)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
DATA = TESTS / "data"
SRC = TESTS.parent / "src"


def shared_dir() -> Path:
    """`ONRAMP_SHARED`, else `../shared` beside the repository (as xtask and the runner do)."""
    if os.environ.get("ONRAMP_SHARED"):
        return Path(os.environ["ONRAMP_SHARED"])
    return TESTS.parent.parent.parent / "shared"


def onramp_cli() -> Path:
    """`ONRAMP_CLI` (cargo xtask test sets it), else the debug build in the target folder."""
    if os.environ.get("ONRAMP_CLI"):
        return Path(os.environ["ONRAMP_CLI"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", TESTS.parent.parent / "target"))
    cli = target / "debug" / "onramp"
    if not cli.is_file():
        pytest.fail(f"{cli} is missing: `cargo build -p onramp-cli` builds it (or set ONRAMP_CLI)")
    return cli


def derive(spec_text: str, workdir: Path) -> Path:
    """Writes `spec.toml` and the run jobspec derives from it (`onramp plan --trainer-run`) into
    `workdir`; returns the run's path."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "spec.toml").write_text(spec_text)
    out = subprocess.run(
        [str(onramp_cli()), "plan", "--trainer-run", "spec.toml"],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, f"onramp plan --trainer-run refused the spec:\n{out.stderr}"
    run = workdir / "onramp-run.json"
    run.write_text(out.stdout)
    return run


def run_of(spec_text: str, tmp_path: Path):
    """The run of `spec_text`, as the trainer reads it."""
    from onramp_train import spec

    return spec.load(derive(spec_text, tmp_path))


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory) -> Path:
    """ONRAMP_MODELS for the tests: the 512-token SentencePiece model, and `stories260K` as a
    Hugging Face folder built from jobspec's catalogue numbers (random weights, no download)."""
    import torch
    from transformers import AutoModelForCausalLM

    from onramp_train import spec
    from onramp_train.models import FALLBACK_CHAT_TEMPLATE, _sentencepiece, hf_config

    root = tmp_path_factory.mktemp("models")
    tok_src = shared_dir() / "models" / "tok512.model"
    if not tok_src.is_file():
        pytest.fail(f"{tok_src} is missing: the tests need the shared reference data")
    shutil.copyfile(tok_src, root / "tok512.model")
    m = spec.catalog()["stories260K"]
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_config(spec.Arch(**m["arch"]), m["max_seq_len"]))
    folder = root / "stories260K"
    model.save_pretrained(folder)
    tok = _sentencepiece(root / "tok512.model")
    tok.chat_template = FALLBACK_CHAT_TEMPLATE
    tok.save_pretrained(folder)
    return root


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    metrics: list[dict] = field(default_factory=list)

    def train_losses(self) -> dict[int, float]:
        return {m["step"]: m["loss"] for m in self.metrics}


def metrics_of(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith('{"step":')]


def command(nproc: int) -> list[str]:
    if nproc == 1:
        return [sys.executable, "-m", "onramp_train", "onramp-run.json"]
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        str(nproc),
        "--master_port",
        str(29500 + os.getpid() % 1000),
        "-m",
        "onramp_train",
        "onramp-run.json",
    ]


def environment(models: Path | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env["ONRAMP_TRAIN_DEVICE"] = "cpu"
    env["OMP_NUM_THREADS"] = "1"
    env.pop("ONRAMP_HUB", None)
    if models is not None:
        env["ONRAMP_MODELS"] = str(models)
    env["ONRAMP_DATASETS"] = str(DATA)
    env.update(extra or {})
    return env


def start(workdir: Path, spec_text: str, nproc: int, env: dict[str, str], args=()):
    derive(spec_text, workdir)
    return subprocess.Popen(
        command(nproc) + list(args),
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def read_until(proc: subprocess.Popen, prefix: str, timeout_s: float = 300):
    """Reads the trainer's stdout lines as they come (no pause between them) until one starts
    with `prefix` or the time is up; stderr is drained beside it so that the trainer never
    blocks on a full pipe. Returns the stdout lines seen, the stderr lines (still filling) and
    the draining thread."""
    seen: list[str] = []
    errors: list[str] = []
    drain = threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True)
    drain.start()
    deadline = time.monotonic() + timeout_s
    for line in proc.stdout:
        seen.append(line)
        if line.startswith(prefix) or time.monotonic() > deadline:
            break
    return seen, errors, drain


def run_trainer(
    workdir: Path,
    spec_text: str,
    nproc: int = 1,
    models: Path | None = None,
    extra_env: dict[str, str] | None = None,
    args=(),
    timeout_s: float = 600,
) -> Run:
    proc = start(workdir, spec_text, nproc, environment(models, extra_env), args)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    finally:
        stop(proc)
    return Run(proc.returncode, out, err, metrics_of(out))


def wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
