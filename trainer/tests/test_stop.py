"""A job the cluster stops (SIGTERM, as Slurm sends before it requeues, preempts or cancels)
saves a checkpoint at the step it is in and exits with 143; started again in the same folder,
it resumes there and trains on exactly as a run that was never stopped. A stop asked before
training began ends it at the first step, saved."""

from __future__ import annotations

import os
import signal

import pytest
from conftest import DATA, environment, metrics_of, read_until, run_trainer, start, stop
from test_train import spec_text


def test_sigterm_saves_a_checkpoint_and_the_restart_goes_on_from_it(tmp_path, models_dir):
    steps = 30
    # Checkpoints every 100 steps: the only one before the end is the stop's.
    text = spec_text(
        "sft",
        'model = "stories260K"',
        DATA / "alpaca.jsonl",
        steps,
        tail="[checkpoint]\nevery_steps = 100\n",
    )
    whole = run_trainer(tmp_path / "whole", text, models=models_dir)
    assert whole.rc == 0, whole.stderr[-3000:]

    job = tmp_path / "job"
    proc = start(job, text, 1, environment(models_dir))
    try:
        seen, errors, drain = read_until(proc, '{"step": 8,')
        # As Slurm does: every process of the job gets it.
        os.killpg(proc.pid, signal.SIGTERM)
        seen.extend(proc.stdout)
        proc.wait(timeout=120)
    finally:
        stop(proc)
    drain.join(timeout=10)
    err = "".join(errors)
    assert proc.returncode == 143, (proc.returncode, err[-3000:])
    saved = [int(p.name.split("-")[1]) for p in (job / "out").glob("checkpoint-*")]
    assert len(saved) == 1, (saved, err[-3000:])
    at = saved[0]
    assert 8 <= at < steps, at
    assert f"stopped by the cluster (SIGTERM) at step {at}" in err, err[-3000:]
    # What the job's script reads to say where a run stopped at its time limit.
    assert (job / "out" / "onramp-stopped").read_text() == f"{at}\n"
    assert metrics_of("".join(seen))[-1]["step"] == at
    assert not (job / "out" / "final").exists()

    again = run_trainer(job, text, models=models_dir)
    assert again.rc == 0, again.stderr[-3000:]
    assert f"resuming from out/checkpoint-{at}" in again.stderr
    # First, the lines the stopped run printed, sent again as they were (had its node died, the
    # last of them might never have reached the edge); then the steps after the stop.
    lines = metrics_of(again.stdout)
    replayed = [m for m in lines if m["step"] <= at]
    assert replayed == metrics_of("".join(seen)) == lines[: len(replayed)]
    assert f"sent again the {len(replayed)} metrics lines" in again.stderr
    resumed = {m["step"]: m["loss"] for m in lines[len(replayed) :] if "val_loss" not in m}
    reference = whole.train_losses()
    assert min(resumed) == at + 1
    for s in range(at + 1, steps + 1):
        assert resumed[s] == pytest.approx(reference[s], rel=1e-3, abs=1e-4), s


def test_a_stop_asked_before_training_saves_at_the_first_step(tmp_path, models_dir):
    """SIGTERM while the data and the model load (Slurm's warning before a short limit, say)
    does not end the run unsaved: it stops at its first step's end, checkpoint saved."""
    text = spec_text(
        "sft",
        'model = "stories260K"',
        DATA / "alpaca.jsonl",
        30,
        tail="[checkpoint]\nevery_steps = 100\n",
    )
    job = tmp_path / "job"
    proc = start(job, text, 1, environment(models_dir))
    errors: list[str] = []
    try:
        # Said once the data is counted, before the model is built and training begins.
        for line in proc.stderr:
            errors.append(line)
            if line.startswith("onramp-train: counted "):
                break
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        stop(proc)
    err = "".join(errors) + err
    assert proc.returncode == 143, (proc.returncode, err[-3000:])
    assert [p.name for p in (job / "out").glob("checkpoint-*")] == ["checkpoint-1"], err[-3000:]
    assert (job / "out" / "onramp-stopped").read_text() == "1\n"
    assert "stopped by the cluster (SIGTERM) at step 1" in err
    assert metrics_of(out)[-1]["step"] == 1


def test_a_checkpoint_whose_save_was_cut_off_is_passed_over(tmp_path):
    from onramp_train.stop import last_checkpoint

    out = tmp_path / "out"
    for step, done in [(4, True), (8, True), (12, False)]:
        d = out / f"checkpoint-{step}"
        d.mkdir(parents=True)
        if done:
            (d / "trainer_state.json").write_text("{}")
    (out / "checkpoint-x").mkdir()
    said: list[str] = []
    assert last_checkpoint(out, said.append) == str(out / "checkpoint-8")
    assert said == [f"passed over {out / 'checkpoint-12'}: its save did not finish"]
    assert last_checkpoint(tmp_path / "none", said.append) is None


def test_only_a_checkpoint_of_this_jobs_folder_is_replayed(tmp_path, monkeypatch):
    """A checkpoint copied from another job (`resume_from`) holds that job's lines: none is sent
    for this job. This job's own is sent again, line for line."""
    import io
    import json

    from onramp_train.metrics import REPLAY_FILE, MetricsLines

    ckpt = tmp_path / "out" / "checkpoint-4"
    ckpt.mkdir(parents=True)
    lines = [{"step": s, "loss": 1.0 / s, "elapsed_s": 0.1 * s} for s in range(1, 5)]
    monkeypatch.delenv("ONRAMP_REPORT_URL", raising=False)
    for folder, sent in [(tmp_path / "earlier-job", 0), (tmp_path, 4)]:
        doc = {"folder": str(folder.resolve()), "lines": lines}
        (ckpt / REPLAY_FILE).write_text(json.dumps(doc), encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        out = io.StringIO()
        assert MetricsLines(out).replay(ckpt) == sent
        assert [json.loads(x) for x in out.getvalue().splitlines()] == lines[:sent]
    (ckpt / REPLAY_FILE).write_text("{not json", encoding="utf-8")
    assert MetricsLines(io.StringIO()).replay(ckpt) == 0
