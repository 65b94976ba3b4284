"""CUDA running out of memory ends the job with one line that quotes the plan: jobspec's estimate
per GPU for the spec and the changes that lower it (the `onramp-plan.json` the launch writes next
to the spec; the fixture is jobspec's own output for two templates, one that fits and one that
does not)."""

from __future__ import annotations

import json
from pathlib import Path

from onramp_train import spec
from onramp_train.train import _oom_message

FIXTURE = Path(__file__).parent / "fixtures" / "oom-advice.json"
DETAIL = "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total capacity)\nmore"


def _case(name: str, tmp_path: Path) -> tuple[spec.Plan, Path, dict]:
    case = json.loads(FIXTURE.read_text())[name]
    plan, _ = spec.parse(case["spec"])
    advice = tmp_path / "onramp-plan.json"
    advice.write_text(json.dumps(case["advice"]))
    return plan, advice, case["advice"]


def test_a_spec_the_plan_said_fits_gets_the_changes_that_lower_it(tmp_path):
    plan, advice_file, advice = _case("7b-lora-4090", tmp_path)
    msg = _oom_message(plan, DETAIL, advice_file)
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


def test_a_spec_the_plan_said_would_not_fit_gets_the_plans_fixes(tmp_path):
    plan, advice_file, advice = _case("7b-full-4090", tmp_path)
    msg = _oom_message(plan, DETAIL, advice_file)
    assert "said it would not fit" in msg
    assert advice["fixes"][0]["title"] in msg


def test_without_the_plan_file_it_still_says_where_to_look(tmp_path):
    plan, _, _ = _case("7b-lora-4090", tmp_path)
    msg = _oom_message(plan, DETAIL, tmp_path / "missing.json")
    assert "1 × rtx-4090" in msg and "Plan page" in msg and "ZeRO-3" in msg
