"""The job spec as jobspec reads it, and everything the trainer derives from it.

The spec arrives validated (the edge and the Plan page ran jobspec on it); this module fills in
jobspec's defaults and derives the run the same way jobspec does: the batch identity, the number
of optimizer steps, precision, ZeRO, LoRA and the ds_config. `trainer/tests/test_spec.py`
compares every derived value with jobspec's own export (`trainer/tests/fixtures/derived.json`,
written by jobspec's tests), so a disagreement fails a test instead of a job.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import SpecError

HF_SCHEDULE = {"cosine": "cosine", "linear": "linear", "constant": "constant_with_warmup"}
DEFAULT_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]
REPORT_TO = ("tensorboard", "wandb", "mlflow")


def catalog() -> dict[str, Any]:
    """jobspec's model catalogue, exported by its tests into the package."""
    text = resources.files("onramp_train").joinpath("catalog.json").read_text()
    return {m["id"]: m for m in json.loads(text)["models"]}


@dataclass(frozen=True)
class Arch:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    tied_embeddings: bool = False
    qkv_bias: bool = False


@dataclass(frozen=True)
class ModelChoice:
    """A catalogue model (`id`, `hf_repo`) or a custom architecture (`id` is None)."""

    id: str | None
    hf_repo: str | None
    name: str
    arch: Arch
    max_seq_len: int | None


@dataclass(frozen=True)
class Lora:
    r: int
    alpha: int
    targets: list[str]


@dataclass(frozen=True)
class Plan:
    """What one spec asks of the trainer, derived as jobspec derives it."""

    name: str
    task: str
    model: ModelChoice
    dataset: str
    seq_len: int
    data_tokens: int | None
    card: str
    is_gpu: bool
    world_size: int
    dp: int
    micro_batch: int
    grad_accum: int
    global_batch: int
    max_steps: int
    lr: float
    warmup_steps: int
    schedule: str
    hf_schedule: str
    precision: str
    grad_checkpointing: bool
    optimizer: str
    zero_stage: int
    offload_optimizer: str
    offload_params: str
    sp: int
    lora: Lora | None
    seed: int
    save_every_steps: int
    save_every_minutes: int
    keep_checkpoints: int
    resume: bool
    merge_adapter: bool
    report_to: list[str] = field(default_factory=list)

    def export(self) -> dict[str, Any]:
        """The same shape as jobspec's `trainer::TrainerPlan` JSON."""
        d = asdict(self)
        d["model"]["arch"] = asdict(self.model.arch)
        return d


