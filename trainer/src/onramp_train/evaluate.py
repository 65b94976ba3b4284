"""What a run achieved: its eval set, its measures before, during and after training, and the
answers the base and the trained model give to the same prompts.

The eval set is a held-out share of the training data (`eval.holdout`, seeded, at most
`eval.max_examples`) or a dataset of its own (`eval.dataset`). Each evaluation measures the loss,
its perplexity and the token accuracy (the share of label tokens the model predicts exactly, on
the answers of chat and alpaca data, on every token of text). The base model is measured when
training starts (step 0, before any update), every `eval.every_steps` steps after, and the
trained model at the end. The prompts (`eval.prompts`, else the first prompts of the eval set)
are answered greedily, `eval.max_new_tokens` at most, by the base model before training and by
the trained model after, with one fixed generation setting, so the answers repeat.

Everything lands in `out/results.json` (pushed with the job's artifacts): the eval set, the
history, a table of base against trained, and the samples. A run that resumes keeps the base
measures and answers it recorded in `out/eval-base.json` when it first started.
"""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from . import benchmarks, data
from .errors import SpecError
from .spec import Plan

RESULTS_FILE = "results.json"
BASE_FILE = "eval-base.json"
RESULTS_VERSION = 1
#: How many tokens of a text example make its default prompt.
TEXT_PROMPT_TOKENS = 32


class Items:
    """Examples as the Trainer's dataset: all of `items`, or those at `keep` (in order), taken
    from `items` one at a time (a packed text corpus is never copied whole)."""

    def __init__(self, items, keep: list[int] | None = None):
        self.items, self.keep = items, keep

    def __len__(self):
        return len(self.items) if self.keep is None else len(self.keep)

    def __getitem__(self, i):
        return self.items[i if self.keep is None else self.keep[i]]

    def first(self, n: int) -> list:
        return [self[i] for i in range(min(n, len(self)))]


def split(items: list, plan: Plan, tok) -> tuple[Items, Items | None, dict[str, Any]]:
    """(train set, eval set or None, what the eval set is) for this run's `[eval]`."""
    e = plan.eval
    order = list(range(len(items)))
    random.Random(plan.seed).shuffle(order)
    if e.dataset is not None:
        ex = data.load(e.dataset, tok, plan.seq_len, plan.task)
        held = _capped(ex.items, e.max_examples, plan.seed)
        about = {"source": "dataset", "dataset": e.dataset, "examples": len(held)}
        return Items(items), Items(held), about
    share = e.holdout or 0.0
    n_eval = min(e.max_examples, math.floor(len(items) * share + 1e-9))
    about = {"source": "holdout", "share": share, "examples": n_eval}
    if n_eval == 0:
        return Items(items), None, about
    held = set(order[:n_eval])
    train = [i for i in range(len(items)) if i not in held]
    return Items(items, train), Items([items[i] for i in sorted(held)]), about


def _capped(items: list, most: int, seed: int) -> list:
    if len(items) <= most:
        return list(items)
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    return [items[i] for i in sorted(order[:most])]


def prompt_ids(fmt: str, tok, prompt: str) -> list[int]:
    """A prompt's tokens as training renders a prompt of this data format: a user turn with the
    generation prompt for chat and alpaca data, the bare text otherwise."""
    if fmt in ("chat", "alpaca"):
        text = tok.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )
    else:
        text = prompt
    return tok(text, add_special_tokens=False)["input_ids"]


