//! The model catalogue: architecture numbers of the models users train, from their published
//! configs, with the parameter counts their publishers report (checked by a test).

use serde::Serialize;

/// The numbers of a llama-family decoder that the estimators need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Arch {
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    /// Intermediate size of the gated (SwiGLU) MLP: three matrices hidden×ffn.
    pub ffn: u32,
    pub vocab: u32,
    /// Output projection shares the embedding matrix.
    pub tied_embeddings: bool,
    /// q/k/v projections carry biases.
    pub qkv_bias: bool,
}

/// One catalogue model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Model {
    pub id: &'static str,
    pub display: &'static str,
    pub arch: Arch,
    /// Longest context the model was trained for, in tokens.
    pub max_seq_len: u32,
    /// Parameter count as the publisher reports it (rounded as published).
    pub published_params: u64,
    /// Where the weights are published (Hugging Face repo id), for launch commands; a spec may
    /// name the model by it.
    pub hf_repo: &'static str,
    /// The chat layout its conversations are written in (`chatml`, `llama-3`, …; empty: none of
    /// its own), which the trainer uses when the tokenizer brings no chat template.
    pub chat_template: &'static str,
    /// How its blocks name their linear layers, which decides what LoRA can target.
    pub family: Family,
    /// Its Hugging Face repo runs code of its own (`trust_remote_code`): trained only on a
    /// backend whose operator allows it by id.
    pub remote_code: bool,
}

/// The module layout of a model's blocks: the names PEFT targets LoRA adapters by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Llama, Qwen2, Mistral, DeepSeek: `q_proj`, `k_proj`, `v_proj`, `o_proj` and the gated
    /// MLP's `gate_proj`, `up_proj`, `down_proj`.
    Llama,
    /// ChatGLM: fused `query_key_value`, `dense`, and the MLP's fused `dense_h_to_4h` and
    /// `dense_4h_to_h`.
    ChatGlm,
}

impl Family {
    /// The linear layers of one block that LoRA may target, by PEFT module name.
    pub fn modules(self) -> &'static [&'static str] {
        match self {
            Family::Llama => &[
                "q_proj",
                "k_proj",
                "v_proj",
                "o_proj",
                "gate_proj",
                "up_proj",
                "down_proj",
            ],
            Family::ChatGlm => &["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"],
        }
    }

    /// The layer of this family that does the work another family's layer `name` does
    /// (ChatGLM's `query_key_value` is Llama's `q_proj`, `k_proj` and `v_proj`), so that a
    /// refusal can name it.
    pub fn counterpart(self, name: &str) -> Option<&'static str> {
        const PAIRS: [(&str, &str); 7] = [
            ("q_proj", "query_key_value"),
            ("k_proj", "query_key_value"),
            ("v_proj", "query_key_value"),
            ("o_proj", "dense"),
            ("gate_proj", "dense_h_to_4h"),
            ("up_proj", "dense_h_to_4h"),
            ("down_proj", "dense_4h_to_h"),
        ];
        PAIRS.iter().find_map(|&(llama, glm)| match self {
            Family::Llama => (glm == name).then_some(llama),
            Family::ChatGlm => (llama == name).then_some(glm),
        })
    }

    /// The targets LoRA gets when the spec names none: the attention projections.
    pub fn default_lora_targets(self) -> &'static [&'static str] {
        match self {
            Family::Llama => &["q_proj", "k_proj", "v_proj", "o_proj"],
            Family::ChatGlm => &["query_key_value", "dense"],
        }
    }
}

#[allow(clippy::too_many_arguments)] // one argument per config.json field, in that order
const fn arch(
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u32,
    vocab: u32,
    tied_embeddings: bool,
    qkv_bias: bool,
) -> Arch {
    Arch {
        layers,
        hidden,
        heads,
        kv_heads,
        ffn,
        vocab,
        tied_embeddings,
        qkv_bias,
    }
}

