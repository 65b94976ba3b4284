"""Where a job's model and tokenizer come from, and building them.

A catalogue id resolves to `ONRAMP_MODELS/<id>` (a Hugging Face folder on the cluster's shared
storage) first, then to its hub repo id when the machine declares hub access (`ONRAMP_HUB=1`).
`pretrain` and custom `[model]` architectures build the model from its numbers. A model that is
nowhere is refused before any work, naming every place that was looked at.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import ModelNotFound, SpecError
from .spec import Arch, Plan

# The chat layouts, one file that the dataset checker (Rust, datacheck) reads too, so that its
# token counts are the trainer's: `fallback`, a plain layout for tokenizers that bring no chat
# template of their own (a bare SentencePiece model: one header line per turn, the text, then the
# end-of-sequence token), and `families`, the catalogue's layouts (`chat_template` in jobspec's
# catalogue) for a tokenizer that brings none (a base model's folder, say).
_TEMPLATES = json.loads((Path(__file__).parent / "chat_templates.json").read_text(encoding="utf-8"))
FALLBACK_CHAT_TEMPLATE: str = _TEMPLATES["fallback"]
CHAT_TEMPLATES: dict[str, str] = _TEMPLATES["families"]


def chat_template_for(model_id: str | None) -> str:
    """The layout the catalogue names for a model, else the plain fallback."""
    from .spec import catalog

    family = catalog().get(model_id or "", {}).get("chat_template", "")
    return CHAT_TEMPLATES.get(family, FALLBACK_CHAT_TEMPLATE)


@dataclass(frozen=True)
class ModelSource:
    """`kind` is `folder` (a local Hugging Face folder), `hub` (a repo id) or `config` (built
    from the architecture numbers with random weights)."""

    kind: str
    where: str
    # Loading it runs its repo's own code (`trust_remote_code`); the operator allowed it.
    remote_code: bool = False


# The catalogue ids of the models whose repo code the backend's operator allows to run
# (comma-separated; the backend's `trust_remote_code`, set by the edge).
TRUST_REMOTE_CODE_ENV = "ONRAMP_TRUST_REMOTE_CODE"


def remote_code_allowed(plan: Plan) -> bool:
    """Whether this plan's model may run its repo's own code: False for a model that needs
    none; True where the operator lists it in `ONRAMP_TRUST_REMOTE_CODE`; otherwise the run is
    refused before any work, since the model cannot load without it."""
    if not plan.model.remote_code:
        return False
    listed = os.environ.get(TRUST_REMOTE_CODE_ENV, "")
    allowed = {m.strip().lower() for m in listed.split(",") if m.strip()}
    if (plan.model.id or "").lower() in allowed:
        return True
    raise SpecError(
        f"model `{plan.model.id}` loads only by running code from its repository "
        f"({plan.model.hf_repo}, trust_remote_code), and this backend's operator has not allowed "
        f"it: the operator adds `{plan.model.id}` to the backend's trust_remote_code (it reaches "
        f"the job as {TRUST_REMOTE_CODE_ENV}), or choose a model that needs no code of its own"
    )


def models_root() -> Path | None:
    root = os.environ.get("ONRAMP_MODELS")
    return Path(root) if root else None


def resolve(plan: Plan) -> ModelSource:
    """Where this plan's weights come from; raises ModelNotFound naming where it looked."""
    if plan.task == "pretrain" or plan.model.id is None:
        return ModelSource("config", plan.model.name)
    return _catalogue_model(plan)


def _catalogue_model(plan: Plan) -> ModelSource:
    """The catalogue model's Hugging Face folder (`ONRAMP_MODELS/<id>`), else its hub repo where
    the machine has the hub; raises ModelNotFound naming where it looked."""
    looked = []
    remote = remote_code_allowed(plan)
    root = models_root()
    if root is not None:
        folder = root / plan.model.id
        if (folder / "config.json").is_file():
            return ModelSource("folder", str(folder), remote)
        looked.append(f"{folder} (no config.json there)")
    else:
        looked.append("ONRAMP_MODELS/<id> (ONRAMP_MODELS is not set)")
    if os.environ.get("ONRAMP_HUB") == "1" and plan.model.hf_repo:
        return ModelSource("hub", plan.model.hf_repo, remote)
    looked.append(
        f"the hub repo {plan.model.hf_repo} (not tried: this machine does not declare hub "
        "access; set ONRAMP_HUB=1 where it has it)"
    )
    raise ModelNotFound(
        f"model `{plan.model.id}` not found; looked in: "
        + "; ".join(looked)
        + f". Put the Hugging Face folder of {plan.model.name} at ONRAMP_MODELS/{plan.model.id}."
    )


def hf_config(arch: Arch, max_positions: int):
    """A Transformers config with exactly jobspec's architecture numbers: Llama, or Qwen2 when
    q/k/v carry biases (Llama's `attention_bias` would add one to o_proj too)."""
    from transformers import LlamaConfig, Qwen2Config

    common = dict(
        vocab_size=arch.vocab,
        hidden_size=arch.hidden,
        intermediate_size=arch.ffn,
        num_hidden_layers=arch.layers,
        num_attention_heads=arch.heads,
        num_key_value_heads=arch.kv_heads,
        tie_word_embeddings=arch.tied_embeddings,
        max_position_embeddings=max_positions,
    )
    if arch.qkv_bias:
        return Qwen2Config(**common)
    return LlamaConfig(**common, attention_bias=False, mlp_bias=False)


