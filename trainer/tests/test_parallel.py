"""Model parallelism the planner costs, run for real on the CPU on two gloo ranks: DeepSpeed's
Ulysses sequence parallelism (`parallel.sp`, ALST through Accelerate), whose all-to-all gloo has,
and tensor parallelism (`parallel.tp`, DeepSpeed's AutoTP slicing each layer as the model's
Hugging Face `tp_plan` says). Each sequence split over two ranks, and each layer split over two
ranks, must train as the whole does on one rank."""

from __future__ import annotations

import json
import re

from conftest import run_trainer
from test_train import spec_text

RECORD = {
    "messages": [
        {"role": "system", "content": "You answer in one short sentence."},
        {"role": "user", "content": "Spell the word lantern backwards, letter by letter."},
        {"role": "assistant", "content": "n, r, e, t, n, a, l: lantern backwards is nretnal."},
    ]
}


def same_record_runs(tmp_path, models_dir, parallel: str, steps: int):
    """The same spec on one card and on two (`parallel` names the two-card split, `{n}` its
    degree), over a file of one record repeated, so that both runs see the same data whatever
    order each reads it in; both must succeed, with equal losses. The two runs: one rank, two."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "same.jsonl").write_text("\n".join(json.dumps(RECORD) for _ in range(96)) + "\n")
    env = {"ONRAMP_DATASETS": str(data)}

    def spec(cards: int, n: int) -> str:
        return spec_text(
            "sft",
            'model = "stories260K"',
            "same.jsonl",
            steps,
            card="a100-80g",
            cards=cards,
            parallel="[parallel]\nzero_stage = 1\n" + parallel.format(n=n),
            seq_len=256,
            lr=1e-2,
        )

    whole = run_trainer(tmp_path / "whole", spec(1, 1), models=models_dir, extra_env=env)
    assert whole.rc == 0, whole.stderr[-3000:]
    split = run_trainer(tmp_path / "split", spec(2, 2), nproc=2, models=models_dir, extra_env=env)
    assert split.rc == 0, split.stderr[-3000:]
    a, b = whole.train_losses(), split.train_losses()
    assert sorted(a) == sorted(b) == list(range(1, steps + 1)), (a, b)
    for step in a:
        assert abs(a[step] - b[step]) <= 1e-4 * abs(a[step]), (step, a, b)
    assert a[steps] < a[1] - 0.5, a
    return whole, split


def test_sequence_parallel_trains_as_one_rank_with_the_whole_sequence(tmp_path, models_dir):
    """Every batch is the same sequences, so the two runs see the same data whatever order each
    reads it in: their losses differ only by how the sums are cut (Ulysses' all-to-alls)."""
    _, split = same_record_runs(tmp_path, models_dir, "sp = {n}\n", steps=6)
    assert re.search(r"sequence parallel: 2 ranks per sequence", split.stderr), split.stderr[-3000:]


def test_tensor_parallel_trains_as_one_rank_with_the_whole_model(tmp_path, models_dir):
    """Both ranks of the tensor-parallel group read the same batches and hold half of each
    layer's q/k/v, o and MLP matrices; the losses equal one rank's with the whole model, and the
    trained model is saved whole (its slices gathered), with the one rank's weights."""
    from safetensors.torch import load_file

    _, split = same_record_runs(tmp_path, models_dir, "tp = {n}\n", steps=6)
    assert re.search(r"tensor parallel: 2 ranks per layer", split.stderr), split.stderr[-3000:]
    assert re.search(r"q_proj: \[32, 64\] of \[64, 64\] on this rank", split.stderr), split.stderr[
        -3000:
    ]
    one = load_file(tmp_path / "whole" / "out" / "final" / "model.safetensors")
    two = load_file(tmp_path / "split" / "out" / "final" / "model.safetensors")
    assert one.keys() == two.keys()
    for name, w in one.items():
        assert two[name].shape == w.shape, name
        assert (two[name].float() - w.float()).abs().max() <= 1e-3, name
