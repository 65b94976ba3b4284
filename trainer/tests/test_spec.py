"""The trainer derives every value exactly as jobspec does (jobspec exports its side into
fixtures/derived.json and catalog.json; `UPDATE_EXPECT=1 cargo test -p jobspec --test
trainer_export` refreshes them)."""

import json
from pathlib import Path

import pytest

from onramp_train import spec
from onramp_train.errors import SpecError

CASES = json.loads((Path(__file__).parent / "fixtures" / "derived.json").read_text())


def test_the_fixture_covers_every_task():
    assert {c["plan"]["task"] for c in CASES} == {"pretrain", "sft", "lora", "qlora"}
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[c["source"] for c in CASES])
def test_plan_and_ds_config_agree_with_jobspec(case):
    for text in (case["toml"], case["written"]):
        plan, ds = spec.parse(text)
        assert plan.export() == case["plan"]
        assert ds == case["ds_config"]


def test_a_model_built_from_the_catalogue_has_jobspecs_parameter_count():
    import torch
    from transformers import AutoModelForCausalLM

    from onramp_train.models import hf_config

    for m in spec.catalog().values():
        arch = spec.Arch(**m["arch"])
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(hf_config(arch, m["max_seq_len"]))
        counted = sum(p.numel() for p in model.parameters())
        assert counted == m["params"], m["id"]


def test_a_custom_architecture_too():
    import torch
    from transformers import AutoModelForCausalLM

    from onramp_train.models import hf_config

    case = next(c for c in CASES if c["plan"]["model"]["id"] is None)
    plan, _ = spec.parse(case["toml"])
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_config(plan.model.arch, 128))
    a = plan.model.arch
    head = a.hidden // a.heads
    per_layer = 2 * a.hidden * a.hidden + 2 * a.hidden * a.kv_heads * head
    per_layer += 3 * a.hidden * a.ffn + 2 * a.hidden
    emb = a.vocab * a.hidden
    expected = emb * (1 if a.tied_embeddings else 2) + a.layers * per_layer + a.hidden
    assert sum(p.numel() for p in model.parameters()) == expected


def test_a_broken_spec_is_refused_with_its_reason():
    with pytest.raises(SpecError, match="not valid TOML"):
        spec.parse("name = ")
    with pytest.raises(SpecError, match="tiny-train"):
        spec.parse(
            'name = "t"\ntask = "tiny-train"\nmodel = "stories260K"\n[data]\ndataset = "x"\n'
            'seq_len = 8\n[resources]\ncard = "cpu"\n'
        )


def test_a_tracker_the_environment_lacks_is_refused_before_any_work(monkeypatch):
    from onramp_train import train

    # One tracker's package is missing, one is present: only the missing one is named.
    monkeypatch.setattr(
        train, "TRACKER_PACKAGES", {"tensorboard": "json", "wandb": "onramp_no_such_package"}
    )
    train.missing_trackers(["tensorboard"])
    with pytest.raises(SpecError, match=r"wandb \(package `onramp_no_such_package`\)") as e:
        train.missing_trackers(["tensorboard", "wandb"])
    assert "tensorboard" not in str(e.value)
    # preflight refuses it too: the job ends before a model or a dataset is loaded.
    plan, ds = spec.parse(
        'name = "t"\ntask = "lora"\n[model]\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 2\n'
        'ffn = 172\nvocab = 512\n[data]\ndataset = "x"\nseq_len = 64\n[train]\nsteps = 2\n'
        '[resources]\ncard = "cpu"\n[output]\nreport_to = ["wandb"]\n'
    )
    with pytest.raises(SpecError, match="output.report_to asks for wandb"):
        train.preflight(plan, None, ds)
