"""CUDA running out of memory ends the job with one line that quotes the plan: jobspec's estimate
per GPU for the spec and the changes that lower it (the run's `oom_advice`; the cases are
jobspec's own runs of two specs, one the plan says fits and one it says does not)."""

from __future__ import annotations

import json
from pathlib import Path

from onramp_train import spec
from onramp_train.train import _oom_message

FIXTURE = Path(__file__).parent / "fixtures" / "runs.jsonl"
DETAIL = "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total capacity)\nmore"


def _case(name: str) -> tuple[spec.TrainerRun, dict]:
    for line in FIXTURE.read_text().splitlines():
        case = json.loads(line)
        if case["source"] == f"spec {name}":
            return spec.parse(json.dumps(case["run"])), case["run"]["oom_advice"]
    raise AssertionError(f"no run of {name} in {FIXTURE}")


def test_a_spec_the_plan_said_fits_gets_the_changes_that_lower_it():
    run, advice = _case("7b-lora-4090")
    msg = _oom_message(run.plan, DETAIL, run.oom_advice)
    assert "\n" not in msg, "one line: the job page shows the log's last line"
    assert msg.startswith("CUDA out of memory (CUDA out of memory. Tried to allocate 2.00 GiB")
    gib = advice["per_gpu_bytes"] / 2**30
    assert f"estimated {gib:.1f} GiB per GPU of the card's 24.0 GiB and expected it to fit" in msg
    assert advice["fixes"], "the plan has changes that lower the need per GPU"
    for fix in advice["fixes"]:
        assert fix["title"] in msg
        for op in fix["patch"]:
            assert f"{op['path']} = {json.dumps(op['value'])}" in msg
    assert "Plan page" in msg


def test_a_spec_the_plan_said_would_not_fit_gets_the_plans_fixes():
    run, advice = _case("7b-full-4090")
    msg = _oom_message(run.plan, DETAIL, run.oom_advice)
    assert "said it would not fit" in msg
    assert advice["fixes"][0]["title"] in msg


def test_without_advice_it_still_says_where_to_look():
    run, _ = _case("7b-lora-4090")
    msg = _oom_message(run.plan, DETAIL, None)
    assert "1 × rtx-4090" in msg and "Plan page" in msg and "ZeRO-3" in msg
