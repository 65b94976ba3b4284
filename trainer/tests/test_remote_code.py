"""A catalogue model whose repo runs code of its own (ChatGLM3: `trust_remote_code`, and layers
named `query_key_value`, `dense`, `dense_h_to_4h`, `dense_4h_to_h`): it trains with LoRA on its
own layer names where the operator allows it, and is refused before any work where not. The model
is a tiny decoder laid out as ChatGLM's, written by the tests (remote_code/modeling_tinyglm.py)
into a folder that loads only with trust_remote_code."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from conftest import DATA, run_trainer
from test_train import mean, spec_text

HERE = Path(__file__).parent
MODELING = HERE / "remote_code" / "modeling_tinyglm.py"


@pytest.fixture(scope="module")
def glm_models(tmp_path_factory, models_dir) -> Path:
    """A models root holding `chatglm3-6b` as a folder of remote code, weights and tokenizer."""
    import torch
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("glm-models")
    folder = root / "chatglm3-6b"
    folder.mkdir()
    shutil.copy(MODELING, folder)
    spec = importlib.util.spec_from_file_location("modeling_tinyglm", folder / MODELING.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = module.TinyGlmConfig()
    config.auto_map = {
        "AutoConfig": "modeling_tinyglm.TinyGlmConfig",
        "AutoModelForCausalLM": "modeling_tinyglm.TinyGlmForCausalLM",
    }
    torch.manual_seed(0)
    module.TinyGlmForCausalLM(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(models_dir / "stories260K").save_pretrained(folder)
    return root


def glm_spec(train: str = "") -> str:
    return spec_text(
        "lora",
        'model = "chatglm3-6b"',
        DATA / "chat.jsonl",
        10,
        card="a100-80g",
        train=train,
        lr=1e-2,
    )


def test_a_remote_code_model_trains_its_own_layers_where_the_operator_allows_it(
    tmp_path, glm_models
):
    run = run_trainer(
        tmp_path,
        glm_spec(),
        models=glm_models,
        extra_env={"ONRAMP_TRUST_REMOTE_CODE": "qwen2.5-7b, ChatGLM3-6B"},
    )
    assert run.rc == 0, run.stderr[-3000:]
    assert "attention: its own" in run.stderr
    losses = run.train_losses()
    assert sorted(losses) == list(range(1, 11))
    assert mean(losses[s] for s in (8, 9, 10)) < mean(losses[s] for s in (1, 2, 3)) - 0.1, losses
    adapter = json.loads((tmp_path / "out" / "final" / "adapter_config.json").read_text())
    # jobspec's default for the ChatGLM family: its fused attention and its output projection.
    assert sorted(adapter["target_modules"]) == ["dense", "query_key_value"]


def test_a_remote_code_model_is_refused_where_the_operator_has_not_allowed_it(tmp_path, glm_models):
    for allowed in (None, "qwen2.5-7b"):
        job = tmp_path / (allowed or "unset")
        extra = {"ONRAMP_TRUST_REMOTE_CODE": allowed} if allowed else {}
        run = run_trainer(job, glm_spec(), models=glm_models, extra_env=extra)
        assert run.rc == 2, run.stderr[-3000:]
        assert "trust_remote_code" in run.stderr and "chatglm3-6b" in run.stderr
        assert not run.metrics and not (job / "out").exists(), "refused before any work"
