"""A LoRA adapter downloaded from a job page, loaded with PEFT on the base it was trained from,
beside the merged model the same job pushed: `peft_check.py ADAPTER MERGED` prints, as JSON,
the largest logit differences (adapter vs merged, adapter vs base) on a prompt and the greedy
tokens each generates. The base of a model of numbers is rebuilt as onramp-train builds it (its
numbers and the run's seed, from the `onramp-run.json` the adapter carries)."""

import json
import sys
from pathlib import Path

import torch
from onramp_train import models, spec
from peft import PeftModel
from transformers import AutoModelForCausalLM


def main(adapter: Path, merged: Path) -> None:
    plan = spec.load(adapter / "onramp-run.json").plan
    base = models.build(plan, models.resolve(plan), torch.float32).eval()
    with torch.no_grad():
        x = torch.tensor([[1, 17, 42, 99, 7, 250, 3]])
        base_logits = base(input_ids=x).logits
        tuned = PeftModel.from_pretrained(base, adapter).eval()
        whole = AutoModelForCausalLM.from_pretrained(merged, dtype=torch.float32).eval()
        tuned_logits, whole_logits = (
            tuned(input_ids=x).logits,
            whole(input_ids=x).logits,
        )
        kw = {
            "max_new_tokens": 12,
            "do_sample": False,
            "attention_mask": torch.ones_like(x),
        }
        out = {
            "vs_merged": (tuned_logits - whole_logits).abs().max().item(),
            "vs_base": (tuned_logits - base_logits).abs().max().item(),
            "peft": tuned.generate(input_ids=x, **kw)[0, x.shape[1] :].tolist(),
            "merged": whole.generate(input_ids=x, **kw)[0, x.shape[1] :].tolist(),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
