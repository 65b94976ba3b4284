"""Real training runs on the CPU: DeepSpeed ZeRO-2 and ZeRO-3 on two gloo ranks under torchrun,
LoRA, pretraining a custom architecture, optimizer offload, and resume after a kill."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import (
    DATA,
    derive,
    environment,
    metrics_of,
    read_until,
    run_of,
    run_trainer,
    shared_dir,
    start,
    stop,
)

SCHEMA = {"step", "loss", "lr", "tokens_per_s", "elapsed_s", "grad_norm", "epoch"}


def spec_text(
    task: str,
    model: str,
    dataset: Path | str,
    steps: int,
    card: str = "cpu",
    cards: int = 1,
    parallel: str = "",
    train: str = "",
    tail: str = "",
    seq_len: int = 64,
    lr: float = 3e-3,
) -> str:
    if isinstance(dataset, Path):  # the tests' data folder is the datasets root (conftest)
        dataset = dataset.relative_to(DATA).as_posix()
    return f"""name = "test-{task}"
task = "{task}"
{model}

[data]
dataset = "{dataset}"
seq_len = {seq_len}

[train]
steps = {steps}
micro_batch = 4
grad_accum = 1
lr = {lr}
warmup = 2
precision = "fp32"
{train}

{parallel}
[resources]
card = "{card}"
cards_per_node = {cards}
time_limit = "30m"

