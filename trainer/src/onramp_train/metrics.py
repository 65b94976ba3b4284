"""The metrics stream and the time-based checkpoints, as Trainer callbacks.

Each metrics line is one JSON object on stdout, rank 0 only, in the schema `onramp-runner
tiny-train` prints (`step`, `loss`, `val_loss`, `lr`, `tokens_per_s`, `elapsed_s`) plus
`grad_norm`, `epoch` and, on CUDA, `peak_mem_bytes`. The line starts with `{"step":` because the
Slurm job wrapper forwards exactly such lines to the edge.
"""

from __future__ import annotations

import json
import sys
import time

from transformers import TrainerCallback


class MetricsLines(TrainerCallback):
    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.start = time.monotonic()
        self.last_time = self.start
        self.last_tokens = 0
        self.last_loss: float | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()
        self.last_time = self.start
        self.last_tokens = state.num_input_tokens_seen

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        now = time.monotonic()
        line: dict[str, object] = {"step": state.global_step}
        if "loss" in logs:
            self.last_loss = float(logs["loss"])
            line["loss"] = self.last_loss
        elif "eval_loss" in logs and self.last_loss is not None:
            line["loss"] = self.last_loss
            line["val_loss"] = float(logs["eval_loss"])
        else:
            return
        if "learning_rate" in logs:
            line["lr"] = float(logs["learning_rate"])
        seen = state.num_input_tokens_seen
        if "loss" in logs and now > self.last_time and seen > self.last_tokens:
            line["tokens_per_s"] = (seen - self.last_tokens) / (now - self.last_time)
            self.last_time, self.last_tokens = now, seen
        line["elapsed_s"] = round(now - self.start, 3)
        if logs.get("grad_norm") is not None:
            line["grad_norm"] = float(logs["grad_norm"])
        if state.epoch is not None:
            line["epoch"] = round(float(state.epoch), 4)
        peak = _peak_mem_bytes()
        if peak is not None:
            line["peak_mem_bytes"] = peak
        print(json.dumps(line), file=self.out, flush=True)


class SaveEveryMinutes(TrainerCallback):
    """Asks the Trainer to checkpoint when `minutes` have passed since the last save."""

    def __init__(self, minutes: int):
        self.seconds = minutes * 60
        self.last = time.monotonic()

    def on_save(self, args, state, control, **kwargs):
        self.last = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        if self.seconds <= 0:
            return
        due = time.monotonic() - self.last >= self.seconds
        # Every rank must take part in a save: rank 0's clock decides for all.
        import torch
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            flag = torch.tensor([1 if due else 0], device=args.device)
            dist.broadcast(flag, src=0)
            due = bool(flag.item())
        if due:
            control.should_save = True
            self.last = time.monotonic()


def _peak_mem_bytes() -> int | None:
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return int(torch.cuda.max_memory_allocated())
    return None
