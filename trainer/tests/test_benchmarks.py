"""`eval.tasks` on real CPU runs: an lm-evaluation-harness task of the cluster's task folder (local
JSONL, `dataset_path: json`), scored on the base model before training and on the trained one
after, where training taught the model what the task asks; and tasks the cluster does not have,
or whose data it lacks, refused before anything is trained."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_trainer
from test_train import spec_text

TASK = "onramp_sky"
#: What the job teaches.
FACT = "The sky is blue."
#: The task: each start of the fact, to be continued with the rest of it.
#: (A loglikelihood task puts nothing between the two: the rest starts with its space.)
ITEMS = [
    ("The sky is", " blue."),
    ("The sky", " is blue."),
    ("The", " sky is blue."),
    ("The sky is blue.\nThe sky is", " blue."),
]


def facts(path: Path, n: int) -> Path:
    """Plain text that teaches the fact, one sentence a line."""
    path.write_text(f"{FACT}\n" * n, encoding="utf-8")
    return path


def task_folder(root: Path) -> Path:
    """A task of the cluster's task folder (lm-eval's `dataset_path: json`): does the model
    continue each start of the fact with its rest (`acc`: the rest is its greedy continuation),
    and how likely it finds the rest (`perplexity`, lower is better)."""
    folder = root / "tasks"
    folder.mkdir()
    with (folder / "sky.jsonl").open("w", encoding="utf-8") as f:
        for context, rest in ITEMS:
            f.write(json.dumps({"context": context, "rest": rest}) + "\n")
    (folder / "sky.yaml").write_text(
        f"""task: {TASK}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {folder / "sky.jsonl"}
test_split: test
output_type: loglikelihood
doc_to_text: "{{{{context}}}}"
doc_to_target: "{{{{rest}}}}"
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: perplexity
    aggregation: perplexity
    higher_is_better: false
""",
        encoding="utf-8",
    )
    return folder


def test_a_lora_run_scores_a_local_task_before_and_after_and_training_helps(tmp_path, models_dir):
    facts(tmp_path / "learn.txt", 400)
    tasks = task_folder(tmp_path)
    run = run_trainer(
        tmp_path,
        spec_text(
            "lora",
            'model = "stories260K"',
            "learn.txt",
            30,
            train='lora_rank = 8\nlora_targets = ["all-linear"]',
            lr=1e-2,
            tail=f'[eval]\nholdout = 0.1\nmax_new_tokens = 4\ntasks = ["{TASK}"]\n'
            "task_max_examples = 20\n",
        ),
        models=models_dir,
        extra_env={"ONRAMP_EVAL_TASKS": str(tasks)},
    )
    assert run.rc == 0, run.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    rows = {r["metric"]: r for r in results["benchmarks"]}
    assert sorted((r["task"], r["metric"]) for r in results["benchmarks"]) == [
        (TASK, "acc"),
        (TASK, "perplexity"),
    ], rows
    acc, ppl = rows["acc"], rows["perplexity"]
    assert acc["examples"] == 4 and acc["fewshot"] == 0, acc
    assert acc["higher_is_better"] is True and ppl["higher_is_better"] is False
    # Training taught what the task asks: the base model continues none of the starts with the
    # fact's rest; the trained one continues most, and finds the rest far likelier.
    assert acc["base"] == 0.0 and acc["trained"] >= 0.75, acc
    assert ppl["trained"] < ppl["base"] / 2, ppl
    assert abs(acc["change"] - (acc["trained"] - acc["base"])) < 1e-12
    base = json.loads((tmp_path / "out" / "eval-base.json").read_text())
    assert base["benchmarks"][TASK]["metrics"]["acc"] == acc["base"]
    assert f"{TASK} acc" in run.stderr


def short_run(tmp_path: Path, models_dir: Path, task: str, tasks: Path | None):
    """Two steps of LoRA naming `task`, with the task folder `tasks` (or none)."""
    facts(tmp_path / "learn.txt", 40)
    return run_trainer(
        tmp_path,
        spec_text(
            "lora",
            'model = "stories260K"',
            "learn.txt",
            2,
            tail=f'[eval]\ntasks = ["{task}"]\n',
        ),
        models=models_dir,
        extra_env={"ONRAMP_EVAL_TASKS": str(tasks)} if tasks is not None else None,
    )


def test_a_task_the_cluster_does_not_have_is_refused_before_training(tmp_path, models_dir):
    run = short_run(tmp_path, models_dir, "no_such_task_here", None)
    assert run.rc == 2, run.stderr[-3000:]
    assert "this cluster has no task 'no_such_task_here'" in run.stderr, run.stderr[-2000:]
    assert "ONRAMP_EVAL_TASKS is not set" in run.stderr
    assert not (tmp_path / "out" / "final").exists()


def test_a_task_whose_data_is_not_here_is_refused_before_training(tmp_path, models_dir):
    tasks = task_folder(tmp_path)
    (tasks / "sky.jsonl").unlink()
    run = short_run(tmp_path, models_dir, TASK, tasks)
    assert run.rc == 2, run.stderr[-3000:]
    assert f"the data of task '{TASK}' is not on this cluster" in run.stderr, run.stderr[-2000:]
    assert not (tmp_path / "out" / "final").exists()


def test_a_task_lm_eval_will_not_score_fails_the_job_before_training(tmp_path, models_dir):
    tasks = task_folder(tmp_path)
    yaml = tasks / "sky.yaml"
    # A task that runs code: lm-eval scores it only when told the code may run, which a job
    # never tells it.
    yaml.write_text(yaml.read_text(encoding="utf-8") + "unsafe_code: true\n", encoding="utf-8")
    run = short_run(tmp_path, models_dir, TASK, tasks)
    assert run.rc == 2, run.stderr[-3000:]
    assert "lm-eval could not score" in run.stderr, run.stderr[-2000:]
    assert not (tmp_path / "out" / "final").exists()