{tail}
"""


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs)


def assert_learns(run, steps: int):
    assert run.rc == 0, run.stderr[-3000:]
    losses = run.train_losses()
    assert sorted(losses) == list(range(1, steps + 1))
    # Rank 0 only: a step has one line, or two when the validation loss joins it.
    assert len(run.metrics) == steps + sum("val_loss" in m for m in run.metrics)
    first, last = (
        mean(losses[s] for s in (1, 2, 3)),
        mean(losses[s] for s in range(steps - 2, steps + 1)),
    )
    assert last < first - 0.1, losses
    line = next(m for m in run.metrics if m["step"] == steps)
    assert SCHEMA <= set(line), line
    assert next(iter(line)) == "step", 'the Slurm job script forwards lines starting {"step":'


def generates(folder: Path, adapter_of: Path | None = None) -> list[int]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    if adapter_of is not None:
        from peft import PeftModel

        base = AutoModelForCausalLM.from_pretrained(adapter_of)
        model = PeftModel.from_pretrained(base, folder)
    else:
        model = AutoModelForCausalLM.from_pretrained(folder)
    ids = tok("Reverse the word.", return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=6, min_new_tokens=6, do_sample=False)
    return out[0, ids.shape[1] :].tolist()


def test_full_sft_with_zero2_on_two_ranks(tmp_path, models_dir):
    steps = 12
    run = run_trainer(
        tmp_path,
        spec_text(
            "sft",
            'model = "stories260K"',
            DATA / "alpaca.jsonl",
            steps,
            card="a100-80g",
            cards=2,
            parallel="[parallel]\nzero_stage = 2\n",
        ),
        nproc=2,
        models=models_dir,
    )
    assert_learns(run, steps)
    assert "(folder:" in run.stderr, "the catalogue model came from ONRAMP_MODELS"
    final = tmp_path / "out" / "final"
    assert len(generates(final)) == 6
    kept = json.loads((final / "onramp-run.json").read_text())
    assert kept == json.loads((tmp_path / "onramp-run.json").read_text()), "the run it was given"
    plan = kept["plan"]
    assert (plan["zero_stage"], plan["world_size"], plan["global_batch"]) == (2, 2, 8)


def test_lora_with_zero3_on_two_ranks_and_merge(tmp_path, models_dir):
    steps = 12
    run = run_trainer(
        tmp_path,
        spec_text(
            "lora",
            'model = "stories260K"',
            DATA / "chat.jsonl",
            steps,
            card="a100-80g",
            cards=2,
            parallel="[parallel]\nzero_stage = 3\n",
            train='lora_rank = 8\nlora_targets = ["all-linear"]',
            lr=1e-2,
            tail="[output]\nmerge_adapter = true\n",
        ),
        nproc=2,
        models=models_dir,
    )
    assert_learns(run, steps)
    # Built under zero.Init: each of the two ranks holds about half of the model, never all.
    held = re.search(r"this rank holds (\d+) of its (\d+) parameters", run.stderr)
    assert held, run.stderr[-3000:]
    assert 0 < int(held[1]) <= int(held[2]) // 2 + 64, held[0]
    final = tmp_path / "out" / "final"
    assert (final / "adapter_config.json").is_file()
    assert not (final / "model.safetensors").exists(), "only the adapter is saved"
    assert len(generates(final, adapter_of=models_dir / "stories260K")) == 6
    assert len(generates(tmp_path / "out" / "merged")) == 6


def test_deepspeed_steps_the_learning_rate_and_decay_as_the_cpu_does(tmp_path, models_dir):
    """The same spec on the CPU card (no DeepSpeed) and on two GPUs (DeepSpeed ZeRO-2, run here on
    the CPU): the learning rate of every step is the same, and so are the optimizer's groups'
    weight decays (biases and norms undecayed on both). DeepSpeed's own scheduler warms up on a
    log curve and starts its cosine a step early, and its optimizer decays every parameter."""
    steps = 10
    runs = {}
    for card in ("cpu", "a100-80g"):
        text = spec_text(
            "sft",
            'model = "stories260K"',
            DATA / "alpaca.jsonl",
            steps,
            card=card,
            cards=1 if card == "cpu" else 2,
            parallel="[parallel]\nzero_stage = 2\n" if card != "cpu" else "",
            train='schedule = "cosine"\nweight_decay = 0.05',
        ).replace("warmup = 2", "warmup = 3")
        # DeepSpeed under torchrun, as a job launches it; the schedule does not depend on ranks.
        nproc = 1 if card == "cpu" else 2
        runs[card] = run_trainer(tmp_path / card, text, nproc=nproc, models=models_dir)
        assert runs[card].rc == 0, runs[card].stderr[-3000:]
    # A step's line comes again when the validation loss joins it: one lr per step.
    lrs = {card: {m["step"]: m["lr"] for m in run.metrics} for card, run in runs.items()}
    assert sorted(lrs["cpu"]) == list(range(1, steps + 1))
    assert len(set(lrs["cpu"].values())) >= steps - 1, lrs  # a curve: warm-up, then cosine
    assert sorted(lrs["a100-80g"]) == sorted(lrs["cpu"])
    for step, lr in lrs["cpu"].items():
        assert lrs["a100-80g"][step] == pytest.approx(lr, rel=1e-9, abs=1e-12), (step, lrs)
    lines = {
        card: next(x for x in run.stderr.splitlines() if "weight decay by group" in x)
        for card, run in runs.items()
    }
    assert lines["cpu"].endswith("optimizer: AdamW, weight decay by group: 0.05, 0"), lines
    assert lines["a100-80g"] == lines["cpu"], lines


def test_pretrain_a_custom_architecture_on_plain_text(tmp_path, models_dir):
    steps = 15
    model = (
        '[model]\nname = "mini"\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 2\n'
        "ffn = 172\nvocab = 512"
    )
    # The [model] table must close before [data]: spec_text puts the model line first.
    run = run_trainer(
        tmp_path,
        spec_text("pretrain", model, "tinyshakespeare", steps),
        models=models_dir,
        # The corpus by its id, as a cluster's datasets root holds it.
        extra_env={"ONRAMP_DATASETS": str(shared_dir() / "data")},
    )
    assert_learns(run, steps)
    assert "(config: mini)" in run.stderr
    assert len(generates(tmp_path / "out" / "final")) == 6


def test_pretraining_a_catalogue_model_uses_its_own_tokenizer(tmp_path, models_dir):
    """Pretraining starts from random weights, but the text is cut by the catalogue model's own
    tokenizer (from its folder), not a SentencePiece model that merely has as many tokens: here
    there is none, only the model's folder."""
    only_the_model = tmp_path / "models"
    only_the_model.mkdir()
    (only_the_model / "stories260K").symlink_to(models_dir / "stories260K")
    steps = 6
    run = run_trainer(
        tmp_path / "job",
        spec_text("pretrain", 'model = "stories260K"', "tinyshakespeare", steps),
        models=only_the_model,
        extra_env={"ONRAMP_DATASETS": str(shared_dir() / "data")},
    )
    assert run.rc == 0, run.stderr[-3000:]
    assert "(config: " in run.stderr, "the weights are new, built from the numbers"
    from transformers import AutoTokenizer

    saved = AutoTokenizer.from_pretrained(tmp_path / "job" / "out" / "final")
    own = AutoTokenizer.from_pretrained(models_dir / "stories260K")
    assert saved.get_vocab() == own.get_vocab()
    # Neither the folder nor a tokenizer of its vocabulary: the refusal names both places.
    empty = tmp_path / "empty"
    empty.mkdir()
    run = run_trainer(
        tmp_path / "job2",
        spec_text("pretrain", 'model = "stories260K"', "tinyshakespeare", steps),
        models=empty,
        extra_env={"ONRAMP_DATASETS": str(shared_dir() / "data")},
    )
    assert run.rc != 0
    assert "stories260K" in run.stderr and "tok512.model" in run.stderr, run.stderr[-2000:]


