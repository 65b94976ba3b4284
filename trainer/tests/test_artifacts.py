"""The artifact pusher's own rules; the push itself is tested against the real edge
(tests/tests/e2e/edge_trainer.rs: a LoRA job on the runner pushes its adapter)."""

import hashlib
import json

import pytest

from onramp_train import artifacts


def test_the_artifacts_url_is_the_report_urls_job():
    assert (
        artifacts.base_from_report_url("http://127.0.0.1:8787/api/jobs/ab12/report")
        == "http://127.0.0.1:8787/api/jobs/ab12/artifacts"
    )
    with pytest.raises(artifacts.PushError):
        artifacts.base_from_report_url("http://x/api/jobs/ab12/log")


def test_names_are_one_path_segment(tmp_path):
    p = artifacts.Pusher("http://edge/api/jobs/j/artifacts/", "t")
    assert (
        p._url("adapter/a b.json", "?part=2")
        == "http://edge/api/jobs/j/artifacts/adapter%2Fa%20b.json?part=2"
    )
    f = tmp_path / "x"
    f.write_bytes(b"abc" * 1000)
    assert artifacts.sha256_of(f) == hashlib.sha256(b"abc" * 1000).hexdigest()


def test_without_a_token_nothing_is_pushed(monkeypatch):
    monkeypatch.delenv("ONRAMP_REPORT_TOKEN", raising=False)
    monkeypatch.setenv("ONRAMP_REPORT_URL", "http://x/api/jobs/j/report")
    assert artifacts.from_env() is None
    assert artifacts.main(["folder", "adapter"]) == 2


def test_the_log_is_the_wrappers_else_the_runners(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.delenv("ONRAMP_JOB_LOG", raising=False)
    assert artifacts.job_log(out) is None
    (tmp_path / "output.log").write_text("runner\n")
    assert artifacts.job_log(out) == tmp_path / "output.log"
    slurm = tmp_path / "onramp-7.1.log"
    slurm.write_text("slurm\n")
    monkeypatch.setenv("ONRAMP_JOB_LOG", str(slurm))
    assert artifacts.job_log(out) == slurm
    monkeypatch.setenv("ONRAMP_JOB_LOG", str(tmp_path / "gone.log"))
    assert artifacts.job_log(out) is None


def test_a_long_log_goes_as_its_last_whole_lines(tmp_path):
    log = tmp_path / "log"
    lines = [f"line {n}\n".encode() for n in range(1000)]
    log.write_bytes(b"".join(lines))
    assert artifacts.log_tail(log, tmp_path / "tail", limit=10_000) == log
    tail = artifacts.log_tail(log, tmp_path / "tail", limit=100)
    assert tail == tmp_path / "tail"
    note, *kept = tail.read_bytes().splitlines(keepends=True)
    assert kept == lines[-len(kept) :] and 0 < len(kept) < 100
    assert sum(map(len, kept)) <= 100
    left_out = sum(map(len, lines)) - sum(map(len, kept))
    assert note.decode() == f"onramp-train: the first {left_out} bytes of this log are left out\n"


class _Recorder:
    """A pusher that records what it was asked to push."""

    def __init__(self):
        self.files: list[str] = []

    def push_file(self, path, name):
        self.files.append(name)

    def push_folder(self, folder, prefix):
        files = [p for p in folder.rglob("*") if p.is_file()]
        names = sorted(f"{prefix}/{p.relative_to(folder).as_posix()}" for p in files)
        self.files += names
        return names


def test_the_latest_whole_checkpoint_goes_only_when_the_run_asks(tmp_path):
    out = tmp_path / "out"
    (out / "final").mkdir(parents=True)
    (out / "final" / "adapter_config.json").write_text("{}")
    for step, whole in [(6, True), (12, True), (18, False)]:
        ck = out / f"checkpoint-{step}"
        ck.mkdir()
        (ck / "adapter_model.safetensors").write_bytes(b"w")
        if whole:
            (ck / "trainer_state.json").write_text("{}")
    run = out / "final" / "onramp-run.json"
    for asks, expected in [(False, []), (True, ["checkpoint-12/adapter_model.safetensors"])]:
        run.write_text(json.dumps({"plan": {"upload_checkpoint": asks}}))
        p = _Recorder()
        names = artifacts.push_outputs(p, out)
        got = sorted(n for n in names if n.startswith("checkpoint-"))
        assert got == sorted(expected + ["checkpoint-12/trainer_state.json"] * asks)
