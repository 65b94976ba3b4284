//! The spec reference, generated from the JSON Schema: every key with its type, its default, an
//! example and what it means, in English (the schema's own descriptions) and in Chinese (the
//! table below). `docs/guide.md` carries it; a test in the CLI keeps the guide equal to it.
//!
//! The examples also go into the schema (`examples`), where editors show them, and a test checks
//! that each one is valid for its key.

use crate::Lang;
use serde_json::Value;

/// Per table (`""` is the top level; the others are the schema's `$defs`) and key: the Chinese
/// description and an example, written as a TOML value.
pub const KEY_DOCS: &[(&str, &str, &str, &str)] = &[
    ("", "name", "作业的简短名称。", r#""qwen-lora-zh""#),
    (
        "",
        "task",
        "训练类型：`pretrain`、`sft`（全参数微调）、`lora`、`qlora` 或 `tiny-train`。",
        r#""lora""#,
    ),
    (
        "",
        "backend",
        "作业在哪里运行；`auto` 让边缘服务挑一个有该卡型的后端。",
        r#""slurm""#,
    ),
    (
        "",
        "model",
        "目录中的模型 id（`deepseek-llm-7b`、`qwen2.5-7b` 等），或一张架构参数表 `[model]`。",
        r#""qwen2.5-7b""#,
    ),
    (
        "",
        "data",
        "训练数据：哪个数据集、序列多长、一个 epoch 有多少 token。",
        r#"{ dataset = "alpaca-zh", seq_len = 2048 }"#,
    ),
    (
        "",
        "train",
        "怎么训练：步数或 epoch、批大小、学习率、精度、LoRA 设置。",
        r#"{ steps = 1000, micro_batch = 4 }"#,
    ),
    (
        "",
        "parallel",
        "工作如何分到各 GPU：ZeRO 阶段、卸载、张量/流水线/序列并行。",
        r#"{ zero_stage = 2 }"#,
    ),
    (
        "",
        "resources",
        "哪种卡、每节点几张、几个节点，以及运行时间上限。",
        r#"{ card = "a100-80g", cards_per_node = 8 }"#,
    ),
    ("", "estimate", "估算本身的参数。", r#"{ mfu = 0.35 }"#),
    (
        "",
        "checkpoint",
        "`onramp-train` 何时保存检查点、保留几个、是否续训。",
        r#"{ every_steps = 200 }"#,
    ),
    (
        "",
        "output",
        "`onramp-train` 在检查点之外还写出什么。",
        r#"{ merge_adapter = true }"#,
    ),
    (
        "CustomModel",
        "name",
        "自定义模型的显示名称。",
        r#""my-1b""#,
    ),
    ("CustomModel", "layers", "Transformer 块的数量。", "24"),
    (
        "CustomModel",
        "hidden",
        "残差流的宽度（嵌入维度）。",
        "2048",
    ),
    ("CustomModel", "heads", "每个块的注意力头数。", "16"),
    (
        "CustomModel",
        "kv_heads",
        "键/值头数（分组查询注意力）；普通多头注意力时等于 `heads`。",
        "4",
    ),
    ("CustomModel", "ffn", "门控 MLP 的中间层宽度。", "5632"),
    ("CustomModel", "vocab", "分词器的词表大小。", "32000"),
    (
        "CustomModel",
        "tied_embeddings",
        "输出投影是否与嵌入矩阵共享权重。",
        "true",
    ),
    (
        "CustomModel",
        "qkv_bias",
        "q/k/v 投影是否带偏置（Qwen2、ChatGLM3）。",
        "true",
    ),
    (
        "DataSpec",
        "dataset",
        "数据集 id，或集群上的路径。",
        r#""alpaca-zh""#,
    ),
    (
        "DataSpec",
        "tokens",
        "数据集一个 epoch 的 token 数；按 epoch 训练时必填。",
        "2000000000",
    ),
    (
        "DataSpec",
        "seq_len",
        "序列长度（token），1 到 131072。",
        "4096",
    ),
    (
        "TrainSpec",
        "epochs",
        "遍历 `data.tokens` 的次数；与 `steps` 二选一。",
        "3",
    ),
    (
        "TrainSpec",
        "steps",
        "优化器步数；与 `epochs` 二选一。",
        "1000",
    ),
    (
        "TrainSpec",
        "micro_batch",
        "每张 GPU 每次前向传播的序列数。",
        "4",
    ),
    (
        "TrainSpec",
        "grad_accum",
        "每个优化器步累积的微批次数。",
        "8",
    ),
    ("TrainSpec", "lr", "峰值学习率。", "0.0002"),
    ("TrainSpec", "warmup", "预热步数。", "100"),
    (
        "TrainSpec",
        "schedule",
        "预热之后的学习率调度：`cosine`、`linear` 或 `constant`。",
        r#""linear""#,
    ),
    (
        "TrainSpec",
        "precision",
        "权重与激活的数值格式：`bf16`、`fp16` 或 `fp32`。",
        r#""fp16""#,
    ),
    (
        "TrainSpec",
        "grad_checkpointing",
        "激活重计算：`true`（即 `\"full\"`）、`false`（即 `\"none\"`）或 `\"selective\"`。",
        "true",
    ),
    (
        "TrainSpec",
        "flash_attention",
        "FlashAttention：从不保存 s×s 的注意力分数。",
        "false",
    ),
    (
        "TrainSpec",
        "optimizer",
        "`adamw`（每个参数两个 fp32 动量）或 `sgd`（一个动量缓冲）。",
        r#""sgd""#,
    ),
    (
        "TrainSpec",
        "lora_rank",
        "LoRA 矩阵的秩（`lora`、`qlora`；默认 16）。",
        "8",
    ),
    (
        "TrainSpec",
        "lora_alpha",
        "LoRA 缩放分子：更新按 alpha / rank 缩放（默认 2 × rank）。",
        "16",
    ),
    (
        "TrainSpec",
        "lora_targets",
        "加适配器的模块名，或 `[\"all-linear\"]`。",
        r#"["q_proj", "v_proj"]"#,
    ),
    (
        "TrainSpec",
        "seed",
        "权重初始化、数据顺序及其他一切随机选择的种子。",
        "1234",
    ),
    (
        "ParallelSpec",
        "zero_stage",
        "DeepSpeed ZeRO 阶段，0 到 3。",
        "3",
    ),
    (
        "ParallelSpec",
        "offload_optimizer",
        "优化器状态放在哪里：`none`（GPU）、`cpu` 或 `nvme`（ZeRO 1 及以上）。",
        r#""cpu""#,
    ),
    (
        "ParallelSpec",
        "offload_params",
        "参数在两次使用之间放在哪里：`none`（GPU）、`cpu` 或 `nvme`（仅 ZeRO 3）。",
        r#""cpu""#,
    ),
    ("ParallelSpec", "tp", "张量并行度。", "2"),
    ("ParallelSpec", "pp", "流水线并行度。", "2"),
    (
        "ParallelSpec",
        "sp",
        "序列并行度（DeepSpeed-Ulysses）：把每条序列切到多张 GPU 上。",
        "4",
    ),
    (
        "ResourcesSpec",
        "card",
        "目录中的卡型 id（`a100-80g`、`rtx-4090`、`mxc500`、`cpu` 等）。",
        r#""a100-80g""#,
    ),
    (
        "ResourcesSpec",
        "cards_per_node",
        "每个节点使用的 GPU 数。",
        "8",
    ),
    ("ResourcesSpec", "nodes", "节点数。", "2"),
    (
        "ResourcesSpec",
        "time_limit",
        "运行时间上限，如 `\"24h\"`、`\"30m\"`、`\"2d\"` 或 `\"1h30m\"`。",
        r#""48h""#,
    ),
    (
        "CheckpointSpec",
        "every_steps",
        "每隔这么多优化器步保存一次。",
        "200",
    ),
    (
        "CheckpointSpec",
        "every_minutes",
        "距上次保存过了这么多分钟也保存（0：不按时间保存）。",
        "60",
    ),
    ("CheckpointSpec", "keep", "保留最近几个检查点。", "2"),
    (
        "CheckpointSpec",
        "resume",
        "在同一工作目录重新启动的作业从最新检查点继续。",
        "false",
    ),
    (
        "CheckpointSpec",
        "resume_from",
        "从本账户之前某个作业（以其 id 指定）的最新检查点继续：训练开始前，该检查点会被复制到本作业自己的目录中。",
        "\"3f2a9c0d1e4b5a69\"",
    ),
    (
        "OutputSpec",
        "merge_adapter",
        "另外写出合并了 LoRA 适配器的基础模型（`lora`、`qlora`）。",
        "true",
    ),
    (
        "OutputSpec",
        "report_to",
        "除 Onramp 自己的指标外，Trainer 还上报给哪些实验跟踪工具。若后端环境未另行指定：TensorBoard 事件文件和 MLflow 的 SQLite 库写在作业的 `out/` 中；W&B 有 `WANDB_API_KEY` 时在线上报，否则在那里记录离线运行。",
        r#"["tensorboard"]"#,
    ),
    (
        "EstimateSpec",
        "mfu",
        "时间估算假设的模型 FLOPs 利用率（GPU 上默认 0.40）。",
        "0.35",
    ),
    (
        "EstimateSpec",
        "claimed_time",
        "别人声称这个作业需要的时间，如 `\"30h\"`；用物理上限来检验。",
        r#""30h""#,
    ),
];

/// The tables of the reference in the order a spec is written, with the TOML header each has.
pub(crate) const TABLES: &[(&str, &str)] = &[
    ("", ""),
    ("CustomModel", "[model]"),
    ("DataSpec", "[data]"),
    ("TrainSpec", "[train]"),
    ("ParallelSpec", "[parallel]"),
    ("ResourcesSpec", "[resources]"),
    ("CheckpointSpec", "[checkpoint]"),
    ("OutputSpec", "[output]"),
    ("EstimateSpec", "[estimate]"),
];

/// An example (TOML value text) as JSON.
pub fn example_json(toml_value: &str) -> Option<Value> {
    let table: toml::Table = toml::from_str(&format!("x = {toml_value}")).ok()?;
    serde_json::to_value(table.get("x")?).ok()
}

/// The Chinese description and the example of one key.
pub fn key_doc(def: &str, key: &str) -> Option<(&'static str, &'static str)> {
    KEY_DOCS
        .iter()
        .find(|(d, k, _, _)| *d == def && *k == key)
        .map(|(_, _, zh, ex)| (*zh, *ex))
}

pub(crate) fn node<'a>(schema: &'a Value, def: &str) -> &'a Value {
    if def.is_empty() {
        schema
    } else {
        &schema["$defs"][def]
    }
}