def test_optimizer_offload_to_the_cpu(tmp_path, models_dir):
    steps = 8
    run = run_trainer(
        tmp_path,
        spec_text(
            "sft",
            'model = "stories260K"',
            DATA / "alpaca.jsonl",
            steps,
            card="a100-80g",
            cards=2,
            parallel='[parallel]\nzero_stage = 2\noffload_optimizer = "cpu"\n',
        ),
        nproc=2,
        models=models_dir,
    )
    assert_learns(run, steps)


def test_a_users_zero3_config_imported_into_the_spec_runs(tmp_path, models_dir):
    """transformers' usual ZeRO-3 config, "auto" values and all, carried into a spec by
    `onramp plan --deepspeed`: the run jobspec derives from that spec is what the config meant
    (ZeRO-3, the optimizer on the CPU with its own betas, epsilon and weight decay, its
    schedule, its clipping and its bucket sizes), and the trainer runs it."""
    steps = 8
    ds = {
        "bf16": {"enabled": "auto"},
        "optimizer": {
            "type": "AdamW",
            "params": {"lr": "auto", "betas": [0.85, 0.98], "eps": 1e-6, "weight_decay": 0.01},
        },
        "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 3}},
        "zero_optimization": {
            "stage": 3,
            "offload_optimizer": {"device": "cpu", "pin_memory": True},
            "stage3_gather_16bit_weights_on_model_save": True,
            "reduce_bucket_size": "auto",
            "stage3_prefetch_bucket_size": 2e7,
            "stage3_max_live_parameters": 3e8,
            "overlap_comm": False,
        },
        "gradient_clipping": 0.5,
        "train_micro_batch_size_per_gpu": "auto",
        "gradient_accumulation_steps": "auto",
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "ds_z3.json").write_text(json.dumps(ds))
    spec = tmp_path / "spec.toml"
    spec.write_text(
        spec_text(
            "sft", 'model = "stories260K"', DATA / "alpaca.jsonl", steps, card="a100-80g", cards=2
        )
    )
    from conftest import onramp_cli

    imported = subprocess.run(
        [str(onramp_cli()), "plan", "spec.toml", "--deepspeed", "ds_z3.json", "-o", "spec.toml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    run = run_of(spec.read_text(), tmp_path / "derived")
    zero = run.ds_config["zero_optimization"]
    assert (zero["stage"], zero["offload_optimizer"]["device"]) == (3, "cpu")
    # The schedule and the optimizer's numbers are the plan's: the Trainer builds both, and
    # DeepSpeed runs them (the run's ds_config has neither section).
    assert "scheduler" not in run.ds_config and "optimizer" not in run.ds_config
    assert (run.plan.hf_schedule, run.plan.warmup_steps) == ("linear", 3)
    o = run.plan.optim
    assert (list(o.betas), o.eps, o.weight_decay) == ([0.85, 0.98], 1e-6, 0.01)
    assert run.ds_config["gradient_clipping"] == 0.5
    assert (zero["stage3_prefetch_bucket_size"], zero["stage3_max_live_parameters"]) == (
        20_000_000,
        300_000_000,
    )
    assert zero["overlap_comm"] is False
    # Nothing of the config is left out of the job's run.
    assert "not-carried" not in imported.stdout + imported.stderr
    trained = run_trainer(tmp_path / "job", spec.read_text(), nproc=2, models=models_dir)
    assert_learns(trained, steps)
    # ZeRO-Offload steps DeepSpeed's CPU Adam, over the Trainer's groups: norms not decayed.
    assert "optimizer: DeepSpeedCPUAdam, weight decay by group: 0.01, 0\n" in trained.stderr


def test_resume_after_a_kill_continues_the_same_curve(tmp_path, models_dir):
    steps = 40
    text = spec_text(
        "sft",
        'model = "stories260K"',
        DATA / "alpaca.jsonl",
        steps,
        # Every checkpoint is kept, so the one the restart picks is the newest the kill left.
        tail="[checkpoint]\nevery_steps = 5\nkeep = 10\n",
    )
    whole = run_trainer(tmp_path / "whole", text, models=models_dir)
    assert whole.rc == 0, whole.stderr[-3000:]

    job = tmp_path / "job"
    proc = start(job, text, 1, environment(models_dir))
    try:
        # The kill follows step 12.
        seen, errors, drain = read_until(proc, '{"step": 12,')
    finally:
        stop(proc)
    drain.join(timeout=10)
    assert not (job / "out" / "final").exists(), "killed before the end"
    saved = sorted(int(p.name.split("-")[1]) for p in (job / "out").glob("checkpoint-*"))
    assert saved and saved[-1] >= 10, (saved, "".join(seen)[-2000:], "".join(errors)[-2000:])
    last = saved[-1]
    assert last < steps

    again = run_trainer(job, text, models=models_dir)
    assert again.rc == 0, again.stderr[-3000:]
    assert f"resuming from out/checkpoint-{last}" in again.stderr
    # The lines the killed run printed up to its checkpoint come again first (metrics.py replay).
    lines, printed = metrics_of(again.stdout), metrics_of("".join(seen))
    replayed = [m for m in lines if m["step"] <= last]
    assert replayed == [m for m in printed if m["step"] <= last] == lines[: len(replayed)]
    resumed = {m["step"]: m["loss"] for m in lines[len(replayed) :]}
    reference = whole.train_losses()
    assert min(resumed) == last + 1, "continues at the saved step"
    for s in range(last + 1, steps + 1):
        assert resumed[s] == pytest.approx(reference[s], rel=1e-3, abs=1e-4), s
    assert metrics_of("".join(seen))[0]["step"] == 1
    # The results keep the base model's measures and answers from the first start.
    results = json.loads((job / "out" / "results.json").read_text())
    expected = json.loads((tmp_path / "whole" / "out" / "results.json").read_text())
    assert results["history"][0]["step"] == 0
    assert results["table"][0]["base"] == pytest.approx(expected["table"][0]["base"], rel=1e-6)
    assert [s["base"] for s in results["samples"]] == [s["base"] for s in expected["samples"]]


def test_bad_lines_are_reported_with_their_numbers(tmp_path, models_dir):
    run = run_trainer(
        tmp_path,
        spec_text("sft", 'model = "stories260K"', DATA / "bad.jsonl", 2),
        models=models_dir,
    )
    assert run.rc == 0, run.stderr[-3000:]
    for n in (2, 3, 4, 6):
        assert f"bad.jsonl line {n}:" in run.stderr, run.stderr
    assert "line 1:" not in run.stderr and "line 7:" not in run.stderr
    assert "2 examples" in run.stderr


def test_a_dataset_with_no_usable_example_is_refused_before_training(tmp_path, models_dir):
    run = run_trainer(
        tmp_path,
        spec_text("sft", 'model = "stories260K"', DATA / "unusable.jsonl", 2),
        models=models_dir,
    )
    assert run.rc == 4
    assert "has no usable example" in run.stderr and "line 2:" in run.stderr
    assert run.metrics == []


def test_a_missing_dataset_names_where_it_looked(tmp_path, models_dir):
    run = run_trainer(
        tmp_path,
        spec_text("sft", 'model = "stories260K"', "no-such-set", 2),
        models=models_dir,
        extra_env={"ONRAMP_DATASETS": str(tmp_path / "datasets")},
    )
    assert run.rc == 4
    assert "dataset `no-such-set` not found" in run.stderr
    assert str(tmp_path / "datasets" / "no-such-set") in run.stderr


def test_a_missing_model_names_where_it_looked(tmp_path):
    empty = tmp_path / "models"
    empty.mkdir()
    run = run_trainer(
        tmp_path,
        # On an A100 it fits (jobspec derives no run for a spec that does not); run on the CPU.
        spec_text("lora", 'model = "qwen2.5-7b"', DATA / "alpaca.jsonl", 2, card="a100-80g"),
        models=empty,
    )
    assert run.rc == 3
    assert str(empty / "qwen2.5-7b") in run.stderr
    assert "Qwen/Qwen2.5-7B" in run.stderr


def test_qlora_on_a_machine_without_cuda_is_refused_before_any_work(tmp_path):
    run = run_trainer(
        tmp_path,
        spec_text(
            "qlora",
            'model = "qwen2.5-7b"',
            DATA / "alpaca.jsonl",
            2,
            card="rtx-4090",
            train='precision = "bf16"',
        ).replace('precision = "fp32"\n', "", 1),
    )
    assert run.rc == 7, run.stderr
    assert "qlora" in run.stderr and "CUDA" in run.stderr


def test_a_quantized_model_loads_on_its_own_ranks_gpu(monkeypatch):
    """QLoRA on many GPUs: bitsandbytes places the 4-bit model as it loads, so each rank names
    its own GPU (LOCAL_RANK); without it every rank's model would land on GPU 0."""
    from onramp_train import models

    quant = object()
    for rank in (0, 3):
        monkeypatch.setenv("LOCAL_RANK", str(rank))
        kwargs = models.load_kwargs("bfloat16", "sdpa", quant)
        assert kwargs["device_map"] == {"": rank} and kwargs["quantization_config"] is quant
    # Unquantized models are placed by the Trainer (or DeepSpeed), not at load; under ZeRO-3
    # DeepSpeed places the quantized one's parts too.
    assert "device_map" not in models.load_kwargs("bfloat16", "sdpa")
    assert "device_map" not in models.load_kwargs("bfloat16", "sdpa", quant, zero3=True)


def test_a_launch_that_does_not_match_the_spec_is_refused(tmp_path, models_dir):
    text = spec_text(
        "sft", 'model = "stories260K"', DATA / "alpaca.jsonl", 2, card="a100-80g", cards=2
    )
    run = run_trainer(tmp_path / "world", text, nproc=1, models=models_dir)
    assert run.rc == 2
    assert "plans 2 card(s) but 1 process(es)" in run.stderr


def test_the_trainer_does_what_the_run_says_not_what_it_would_derive(tmp_path, models_dir):
    """The run's numbers are the ones trained: a run whose steps, logging cadence and learning
    rate were changed after jobspec wrote it trains with the changed ones (the trainer derives
    nothing from the spec beside it, which still says 8 steps)."""
    text = spec_text("sft", 'model = "stories260K"', DATA / "alpaca.jsonl", 8)
    run_file = derive(text, tmp_path)
    run = json.loads(run_file.read_text())
    assert run["plan"]["max_steps"] == 8
    run["plan"].update(max_steps=5, logging_steps=1, lr=0.0, save_every_steps=100)
    run["plan"]["optim"]["lr"] = 0.0
    run_file.write_text(json.dumps(run))
    env = environment(models_dir)
    proc = subprocess.run(
        [sys.executable, "-m", "onramp_train", "onramp-run.json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    losses = {m["step"]: m["loss"] for m in metrics_of(proc.stdout)}
    assert sorted(losses) == [1, 2, 3, 4, 5], losses
    kept = json.loads((tmp_path / "out" / "final" / "onramp-run.json").read_text())
    assert kept["plan"]["max_steps"] == 5


def test_a_run_of_another_shape_is_refused_before_any_work(tmp_path):
    """A hand-edited or stale run: another version, a key the trainer does not know, one it
    lacks, a value of the wrong type. Each ends with exit status 2 and says where."""
    text = spec_text("sft", 'model = "stories260K"', DATA / "alpaca.jsonl", 2)
    good = json.loads(derive(text, tmp_path / "good").read_text())
    cases = {
        "version": (lambda r: r.update(version=1), "version 1"),
        "unknown": (lambda r: r["plan"].update(epochs=3), "plan has keys this trainer does not"),
        "missing": (lambda r: r["plan"].pop("max_steps"), "plan lacks max_steps"),
        "type": (lambda r: r["plan"].update(micro_batch="4"), "plan.micro_batch must be a whole"),
    }
    for name, (change, said) in cases.items():
        run = json.loads(json.dumps(good))
        change(run)
        work = tmp_path / name
        work.mkdir()
        (work / "onramp-run.json").write_text(json.dumps(run))
        proc = subprocess.run(
            [sys.executable, "-m", "onramp_train"],
            cwd=work,
            env=environment(None),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 2, (name, proc.stderr)
        assert "[spec]" in proc.stderr and said in proc.stderr, (name, proc.stderr)
        assert not (work / "out").exists(), name
    # A spec given where the run belongs says how to make the run.
    (tmp_path / "spec.toml").write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "onramp_train", "spec.toml"],
        cwd=tmp_path,
        env=environment(None),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert "onramp plan --trainer-run" in proc.stderr


def test_metrics_and_a_data_warning_reach_the_report_url_the_runner_gives(tmp_path, models_dir):
    from http.server import BaseHTTPRequestHandler, HTTPServer

    received: list[tuple[str, dict]] = []
    pushes: list[str] = []

    class Edge(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["content-length"]))
            if not self.path.endswith("/report"):
                # The trained model's push: this stand-in keeps no artifacts.
                pushes.append(self.path)
                self.send_response(404)
                self.end_headers()
                return
            received.append((self.headers["authorization"], json.loads(body)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Edge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        run = run_trainer(
            tmp_path,
            # A plan that assumed far more examples than the file holds.
            spec_text("sft", 'model = "stories260K"', DATA / "alpaca.jsonl", 3).replace(
                "seq_len = 64\n", "seq_len = 64\nexamples = 5000\n"
            ),
            models=models_dir,
            extra_env={
                "ONRAMP_REPORT_URL": f"http://127.0.0.1:{server.server_port}/api/jobs/j/report",
                "ONRAMP_REPORT_TOKEN": "job-token",
            },
        )
    finally:
        server.shutdown()
        server.server_close()
    assert run.rc == 0, run.stderr[-3000:]
    assert received, "no report arrived"
    assert {auth for auth, _ in received} == {"Bearer job-token"}
    posted = [m for _, body in received for m in body.get("metrics", [])]
    assert posted == run.metrics
    # The counts it found against the plan's: a warning for the job page.
    said = [body["message"] for _, body in received if "message" in body]
    assert any("the plan assumed data.examples = 5000" in m for m in said), said
    # The model's push was tried at the job's artifacts; refused here, it did not fail the job.
    assert pushes and pushes[0].startswith("/api/jobs/j/artifacts/model%2F"), pushes
    assert "could not push the artifacts" in run.stderr, run.stderr[-2000:]


def test_the_seed_is_set_before_the_model_and_its_adapters_are_made(
    tmp_path, models_dir, monkeypatch
):
    """A model from numbers and a LoRA adapter start from random weights: the same run must
    start from the same ones, and another seed from others."""
    import torch

    from onramp_train import models
    from onramp_train.train import initial_model

    monkeypatch.setenv("ONRAMP_MODELS", str(models_dir))
    lora = spec_text(
        "lora",
        'model = "stories260K"',
        DATA / "chat.jsonl",
        4,
        train='lora_rank = 4\nlora_targets = ["q_proj", "v_proj"]',
    )
    custom = spec_text(
        "pretrain",
        '[model]\nname = "mini"\nlayers = 1\nhidden = 32\nheads = 2\nkv_heads = 2\n'
        "ffn = 64\nvocab = 512",
        "tinyshakespeare",
        4,
    )

    made = iter(range(100))

    def weights(text: str, seed: int) -> dict:
        n = next(made)
        folder = tmp_path / f"run-{n}"
        folder.mkdir()
        plan = run_of(text.replace("[train]\n", f"[train]\nseed = {seed}\n"), folder).plan
        torch.manual_seed(7919 * n)  # whatever the generator held before must not matter
        model = initial_model(plan, models.resolve(plan), cuda=False)
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    for text in (lora, custom):
        a, b, c = weights(text, 1), weights(text, 1), weights(text, 2)
        random_ones = [k for k in a if "lora_A" in k] if text is lora else list(a)
        assert random_ones, list(a)
        assert all(torch.equal(a[k], b[k]) for k in random_ones)
        assert any(not torch.equal(a[k], c[k]) for k in random_ones)


def test_flash_attention_picks_the_attention_the_estimate_assumed(
    tmp_path, models_dir, monkeypatch
):
    """`train.flash_attention` (on by default) runs attention that stores no s×s scores: PyTorch's
    fused SDPA on this CPU (FlashAttention 2 only on a GPU that has it); off, eager attention.
    Both for a catalogue model loaded from its folder and for one built from its numbers."""
    from onramp_train import models
    from onramp_train.train import initial_model

    monkeypatch.setenv("ONRAMP_MODELS", str(models_dir))
    loaded = spec_text("sft", 'model = "stories260K"', DATA / "chat.jsonl", 4)
    custom = spec_text(
        "pretrain",
        '[model]\nname = "mini"\nlayers = 1\nhidden = 32\nheads = 2\nkv_heads = 2\n'
        "ffn = 64\nvocab = 512",
        "tinyshakespeare",
        4,
    )
    for n, (text, flash) in enumerate(
        [(loaded, True), (loaded, False), (custom, True), (custom, False)]
    ):
        folder = tmp_path / f"run-{n}"
        folder.mkdir()
        flag = "true" if flash else "false"
        text = text.replace("[train]\n", f"[train]\nflash_attention = {flag}\n")
        plan = run_of(text, folder).plan
        assert plan.flash_attention is flash
        model = initial_model(plan, models.resolve(plan), cuda=False)
        assert model.config._attn_implementation == ("sdpa" if flash else "eager")
        assert models.attention(plan, cuda=True) in (
            ("flash_attention_2", "sdpa") if flash else ("eager",)
        )


def test_a_report_answered_with_a_5xx_is_sent_again_and_a_refusal_is_not():
    """A metrics line the edge could not take (a 503 of a store's deadline or of the local
    proxy) is sent again, so the job's curve keeps every step; a refusal (4xx) is final."""
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from onramp_train.metrics import Reporter

    answers: list[int] = []
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            seen.append(self.rfile.read(int(self.headers["content-length"])).decode())
            self.send_response(answers.pop(0) if answers else 200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/report"
        answers[:] = [503, 500]
        Reporter(url, "token").send({"step": 1, "loss": 2.0})
        assert len(seen) == 3 and all('"step": 1' in s for s in seen), seen
        seen.clear()
        answers[:] = [409]
        Reporter(url, "token").send({"step": 2, "loss": 1.0})
        assert len(seen) == 1, seen
    finally:
        server.shutdown()
