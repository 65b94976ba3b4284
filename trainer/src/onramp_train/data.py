"""Training data: JSONL in the alpaca (`instruction`, `input`, `output`) or chat (`messages`)
formats rendered with the model's chat template, or plain text packed to `seq_len`.

A dataset id resolves under `ONRAMP_DATASETS` (`<id>`, `<id>.jsonl`, `<id>.txt`), else the value
is a path inside the job's folder; an absolute path, a home folder or `..` is refused. Bad lines
are reported with their line numbers; a dataset with no usable example is refused before
training.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import DataError

IGNORE = -100
MAX_REPORTED = 10


@dataclass
class Examples:
    """Tokenized examples (`input_ids`, `labels`) and what was wrong with the rest."""

    items: list[dict[str, list[int]]]
    fmt: str
    path: Path
    bad_lines: list[str] = field(default_factory=list)
    tokens: int = 0


def escapes(dataset: str) -> str | None:
    """Why `dataset` would reach outside the datasets root or the job's folder (jobspec refuses
    the same: an absolute path, a home folder, a `..` component), or None."""
    if dataset.startswith(("/", "\\")):
        return "is an absolute path"
    if dataset.startswith("~"):
        return "names a home folder"
    if ".." in dataset.replace("\\", "/").split("/"):
        return "leaves its folder through `..`"
    return None


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, links followed, is a file inside `root`."""
    try:
        return path.is_file() and path.resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def resolve(dataset: str) -> Path:
    why = escapes(dataset)
    if why:
        raise DataError(
            f"dataset `{dataset}` {why}; a job reads a dataset the cluster holds, by its id, "
            "or a file inside its own folder, by a relative path"
        )
    looked = []
    root = os.environ.get("ONRAMP_DATASETS")
    if root:
        for name in (dataset, f"{dataset}.jsonl", f"{dataset}.txt"):
            p = Path(root) / name
            if p.is_file():  # the operator's folder: its links are the operator's
                return p
        looked.append(f"{Path(root) / dataset}[.jsonl|.txt]")
    else:
        looked.append("ONRAMP_DATASETS/<id> (ONRAMP_DATASETS is not set)")
    p = Path(dataset)
    if inside(p, Path.cwd()):
        return p
    looked.append(f"the path {p.resolve()}")
    raise DataError(f"dataset `{dataset}` not found; looked in: " + "; ".join(looked))


def load(dataset: str, tokenizer, seq_len: int, task: str) -> Examples:
    path = resolve(dataset)
    if path.suffix in (".jsonl", ".json"):
        ex = _jsonl(path, tokenizer, seq_len)
    else:
        ex = _text(path, tokenizer, seq_len)
    if not ex.items:
        detail = "; ".join(ex.bad_lines[:MAX_REPORTED])
        raise DataError(
            f"{path} has no usable example" + (f": {detail}" if detail else " (it is empty)")
        )
    if task == "pretrain" and ex.fmt != "text":
        # Pretraining learns every token, prompt included.
        for item in ex.items:
            item["labels"] = list(item["input_ids"])
    return ex


def _text(path: Path, tokenizer, seq_len: int) -> Examples:
    """The whole file as one token stream, cut into seq_len windows (the last partial dropped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"cannot read {path}: {e}") from e
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    n = len(ids) // seq_len
    items = [{"input_ids": ids[i * seq_len : (i + 1) * seq_len]} for i in range(n)]
    for item in items:
        item["labels"] = list(item["input_ids"])
    bad = [] if n else [f"only {len(ids)} tokens, fewer than one sequence of {seq_len}"]
    return Examples(items, "text", path, bad, n * seq_len)


def _jsonl(path: Path, tokenizer, seq_len: int) -> Examples:
    items: list[dict[str, list[int]]] = []
    bad: list[str] = []
    fmt = None
    tokens = 0
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"cannot read {path}: {e}") from e
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            messages, kind = _messages(record)
            item = _render(messages, tokenizer, seq_len)
        except ValueError as e:
            bad.append(f"line {no}: {e}")
            continue
        fmt = fmt or kind
        items.append(item)
        tokens += len(item["input_ids"])
    return Examples(items, fmt or "jsonl", path, bad, tokens)


def _messages(record) -> tuple[list[dict[str, str]], str]:
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    if "messages" in record:
        msgs = record["messages"]
        if not isinstance(msgs, list) or not msgs:
            raise ValueError("`messages` must be a non-empty list")
        for m in msgs:
            if not (isinstance(m, dict) and isinstance(m.get("content"), str)):
                raise ValueError("each message needs a string `content`")
            if m.get("role") not in ("system", "user", "assistant"):
                raise ValueError(f"unknown role {m.get('role')!r}")
        if msgs[-1]["role"] != "assistant":
            raise ValueError("the last message must be the assistant's")
        return [{"role": m["role"], "content": m["content"]} for m in msgs], "chat"
    if "instruction" in record and "output" in record:
        inst, inp, out = record["instruction"], record.get("input", ""), record["output"]
        if not all(isinstance(x, str) for x in (inst, inp, out)):
            raise ValueError("`instruction`, `input` and `output` must be strings")
        if not out.strip():
            raise ValueError("`output` is empty")
        prompt = f"{inst}\n\n{inp}" if inp.strip() else inst
        return [
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": out},
        ], "alpaca"
    raise ValueError("neither alpaca (`instruction`, `output`) nor chat (`messages`)")


def _render(messages, tokenizer, seq_len: int) -> dict[str, list[int]]:
    """Token ids of the whole conversation; only the last answer is learned (the rest is
    masked with -100)."""
    full = tokenizer.apply_chat_template(messages, tokenize=False)
    prompt = tokenizer.apply_chat_template(
        messages[:-1], tokenize=False, add_generation_prompt=True
    )
    full_ids = tokenizer(full, add_special_tokens=False)["input_ids"]
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    if len(prompt_ids) >= seq_len:
        raise ValueError(f"the prompt alone is {len(prompt_ids)} tokens, seq_len is {seq_len}")
    full_ids = full_ids[:seq_len]
    labels = [IGNORE] * len(prompt_ids) + full_ids[len(prompt_ids) :]
    return {"input_ids": full_ids, "labels": labels[: len(full_ids)]}
