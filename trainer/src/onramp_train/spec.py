"""The run the trainer trains: jobspec's `onramp-run.json`, read strictly.

jobspec derives every value of a run from the spec (the batch identity, the steps, the
optimizer's numbers, precision, ZeRO and the ds_config, LoRA, checkpoints, the memory advice) and
writes it next to the job; `onramp plan --trainer-run SPEC > onramp-run.json` writes it by hand.
This module only reads it: a run of another version, with a key it does not know, without one
it needs, or with a value of the wrong type is refused, naming where. It derives nothing and has
no defaults (the shape is jobspec's `trainer::TrainerRun`, whose JSON Schema ships beside this
file as `run.schema.json`).
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import asdict, dataclass, fields, is_dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import SpecError

#: The one shape of `onramp-run.json` this trainer reads (jobspec's `trainer::RUN_VERSION`).
RUN_VERSION = 2

#: The file name every launch gives the run.
RUN_FILE = "onramp-run.json"


def catalog() -> dict[str, Any]:
    """jobspec's model catalogue, exported by its tests into the package."""
    text = resources.files("onramp_train").joinpath("catalog.json").read_text()
    return {m["id"]: m for m in json.loads(text)["models"]}


def schema() -> dict[str, Any]:
    """The JSON Schema of a run, exported by jobspec's tests into the package."""
    return json.loads(resources.files("onramp_train").joinpath("run.schema.json").read_text())


@dataclass(frozen=True)
class Arch:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    tied_embeddings: bool
    qkv_bias: bool


@dataclass(frozen=True)
class TrainerModel:
    """A catalogue model (`id`, `hf_repo`) or a custom architecture (`id` is None)."""

    id: str | None
    hf_repo: str | None
    name: str
    arch: Arch
    max_seq_len: int | None
    # Loading it runs its repo's own code: only where the operator allows the model.
    remote_code: bool


@dataclass(frozen=True)
class TrainerLora:
    r: int
    alpha: int
    targets: list[str]
    dropout: float


@dataclass(frozen=True)
class TrainerOptim:
    name: str
    lr: float
    betas: list[float]
    eps: float
    weight_decay: float
    momentum: float
    grad_clip: float


@dataclass(frozen=True)
class TrainerEval:
    """How the run is evaluated: a held-out share (`holdout`) or a dataset of its own, how
    often, and the prompts the base and the trained model answer (none: the eval set's first
    `default_prompts`)."""

    holdout: float | None
    dataset: str | None
    max_examples: int
    every_steps: int
    prompts: list[str]
    default_prompts: int
    max_new_tokens: int
    tasks: list[str]
    fewshot: int
    task_max_examples: int | None


@dataclass(frozen=True)
class TrainerPlan:
    name: str
    task: str
    model: TrainerModel
    dataset: str
    seq_len: int
    data_tokens: int | None
    data_examples: int | None
    card: str
    is_gpu: bool
    world_size: int
    dp: int
    micro_batch: int
    grad_accum: int
    global_batch: int
    max_steps: int
    lr: float
    optim: TrainerOptim
    warmup_steps: int
    schedule: str
    hf_schedule: str
    precision: str
    grad_checkpointing: bool
    flash_attention: bool
    zero_stage: int
    offload_optimizer: str
    offload_params: str
    sp: int
    lora: TrainerLora | None
    seed: int
    save_every_steps: int
    save_every_minutes: int
    keep_checkpoints: int
    resume: bool
    resume_from: str | None
    upload_checkpoint: bool
    logging_steps: int
    eval: TrainerEval
    merge_adapter: bool
    report_to: list[str]


@dataclass(frozen=True)
class RunPatch:
    path: str
    value: Any


@dataclass(frozen=True)
class RunFix:
    title: str
    patch: list[RunPatch]
    per_gpu_bytes: int


@dataclass(frozen=True)
class RunAdvice:
    card: str
    card_bytes: int
    per_gpu_bytes: int
    fits: bool
    fixes: list[RunFix]


@dataclass(frozen=True)
class TrainerRun:
    version: int
    plan: TrainerPlan
    ds_config: dict[str, Any] | None
    oom_advice: RunAdvice | None

    def export(self) -> dict[str, Any]:
        """The run as the JSON it was read from."""
        return asdict(self)


# The name the rest of the trainer uses for what a run trains.
Plan = TrainerPlan

HOW_TO_MAKE_ONE = "write one with `onramp plan --trainer-run SPEC > onramp-run.json`"


def load(path: Path) -> TrainerRun:
    """Reads and checks a run file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(f"cannot read the run {path}: {e}; {HOW_TO_MAKE_ONE}") from e
    return parse(text, str(path))


def parse(text: str, where: str = "the run") -> TrainerRun:
    try:
        doc = json.loads(text)
    except ValueError as e:
        hint = ""
        if text.lstrip().startswith(("name", "task", "[", "#")):
            hint = (
                " (it looks like a spec: the trainer reads the run jobspec derives from one; "
                f"{HOW_TO_MAKE_ONE})"
            )
        raise SpecError(f"{where} is not JSON: {e}{hint}") from e
    if not isinstance(doc, dict):
        raise SpecError(f"{where} is not a JSON object; {HOW_TO_MAKE_ONE}")
    version = doc.get("version")
    if version != RUN_VERSION or isinstance(version, bool):
        raise SpecError(
            f"{where} has version {json.dumps(version)}, and this trainer reads version "
            f"{RUN_VERSION} only: install the onramp-train that matches the jobspec that wrote it"
        )
    run = _read(TrainerRun, doc, "")
    if run.plan.task == "tiny-train":
        raise SpecError('task = "tiny-train" runs `onramp-runner tiny-train`, not onramp-train')
    return run


def _read(tp: Any, value: Any, at: str) -> Any:
    """`value` as type `tp`, or a SpecError naming the key path `at`."""
    where = at or "the run"
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        (inner,) = [o for o in options if o is not type(None)]
        return _read(inner, value, at)
    if is_dataclass(tp):
        if not isinstance(value, dict):
            raise SpecError(f"{where} must be an object, not {_kind(value)}")
        hints = typing.get_type_hints(tp)
        names = [f.name for f in fields(tp)]
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise SpecError(f"{where} has keys this trainer does not know: {', '.join(unknown)}")
        missing = [n for n in names if n not in value]
        if missing:
            raise SpecError(f"{where} lacks {', '.join(missing)}")
        return tp(**{n: _read(hints[n], value[n], f"{at}.{n}" if at else n) for n in names})
    if origin is list:
        (inner,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise SpecError(f"{where} must be a list, not {_kind(value)}")
        return [_read(inner, v, f"{at}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise SpecError(f"{where} must be an object, not {_kind(value)}")
        return value
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif tp is str:
        ok = isinstance(value, str)
    else:  # pragma: no cover - a field type this reader does not know is a bug here
        raise TypeError(f"no reader for {tp}")
    if not ok:
        want = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}
        raise SpecError(f"{where} must be {want[tp]}, not {_kind(value)} {json.dumps(value)}")
    return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )
