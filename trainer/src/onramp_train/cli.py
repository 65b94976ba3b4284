"""`onramp-train [RUN] [--output-dir DIR]`: trains the run jobspec derived from a spec.

Every launch writes the run next to the job as `onramp-run.json`; by hand,
`onramp plan --trainer-run spec.toml > onramp-run.json` writes it.

Exit status: 0 done, 2 bad spec or launch, 3 model not found, 4 bad or missing data, 5 CUDA out
of memory, 6 ranks lost each other (NCCL, timeouts), 7 wrong device, 143 stopped by SIGTERM after
saving a checkpoint (a requeue, a preemption, a cancel: see `stop.py`), 1 anything else. The last
line on stderr says why, prefixed `onramp-train: error:`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

from . import resume, spec
from .errors import TrainError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="onramp-train",
        description=(
            "Train what an Onramp job spec describes (Transformers + PEFT + DeepSpeed), from the "
            "run jobspec derived from it. Every launch writes that run next to the job; to run a "
            "spec by hand: `onramp plan --trainer-run spec.toml > onramp-run.json`, then "
            "`onramp-train onramp-run.json`."
        ),
    )
    p.add_argument(
        "run",
        type=Path,
        nargs="?",
        default=Path(spec.RUN_FILE),
        help=f"the run (JSON, with its ds_config) jobspec wrote (default: ./{spec.RUN_FILE})",
    )
    p.add_argument(
        "--output-dir",
        type=Path,
        default=Path(os.environ.get("ONRAMP_OUTPUT_DIR", "out")),
        help="checkpoints and the final model or adapter (default: ./out)",
    )
    # The DeepSpeed launcher passes each rank its local rank; torchrun sets LOCAL_RANK instead.
    p.add_argument("--local_rank", "--local-rank", type=int, help=argparse.SUPPRESS)
    p.add_argument(
        "--check",
        action="store_true",
        help="read and check the run, print it back as JSON, and exit",
    )
    return p


class EarlyStop:
    """SIGTERM noted from the start: the imports, the data and the model take a while, and a stop
    asked meanwhile (Slurm's warning before a short time limit, a requeue) would otherwise end the
    run unsaved. `stop.StopOnSignal` takes the note over and stops at the first step's end, its
    checkpoint saved."""

    def __init__(self) -> None:
        self.asked: int | None = None

    def __call__(self, signum, frame) -> None:
        self.asked = signum


def main(argv: list[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, EarlyStop())
    args = parser().parse_args(argv)
    try:
        run = spec.load(args.run)
        if args.check:
            print(json.dumps(run.export(), indent=2))
            return 0
        _prepare_environment()
        # What can be refused without the model or the data is, before the imports of train.
        from . import preflight

        preflight.check(run.plan)
        preflight.inputs(run.plan)
        from . import train

        resume.resume(args.output_dir, run.plan.resume_from)
        train.run(run, args.output_dir)
        _leave_process_group()
        _exit_if_not_first_rank()
        return 0
    except TrainError as e:
        rank = os.environ.get("RANK")
        where = f" (rank {rank})" if rank not in (None, "0") else ""
        print(f"onramp-train: error{where}: [{e.kind}] {e}", file=sys.stderr, flush=True)
        return e.exit_code


def _leave_process_group() -> None:
    """Each rank shuts its own process group down once its work is done, rather than leaving it
    to the interpreter's exit: a CI run saw a gloo rank that finished first (while rank 0 still
    merged the adapter) abort at exit with `terminate called without an active exception`,
    which failed a job whose work was done. Local to the rank: no barrier, so rank 0's merge and
    push take as long as they take."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def _exit_if_not_first_rank() -> None:
    """A rank other than the first leaves at once when its work is done, past the interpreter's
    own exit: the process group's shutdown alone did not stop one such rank (LoRA on ZeRO-3, two
    CPU ranks, a loaded machine) aborting in the C++ teardown at exit with `terminate called
    without an active exception` while rank 0 still merged, which failed the finished job. These
    ranks write nothing that needs the interpreter's exit: rank 0 alone saves, pushes and reports
    (its own exit is the usual one, so that its trackers flush)."""
    if os.environ.get("RANK") in (None, "0"):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _prepare_environment() -> None:
    """DeepSpeed picks its accelerator at import and JIT-builds ops with ninja and c++: on a
    machine without CUDA it must be told `cpu`, and the environment's bin/ (ninja) must be on
    PATH for this process and every child."""
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bin_dir not in path.split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + path
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if "DS_ACCELERATOR" not in os.environ:
        import torch

        if not torch.cuda.is_available():
            os.environ["DS_ACCELERATOR"] = "cpu"