/// The schema a `$ref` points at, else the node itself.
pub(crate) fn target<'a>(schema: &'a Value, prop: &'a Value) -> &'a Value {
    match prop["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        Some(def) => &schema["$defs"][def],
        None => prop,
    }
}

/// The enum words of a node (`enum`, or `oneOf` of `const`s).
fn words(node: &Value) -> Option<Vec<String>> {
    if let Some(list) = node["enum"].as_array() {
        return Some(
            list.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
        );
    }
    let list = node["oneOf"].as_array()?;
    let mut out = Vec::new();
    for v in list {
        match (&v["const"], v["enum"].as_array()) {
            (Value::String(c), _) => out.push(c.clone()),
            (_, Some(e)) => out.extend(e.iter().filter_map(|w| w.as_str().map(String::from))),
            _ => return None,
        }
    }
    Some(out)
}

/// The words a key takes (its `enum`, or a `oneOf` of constants), through its `$ref`; empty
/// when the key is not a word.
pub fn enum_words(schema: &Value, prop: &Value) -> Vec<String> {
    words(target(schema, prop)).unwrap_or_default()
}

/// The type of a key in words: `integer 1–64`, one of `cosine`, `linear`, …
fn type_words(schema: &Value, prop: &Value, lang: Lang) -> String {
    let t = target(schema, prop);
    if let Some(w) = words(t) {
        let list: Vec<String> = w.iter().map(|w| format!("`{w}`")).collect();
        return match lang {
            Lang::En => format!("one of {}", list.join(", ")),
            Lang::Zh => format!("{} 之一", list.join("、")),
        };
    }
    if let Some(any) = t["anyOf"].as_array() {
        // A branch with only a pattern is the case-insensitive twin of an enum beside it.
        let parts: Vec<String> = any
            .iter()
            .filter(|a| a.get("pattern").is_none())
            .map(|a| type_words(schema, a, lang))
            .collect();
        return parts.join(match lang {
            Lang::En => " or ",
            Lang::Zh => " 或 ",
        });
    }
    let kind = match &t["type"] {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|v| v.as_str())
            .find(|s| *s != "null")
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    };
    let name = match (kind.as_str(), lang) {
        ("integer", Lang::En) => "integer",
        ("integer", Lang::Zh) => "整数",
        ("number", Lang::En) => "number",
        ("number", Lang::Zh) => "数",
        ("string", Lang::En) => "string",
        ("string", Lang::Zh) => "字符串",
        ("boolean", Lang::En) => "boolean",
        ("boolean", Lang::Zh) => "布尔值",
        ("object", Lang::En) => "table",
        ("object", Lang::Zh) => "表",
        ("array", _) => {
            let item = type_words(schema, &t["items"], lang);
            return match lang {
                Lang::En => format!("list of {item}"),
                Lang::Zh => format!("{item}列表"),
            };
        }
        _ => "",
    };
    match (&t["minimum"], &t["maximum"]) {
        (Value::Number(lo), Value::Number(hi)) => format!("{name} {lo}–{hi}"),
        _ => name.to_string(),
    }
}

