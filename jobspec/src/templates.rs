//! The starter templates the app offers, as TOML text from `jobspec/specs/`.

/// A starter spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Template {
    pub id: &'static str,
    pub title_en: &'static str,
    pub title_zh: &'static str,
    pub toml: &'static str,
}

/// Every starter template, in the order the app shows them.
pub fn templates() -> &'static [Template] {
    TEMPLATES
}

/// One template by id.
pub fn template(id: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.id == id)
}

const TEMPLATES: &[Template] = &[
    Template {
        id: "7b-lora-4090",
        title_en: "7B LoRA on one RTX 4090",
        title_zh: "单张 RTX 4090 上 LoRA 微调 7B",
        toml: include_str!("../specs/7b-lora-4090.toml"),
    },
    Template {
        id: "7b-sft-zero3-8xa100",
        title_en: "7B full SFT with ZeRO-3 on 8×A100-80G",
        title_zh: "8×A100-80G 上用 ZeRO-3 全参 SFT 7B",
        toml: include_str!("../specs/7b-sft-zero3-8xa100.toml"),
    },
    Template {
        id: "deepseek-7b-128k-mxc500",
        title_en: "DeepSeek-7B at 128K context on 8×MXC500",
        title_zh: "8×MXC500 上训练 128K 上下文的 DeepSeek-7B",
        toml: include_str!("../specs/deepseek-7b-128k-mxc500.toml"),
    },
    Template {
        id: "tiny-train-stories260k",
        title_en: "Train stories260K on the local runner",
        title_zh: "在本地运行器上训练 stories260K",
        toml: include_str!("../specs/tiny-train-stories260k.toml"),
    },
];
