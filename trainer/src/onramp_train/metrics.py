"""The metrics stream and the time-based checkpoints, as Trainer callbacks.

Each metrics line is one JSON object on stdout, rank 0 only, in the schema `onramp-runner
tiny-train` prints (`step`, `loss`, `val_loss`, `lr`, `tokens_per_s`, `elapsed_s`) plus
`grad_norm`, `epoch` and, on CUDA, `peak_mem_bytes`. The line starts with `{"step":` because the
Slurm job wrapper forwards exactly such lines to the edge.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from transformers import TrainerCallback

#: The metrics lines a checkpoint holds (`replay`), beside the Trainer's own files.
REPLAY_FILE = "onramp-metrics.json"


class MetricsLines(TrainerCallback):
    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.reporter = Reporter.from_env()
        self.start = time.monotonic()
        self.last_time = self.start
        self.last_tokens = 0
        self.last_line: dict[str, object] | None = None
        # Every line printed, for the checkpoints.
        self.lines: list[dict[str, object]] = []

    def on_save(self, args, state, control, **kwargs):
        """Keeps the lines printed so far in the checkpoint just saved, with the job's folder."""
        if not state.is_world_process_zero:
            return
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if folder.is_dir():
            doc = {"folder": str(Path.cwd().resolve()), "lines": self.lines}
            (folder / REPLAY_FILE).write_text(json.dumps(doc), encoding="utf-8")

    def replay(self, checkpoint: str | Path) -> int:
        """Prints and reports again the lines the checkpoint holds, when this job saved it: an
        attempt that resumes after its node died (or its runner) sends what the last one may have
        printed but never got to the edge, which keeps the first point it got of each step. A
        checkpoint copied from another job (`resume_from`) recorded that job's folder, and its
        lines are that job's: none is sent. Rank 0 only. The number of lines sent."""
        if int(os.environ.get("RANK", "0")) != 0:
            return 0
        path = Path(checkpoint) / REPLAY_FILE
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0
        if not isinstance(doc, dict) or doc.get("folder") != str(Path.cwd().resolve()):
            return 0
        lines = [line for line in doc.get("lines", []) if isinstance(line, dict)]
        for line in lines:
            print(json.dumps(line), file=self.out, flush=True)
            self.reporter.send(line)
        self.lines = lines
        if lines:
            print(
                f"onramp-train: sent again the {len(lines)} metrics lines of {path.parent}",
                file=sys.stderr,
            )
        return len(lines)

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()
        self.last_time = self.start
        self.last_tokens = state.num_input_tokens_seen

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        now = time.monotonic()
        if "loss" in logs:
            line = self._train_line(state, logs, now)
            self.last_line = line
        elif "eval_loss" in logs and self.last_line is not None:
            # The edge keeps one point per step: the validation loss joins that step's line.
            line = dict(self.last_line)
            line["val_loss"] = float(logs["eval_loss"])
        else:
            return
        print(json.dumps(line), file=self.out, flush=True)
        self.reporter.send(line)
        self.lines.append(line)

    def _train_line(self, state, logs, now) -> dict[str, object]:
        line: dict[str, object] = {"step": state.global_step, "loss": float(logs["loss"])}
        if "learning_rate" in logs:
            line["lr"] = float(logs["learning_rate"])
        seen = state.num_input_tokens_seen
        if now > self.last_time and seen > self.last_tokens:
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
        return line


class Reporter:
    """Posts each metrics line to the edge when the job was given a report URL and token (the
    local runner gives them; the Slurm job script forwards stdout itself and withholds them)."""

    def __init__(self, url: str | None, token: str | None):
        self.url, self.token = url, token

    @classmethod
    def from_env(cls) -> Reporter:
        return cls(os.environ.get("ONRAMP_REPORT_URL"), os.environ.get("ONRAMP_REPORT_TOKEN"))

    def send(self, line: dict[str, object]) -> None:
        self._post({"metrics": [line]})

    def message(self, text: str) -> None:
        """A word for the job page (a warning), shown as the job's message."""
        self._post({"message": text})

    def _post(self, doc: dict[str, object]) -> None:
        if not self.url or not self.token:
            return
        body = json.dumps(doc).encode()
        req = urllib.request.Request(
            self.url,
            data=body,
            method="POST",
            headers={"content-type": "application/json", "authorization": f"Bearer {self.token}"},
        )
        # A 5xx (a store's deadline, the local proxy) is tried twice more: the edge keeps the
        # first point of a step, so a report that did arrive is not counted twice. A refusal
        # (4xx) is final, and so is an edge that does not answer (each step must not wait on it).
        for attempt in range(3):
            try:
                with urllib.request.urlopen(req, timeout=5):
                    return
            except urllib.error.HTTPError as e:
                err: OSError = e
                if e.code < 500 or attempt == 2:
                    break
            except OSError as e:
                err = e
                break
            time.sleep(0.5 * (attempt + 1))
        print(f"onramp-train: cannot report metrics ({err}); training goes on", file=sys.stderr)


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
