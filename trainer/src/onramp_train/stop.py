"""Stopped by the cluster, kept: Slurm sends SIGTERM to every process of a job it requeues,
preempts or cancels, and kills it after its grace time (`KillWait`, 30 s by default). The
trainer then saves a checkpoint at the end of the step it is in and exits with 143 (128 +
SIGTERM), without writing a final model; the job started again (a requeue runs the same script
in the same folder) resumes from that checkpoint.

The same stop comes at a job's time limit, or at the warning the backend has Slurm send before it
(`kill_warning_*`): the step is then marked in `out/onramp-stopped`, which the job's script
reads to tell the user where the run stopped and what continues it.

Every rank gets the signal, but not within the same step: at each step's end the ranks agree
(an all-reduce of one flag), so that all of them save and stop at the same step, as a save needs.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

from transformers import TrainerCallback

from .errors import TrainError

STOP_SIGNALS = (signal.SIGTERM,)
# The step a stopped run saved, for the job's script (edge/src/backends/slurm/script.rs).
STOPPED_MARK = "onramp-stopped"


def last_checkpoint(out: Path, say: Callable[[str], None]) -> str | None:
    """The newest checkpoint in `out` whose save finished: the Trainer writes
    `trainer_state.json` after the model, optimizer and RNG states, so a folder without it is a
    save that a kill cut off (a node that died, a grace time too short), which would fail the
    resume; it is passed over, and said so."""
    if not out.is_dir():
        return None
    found = []
    for d in out.iterdir():
        m = re.fullmatch(r"checkpoint-(\d+)", d.name)
        if m and d.is_dir():
            found.append((int(m.group(1)), d))
    for _, d in sorted(found, reverse=True):
        if (d / "trainer_state.json").is_file():
            return str(d)
        say(f"passed over {d}: its save did not finish")
    return None


class Stopped(TrainError):
    exit_code = 128 + signal.SIGTERM
    kind = "stopped"


class StopOnSignal(TrainerCallback):
    """Installs the handlers while it lives (the trainer's main thread); `stopped_at` is the step
    whose checkpoint the stop saved."""

    def __init__(self) -> None:
        self.signalled: int | None = None
        self.stopped_at: int | None = None
        self._before = {s: signal.signal(s, self._note) for s in STOP_SIGNALS}
        # A stop asked before training began (the CLI's `EarlyStop` notes it): at the first step.
        # One that came since the handlers went in is kept.
        early = [getattr(h, "asked", None) for h in self._before.values()]
        if self.signalled is None:
            self.signalled = next((a for a in early if a is not None), None)

    def _note(self, signum, frame) -> None:
        self.signalled = signum

    def stopped(self, out: Path) -> Stopped:
        """The stop, marked in `out` by rank 0 (the step, one line) and said as an error."""
        step = self.stopped_at
        if int(os.environ.get("RANK", "0")) == 0:
            (out / STOPPED_MARK).write_text(f"{step}\n")
        return Stopped(
            f"stopped by the cluster (SIGTERM) at step {step}: its checkpoint is "
            f"out/checkpoint-{step}, where this job started again resumes, and which a job "
            "naming this one in resume_from continues"
        )

    def restore(self) -> None:
        for s, handler in self._before.items():
            signal.signal(s, handler)

    def on_step_end(self, args, state, control, **kwargs):
        asked = self.signalled is not None
        import torch
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            flag = torch.tensor([1 if asked else 0], device=args.device)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            asked = bool(flag.item())
        if asked:
            control.should_save = True
            control.should_training_stop = True
            self.stopped_at = state.global_step
