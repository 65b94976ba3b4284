"""One training run: the run's settings as Hugging Face TrainingArguments, PEFT for adapters,
DeepSpeed from the run's ds_config, checkpoints and resume by the Trainer itself. Every number
comes from the run jobspec derived (`spec.TrainerRun`); none is chosen here."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from . import artifacts, benchmarks, data, evaluate, models
from .errors import CommError, DeviceError, OutOfMemory, SpecError
from .metrics import MetricsLines, Reporter, SaveEveryMinutes
from .spec import RUN_FILE, Plan, RunAdvice, TrainerRun
from .stop import StopOnSignal, last_checkpoint


def say(msg: str) -> None:
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"onramp-train: {msg}", file=sys.stderr, flush=True)


def tracker_destinations(plan: Plan, out: Path) -> list[str]:
    """Where each tracker of `output.report_to` writes, when the job's environment does not say
    (a backend's `env` may set any of these variables). Without a W&B key the run is recorded
    offline in the work directory (`wandb sync` uploads it later) instead of waiting for a login
    nobody can type; MLflow without a tracking server writes to an SQLite store there (`mlflow ui
    --backend-store-uri sqlite:///…/mlflow.db` shows it). Returns one
    line per tracker for the log."""
    lines = []
    out = out.resolve()
    if "tensorboard" in plan.report_to:
        os.environ.setdefault("TENSORBOARD_LOGGING_DIR", str(out / "tensorboard"))
        lines.append(f"tensorboard: event files in {os.environ['TENSORBOARD_LOGGING_DIR']}")
    if "wandb" in plan.report_to:
        os.environ.setdefault("WANDB_PROJECT", "onramp")
        os.environ.setdefault("WANDB_DIR", str(out))
        if not os.environ.get("WANDB_MODE") and not _wandb_key():
            os.environ["WANDB_MODE"] = "offline"
        where = os.environ["WANDB_DIR"]
        mode = os.environ.get("WANDB_MODE", "online")
        lines.append(f"wandb: project {os.environ['WANDB_PROJECT']}, {mode}, files in {where}")
    if "mlflow" in plan.report_to:
        os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{out / 'mlflow.db'}")
        os.environ.setdefault("MLFLOW_EXPERIMENT_NAME", "onramp")
        lines.append(
            f"mlflow: experiment {os.environ['MLFLOW_EXPERIMENT_NAME']} at "
            f"{os.environ['MLFLOW_TRACKING_URI']}"
        )
    return lines


def _wandb_key() -> bool:
    """Whether W&B has a key: WANDB_API_KEY, or a `wandb login` entry in ~/.netrc."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    import netrc

    try:
        hosts = netrc.netrc().hosts
    except (OSError, netrc.NetrcParseError):
        return False
    return any("wandb" in host for host in hosts)


def training_arguments(plan: Plan, ds: dict[str, Any], out: Path, cuda: bool, evaluate: bool):
    from transformers import TrainingArguments

    steps = plan.max_steps
    o = plan.optim
    extra: dict[str, Any] = {}
    chosen = optimizer_class(plan, ds)
    if chosen is not None:
        extra["optimizer_cls_and_kwargs"] = chosen
    return extra, TrainingArguments(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=plan.micro_batch,
        per_device_eval_batch_size=plan.micro_batch,
        gradient_accumulation_steps=plan.grad_accum,
        learning_rate=o.lr,
        warmup_steps=plan.warmup_steps,
        lr_scheduler_type=plan.hf_schedule,
        # The Trainer's optimizer and schedule, with DeepSpeed too: the run's ds_config has
        # neither, so a GPU run decays and steps its learning rate as the CPU run does.
        optim="adamw_torch" if o.name == "adamw" else "sgd",
        adam_beta1=o.betas[0],
        adam_beta2=o.betas[1],
        adam_epsilon=o.eps,
        weight_decay=o.weight_decay,
        max_grad_norm=o.grad_clip,
        bf16=plan.precision == "bf16" and (cuda or bool(ds)),
        fp16=plan.precision == "fp16" and cuda,
        gradient_checkpointing=plan.grad_checkpointing,
        seed=plan.seed,
        data_seed=plan.seed,
        logging_steps=plan.logging_steps,
        eval_strategy="steps" if evaluate else "no",
        eval_steps=plan.eval.every_steps,
        save_strategy="steps",
        save_steps=max(1, plan.save_every_steps),
        save_total_limit=plan.keep_checkpoints,
        report_to=plan.report_to or "none",
        run_name=plan.name,
        deepspeed=ds or None,
        use_cpu=not cuda,
        ddp_backend="gloo" if not cuda and plan.world_size > 1 else None,
        include_num_input_tokens_seen=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
        parallelism_config=sequence_parallel(plan, cuda),
    )


def collator(plan: Plan, tok):
    """Pads each batch to its longest example, labels with the ignored index. Under sequence
    parallelism on the right, to a multiple of `sp` (Ulysses cuts each sequence into `sp` equal
    parts and attends without the padding mask, so padding must come after every real token),
    with every token's position given, as its part no longer says where it sits."""
    import copy

    from transformers import DataCollatorForSeq2Seq

    if plan.sp <= 1:
        return DataCollatorForSeq2Seq(tok, padding=True, label_pad_token_id=data.IGNORE)
    tok = copy.copy(tok)
    tok.padding_side = "right"
    pad = DataCollatorForSeq2Seq(
        tok, padding=True, label_pad_token_id=data.IGNORE, pad_to_multiple_of=plan.sp
    )

    def with_positions(features):
        import torch

        batch = pad(features)
        ids = batch["input_ids"]
        batch["position_ids"] = torch.arange(ids.shape[1]).expand_as(ids).clone()
        return batch

    return with_positions


def sequence_parallel(plan: Plan, cuda: bool):
    """`parallel.sp`: DeepSpeed's Ulysses sequence parallelism (ALST) through Accelerate. Each
    group of `sp` ranks reads the same sequences, holds 1/sp of each one's tokens, and swaps
    heads for tokens around attention (all-to-all); None without it."""
    if plan.sp <= 1:
        return None
    from accelerate.parallelism_config import ParallelismConfig
    from accelerate.utils import DeepSpeedSequenceParallelConfig

    return ParallelismConfig(
        sp_backend="deepspeed",
        sp_size=plan.sp,
        dp_shard_size=1,
        sp_handler=DeepSpeedSequenceParallelConfig(
            sp_seq_length_is_variable=True,
            sp_attn_implementation=models.attention(plan, cuda),
        ),
    )


def optimizer_class(plan: Plan, ds: dict[str, Any]):
    """The optimizer the Trainer builds in place of its `optim` (None: `optim` itself), over its
    parameter groups (weight decay spares biases and norms) with the run's numbers. The Trainer's
    own "sgd" takes no momentum, so SGD is torch's; AdamW whose states DeepSpeed offloads is
    DeepSpeed's CPU Adam, the optimizer ZeRO-Offload steps on the host."""
    import torch

    o = plan.optim
    if o.name == "sgd":
        return torch.optim.SGD, {"lr": o.lr, "momentum": o.momentum}
    offload = (ds.get("zero_optimization") or {}).get("offload_optimizer") or {}
    if offload.get("device") in ("cpu", "nvme"):
        from deepspeed.ops.adam import DeepSpeedCPUAdam

        adam = {"lr": o.lr, "betas": tuple(o.betas), "eps": o.eps, "adamw_mode": True}
        return DeepSpeedCPUAdam, adam
    return None


def optimizer_line(optimizer) -> str:
    """The optimizer that steps, under its wrappers (Accelerate's, ZeRO's), and the weight decay
    of each of its parameter groups (DeepSpeed drops a group left empty, as the no-decay one is
    when only adapters train)."""
    inner = optimizer
    while getattr(inner, "optimizer", None) is not None:
        inner = inner.optimizer
    decays = [f"{g.get('weight_decay', 0.0):g}" for g in getattr(inner, "param_groups", [])]
    return f"optimizer: {type(inner).__name__}, weight decay by group: {', '.join(decays)}"


class OptimizerLine(TrainerCallback):
    """The optimizer that steps; under tensor parallelism, the slice of a layer this rank holds."""

    def __init__(self, tp: int, hidden: int):
        self.tp, self.hidden = tp, hidden

    def on_train_begin(self, args, state, control, optimizer=None, model=None, **kwargs):
        say(optimizer_line(optimizer))
        q = next((p for n, p in model.named_parameters() if n.endswith("q_proj.weight")), None)
        if self.tp > 1 and q is not None:
            say(f"q_proj: {list(q.shape)} of {[self.hidden, self.hidden]} on this rank")


# Where a job finds its node's NVMe folder: the backend's `nvme_path`.
NVME_PATH_ENV = "ONRAMP_NVME_PATH"


def nvme_offload(ds: dict[str, Any], out: Path) -> tuple[dict[str, Any], Path | None]:
    """The ds_config with every offload to NVMe swapping in a folder of this job's own under the
    node's NVMe folder (`ONRAMP_NVME_PATH`; jobspec's config holds a placeholder there), and that
    folder; the config as it is and None when nothing goes to NVMe. Jobs that share a node never
    share swap files."""
    zero = ds.get("zero_optimization") or {}
    keys = [
        k
        for k in ("offload_optimizer", "offload_param")
        if (zero.get(k) or {}).get("device") == "nvme"
    ]
    if not keys:
        return ds, None
    root = os.environ.get(NVME_PATH_ENV)
    if not root:
        raise DeviceError(
            "the run offloads to NVMe, but its backend names no NVMe folder on its nodes: set the "
            f"backend's nvme_path (it reaches the job as {NVME_PATH_ENV}), or offload to the CPU"
        )
    job = os.environ.get("ONRAMP_JOB_ID") or out.resolve().parent.name
    name = "".join(c for c in job if c.isascii() and (c.isalnum() or c in "-_")) or "job"
    folder = Path(root) / f"onramp-{name}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DeviceError(f"cannot make the NVMe swap folder {folder}: {e}") from e
    zero = {**zero, **{k: {**zero[k], "nvme_path": str(folder)} for k in keys}}
    return {**ds, "zero_optimization": zero}, folder


def run(the_run: TrainerRun, out: Path) -> Path:
    """Trains the run into `out`; an NVMe swap folder it made goes when it ends, however."""
    ds, swap = nvme_offload(the_run.ds_config or {}, out)
    if ds and (the_run.plan.sp > 1 or "tensor_parallel" in ds):
        # Transformers checks the batch as ranks × micro × accumulation; it is the data-parallel
        # groups' (jobspec's figure), which Accelerate gives DeepSpeed's Ulysses and AutoTP.
        ds = {**ds, "train_batch_size": "auto"}
    if swap is not None:
        say(f"offload: NVMe swap files in {swap}")
    try:
        return _train(the_run, ds, out)
    finally:
        if swap is not None:
            shutil.rmtree(swap, ignore_errors=True)


def gloo_collectives() -> None:
    """DeepSpeed ranks on the CPU talk through gloo, as the Trainer's do, not through DeepSpeed's
    shared-memory all-reduce: that one is C++ built on first use, which needs a compiler on every
    node and joins only the ranks of one node. DeepSpeed reads which ops it may build from this
    dict, which it keeps once probed."""
    import deepspeed.ops

    deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False


def _train(the_run: TrainerRun, ds: dict[str, Any], out: Path) -> Path:
    import torch
    from transformers import PrinterCallback, Trainer

    plan = the_run.plan
    cuda = torch.cuda.is_available()
    if ds and not cuda:
        gloo_collectives()
    source = models.resolve(plan)
    tok = models.tokenizer(plan, source)
    examples = data.load(plan.dataset, tok, plan.seq_len, plan.task)
    for line in examples.bad_lines[: data.MAX_REPORTED]:
        say(f"skipped {examples.path} {line}")
    if len(examples.bad_lines) > data.MAX_REPORTED:
        say(f"… and {len(examples.bad_lines) - data.MAX_REPORTED} more bad lines")
    say(
        f"{plan.task} of {plan.model.name} ({source.kind}: {source.where}) on {examples.path} "
        f"({examples.fmt}, {len(examples.items)} examples, {examples.tokens} tokens), "
        f"{plan.max_steps} steps of {plan.global_batch} sequences"
    )
    train_set, eval_set, about = evaluate.split(examples.items, plan, tok)
    say(
        f"counted {len(examples.items)} examples, {examples.tokens} tokens; "
        f"{len(train_set)} train, {len(eval_set) if eval_set else 0} to evaluate on "
        f"({_about(about)})"
    )
    prompt_list = evaluate.prompts(plan, examples.fmt, tok, eval_set)
    mismatch = data.plan_mismatch(plan.data_examples, plan.data_tokens, examples)
    if mismatch:
        say(f"warning: {mismatch}")
        if int(os.environ.get("RANK", "0")) == 0:
            Reporter.from_env().message(f"warning: {mismatch}")

    for line in tracker_destinations(plan, out):
        say(line)
    # The arguments first: under ZeRO-3 they tell Transformers to build the model partitioned
    # (DeepSpeed's zero.Init), so no rank ever holds a whole copy of it. `args` keeps that alive.
    extra, args = training_arguments(plan, ds, out, cuda, evaluate=eval_set is not None)
    # Its device joins the ranks (zero.Init partitions over them) and picks this rank's GPU.
    say(f"device: {args.device}, {args.world_size} rank(s)")
    if ds and torch.distributed.is_initialized():
        # DeepSpeed's own view of those ranks, which zero.Init reads (Accelerate gives it one on
        # GPUs; on the CPU it leaves it to the engine, which comes too late for the model).
        import deepspeed

        deepspeed.init_distributed(dist_backend=torch.distributed.get_backend())
    model = initial_model(plan, source, cuda)
    # Under ZeRO-3 every rank holds a part of each layer: all of them generate together.
    # Under tensor parallelism every rank holds a slice of each layer: the same.
    tp = (ds.get("tensor_parallel") or {}).get("autotp_size", 1)
    if tp > 1:
        say(f"tensor parallel: {tp} ranks per layer (DeepSpeed AutoTP by the model's tp_plan)")
    synced = bool(ds) and (plan.zero_stage == 3 and plan.world_size > 1 or tp > 1)
    max_new = plan.eval.max_new_tokens
    baseline = evaluate.Baseline(out, tok, prompt_list, plan, synced)
    stopper, lines = StopOnSignal(), MetricsLines()
    trainer = Trainer(
        **extra,
        model=model,
        args=args,
        train_dataset=train_set,
        eval_dataset=eval_set,
        data_collator=collator(plan, tok),
        processing_class=tok,
        compute_metrics=evaluate.token_accuracy if eval_set is not None else None,
        preprocess_logits_for_metrics=evaluate.argmax_logits if eval_set is not None else None,
        callbacks=[
            lines,
            SaveEveryMinutes(plan.save_every_minutes),
            baseline,
            OptimizerLine(tp, plan.model.arch.hidden),
            stopper,
        ],
    )
    baseline.trainer = trainer
    trainer.remove_callback(PrinterCallback)  # the metrics lines replace its printed dicts
    last = last_checkpoint(out, say) if plan.resume else None
    if last:
        say(f"resuming from {last}")
        lines.replay(last)
    try:
        result = trainer.train(resume_from_checkpoint=last)
        if stopper.stopped_at is not None:
            raise stopper.stopped(out)
    except torch.cuda.OutOfMemoryError as e:
        raise OutOfMemory(_oom_message(plan, str(e), the_run.oom_advice)) from e
    except RuntimeError as e:
        text = str(e)
        if "NCCL" in text or "timed out" in text.lower() or "Timeout" in text:
            raise CommError(
                f"the ranks stopped talking to each other ({text.splitlines()[0]}); check the "
                "nodes' network (NCCL_SOCKET_IFNAME, firewalls) and resubmit: the job resumes "
                "from its last checkpoint"
            ) from e
        raise
    finally:
        stopper.restore()
    runtime = result.metrics.get("train_runtime") or 0.0
    if runtime > 0:
        tokens = trainer.state.num_input_tokens_seen
        say(f"training: {tokens} tokens in {runtime:.2f} s, {tokens / runtime:.1f} tokens/s")
    answers = evaluate.answer(trainer.model, tok, prompt_list, max_new, synced)
    final = out / "final"
    trainer.save_model(str(final))
    if trainer.is_world_process_zero():
        tok.save_pretrained(str(final))
        # The run it trained, with the model: what every number of it was.
        (final / RUN_FILE).write_text(json.dumps(the_run.export(), indent=2) + "\n")
        say(f"wrote the {'adapter' if plan.lora else 'model'} to {final}")
        if plan.lora is not None and plan.merge_adapter:
            merged = merge(plan, source, final, out / "merged")
            say(f"wrote the merged model to {merged}")
        (out / "metrics.json").write_text(json.dumps(trainer.state.log_history, indent=1) + "\n")
        scores = final_scores(trainer.model, tok, plan)
        doc = evaluate.results(
            plan, about, trainer.state.log_history, baseline.base, answers, prompt_list, tok, scores
        )
        text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
        (out / evaluate.RESULTS_FILE).write_text(text, encoding="utf-8")
        say(evaluate.results_line(doc))
        push(out)
    return final


def final_scores(model, tok, plan: Plan):
    """The trained model's benchmark scores; a scoring that fails after training leaves them
    out (and says why) rather than failing a job whose model is trained and saved."""
    try:
        return benchmarks.score(model, tok, plan)
    except SpecError as e:
        say(f"warning: {e}")
        return None


def push(out: Path) -> None:
    """The trained adapter or model (Hugging Face folders, the run beside them), the merged model
    and the final metrics, pushed to the edge as the job's artifacts when the job was given its
    report URL and token (the runner gives them; on Slurm the job's wrapper pushes, see
    `artifacts.py`). A push that fails leaves the files in `out/` and says so; the training
    itself succeeded."""
    pusher = artifacts.from_env()
    if pusher is None:
        return
    try:
        names = artifacts.push_outputs(pusher, out)
        say(f"pushed {len(names)} artifacts to the edge")
    except (artifacts.PushError, OSError) as e:
        say(f"could not push the artifacts to the edge ({e}); they stay in {out}")


def merge(plan: Plan, source, adapter: Path, dest: Path) -> Path:
    """The base model with the adapter folded in, as a plain Hugging Face model."""
    import torch
    from peft import PeftModel
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    # Rank 0 merges alone: a ZeRO-3 run left Transformers loading models partitioned across
    # ranks, which would wait forever for the others.
    unset_hf_deepspeed_config()
    base = models.build(plan, source, torch.float32)
    merged = PeftModel.from_pretrained(base, str(adapter)).merge_and_unload()
    merged.save_pretrained(str(dest))
    models.tokenizer(plan, source).save_pretrained(str(dest))
    return dest


def _about(about: dict) -> str:
    if about["source"] == "dataset":
        return f"the dataset {about['dataset']}"
    return f"{about['share']:g} of the data held out"


def _dtype(plan: Plan, cuda: bool):
    import torch

    # Full training keeps fp32 master weights (the Trainer or DeepSpeed casts); an adapter's
    # frozen base is stored in 16 bits, as jobspec's LoRA estimate assumes.
    if plan.lora is not None and cuda and plan.precision in ("bf16", "fp16"):
        return torch.bfloat16 if plan.precision == "bf16" else torch.float16
    return torch.float32


def _quantization(plan: Plan):
    import torch

    try:
        import bitsandbytes  # noqa: F401
        from transformers import BitsAndBytesConfig
    except ImportError as e:
        raise DeviceError(
            "qlora needs bitsandbytes in the job's environment: pip install 'onramp-train[qlora]'"
        ) from e
    compute = torch.bfloat16 if plan.precision == "bf16" else torch.float16
    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=compute,
        # The packed 4-bit weights stored as the compute dtype, so that ZeRO-3 can cut them into
        # parts like every other parameter.
        bnb_4bit_quant_storage=compute,
    )


