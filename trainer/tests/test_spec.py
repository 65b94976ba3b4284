"""The trainer reads jobspec's runs and nothing else: every run of jobspec's corpus
(`fixtures/runs.jsonl`, written by `UPDATE_EXPECT=1 cargo test -p jobspec --test trainer_export`,
which checks each against the schema) loads and reads back unchanged, the loader's dataclasses
have exactly the schema's keys, and anything else is refused naming where."""

import json
import typing
from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest

from onramp_train import spec
from onramp_train.errors import SpecError

CASES = [
    json.loads(line)
    for line in (Path(__file__).parent / "fixtures" / "runs.jsonl").read_text().splitlines()
]


def test_the_corpus_covers_every_task_and_both_kinds_of_card():
    assert {c["run"]["plan"]["task"] for c in CASES} == {"pretrain", "sft", "lora", "qlora"}
    assert {c["run"]["plan"]["is_gpu"] for c in CASES} == {True, False}
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[c["source"] for c in CASES])
def test_every_run_of_jobspec_loads_and_reads_back_unchanged(case):
    run = spec.parse(json.dumps(case["run"]), case["source"])
    assert run.export() == case["run"]


def _dataclasses(tp, seen):
    """Every dataclass reachable from `tp`'s fields."""
    for arg in typing.get_args(tp) or ([tp] if is_dataclass(tp) else []):
        if is_dataclass(arg) and arg not in seen:
            seen.add(arg)
            for hint in typing.get_type_hints(arg).values():
                _dataclasses(hint, seen)
        else:
            _dataclasses(arg, seen)
    return seen


def test_the_loaders_shapes_are_the_schemas():
    schema = spec.schema()
    defs = schema["$defs"]
    assert schema["title"] == "TrainerRun"
    for cls in _dataclasses(spec.TrainerRun, set()):
        shape = schema if cls is spec.TrainerRun else defs[cls.__name__]
        names = [f.name for f in fields(cls)]
        assert sorted(names) == sorted(shape["properties"]), cls.__name__
        assert sorted(shape["required"]) == sorted(names), f"{cls.__name__}: no defaults"
        assert shape["additionalProperties"] is False, cls.__name__
    assert schema["properties"]["version"]["const"] == spec.RUN_VERSION


def test_what_is_not_a_run_is_refused_with_where():
    good = CASES[0]["run"]

    def refused(change, said):
        run = json.loads(json.dumps(good))
        change(run)
        with pytest.raises(SpecError, match=said):
            spec.parse(json.dumps(run))

    refused(lambda r: r.update(version=1), "version 1, and this trainer reads version 2")
    refused(lambda r: r.update(version=True), "version true")
    refused(lambda r: r["plan"]["model"].update(rope=1), r"plan\.model has keys .*: rope")
    refused(lambda r: r["plan"]["optim"].pop("eps"), r"plan\.optim lacks eps")
    refused(lambda r: r["plan"].update(seq_len=-1), r"plan\.seq_len must be a whole number")
    refused(lambda r: r["plan"].update(resume="yes"), r"plan\.resume must be true or false")
    refused(lambda r: r["plan"].update(report_to="tensorboard"), r"plan\.report_to must be a list")
    refused(lambda r: r["plan"].update(task="tiny-train"), "tiny-train")
    refused(lambda r: r["plan"]["eval"].update(prompts="hi"), r"plan\.eval\.prompts must be a list")
    with pytest.raises(SpecError, match="not JSON"):
        spec.parse("{")
    with pytest.raises(SpecError, match="looks like a spec.*--trainer-run"):
        spec.parse('name = "x"\ntask = "sft"\n')


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
        if m["family"] == "llama":  # the names jobspec lets LoRA target are this build's layers
            names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
            assert set(m["lora_modules"]) <= names, m["id"]


def test_a_custom_architecture_too():
    import torch
    from transformers import AutoModelForCausalLM

    from onramp_train.models import hf_config

    case = next(c for c in CASES if c["run"]["plan"]["model"]["id"] is None)
    plan = spec.parse(json.dumps(case["run"])).plan
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_config(plan.model.arch, 128))
    a = plan.model.arch
    head = a.hidden // a.heads
    per_layer = 2 * a.hidden * a.hidden + 2 * a.hidden * a.kv_heads * head
    per_layer += 3 * a.hidden * a.ffn + 2 * a.hidden
    emb = a.vocab * a.hidden
    expected = emb * (1 if a.tied_embeddings else 2) + a.layers * per_layer + a.hidden
    assert sum(p.numel() for p in model.parameters()) == expected


def test_a_tracker_the_environment_lacks_is_refused_before_any_work(monkeypatch):
    from onramp_train import preflight

    # One tracker's package is missing, one is present: only the missing one is named.
    monkeypatch.setattr(
        preflight, "TRACKER_PACKAGES", {"tensorboard": "json", "wandb": "onramp_no_such_package"}
    )
    preflight.missing_trackers(["tensorboard"])
    with pytest.raises(SpecError, match=r"wandb \(package `onramp_no_such_package`\)") as e:
        preflight.missing_trackers(["tensorboard", "wandb"])
    assert "tensorboard" not in str(e.value)
    # preflight refuses it too: the job ends before a model or a dataset is loaded.
    case = next(c for c in CASES if not c["run"]["plan"]["is_gpu"])
    run = json.loads(json.dumps(case["run"]))
    run["plan"].update(report_to=["wandb"], task="lora")
    with pytest.raises(SpecError, match="output.report_to asks for wandb"):
        preflight.check(spec.parse(json.dumps(run)).plan)


def test_each_catalogue_chat_layout_renders_a_prompt_that_starts_its_conversation():
    """A tokenizer without a chat template gets its family's layout from the catalogue; each
    layout's prompt (the turns before the answer, with the generation prompt) is the start of
    the whole conversation, which is how the trainer finds the answer's tokens."""
    import jinja2

    from onramp_train import models
    from onramp_train.spec import catalog

    cat = catalog()
    assert models.chat_template_for("qwen2.5-7b-instruct") == models.CHAT_TEMPLATES["chatml"]
    assert models.chat_template_for("llama-3-8b") == models.CHAT_TEMPLATES["llama-3"]
    assert models.chat_template_for("stories260K") == models.FALLBACK_CHAT_TEMPLATE
    assert models.chat_template_for(None) == models.FALLBACK_CHAT_TEMPLATE
    families = {m["chat_template"] for m in cat.values()} - {""}
    env = jinja2.Environment()
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Reverse the word: cat"},
        {"role": "assistant", "content": "tac"},
    ]
    for family in families:
        layout = models.CHAT_TEMPLATES.get(family)
        if layout is None:  # a family whose tokenizers always bring their own (chatglm3, r1)
            continue
        t = env.from_string(layout)
        full = t.render(messages=messages, bos_token="<s>", eos_token="</s>")
        prompt = t.render(
            messages=messages[:-1], add_generation_prompt=True, bos_token="<s>", eos_token="</s>"
        )
        assert full.startswith(prompt), family
        assert "tac" in full[len(prompt) :], family
