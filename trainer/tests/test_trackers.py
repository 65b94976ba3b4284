"""`output.report_to`: one real run reports to TensorBoard, Weights & Biases (offline, as a job
without a W&B key does) and MLflow (an SQLite store in the work directory) at once, and each holds
the same training losses the job's metrics lines carry."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from conftest import DATA, run_trainer
from test_train import assert_learns, spec_text

STEPS = 8


def test_the_trackers_of_report_to_record_the_runs_losses(tmp_path, models_dir):
    run = run_trainer(
        tmp_path,
        spec_text(
            "lora",
            'model = "stories260K"',
            DATA / "alpaca.jsonl",
            STEPS,
            train="lora_rank = 8\nlora_alpha = 16\n",
            tail='[output]\nreport_to = ["tensorboard", "wandb", "mlflow"]\n',
        ),
        models=models_dir,
        # No key and no login: the run must not wait for one.
        extra_env={"WANDB_API_KEY": "", "HOME": str(tmp_path / "home")},
    )
    assert_learns(run, STEPS)
    losses = run.train_losses()
    out = tmp_path / "out"
    assert f"tensorboard: event files in {out / 'tensorboard'}" in run.stderr
    assert "wandb: project onramp, offline" in run.stderr

    assert_close(tensorboard_losses(out / "tensorboard"), losses)
    assert_close(mlflow_losses(out / "mlflow.db", "test-lora"), losses)
    offline = list((out / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(offline) == 1, list((out / "wandb").rglob("*"))
    assert_close(wandb_losses(offline[0]), losses)


def assert_close(got: dict[int, float], want: dict[int, float]):
    assert sorted(got) == sorted(want), (got, want)
    for step, loss in want.items():
        assert abs(got[step] - loss) < 1e-3 * max(1.0, abs(loss)), (step, got[step], loss)


def tensorboard_losses(folder: Path) -> dict[int, float]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder))
    acc.Reload()
    return {e.step: e.value for e in acc.Scalars("train/loss")}


def mlflow_losses(store: Path, run_name: str) -> dict[int, float]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{store.resolve()}")
    experiment = client.get_experiment_by_name("onramp")
    assert experiment is not None, "the run's experiment is `onramp`"
    runs = client.search_runs([experiment.experiment_id])
    assert [r.info.run_name for r in runs] == [run_name]
    return {m.step: m.value for m in client.get_metric_history(runs[0].info.run_id, "loss")}


def wandb_losses(record_file: Path) -> dict[int, float]:
    """The `loss` of each history row of an offline run's record file (what `wandb sync` sends)."""
    from wandb.proto import wandb_internal_pb2

    losses = {}
    for data in wandb_records(record_file):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        if record.WhichOneof("record_type") != "history":
            continue
        row = {
            item.key or "/".join(item.nested_key): json.loads(item.value_json)
            for item in record.history.item
        }
        if "train/loss" in row:
            losses[int(row["train/global_step"])] = float(row["train/loss"])
    return losses


def wandb_records(path: Path):
    """The records of a W&B record file: a 7-byte header (`:W&B`, magic, version), then LevelDB
    log records (crc32c, length, kind) in 32 KiB blocks; a record too long for its block is cut
    into first/middle/last pieces."""
    raw = path.read_bytes()
    assert raw[:4] == b":W&B", raw[:8]
    block, pos, pending = 32768, 7, b""
    while pos + 7 <= len(raw):
        if block - pos % block < 7:  # the block's tail is padding
            pos += block - pos % block
            continue
        length, kind = struct.unpack_from("<HB", raw, pos + 4)
        data, pos = raw[pos + 7 : pos + 7 + length], pos + 7 + length
        if kind == 1:  # full
            yield data
        elif kind == 2:  # first
            pending = data
        elif kind == 3:  # middle
            pending += data
        elif kind == 4:  # last
            yield pending + data
