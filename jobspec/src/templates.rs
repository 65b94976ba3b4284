//! The starter templates the app offers, as TOML text from `jobspec/specs/`.

/// A starter spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Template {
    pub id: &'static str,
    pub title_en: &'static str,
    pub title_zh: &'static str,
    pub toml: &'static str,
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

    /// The repository's path from the templates to the schema is real.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn the_repo_schema_line_points_at_the_schema_file() {
        let path = REPO_SCHEMA_LINE.trim_start_matches("#:schema ");
        let specs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("specs");
        assert!(specs.join(path).is_file());
    }
}
