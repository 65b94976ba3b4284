"""Benchmarks: the lm-evaluation-harness tasks of `eval.tasks`, scored on the base model when
training starts (step 0, before any update; a resumed run keeps the scores its first start
recorded) and on the trained model at the end, with `eval.fewshot` examples before each question
and at most `eval.task_max_examples` examples of each task.

The tasks come from the data the cluster holds, never from the hub: the task folder its operator
keeps (`ONRAMP_EVAL_TASKS`, lm-eval's `--include_path`: task YAMLs whose data is local, such as
`dataset_path: json` with `data_files`) and lm-eval's own tasks whose datasets are in the
Hugging Face datasets cache (`HF_DATASETS_CACHE`). The job runs with the datasets library offline,
and checks before it loads its model that every task and its data are there, so that a job that
cannot score what it was asked to is refused before it costs anything.

Scores are taken on rank 0 alone, on the model in memory, in lm-eval's usual form (the prompt as
the task renders it, no chat template), while the other ranks wait (within the ranks' timeout:
`eval.task_max_examples` bounds a long task). A model ZeRO-3 or sequence parallelism spreads
over several ranks cannot be scored by one, which jobspec refuses. A task that fails to score
before training fails the job then; one that fails after it is left out of the results, with a
warning, and the trained model is kept.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from .errors import SpecError
from .spec import Plan

#: The operator's task folder.
TASKS_ENV = "ONRAMP_EVAL_TASKS"


def offline() -> None:
    """The datasets library reads from its cache only: set before it is first imported (and on
    its config when it already is)."""
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    import sys

    config = sys.modules.get("datasets.config")
    if config is not None:
        config.HF_DATASETS_OFFLINE = True
        config.HF_HUB_OFFLINE = True


def tasks_dir() -> Path | None:
    value = os.environ.get(TASKS_ENV)
    return Path(value) if value else None


def _manager():
    from lm_eval.tasks import TaskManager

    folder = tasks_dir()
    include = [str(folder)] if folder is not None and folder.is_dir() else None
    return TaskManager(verbosity="ERROR", include_path=include)


def _quiet() -> None:
    for name in ("lm-eval", "lm_eval", "datasets", "evaluate"):
        logging.getLogger(name).setLevel(logging.ERROR)


def check(plan: Plan) -> None:
    """Refuses, before anything is trained, a task this cluster does not have or whose data it
    cannot read, naming where tasks come from here."""
    names = plan.eval.tasks
    if not names:
        return
    offline()
    _quiet()
    from lm_eval.tasks import get_task_dict

    manager = _manager()
    folder = tasks_dir()
    where = (
        f"lm-eval's own tasks and those of {TASKS_ENV}={folder}"
        if folder is not None
        else f"lm-eval's own tasks ({TASKS_ENV} is not set, so there is no task folder)"
    )
    known = set(manager.all_tasks)
    for name in names:
        if name not in known:
            raise SpecError(f"eval.tasks: this cluster has no task {name!r} ({where})")
    for name in names:
        try:
            get_task_dict([name], manager)
        except Exception as e:  # lm-eval and datasets raise many kinds
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise SpecError(
                f"eval.tasks: the data of task {name!r} is not on this cluster, and jobs do not "
                f"fetch it ({first[:300]})"
            ) from e


def score(model, tok, plan: Plan) -> dict[str, dict[str, Any]]:
    """Each task's measures on `model` as it is now: {task: {"metrics": {name: value},
    "higher_is_better": {name: bool}, "examples": n}}."""
    names = plan.eval.tasks
    if not names:
        return {}
    offline()
    _quiet()
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM

    training = model.training
    model.eval()
    lm = HFLM(
        pretrained=model,
        tokenizer=tok,
        batch_size=max(1, plan.micro_batch),
        # A few-shot prompt may be longer than the training sequences: the model's own limit.
        max_length=max(plan.seq_len, plan.model.max_seq_len or 0),
    )
    try:
        out = simple_evaluate(
            model=lm,
            tasks=list(names),
            num_fewshot=plan.eval.fewshot,
            limit=plan.eval.task_max_examples,
            task_manager=_manager(),
            bootstrap_iters=0,
            log_samples=False,
            verbosity="ERROR",
            # The training's random state is the training's: lm-eval leaves it alone.
            random_seed=None,
            numpy_random_seed=None,
            torch_random_seed=None,
            fewshot_random_seed=plan.seed,
        )
    except Exception as e:  # a task lm-eval refuses to run (unsafe code) or cannot score
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SpecError(f"eval.tasks: lm-eval could not score {names} ({first[:300]})") from e
    finally:
        if training:
            model.train()
    return _measures(out or {}, names)


def _measures(out: dict[str, Any], names: list[str]) -> dict[str, dict[str, Any]]:
    results = out.get("results") or {}
    groups = out.get("groups") or {}
    better = out.get("higher_is_better") or {}
    counts = out.get("n-samples") or {}
    scores = {}
    for name in names:
        row = results.get(name) or groups.get(name) or {}
        metrics: dict[str, float] = {}
        for key, value in row.items():
            if "," not in key or "_stderr" in key or isinstance(value, bool):
                continue
            if not isinstance(value, (int, float)):
                continue
            metric, filt = key.split(",", 1)
            metrics[metric if filt == "none" else f"{metric} ({filt})"] = float(value)
        n = counts.get(name) or {}
        scores[name] = {
            "metrics": metrics,
            "higher_is_better": {
                k: bool(v) for k, v in (better.get(name) or {}).items() if isinstance(v, bool)
            },
            "examples": int(n.get("effective", 0)) if isinstance(n, dict) else 0,
        }
    return scores


def table(
    base: dict[str, Any] | None, trained: dict[str, Any] | None, fewshot: int
) -> list[dict[str, Any]]:
    """One row per task and measure: base, trained, their change, and which way is better."""
    import math

    def finite(x):
        return x if isinstance(x, (int, float)) and math.isfinite(x) else None

    rows = []
    tasks = list((trained or {}).keys()) or list((base or {}).keys())
    for task in tasks:
        b_task = (base or {}).get(task) or {}
        t_task = (trained or {}).get(task) or {}
        metrics = list(t_task.get("metrics", {})) or list(b_task.get("metrics", {}))
        for metric in metrics:
            b = finite(b_task.get("metrics", {}).get(metric))
            t = finite(t_task.get("metrics", {}).get(metric))
            plain = metric.split(" (", 1)[0]
            hib = (t_task.get("higher_is_better") or b_task.get("higher_is_better") or {}).get(
                plain
            )
            rows.append(
                {
                    "task": task,
                    "metric": metric,
                    "base": b,
                    "trained": t,
                    "change": t - b if b is not None and t is not None else None,
                    "higher_is_better": hib,
                    "examples": t_task.get("examples") or b_task.get("examples") or 0,
                    "fewshot": fewshot,
                }
            )
    return rows
