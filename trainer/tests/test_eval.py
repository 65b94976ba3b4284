"""`[eval]` on real CPU runs: the base model measured before training and the trained one after,
on a held-out share or a dataset of its own; the prompts answered by both, exactly as
Transformers' `generate` answers them; and a prompt that does not fit refused before training."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

from conftest import derive, environment, run_trainer
from test_train import spec_text

WORDS = ["apple", "river", "candle", "mirror", "paper", "stone", "cloud", "garden", "window"]


def learnable(path: Path, n: int, seed: int, alpaca: bool = False) -> Path:
    """Chat (or alpaca) data with one rule to learn: the answer is the word asked for, said
    twice."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        for _ in range(n):
            w = rng.choice(WORDS)
            if alpaca:
                line = {"instruction": f"Say {w} twice.", "input": "", "output": f"{w} {w}."}
            else:
                msgs = [
                    {"role": "user", "content": f"Say {w} twice."},
                    {"role": "assistant", "content": f"{w} {w}."},
                ]
                line = {"messages": msgs}
            f.write(json.dumps(line) + "\n")
    return path


def greedy(model, ids: list[int], max_new: int, tok) -> list[int]:
    import torch

    x = torch.tensor([ids])
    with torch.no_grad():
        y = model.generate(
            input_ids=x,
            attention_mask=torch.ones_like(x),
            max_new_tokens=max_new,
            do_sample=False,
            num_beams=1,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
    return y[0, len(ids) :].tolist()


def test_a_lora_run_is_measured_before_and_after_and_answers_its_prompts(tmp_path, models_dir):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    learnable(tmp_path / "learn.jsonl", 200, seed=7)
    steps = 30
    run = run_trainer(
        tmp_path,
        spec_text(
            "lora",
            'model = "stories260K"',
            "learn.jsonl",
            steps,
            train='lora_rank = 8\nlora_targets = ["all-linear"]',
            lr=1e-2,
            tail="[eval]\nholdout = 0.1\nevery_steps = 10\nmax_new_tokens = 8\n"
            'prompts = ["Say candle twice.", "Say stone twice."]\n',
        ),
        models=models_dir,
    )
    assert run.rc == 0, run.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["eval_set"] == {"source": "holdout", "share": 0.1, "examples": 20}
    assert [h["step"] for h in results["history"]] == [0, 10, 20, 30]
    for h in results["history"]:
        assert math.isclose(h["perplexity"], math.exp(h["loss"]), rel_tol=1e-9)
        assert 0.0 <= h["token_accuracy"] <= 1.0
    table = {row["metric"]: row for row in results["table"]}
    assert set(table) == {"loss", "perplexity", "token_accuracy"}
    assert table["loss"]["trained"] < table["loss"]["base"] - 0.5, table
    assert table["token_accuracy"]["trained"] > table["token_accuracy"]["base"], table
    assert math.isclose(
        table["loss"]["change"], table["loss"]["trained"] - table["loss"]["base"], rel_tol=1e-9
    )
    assert results["history"][0]["loss"] == table["loss"]["base"]
    assert results["history"][-1]["loss"] == table["loss"]["trained"]
    assert "results: loss" in run.stderr

    # The answers are Transformers' own greedy answers, before and after.
    tok = AutoTokenizer.from_pretrained(tmp_path / "out" / "final")
    base = AutoModelForCausalLM.from_pretrained(models_dir / "stories260K")
    samples = results["samples"]
    assert len(samples) == 2
    for s in samples:
        assert "Say" in s["prompt"]
        assert s["base_ids"] == greedy(base, s["prompt_ids"], 8, tok)
        assert s["base"] == tok.decode(s["base_ids"], skip_special_tokens=True)
    trained = PeftModel.from_pretrained(base, tmp_path / "out" / "final")
    for s in samples:
        assert s["trained_ids"] == greedy(trained, s["prompt_ids"], 8, tok)
        assert s["trained"] == tok.decode(s["trained_ids"], skip_special_tokens=True)
    assert any(s["trained"] != s["base"] for s in samples)


def test_an_eval_dataset_of_its_own_and_the_eval_sets_own_prompts(tmp_path, models_dir):
    # Alpaca data this time: its token accuracy is measured too (over the answers).
    learnable(tmp_path / "learn.jsonl", 60, seed=1, alpaca=True)
    learnable(tmp_path / "held.jsonl", 12, seed=2, alpaca=True)
    run = run_trainer(
        tmp_path,
        spec_text(
            "sft",
            'model = "stories260K"',
            "learn.jsonl",
            4,
            tail='[eval]\ndataset = "held.jsonl"\nmax_examples = 10\n',
        ),
        models=models_dir,
    )
    assert run.rc == 0, run.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["eval_set"] == {"source": "dataset", "dataset": "held.jsonl", "examples": 10}
    assert "60 train" in run.stderr, "nothing is held out of the training data"
    table = {row["metric"]: row for row in results["table"]}
    assert set(table) == {"loss", "perplexity", "token_accuracy"}, table
    assert all(0.0 <= h["token_accuracy"] <= 1.0 for h in results["history"]), results["history"]
    # No prompts given: the eval set's first three, answered by both models.
    assert len(results["samples"]) == 3
    for s in results["samples"]:
        word = s["prompt"].split("Say ", 1)[1].split(" ", 1)[0]
        assert f"{word} {word}" not in s["prompt"], f"the prompt holds no answer: {s['prompt']!r}"
        assert s["base"] is not None
    assert all(s["trained"] is not None for s in results["samples"])


def test_a_prompt_that_does_not_fit_with_its_answer_is_refused_before_training(
    tmp_path, models_dir
):
    learnable(tmp_path / "learn.jsonl", 40, seed=3)
    text = spec_text("lora", 'model = "stories260K"', "learn.jsonl", 4)
    run_file = derive(text, tmp_path)
    run = json.loads(run_file.read_text())
    # jobspec bounds a prompt by its bytes; the trainer counts its tokens.
    run["plan"]["eval"]["prompts"] = ["Say candle twice. " * 8]
    run_file.write_text(json.dumps(run))
    proc = subprocess.run(
        [sys.executable, "-m", "onramp_train", "onramp-run.json"],
        cwd=tmp_path,
        env=environment(models_dir),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode != 0
    assert "prompt 1 of eval.prompts is" in proc.stderr, proc.stderr[-2000:]
    assert "data.seq_len = 64" in proc.stderr
    assert not (tmp_path / "out").exists(), "refused before any training"