def initial_model(plan: Plan, source, cuda: bool):
    """The model as training starts: built (a model from numbers gets its random weights here)
    and given its adapters, after the seed is set, so the same run starts from the same weights."""
    from transformers import set_seed

    set_seed(plan.seed)
    dtype = _dtype(plan, cuda)
    quant = _quantization(plan) if plan.task == "qlora" else None
    say(f"attention: {models.attention(plan, cuda)}")
    if plan.sp > 1:
        say(
            f"sequence parallel: {plan.sp} ranks per sequence (DeepSpeed Ulysses), "
            f"{plan.world_size // plan.sp} sequence group(s)"
        )
    model = models.build(plan, source, dtype, quant, cuda)
    held = models.partitioned(model)
    if held is not None:
        say(
            f"model: built partitioned (ZeRO-3 zero.Init), this rank holds {held[0]} of its "
            f"{held[1]} parameters"
        )
    if plan.lora is not None:
        model = _with_adapters(model, plan)
    return model


def _with_adapters(model, plan: Plan):
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    assert plan.lora is not None
    if plan.task == "qlora":
        model = prepare_model_for_kbit_training(model, plan.grad_checkpointing)
    elif plan.grad_checkpointing:
        model.enable_input_require_grads()
    targets = plan.lora.targets
    config = LoraConfig(
        r=plan.lora.r,
        lora_alpha=plan.lora.alpha,
        lora_dropout=plan.lora.dropout,
        target_modules="all-linear" if "all-linear" in targets else targets,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def _oom_message(plan: Plan, detail: str, advice: RunAdvice | None) -> str:
    head = (
        f"CUDA out of memory ({detail.splitlines()[0] if detail else 'no detail'}). "
        f"The run on {plan.world_size} × {plan.card} with ZeRO-{plan.zero_stage} did not fit"
    )
    if advice is None:
        return (
            f"{head}: open the spec on the Plan page (or `onramp plan spec.toml`) for the memory "
            "estimate per GPU and its fixes — ZeRO-3 with CPU offload, LoRA, gradient "
            "checkpointing, a smaller micro_batch, or more cards."
        )
    # One line: the job page shows the log's last line as the reason the job failed.
    est, card, fixes = advice.per_gpu_bytes, advice.card_bytes, advice.fixes
    verdict = "expected it to fit" if advice.fits else "said it would not fit"
    need, has = _gib(est), _gib(card)
    text = f"{head}: the plan estimated {need} per GPU of the card's {has} and {verdict}."
    if fixes:
        parts = []
        for f in fixes:
            change = ", ".join(f"{op.path} = {json.dumps(op.value)}" for op in f.patch)
            parts.append(f"{f.title} ({change}) → {_gib(f.per_gpu_bytes)}")
        text += " Changes that lower the need per GPU: " + "; ".join(parts) + "."
    return text + " Open the spec on the Plan page (or `onramp plan spec.toml`) to apply one."