def load(path: Path) -> tuple[Plan, dict[str, Any]]:
    """Reads a spec file; returns the plan and the ds_config jobspec generates for it."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(f"cannot read the spec {path}: {e}") from e
    return parse(text, str(path))


def parse(text: str, where: str = "spec") -> tuple[Plan, dict[str, Any]]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{where} is not valid TOML: {e}") from e
    plan = derive(doc)
    return plan, ds_config(plan)


def _table(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise SpecError(f"`{key}` must be a table")
    return value


def _model(value: Any) -> ModelChoice:
    if isinstance(value, dict) and "id" in value:
        value = value["id"]
    if isinstance(value, str):
        m = catalog().get(value)
        if m is None:
            raise SpecError(f"unknown model `{value}` (not in jobspec's catalogue)")
        return ModelChoice(
            id=m["id"],
            hf_repo=m["hf_repo"],
            name=m["display"],
            arch=Arch(**m["arch"]),
            max_seq_len=m["max_seq_len"],
        )
    if not isinstance(value, dict):
        raise SpecError("`model` must be a catalogue id or a [model] table")
    try:
        arch = Arch(
            layers=int(value["layers"]),
            hidden=int(value["hidden"]),
            heads=int(value["heads"]),
            kv_heads=int(value["kv_heads"]),
            ffn=int(value["ffn"]),
            vocab=int(value["vocab"]),
            tied_embeddings=bool(value.get("tied_embeddings", False)),
            qkv_bias=bool(value.get("qkv_bias", False)),
        )
    except KeyError as e:
        raise SpecError(f"[model] is missing `{e.args[0]}`") from e
    return ModelChoice(
        id=None, hf_repo=None, name=value.get("name") or "custom", arch=arch, max_seq_len=None
    )


def _recompute(value: Any) -> str:
    if value is True:
        return "full"
    if value is False or value is None:
        return "none"
    if value in ("none", "selective", "full"):
        return value
    raise SpecError(f"`train.grad_checkpointing` = {value!r} is not true, false or a mode")


def derive(doc: dict[str, Any]) -> Plan:
    """jobspec's reader defaults and `ValidSpec`'s derivations, in the same order."""
    for key in ("name", "task", "model", "data", "resources"):
        if key not in doc:
            raise SpecError(f"the spec has no `{key}`")
    task = doc["task"]
    if task == "tiny-train":
        raise SpecError('task = "tiny-train" runs `onramp-runner tiny-train`, not onramp-train')
    data = _table(doc, "data")
    train = _table(doc, "train")
    par = _table(doc, "parallel")
    res = _table(doc, "resources")
    ckpt = _table(doc, "checkpoint")
    out = _table(doc, "output")
    model = _model(doc["model"])

    card = res["card"]
    is_gpu = card != "cpu"
    cards_per_node = int(res.get("cards_per_node", 1))
    nodes = int(res.get("nodes", 1))
    world = cards_per_node * nodes
    tp, pp, sp = (int(par.get(k, 1)) for k in ("tp", "pp", "sp"))
    model_par = tp * pp * sp
    dp = world // model_par if model_par > 0 and world % model_par == 0 else 0
    micro = int(train.get("micro_batch", 1))
    accum = int(train.get("grad_accum", 1))
    global_batch = micro * accum * dp
    seq_len = int(data["seq_len"])
    tokens_per_step = global_batch * seq_len

    epochs = train.get("epochs")
    steps = train.get("steps")
    data_tokens = data.get("tokens")
    if steps is not None and epochs is not None:
        raise SpecError("give `train.epochs` or `train.steps`, not both")
    if steps is not None:
        max_steps = int(steps)
    else:
        if data_tokens is None:
            raise SpecError("training by epochs needs `data.tokens`; or give `train.steps`")
        # jobspec: `(tokens as f64 * epochs).min(1e18) as u64`, then a ceiling division.
        total = int(min(float(data_tokens) * float(epochs if epochs is not None else 1.0), 1e18))
        max_steps = 0 if tokens_per_step == 0 else -(-total // tokens_per_step)

    precision = train.get("precision", "bf16" if is_gpu else "fp32")
    schedule = train.get("schedule", "cosine")
    lora = None
    if task in ("lora", "qlora"):
        r = int(train.get("lora_rank", 16))
        lora = Lora(
            r=r,
            alpha=int(train.get("lora_alpha", r * 2)),
            targets=list(train.get("lora_targets", DEFAULT_LORA_TARGETS)),
        )
    report_to = list(out.get("report_to", []))
    for r in report_to:
        if r not in REPORT_TO:
            raise SpecError(f"`output.report_to` has {r!r}; known: {', '.join(REPORT_TO)}")

    return Plan(
        name=doc["name"],
        task=task,
        model=model,
        dataset=data["dataset"],
        seq_len=seq_len,
        data_tokens=data_tokens,
        card=card,
        is_gpu=is_gpu,
        world_size=world,
        dp=dp,
        micro_batch=micro,
        grad_accum=accum,
        global_batch=global_batch,
        max_steps=max_steps,
        lr=float(train.get("lr", 2e-5)),
        warmup_steps=int(train.get("warmup", 0)),
        schedule=schedule,
        hf_schedule=HF_SCHEDULE[schedule],
        precision=precision,
        grad_checkpointing=_recompute(train.get("grad_checkpointing", False)) != "none",
        optimizer=train.get("optimizer", "adamw"),
        zero_stage=int(par.get("zero_stage", 0)),
        offload_optimizer=par.get("offload_optimizer", "none"),
        offload_params=par.get("offload_params", "none"),
        sp=sp,
        lora=lora,
        seed=int(train.get("seed", 42)),
        save_every_steps=int(ckpt.get("every_steps", 500)),
        save_every_minutes=int(ckpt.get("every_minutes", 30)),
        keep_checkpoints=int(ckpt.get("keep", 3)),
        resume=bool(ckpt.get("resume", True)),
        merge_adapter=bool(out.get("merge_adapter", False)),
        report_to=report_to,
    )


def ds_config(p: Plan) -> dict[str, Any]:
    """jobspec's `deepspeed::ds_config`, key for key ({} for the CPU card, which runs without)."""
    if not p.is_gpu:
        return {}
    zero: dict[str, Any] = {"stage": p.zero_stage}
    if p.zero_stage > 0:
        zero.update(overlap_comm=True, contiguous_gradients=True, reduce_bucket_size=500_000_000)

    def offload(o: str) -> dict[str, Any] | None:
        if o == "cpu":
            return {"device": "cpu", "pin_memory": True}
        if o == "nvme":
            return {"device": "nvme", "nvme_path": "/local_nvme", "pin_memory": True}
        return None

    if (o := offload(p.offload_optimizer)) is not None:
        zero["offload_optimizer"] = o
    if (o := offload(p.offload_params)) is not None:
        zero["offload_param"] = o
    if p.zero_stage == 3:
        zero.update(
            stage3_gather_16bit_weights_on_model_save=True,
            stage3_prefetch_bucket_size=50_000_000,
            stage3_param_persistence_threshold=100_000,
        )
    # DeepSpeed 0.19.6 and newer reject warmup_num_steps = 0 (older ones clamped it to 2).
    warmup = max(1, p.warmup_steps)
    if p.optimizer == "adamw":
        optimizer = {
            "type": "AdamW",
            "params": {"lr": p.lr, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1},
        }
    else:
        optimizer = {"type": "SGD", "params": {"lr": p.lr, "momentum": 0.9}}
    if p.schedule == "cosine":
        scheduler = {
            "type": "WarmupCosineLR",
            "params": {"total_num_steps": p.max_steps, "warmup_num_steps": warmup},
        }
    elif p.schedule == "linear":
        scheduler = {
            "type": "WarmupDecayLR",
            "params": {
                "total_num_steps": p.max_steps,
                "warmup_num_steps": warmup,
                "warmup_max_lr": p.lr,
                "warmup_min_lr": 0.0,
            },
        }
    else:
        scheduler = {
            "type": "WarmupLR",
            "params": {
                "warmup_num_steps": warmup,
                "warmup_max_lr": p.lr,
                "warmup_min_lr": 0.0,
            },
        }
    cfg: dict[str, Any] = {
        "train_batch_size": p.global_batch,
        "train_micro_batch_size_per_gpu": p.micro_batch,
        "gradient_accumulation_steps": p.grad_accum,
        "gradient_clipping": 1.0,
    }
    if p.precision == "bf16":
        cfg["bf16"] = {"enabled": True}
    elif p.precision == "fp16":
        cfg["fp16"] = {
            "enabled": True,
            "loss_scale": 0,
            "initial_scale_power": 16,
            "loss_scale_window": 1000,
            "hysteresis": 2,
            "min_loss_scale": 1,
        }
    cfg["zero_optimization"] = zero
    cfg["optimizer"] = optimizer
    cfg["scheduler"] = scheduler
    if p.sp > 1:
        cfg["sequence_parallel_size"] = p.sp
    cfg["steps_per_print"] = 10
    cfg["wall_clock_breakdown"] = False
    return cfg