/// A TOML value as one line of text (for defaults).
fn toml_words(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{s}\""),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(toml_words).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(_) => "{ … }".to_string(),
        other => other.to_string(),
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The spec reference as Markdown: one table per TOML table, one row per key.
pub fn reference_markdown(schema: &Value, lang: Lang) -> String {
    let mut out = String::new();
    let (head, required, none) = match lang {
        Lang::En => (
            "| key | type | default | example | meaning |\n|---|---|---|---|---|\n",
            "**required**",
            "not set",
        ),
        Lang::Zh => (
            "| 键 | 类型 | 默认值 | 示例 | 含义 |\n|---|---|---|---|---|\n",
            "**必填**",
            "不设置",
        ),
    };
    for (def, header) in TABLES {
        let n = node(schema, def);
        let Some(props) = n["properties"].as_object() else {
            continue;
        };
        let title = if header.is_empty() {
            match lang {
                Lang::En => "Top level".to_string(),
                Lang::Zh => "顶层".to_string(),
            }
        } else {
            format!("`{header}`")
        };
        let about = if def.is_empty() {
            String::new()
        } else {
            let key = header.trim_matches(['[', ']']);
            match lang {
                Lang::En => schema["properties"][key]["description"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                Lang::Zh => key_doc("", key).map_or(String::new(), |(zh, _)| zh.to_string()),
            }
        };
        out.push_str(&format!("#### {title}\n\n"));
        if !about.is_empty() {
            out.push_str(&format!("{about}\n\n"));
        }
        out.push_str(head);
        let req: Vec<&str> = n["required"]
            .as_array()
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        for (key, prop) in props {
            if def.is_empty() && !matches!(key.as_str(), "name" | "task" | "backend" | "model") {
                continue; // a table of its own below
            }
            let (zh, example) = key_doc(def, key).unwrap_or(("", ""));
            let meaning = match lang {
                Lang::En => prop["description"]
                    .as_str()
                    .or_else(|| target(schema, prop)["description"].as_str())
                    .unwrap_or(""),
                Lang::Zh => zh,
            };
            let default = if req.contains(&key.as_str()) {
                required.to_string()
            } else {
                match prop.get("default") {
                    Some(v) => format!("`{}`", toml_words(v)),
                    None => none.to_string(),
                }
            };
            out.push_str(&format!(
                "| `{key}` | {} | {default} | `{}` | {} |\n",
                cell(&type_words(schema, prop, lang)),
                cell(example),
                cell(meaning)
            ));
        }
        out.push('\n');
    }
    out.trim_end().to_string() + "\n"
}