def prompts(plan: Plan, fmt: str, tok, eval_set: Items | None) -> list[list[int]]:
    """The token ids of each prompt the models answer; a prompt that cannot fit with its answer
    in `data.seq_len` is refused before training."""
    e = plan.eval
    if e.prompts:
        out = []
        for n, p in enumerate(e.prompts, start=1):
            ids = prompt_ids(fmt, tok, p)
            if len(ids) + e.max_new_tokens > plan.seq_len:
                raise SpecError(
                    f"prompt {n} of eval.prompts is {len(ids)} tokens with {plan.model.name}'s "
                    f"tokenizer; with its answer of up to eval.max_new_tokens = "
                    f"{e.max_new_tokens} it does not fit in data.seq_len = {plan.seq_len}: "
                    "shorten it, lower eval.max_new_tokens or raise data.seq_len"
                )
            out.append(ids)
        return out
    out = []
    for item in eval_set.first(e.default_prompts) if eval_set else []:
        labels = item["labels"]
        cut = next((i for i, lab in enumerate(labels) if lab != data.IGNORE), len(labels))
        if cut == 0:  # text: every token is learned; its start is the prompt
            cut = min(TEXT_PROMPT_TOKENS, len(labels) // 2)
        cut = min(cut, plan.seq_len - e.max_new_tokens)
        if cut > 0:
            out.append(list(item["input_ids"][:cut]))
    return out


def argmax_logits(logits, labels):
    """What the eval keeps of the logits: the predicted token at each place."""
    if isinstance(logits, tuple):
        logits = logits[0]
    return logits.argmax(-1)


def token_accuracy(p) -> dict[str, float]:
    """The share of label tokens predicted exactly (the prediction at place i is for i + 1)."""
    import numpy as np

    preds, labels = np.asarray(p.predictions), np.asarray(p.label_ids)
    pred, lab = preds[:, :-1], labels[:, 1:]
    mask = lab != data.IGNORE
    n = int(mask.sum())
    return {"token_accuracy": float((pred[mask] == lab[mask]).sum()) / n if n else 0.0}


def answer(model, tok, prompt_list: list[list[int]], max_new: int, synced: bool) -> list[dict]:
    """Each prompt's greedy answer: its new tokens and their text."""
    import torch
    from transformers import GenerationConfig

    if not prompt_list:
        return []
    config = GenerationConfig(
        max_new_tokens=max_new,
        do_sample=False,
        num_beams=1,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
    )
    training = model.training
    model.eval()
    device = next(model.parameters()).device
    out = []
    with torch.no_grad():
        for ids in prompt_list:
            x = torch.tensor([ids], device=device)
            y = model.generate(
                input_ids=x,
                attention_mask=torch.ones_like(x),
                generation_config=config,
                synced_gpus=synced,
            )
            new = y[0, len(ids) :].tolist()
            out.append({"ids": new, "text": tok.decode(new, skip_special_tokens=True)})
    if training:
        model.train()
    return out


def _finite(x: float) -> float | None:
    """A number JSON can hold: a diverged run's NaN or infinity is written as null."""
    return x if math.isfinite(x) else None


def measures(metrics: dict[str, float]) -> dict[str, float | None]:
    """An evaluation's loss, perplexity and token accuracy, from the Trainer's metrics."""
    loss = _finite(float(metrics["eval_loss"]))
    ppl = math.exp(min(loss, 700.0)) if loss is not None else None
    out = {"loss": loss, "perplexity": ppl}
    if "eval_token_accuracy" in metrics:
        out["token_accuracy"] = _finite(float(metrics["eval_token_accuracy"]))
    return out


def rank0() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


class Baseline(TrainerCallback):
    """Measures the base model and has it answer the prompts when training starts from step 0
    (a resumed run reads what its first start recorded), and has the Trainer evaluate after its
    last step too (inside training, so trackers record it with the run)."""

    def __init__(self, out: Path, tok, prompt_list: list[list[int]], plan: Plan, synced: bool):
        self.out, self.tok, self.prompts = out, tok, prompt_list
        self.plan, self.max_new, self.synced = plan, plan.eval.max_new_tokens, synced
        self.trainer = None
        self.base: dict[str, Any] | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        path = self.out / BASE_FILE
        if path.is_file():
            self.base = json.loads(path.read_text(encoding="utf-8"))
            return
        if state.global_step != 0 or self.trainer is None:
            return
        t = self.trainer
        metrics = t.evaluate() if t.eval_dataset is not None else None
        answers = answer(t.model, self.tok, self.prompts, self.max_new, self.synced)
        self.base = {"measures": measures(metrics) if metrics else None, "answers": answers}
        if rank0():
            # The benchmarks on rank 0 alone (jobspec refuses a model spread over ranks); the
            # other ranks wait for it at their first step.
            self.base["benchmarks"] = benchmarks.score(t.model, self.tok, self.plan)
            self.out.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self.base, ensure_ascii=False, indent=1) + "\n")

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= state.max_steps and args.eval_strategy != "no":
            control.should_evaluate = True


def results(
    plan: Plan,
    about: dict[str, Any],
    log_history: list[dict[str, Any]],
    base: dict[str, Any] | None,
    trained_answers: list[dict],
    prompt_list: list[list[int]],
    tok,
    trained_scores: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The document `results.json` holds."""
    history = []
    for h in log_history:
        if "eval_loss" in h and not any(x["step"] == h["step"] for x in history):
            history.append({"step": int(h["step"]), **measures(h)})
    # The Trainer's evaluation after the last step.
    trained = dict(history[-1]) if history and history[-1]["step"] == plan.max_steps else None
    if trained:
        trained.pop("step")
    before = (base or {}).get("measures")
    table = []
    for name in ("loss", "perplexity", "token_accuracy"):
        b = before.get(name) if before else None
        a = trained.get(name) if trained else None
        if a is None and b is None:
            continue
        change = a - b if a is not None and b is not None else None
        table.append({"metric": name, "base": b, "trained": a, "change": change})
    base_answers = (base or {}).get("answers") or []
    samples = []
    for i, ids in enumerate(prompt_list):
        samples.append(
            {
                "prompt": tok.decode(ids, skip_special_tokens=False),
                "prompt_ids": ids,
                "base": base_answers[i]["text"] if i < len(base_answers) else None,
                "base_ids": base_answers[i]["ids"] if i < len(base_answers) else None,
                "trained": trained_answers[i]["text"] if i < len(trained_answers) else None,
                "trained_ids": trained_answers[i]["ids"] if i < len(trained_answers) else None,
            }
        )
    return {
        "version": RESULTS_VERSION,
        "eval_set": about,
        "history": history,
        "table": table,
        "samples": samples,
        "benchmarks": benchmarks.table(
            (base or {}).get("benchmarks"), trained_scores, plan.eval.fewshot
        ),
        "generation": {"max_new_tokens": plan.eval.max_new_tokens, "greedy": True},
    }


def results_line(doc: dict) -> str:
    """What the log says of the results: each measure and benchmark, base → trained."""
    parts = []
    for row in doc["table"]:
        b, a = row["base"], row["trained"]
        if b is not None and a is not None:
            parts.append(f"{row['metric']} {b:.4g} → {a:.4g}")
        elif a is not None:
            parts.append(f"{row['metric']} {a:.4g}")
    for row in doc.get("benchmarks", []):
        b, a = row["base"], row["trained"]
        if b is not None and a is not None:
            parts.append(f"{row['task']} {row['metric']} {b:.4g} → {a:.4g}")
    samples = len(doc["samples"])
    return f"results: {', '.join(parts) or 'no eval set'}; {samples} prompts answered"
