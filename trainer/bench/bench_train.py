"""`cargo xtask bench train`: onramp-train's training tokens/s next to a plain Hugging Face
Trainer script on the same model, data and settings, measured in the same run on this machine.

Both train a model built from the same numbers and seed on the same tokenized tinyshakespeare
windows, with the same TrainingArguments; what differs is everything onramp-train adds (reading
the run jobspec derived, its callbacks: metrics lines, time-based checkpoints). Tokens/s is
training tokens over the training loop's own time (the Trainer's `train_runtime`), so start-up is
not counted.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SPEC = """name = "bench-train"
task = "pretrain"

[model]
name = "bench"
layers = 4
hidden = 128
heads = 4
kv_heads = 4
ffn = 344
vocab = 512

[data]
dataset = "{dataset}"
seq_len = 128

[train]
steps = {steps}
micro_batch = 8
grad_accum = 1
lr = 1e-3
warmup = 2
precision = "fp32"

[resources]
card = "cpu"
time_limit = "30m"

[checkpoint]
every_steps = 100000
every_minutes = 0
"""


def derive(cli: Path, workdir: Path, spec: str) -> Path:
    """The run jobspec derives from `spec` (`onramp plan --trainer-run`), written in `workdir`."""
    (workdir / "spec.toml").write_text(spec)
    out = subprocess.run(
        [str(cli), "plan", "--trainer-run", "spec.toml"],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"onramp plan --trainer-run failed:\n{out.stderr[-3000:]}")
    run = workdir / "onramp-run.json"
    run.write_text(out.stdout)
    return run


def onramp(workdir: Path, env: dict[str, str]) -> float:
    """Runs onramp-train as a job would; returns its training tokens/s."""
    out = subprocess.run(
        [sys.executable, "-m", "onramp_train", "onramp-run.json"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"onramp-train failed:\n{out.stderr[-3000:]}")
    found = re.search(r"training: \d+ tokens in [0-9.]+ s, ([0-9.]+) tokens/s", out.stderr)
    if not found:
        raise SystemExit(f"onramp-train printed no training summary:\n{out.stderr[-3000:]}")
    return float(found.group(1))


def plain(run_file: Path, out_dir: Path) -> float:
    """The same run written as a plain Trainer script; returns its training tokens/s."""
    import torch
    from transformers import DataCollatorForSeq2Seq, Trainer

    from onramp_train import data, models, train
    from onramp_train import spec as spec_mod

    plan = spec_mod.load(run_file).plan
    source = models.resolve(plan)
    tok = models.tokenizer(plan, source)
    examples = data.load(plan.dataset, tok, plan.seq_len, plan.task)
    train_set, eval_set = train._split(examples.items, plan.seed)
    model = models.build(plan, source, torch.float32)
    extra, args = train.training_arguments(plan, {}, out_dir, False, eval_set is not None)
    trainer = Trainer(
        **extra,
        model=model,
        args=args,
        train_dataset=train_set,
        eval_dataset=eval_set,
        data_collator=DataCollatorForSeq2Seq(tok, padding=True, label_pad_token_id=-100),
        processing_class=tok,
    )
    result = trainer.train()
    return trainer.state.num_input_tokens_seen / result.metrics["train_runtime"]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shared", type=Path, required=True)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--onramp", type=Path, required=True, help="the onramp CLI, which derives runs")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-train-") as d:
        root = Path(d)
        (root / "models").mkdir()
        shutil.copyfile(args.shared / "models" / "tok512.model", root / "models" / "tok512.model")
        os.environ["ONRAMP_MODELS"] = str(root / "models")
        env = dict(os.environ)
        spec = SPEC.format(dataset=args.shared / "data" / "tinyshakespeare.txt", steps=args.steps)
        (root / "onramp").mkdir()
        run_file = derive(args.onramp, root / "onramp", spec)
        ours = onramp(root / "onramp", env)
        theirs = plain(run_file, root / "plain")
    print(f"plain HF Trainer: {theirs:9.0f} tokens/s (reference)")
    print(f"onramp-train:     {ours:9.0f} tokens/s = {ours / theirs:.3f} × plain")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
