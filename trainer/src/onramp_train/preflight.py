"""Refusals that need no model loaded and no example read: the device, the launch, the trackers
(`check`), then the benchmark tasks, the model's folder and a dataset of the cluster's own
(`inputs`). They run before the trainer imports Transformers, PEFT and DeepSpeed (seconds), so
a job that cannot run says why at once, and before an earlier job's checkpoint is fetched for a
job that continues it."""

from __future__ import annotations

import os

from . import benchmarks, data, fetch, models
from .errors import DeviceError, SpecError
from .spec import Plan

# The package each `output.report_to` tracker needs in the trainer's environment.
TRACKER_PACKAGES = {"tensorboard": "tensorboard", "wandb": "wandb", "mlflow": "mlflow"}


def missing_trackers(report_to: list[str]) -> None:
    """Refuses, before any model or data is loaded, trackers whose package the environment lacks
    (the Trainer would only fail once training starts, with its own traceback)."""
    import importlib.util

    missing = [t for t in report_to if importlib.util.find_spec(TRACKER_PACKAGES[t]) is None]
    if missing:
        names = ", ".join(f"{t} (package `{TRACKER_PACKAGES[t]}`)" for t in missing)
        raise SpecError(
            f"output.report_to asks for {names}, which the trainer's environment does not have: "
            "install it into the Python environment the backend runs (ONRAMP_PYTHON), or take it "
            "out of output.report_to"
        )


def check(plan: Plan) -> bool:
    """Refusals that need no model and no data. Returns whether to run on CUDA."""
    import torch

    cuda = torch.cuda.is_available()
    if plan.task == "qlora" and not cuda:
        raise DeviceError(
            "qlora quantizes the base model to 4 bits with bitsandbytes, which needs a CUDA GPU; "
            'this machine has none. Use task = "lora" to train adapters on the CPU.'
        )
    if plan.is_gpu and not cuda and os.environ.get("ONRAMP_TRAIN_DEVICE") != "cpu":
        raise DeviceError(
            f"the spec asks for {plan.world_size} × {plan.card} but no CUDA device is visible "
            "(CUDA_VISIBLE_DEVICES, driver); set ONRAMP_TRAIN_DEVICE=cpu to run it on the CPU"
        )
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1 and plan.is_gpu:
        single_process_rendezvous()
    if world != plan.world_size:
        raise SpecError(
            f"the spec plans {plan.world_size} card(s) but {world} process(es) were launched; "
            "launch with the torchrun/deepspeed line the Plan page shows"
        )
    missing_trackers(plan.report_to)
    return cuda


def single_process_rendezvous() -> None:
    """A one-card DeepSpeed run started without a launcher (`python -m onramp_train`) is a world
    of one on this machine: without RANK and a master address DeepSpeed would look for MPI."""
    if "RANK" in os.environ:
        return
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(
        RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )


def inputs(plan: Plan) -> None:
    """Refuses (on the first rank) a benchmark task the cluster does not have, then a model
    that is not where the backend keeps it or may not run its own code, and a dataset that is
    not there, each naming where it was looked for. A dataset uploaded to the edge is fetched
    later, by the data loader, and checked against its id there."""
    if int(os.environ.get("RANK", "0")) == 0:
        benchmarks.check(plan)
    models.resolve(plan)
    if not fetch.is_uploaded(plan.dataset):
        data.resolve(plan.dataset)