def attention(plan: Plan, cuda: bool) -> str:
    """The attention implementation `train.flash_attention` asks for: FlashAttention 2 on a GPU
    that has the `flash_attn` package, else PyTorch's fused SDPA kernels (neither stores the s×s
    scores, which is what the memory estimate assumed); `eager` when flash attention is off. A
    model of remote code brings its own attention (ChatGLM's calls PyTorch's SDPA itself), and
    Transformers cannot choose one for it: `its own`."""
    if plan.model.remote_code:
        return "its own"
    if not plan.flash_attention:
        return "eager"
    if cuda and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    return "sdpa"


def build(plan: Plan, source: ModelSource, dtype, quantization=None, cuda: bool = False):
    """The model to train: loaded from its folder or the hub, or built from its numbers, with
    the attention `attention` picks."""
    import torch
    from transformers import AutoModelForCausalLM

    attn = attention(plan, cuda)
    if source.kind == "config":
        positions = max(plan.seq_len, plan.model.max_seq_len or 0)
        torch.manual_seed(plan.seed)
        config = hf_config(plan.model.arch, positions)
        # Built in its dtype (not cast after): under zero.Init its weights are already parts.
        return AutoModelForCausalLM.from_config(config, attn_implementation=attn, dtype=dtype)
    try:
        from transformers.integrations.deepspeed import is_deepspeed_zero3_enabled

        kwargs = load_kwargs(dtype, attn, quantization, is_deepspeed_zero3_enabled())
        if source.remote_code:
            kwargs["trust_remote_code"] = True
            del kwargs["attn_implementation"]
        return AutoModelForCausalLM.from_pretrained(source.where, **kwargs)
    except OSError as e:
        raise ModelNotFound(f"cannot load the model from {source.where}: {e}") from e


def load_kwargs(dtype, attn: str, quantization=None, zero3: bool = False) -> dict:
    """`from_pretrained`'s arguments. A quantized model is placed by bitsandbytes as it loads: on
    this rank's own GPU (`LOCAL_RANK`), not on the first GPU of the node for every rank; under
    ZeRO-3 DeepSpeed places the parts (and Transformers refuses a `device_map`)."""
    kwargs = {"dtype": dtype, "attn_implementation": attn}
    if quantization is not None:
        kwargs["quantization_config"] = quantization
        if not zero3:
            kwargs["device_map"] = {"": int(os.environ.get("LOCAL_RANK", "0"))}
    return kwargs


def partitioned(model) -> tuple[int, int] | None:
    """For a model built under DeepSpeed's zero.Init: the parameters this rank holds and the
    model's whole count; None for a model every rank holds whole."""
    params = [p for p in model.parameters() if hasattr(p, "ds_numel")]
    if not params:
        return None
    return sum(p.ds_tensor.numel() for p in params), sum(p.ds_numel for p in params)


def tokenizer(plan: Plan, source: ModelSource):
    """The model's own tokenizer: a catalogue model's, from its folder or the hub, even when it is
    pretrained from random weights; for a model of numbers (or a catalogue model whose folder is
    not here) a SentencePiece model of the same vocabulary, `ONRAMP_TOKENIZER`, else
    `ONRAMP_MODELS/tok<vocab>.model`."""
    from transformers import AutoTokenizer

    if source.kind == "config" and plan.model.id is not None:
        try:
            source = _catalogue_model(plan)
        except ModelNotFound as missing:
            try:
                tok = _tokenizer_for_vocab(plan.model.arch.vocab)
            except ModelNotFound as e:
                raise ModelNotFound(f"{missing}; and {e}") from e
            return _ready(tok, plan)
    if source.kind in ("folder", "hub"):
        tok = AutoTokenizer.from_pretrained(source.where, trust_remote_code=source.remote_code)
    else:
        tok = _tokenizer_for_vocab(plan.model.arch.vocab)
    return _ready(tok, plan)


def _ready(tok, plan: Plan):
    if tok.pad_token is None:
        tok.pad_token = tok.unk_token or tok.eos_token
    if tok.chat_template is None:
        tok.chat_template = chat_template_for(plan.model.id)
    return tok


def _tokenizer_for_vocab(vocab: int):
    from transformers import AutoTokenizer

    looked = []
    candidates = []
    if os.environ.get("ONRAMP_TOKENIZER"):
        candidates.append(Path(os.environ["ONRAMP_TOKENIZER"]))
    else:
        looked.append("ONRAMP_TOKENIZER (not set)")
    root = models_root()
    if root is not None:
        candidates.append(root / f"tok{vocab}.model")
    else:
        looked.append(f"ONRAMP_MODELS/tok{vocab}.model (ONRAMP_MODELS is not set)")
    for path in candidates:
        if path.is_dir():
            return AutoTokenizer.from_pretrained(str(path))
        if path.is_file():
            return _sentencepiece(path)
        looked.append(f"{path} (missing)")
    raise ModelNotFound(
        f"no tokenizer for a model with a vocabulary of {vocab}; looked in: " + "; ".join(looked)
    )


def _sentencepiece(path: Path):
    """A Llama tokenizer over a bare SentencePiece model file."""
    from transformers import LlamaTokenizer

    with tempfile.TemporaryDirectory() as d:
        shutil.copyfile(path, Path(d) / "tokenizer.model")
        return LlamaTokenizer.from_pretrained(d)
