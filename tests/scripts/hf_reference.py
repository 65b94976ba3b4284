"""Hugging Face Llama folders, and what Transformers does with them, for model-tiny's reader.

`python hf_reference.py OUT SHARED` writes, under OUT, folders as `save_pretrained` writes them
(a model of numbers as onramp-train builds it, with the SentencePiece tokenizer of
SHARED/models/tok512.model), in f32, bf16 and f16, tied and not, a Llama or a Qwen2 (its q/k/v
biases, which onramp-train builds for `qkv_bias = true`), and OUT/expected.json: for each
folder, each prompt's ids as the tokenizer encodes them and the ids Transformers' greedy `generate`
adds (the model widened to f32, as model-tiny computes), and the tokenizer's ids of other texts.
"""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import torch
from onramp_train.models import _sentencepiece, hf_config
from transformers import AutoModelForCausalLM

PROMPTS = ["Once upon a time", " Tom and  Lily ran to the park.", "The cat"]
TEXTS = PROMPTS + [
    "",
    "   ",
    "a",
    "hello world\nnew line\tand a tab",
    "中文 and émoji 🙂 mixed",
    "  two leading spaces",
    "trailing space ",
    "1234567890 !@#$%^&*()",
]
NEW_TOKENS = 24
VARIANTS = [
    # name, dtype, tied embeddings, q/k/v biases (a Qwen2), extra config
    ("f32-tied", torch.float32, True, False, {}),
    ("bf16-untied", torch.bfloat16, False, False, {"rms_norm_eps": 1e-5}),
    ("f16-theta", torch.float16, True, False, {"rope_parameters": {"rope_theta": 500.0, "rope_type": "default"}}),
    ("bf16-qwen2-untied", torch.bfloat16, False, True, {}),
]


def main(out: Path, shared: Path) -> None:
    tok = _sentencepiece(shared / "models" / "tok512.model")
    expected = {"texts": {t: tok(t).input_ids for t in TEXTS}, "models": {}}
    for i, (name, dtype, tied, qkv_bias, extra) in enumerate(VARIANTS):
        torch.manual_seed(1000 + i)
        arch = SimpleNamespace(
            vocab=512, hidden=64, ffn=172, layers=2, heads=4, kv_heads=2,
            tied_embeddings=tied, qkv_bias=qkv_bias,
        )
        config = hf_config(arch, 64)
        # Weights far from zero, so that the greedy choice is never a near tie.
        config.initializer_range = 0.4
        for key, value in extra.items():
            setattr(config, key, value)
        model = AutoModelForCausalLM.from_config(config).eval()
        with torch.no_grad():
            # Transformers starts biases at zero: these would show nothing.
            for pname, p in model.named_parameters():
                if pname.endswith("_proj.bias"):
                    p.normal_(0.0, 0.4)
        model = model.to(dtype)
        folder = out / name
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        cases = []
        for prompt in PROMPTS:
            ids = tok(prompt, return_tensors="pt").input_ids
            with torch.no_grad():
                seq = model.generate(
                    ids, attention_mask=torch.ones_like(ids), do_sample=False,
                    max_new_tokens=NEW_TOKENS, pad_token_id=0,
                )
            new = seq[0, ids.shape[1]:].tolist()
            cases.append({"prompt": prompt, "ids": ids[0].tolist(), "generated": new})
        expected["models"][name] = cases
    (out / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