pub const MODELS: &[Model] = &[
    // huggingface.co/deepseek-ai/deepseek-llm-7b-base config.json: 30 layers, hidden 4096,
    // 32 heads (MHA), intermediate 11008, vocab 102400, untied; model card: 7B (6.91B tensors).
    Model {
        id: "deepseek-llm-7b",
        display: "DeepSeek LLM 7B",
        arch: arch(30, 4096, 32, 32, 11008, 102_400, false, false),
        max_seq_len: 4096,
        hf_repo: "deepseek-ai/deepseek-llm-7b-base",
        chat_template: "deepseek",
        family: Family::Llama,
        remote_code: false,
        published_params: 6_910_000_000,
    },
    // huggingface.co/deepseek-ai/deepseek-llm-7b-chat: the base model's config, tuned for chat.
    Model {
        id: "deepseek-llm-7b-chat",
        display: "DeepSeek LLM 7B Chat",
        arch: arch(30, 4096, 32, 32, 11008, 102_400, false, false),
        max_seq_len: 4096,
        hf_repo: "deepseek-ai/deepseek-llm-7b-chat",
        chat_template: "deepseek",
        family: Family::Llama,
        remote_code: false,
        published_params: 6_910_000_000,
    },
    // huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Qwen-7B config.json (Qwen2.5-Math-7B
    // architecture): 28 layers, hidden 3584, 28 heads, 4 KV heads, intermediate 18944,
    // vocab 152064, untied, qkv bias; 7.62B on the model page.
    Model {
        id: "deepseek-r1-distill-qwen-7b",
        display: "DeepSeek-R1-Distill-Qwen-7B",
        arch: arch(28, 3584, 28, 4, 18944, 152_064, false, true),
        max_seq_len: 131_072,
        hf_repo: "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        chat_template: "deepseek-r1",
        family: Family::Llama,
        remote_code: false,
        published_params: 7_620_000_000,
    },
    // huggingface.co/Qwen/Qwen2.5-7B config.json; Qwen2.5 technical report (2024) table 1:
    // 7.61B parameters.
    Model {
        id: "qwen2.5-7b",
        display: "Qwen2.5 7B",
        arch: arch(28, 3584, 28, 4, 18944, 152_064, false, true),
        max_seq_len: 131_072,
        hf_repo: "Qwen/Qwen2.5-7B",
        chat_template: "chatml",
        family: Family::Llama,
        remote_code: false,
        published_params: 7_610_000_000,
    },
    // huggingface.co/Qwen/Qwen2.5-7B-Instruct config.json: the base's numbers, 32K positions (128K with YaRN).
    Model {
        id: "qwen2.5-7b-instruct",
        display: "Qwen2.5 7B Instruct",
        arch: arch(28, 3584, 28, 4, 18944, 152_064, false, true),
        max_seq_len: 32_768,
        hf_repo: "Qwen/Qwen2.5-7B-Instruct",
        chat_template: "chatml",
        family: Family::Llama,
        remote_code: false,
        published_params: 7_610_000_000,
    },
    // huggingface.co/Qwen/Qwen2.5-14B config.json: 48 layers, hidden 5120, 40 heads, 8 KV heads,
    // intermediate 13824; model card: 14.7B.
    Model {
        id: "qwen2.5-14b",
        display: "Qwen2.5 14B",
        arch: arch(48, 5120, 40, 8, 13824, 152_064, false, true),
        max_seq_len: 131_072,
        hf_repo: "Qwen/Qwen2.5-14B",
        chat_template: "chatml",
        family: Family::Llama,
        remote_code: false,
        published_params: 14_700_000_000,
    },
    // huggingface.co/Qwen/Qwen2.5-14B-Instruct config.json: the base's numbers, 32K positions.
    Model {
        id: "qwen2.5-14b-instruct",
        display: "Qwen2.5 14B Instruct",
        arch: arch(48, 5120, 40, 8, 13824, 152_064, false, true),
        max_seq_len: 32_768,
        hf_repo: "Qwen/Qwen2.5-14B-Instruct",
        chat_template: "chatml",
        family: Family::Llama,
        remote_code: false,
        published_params: 14_700_000_000,
    },
    // huggingface.co/Qwen/Qwen2.5-72B config.json: 80 layers, hidden 8192, 64 heads, 8 KV heads,
    // intermediate 29568; model card: 72.7B.
    Model {
        id: "qwen2.5-72b",
        display: "Qwen2.5 72B",
        arch: arch(80, 8192, 64, 8, 29568, 152_064, false, true),
        max_seq_len: 131_072,
        hf_repo: "Qwen/Qwen2.5-72B",
        chat_template: "chatml",
        family: Family::Llama,
        remote_code: false,
        published_params: 72_700_000_000,
    },
    // huggingface.co/Qwen/Qwen2.5-72B-Instruct config.json: the base's numbers, 32K positions.
    Model {
        id: "qwen2.5-72b-instruct",
        display: "Qwen2.5 72B Instruct",
        arch: arch(80, 8192, 64, 8, 29568, 152_064, false, true),
        max_seq_len: 32_768,
        hf_repo: "Qwen/Qwen2.5-72B-Instruct",
        chat_template: "chatml",
        family: Family::Llama,
        remote_code: false,
        published_params: 72_700_000_000,
    },
    // huggingface.co/meta-llama/Meta-Llama-3-8B config.json: 32 layers, hidden 4096, 32 heads,
    // 8 KV heads, intermediate 14336, vocab 128256, untied; 8.03B on the model page.
    Model {
        id: "llama-3-8b",
        display: "Llama 3 8B",
        arch: arch(32, 4096, 32, 8, 14336, 128_256, false, false),
        max_seq_len: 8192,
        hf_repo: "meta-llama/Meta-Llama-3-8B",
        chat_template: "llama-3",
        family: Family::Llama,
        remote_code: false,
        published_params: 8_030_000_000,
    },
    // huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct config.json: the base's numbers.
    Model {
        id: "llama-3-8b-instruct",
        display: "Llama 3 8B Instruct",
        arch: arch(32, 4096, 32, 8, 14336, 128_256, false, false),
        max_seq_len: 8192,
        hf_repo: "meta-llama/Meta-Llama-3-8B-Instruct",
        chat_template: "llama-3",
        family: Family::Llama,
        remote_code: false,
        published_params: 8_030_000_000,
    },
    // huggingface.co/meta-llama/Meta-Llama-3-70B config.json: 80 layers, hidden 8192, 64 heads,
    // 8 KV heads, intermediate 28672; 70.6B on the model page.
    Model {
        id: "llama-3-70b",
        display: "Llama 3 70B",
        arch: arch(80, 8192, 64, 8, 28672, 128_256, false, false),
        max_seq_len: 8192,
        hf_repo: "meta-llama/Meta-Llama-3-70B",
        chat_template: "llama-3",
        family: Family::Llama,
        remote_code: false,
        published_params: 70_600_000_000,
    },
    // huggingface.co/meta-llama/Meta-Llama-3-70B-Instruct config.json: the base's numbers.
    Model {
        id: "llama-3-70b-instruct",
        display: "Llama 3 70B Instruct",
        arch: arch(80, 8192, 64, 8, 28672, 128_256, false, false),
        max_seq_len: 8192,
        hf_repo: "meta-llama/Meta-Llama-3-70B-Instruct",
        chat_template: "llama-3",
        family: Family::Llama,
        remote_code: false,
        published_params: 70_600_000_000,
    },
    // huggingface.co/THUDM/chatglm3-6b config.json: num_layers 28, hidden 4096, 32 heads,
    // multi_query_group_num 2, ffn_hidden_size 13696 (SwiGLU), padded_vocab_size 65024,
    // add_qkv_bias, separate output layer; 6.24B on the model page.
    Model {
        id: "chatglm3-6b",
        display: "ChatGLM3 6B",
        arch: arch(28, 4096, 32, 2, 13696, 65_024, false, true),
        max_seq_len: 8192,
        hf_repo: "THUDM/chatglm3-6b",
        chat_template: "chatglm3",
        family: Family::ChatGlm,
        remote_code: true,
        published_params: 6_240_000_000,
    },
    // huggingface.co/mistralai/Mistral-7B-v0.1 config.json: 32 layers, hidden 4096, 32 heads,
    // 8 KV heads, intermediate 14336, vocab 32000; 7.24B on the model page.
    Model {
        id: "mistral-7b",
        display: "Mistral 7B v0.1",
        arch: arch(32, 4096, 32, 8, 14336, 32_000, false, false),
        max_seq_len: 32_768,
        hf_repo: "mistralai/Mistral-7B-v0.1",
        chat_template: "mistral",
        family: Family::Llama,
        remote_code: false,
        published_params: 7_240_000_000,
    },
    // huggingface.co/mistralai/Mistral-7B-Instruct-v0.2 config.json: v0.1's numbers, 32K context without sliding window.
    Model {
        id: "mistral-7b-instruct",
        display: "Mistral 7B Instruct v0.2",
        arch: arch(32, 4096, 32, 8, 14336, 32_000, false, false),
        max_seq_len: 32_768,
        hf_repo: "mistralai/Mistral-7B-Instruct-v0.2",
        chat_template: "mistral",
        family: Family::Llama,
        remote_code: false,
        published_params: 7_240_000_000,
    },
    // karpathy/llama2.c README, "custom tokenizers" table, and the header of stories260K.bin
    // (dim 64, hidden_dim 172, 5 layers, 8 heads, 4 KV heads, vocab 512, seq 512): 260K.
    Model {
        id: "stories260K",
        display: "TinyStories 260K (llama2.c)",
        arch: arch(5, 64, 8, 4, 172, 512, true, false),
        max_seq_len: 512,
        hf_repo: "karpathy/tinyllamas/stories260K",
        chat_template: "",
        family: Family::Llama,
        remote_code: false,
        published_params: 260_000,
    },
    // karpathy/llama2.c README model table: dim 288, 6 layers, 6 heads, seq 256, 15M;
    // hidden_dim 768 and the Llama 2 tokenizer (32000) from the checkpoint header.
    Model {
        id: "stories15M",
        display: "TinyStories 15M (llama2.c)",
        arch: arch(6, 288, 6, 6, 768, 32_000, true, false),
        max_seq_len: 256,
        hf_repo: "karpathy/tinyllamas/stories15M.bin",
        chat_template: "",
        family: Family::Llama,
        remote_code: false,
        published_params: 15_000_000,
    },
    // karpathy/llama2.c README: dim 512, 8 layers, 8 heads, seq 1024, 42M; hidden_dim 1376.
    Model {
        id: "stories42M",
        display: "TinyStories 42M (llama2.c)",
        arch: arch(8, 512, 8, 8, 1376, 32_000, true, false),
        max_seq_len: 1024,
        hf_repo: "karpathy/tinyllamas/stories42M.bin",
        chat_template: "",
        family: Family::Llama,
        remote_code: false,
        published_params: 42_000_000,
    },
    // karpathy/llama2.c README: dim 768, 12 layers, 12 heads, seq 1024, 110M; hidden_dim 2048.
    Model {
        id: "stories110M",
        display: "TinyStories 110M (llama2.c)",
        arch: arch(12, 768, 12, 12, 2048, 32_000, true, false),
        max_seq_len: 1024,
        hf_repo: "karpathy/tinyllamas/stories110M.bin",
        chat_template: "",
        family: Family::Llama,
        remote_code: false,
        published_params: 110_000_000,
    },
];

/// Looks a model up by id (case-insensitive, so `stories260k` finds `stories260K`).
pub fn model(id: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| m.id.eq_ignore_ascii_case(id))
}

/// Looks a model up by its Hugging Face repo id (`Qwen/Qwen2.5-7B-Instruct`), case-insensitive.
pub fn model_by_repo(repo: &str) -> Option<&'static Model> {
    MODELS
        .iter()
        .find(|m| m.hf_repo.eq_ignore_ascii_case(repo.trim_end_matches('/')))
}

/// Every model id, for "did you mean".
pub fn model_ids() -> impl Iterator<Item = &'static str> {
    MODELS.iter().map(|m| m.id)
}
