//! The generated parts of `docs/guide.md`: the spec reference (from the JSON Schema, through
//! `jobspec::schema_doc`) and the CLI reference (from the clap definition in `args.rs`, in
//! Chinese through `help_zh`), each in English and Chinese. The test below fails when the guide
//! and the code disagree; `UPDATE_EXPECT=1 cargo test -p onramp-cli guide` rewrites the parts.

use clap::{Arg, Command, CommandFactory};

/// How an argument is written on the command line: `<SPEC>`, `--edge <URL>`, `-f, --follow`.
fn written(a: &Arg) -> String {
    let names = a
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", a.get_id().as_str().to_uppercase()));
    if a.is_positional() {
        return names;
    }
    let mut flag = String::new();
    if let Some(s) = a.get_short() {
        flag.push_str(&format!("-{s}"));
    }
    if let Some(l) = a.get_long() {
        if !flag.is_empty() {
            flag.push_str(", ");
        }
        flag.push_str(&format!("--{l}"));
    }
    if a.get_num_args().is_some_and(|n| n.takes_values()) {
        flag.push(' ');
        flag.push_str(&names);
    }
    flag
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace("\n\n", " ")
        .replace('\n', " ")
}

/// The CLI reference as Markdown: per command, what it does, its usage and its arguments.
pub fn cli_reference(zh: bool) -> String {
    let mut root = if zh {
        crate::help_zh::localize(crate::args::Cli::command())
    } else {
        let mut c = crate::args::Cli::command();
        c.build();
        c
    };
    let (usage, head) = if zh {
        ("用法：", "| 参数 | 说明 |\n|---|---|\n")
    } else {
        ("Usage: ", "| argument | meaning |\n|---|---|\n")
    };
    let mut out = String::new();
    let names: Vec<String> = root
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .filter(|n| n != "help")
        .collect();
    for name in names {
        let Some(cmd) = root.find_subcommand_mut(&name) else {
            continue;
        };
        let line = cmd.render_usage().to_string();
        let line = line
            .split_once(": ")
            .map_or(line.as_str(), |x| x.1)
            .to_string();
        let cmd: &Command = cmd;
        let about = cmd
            .get_long_about()
            .or(cmd.get_about())
            .map(|s| s.to_string())
            .unwrap_or_default();
        out.push_str(&format!("#### `onramp {name}`\n\n{}\n\n", about.trim()));
        out.push_str(&format!("{usage}`{line}`\n\n"));
        let args: Vec<&Arg> = cmd
            .get_arguments()
            .filter(|a| !matches!(a.get_id().as_str(), "help" | "version" | "lang"))
            .collect();
        if !args.is_empty() {
            out.push_str(head);
            for a in args {
                let help = a
                    .get_long_help()
                    .or(a.get_help())
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                out.push_str(&format!("| `{}` | {} |\n", written(a), cell(&help)));
            }
            out.push('\n');
        }
    }
    out.trim_end().to_string() + "\n"
}

/// The generated parts, by the name their markers carry in the guide.
pub fn parts() -> Vec<(&'static str, String)> {
    use jobspec::schema_doc::reference_markdown;
    vec![
        (
            "spec-reference-en",
            reference_markdown(&jobspec::schema::json_schema(), jobspec::Lang::En),
        ),
        (
            "spec-reference-zh",
            reference_markdown(&jobspec::schema::json_schema(), jobspec::Lang::Zh),
        ),
        ("cli-reference-en", cli_reference(false)),
        ("cli-reference-zh", cli_reference(true)),
    ]
}

/// The guide with every generated part replaced by what the code says now; an error names a
/// part whose markers are missing.
pub fn regenerate(guide: &str) -> Result<String, String> {
    let mut text = guide.to_string();
    for (name, body) in parts() {
        let begin = format!("<!-- generated: {name} -->\n");
        let end = format!("<!-- end: {name} -->");
        let start = text
            .find(&begin)
            .ok_or(format!("no `{}` in the guide", begin.trim()))?
            + begin.len();
        let stop = text[start..]
            .find(&end)
            .ok_or(format!("no `{end}` in the guide"))?
            + start;
        text.replace_range(start..stop, &format!("\n{body}\n"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guide_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/guide.md")
    }

    /// The guide's spec and CLI references are what the schema and clap say, in both languages.
    #[test]
    fn the_guide_references_match_the_code() {
        let path = guide_path();
        let guide = std::fs::read_to_string(&path).unwrap();
        let now = regenerate(&guide).unwrap();
        if now != guide {
            if std::env::var("UPDATE_EXPECT").is_ok_and(|v| v == "1") {
                std::fs::write(&path, &now).unwrap();
            } else {
                panic!(
                    "docs/guide.md is out of date with the schema or the CLI: run \
                     `UPDATE_EXPECT=1 cargo test -p onramp-cli guide`"
                );
            }
        }
    }

    #[test]
    fn the_cli_reference_names_every_command_and_argument() {
        let en = cli_reference(false);
        assert!(en.contains("#### `onramp plan`"), "{en}");
        assert!(en.contains("| `<SPEC>` | The job spec"), "{en}");
        assert!(en.contains("| `-f, --follow` |"), "{en}");
        assert!(en.contains("| `--edge <URL>` |"), "{en}");
        assert!(!en.contains("onramp help`"));
        let zh = cli_reference(true);
        assert!(zh.contains("用法：`onramp plan [OPTIONS] <SPEC>`"), "{zh}");
        assert!(
            zh.contains("| `--explain` | 附上每个数字背后的公式与假设 |"),
            "{zh}"
        );
        assert_eq!(en.matches("#### ").count(), zh.matches("#### ").count());
    }

    #[test]
    fn a_guide_without_markers_is_refused() {
        assert!(regenerate("# guide\n").is_err());
    }
}
