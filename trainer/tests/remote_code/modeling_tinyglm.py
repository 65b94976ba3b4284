"""A tiny decoder laid out as ChatGLM names its layers (fused `query_key_value`, `dense`,
`dense_h_to_4h`, `dense_4h_to_h`), loaded only with trust_remote_code: written by the tests."""

import torch.nn.functional as F
from torch import nn
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput


class TinyGlmConfig(PretrainedConfig):
    model_type = "tinyglm"

    def __init__(
        self,
        vocab_size=512,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        **kw,
    ):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        kw.setdefault("use_cache", False)
        super().__init__(**kw)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c.hidden_size
        self.heads = c.num_attention_heads
        self.input_layernorm = nn.RMSNorm(h)
        self.query_key_value = nn.Linear(h, 3 * h, bias=True)
        self.dense = nn.Linear(h, h, bias=False)
        self.post_attention_layernorm = nn.RMSNorm(h)
        self.dense_h_to_4h = nn.Linear(h, 2 * c.intermediate_size, bias=False)
        self.dense_4h_to_h = nn.Linear(c.intermediate_size, h, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.query_key_value(self.input_layernorm(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.dense(a.transpose(1, 2).reshape(b, s, h))
        gate, up = self.dense_h_to_4h(self.post_attention_layernorm(x)).chunk(2, dim=-1)
        return x + self.dense_4h_to_h(F.silu(gate) * up)


class TinyGlmForCausalLM(PreTrainedModel, GenerationMixin):
    config_class = TinyGlmConfig
    base_model_prefix = "transformer"

    def __init__(self, config):
        super().__init__(config)
        self.embedding = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.num_hidden_layers))
        self.final_layernorm = nn.RMSNorm(config.hidden_size)
        self.output_layer = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.embedding

    def set_input_embeddings(self, value):
        self.embedding = value

    def forward(self, input_ids=None, attention_mask=None, labels=None, **kwargs):
        x = self.embedding(input_ids)
        for block in self.layers:
            x = block(x)
        logits = self.output_layer(self.final_layernorm(x)).float()
        loss = None
        if labels is not None:
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.size(-1)),
                labels[:, 1:].reshape(-1),
                ignore_index=-100,
            )
        return CausalLMOutput(loss=loss, logits=logits)
