//! The starter templates the app offers, as TOML text from `jobspec/specs/`.

/// A starter spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Template {
    pub id: &'static str,
    pub title_en: &'static str,
    pub title_zh: &'static str,
    pub toml: &'static str,
    /// The file's comments in Chinese: each English comment (after its `# `) and its Chinese.
    pub comments_zh: &'static [(&'static str, &'static str)],
}

/// Where an edge serves the spec's JSON Schema.
pub const SCHEMA_PATH: &str = "/schema/jobspec.schema.json";

/// The schema line that starts every template file in the repository: a path to the schema
/// next to the templates, so an editor (Taplo, Even Better TOML) completes and checks them.
#[cfg(test)]
const REPO_SCHEMA_LINE: &str = "#:schema ../schema/jobspec.schema.json";

impl Template {
    /// The template as it is handed to a user: its schema line points at `edge`'s copy of the
    /// schema, so the file an editor opens completes and checks wherever it is saved.
    pub fn toml_for(&self, edge: &str) -> String {
        with_schema_url(self.toml, edge)
    }

    /// [`Template::toml_for`] with its comments in `lang` (the keys and values are the same).
    pub fn toml_in(&self, edge: &str, lang: crate::Lang) -> String {
        let mut text = self.toml_for(edge);
        if lang == crate::Lang::Zh {
            for (en, zh) in self.comments_zh {
                text = text.replace(&format!("# {en}"), &format!("# {zh}"));
            }
        }
        text
    }
}

/// A spec text whose first line is a `#:schema` line, with that line pointing at `edge`'s
/// schema; any other text is returned as it is.
pub fn with_schema_url(toml: &str, edge: &str) -> String {
    match toml.split_once('\n') {
        Some((first, rest)) if first.starts_with("#:schema ") => {
            format!(
                "#:schema {}{SCHEMA_PATH}\n{rest}",
                edge.trim_end_matches('/')
            )
        }
        _ => toml.to_string(),
    }
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
        comments_zh: &[
            (
                "Template: LoRA fine-tuning of a 7B model on one RTX 4090 (24 GB).",
                "模板：在单张 RTX 4090（24 GB）上对 7B 模型做 LoRA 微调。",
            ),
            ("tokens in one epoch", "每个 epoch 的 token 数"),
        ],
    },
    Template {
        id: "7b-sft-zero3-8xa100",
        title_en: "7B full SFT with ZeRO-3 on 8×A100-80G",
        title_zh: "8×A100-80G 上用 ZeRO-3 全参 SFT 7B",
        toml: include_str!("../specs/7b-sft-zero3-8xa100.toml"),
        comments_zh: &[(
            "Template: full supervised fine-tuning of a 7B model with DeepSpeed ZeRO-3 on 8×A100-80G.",
            "模板：在 8×A100-80G 上用 DeepSpeed ZeRO-3 对 7B 模型做全参监督微调。",
        )],
    },
    Template {
        id: "deepseek-7b-128k-mxc500",
        title_en: "DeepSeek-7B at 128K context on 8×MXC500",
        title_zh: "8×MXC500 上训练 128K 上下文的 DeepSeek-7B",
        toml: include_str!("../specs/deepseek-7b-128k-mxc500.toml"),
        comments_zh: &[(
            "Template: DeepSeek-7B continued training at 128K context with ZeRO-3 and CPU offload on 8×MXC500.",
            "模板：在 8×MXC500 上用 ZeRO-3 与 CPU 卸载，以 128K 上下文继续训练 DeepSeek-7B。",
        )],
    },
    Template {
        id: "tiny-train-stories260k",
        title_en: "Train stories260K on the local runner",
        title_zh: "在本地运行器上训练 stories260K",
        toml: include_str!("../specs/tiny-train-stories260k.toml"),
        comments_zh: &[(
            "Template: train the in-browser tiny model (stories260K) on the local runner's CPU.",
            "模板：在本地运行器的 CPU 上训练浏览器内的小模型（stories260K）。",
        )],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_names_the_schema_and_hands_out_the_edge_copy() {
        for t in templates() {
            assert!(t.toml.starts_with(REPO_SCHEMA_LINE), "{}", t.id);
            let out = t.toml_for("https://onramp.example/");
            assert!(
                out.starts_with("#:schema https://onramp.example/schema/jobspec.schema.json\n"),
                "{out}"
            );
            assert_eq!(out.lines().count(), t.toml.lines().count());
            assert_eq!(
                out.split_once('\n').map(|x| x.1),
                t.toml.split_once('\n').map(|x| x.1)
            );
        }
        assert_eq!(
            with_schema_url("name = \"x\"\n", "http://e"),
            "name = \"x\"\n"
        );
    }

    /// In Chinese every comment of a template is Chinese, and the spec is the same.
    #[test]
    fn every_template_has_its_comments_in_chinese() {
        for t in templates() {
            let zh = t.toml_in("http://e", crate::Lang::Zh);
            for line in zh.lines().filter(|l| !l.starts_with("#:schema")) {
                if let Some((_, comment)) = line.split_once('#') {
                    assert!(
                        comment
                            .chars()
                            .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                        "{}: an English comment: {line}",
                        t.id
                    );
                }
            }
            let (a, _) = crate::validate_toml(t.toml);
            let (b, _) = crate::validate_toml(&zh);
            assert_eq!(
                a.map(|v| v.spec().clone()),
                b.map(|v| v.spec().clone()),
                "{}",
                t.id
            );
            assert_eq!(
                t.toml_in("http://e", crate::Lang::En),
                t.toml_for("http://e")
            );
        }
    }

    /// The repository's path from the templates to the schema is real.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn the_repo_schema_line_points_at_the_schema_file() {
        let path = REPO_SCHEMA_LINE.trim_start_matches("#:schema ");
        let specs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("specs");
        assert!(specs.join(path).is_file());
    }
}
