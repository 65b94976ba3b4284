//! Free-text fields: what characters each may hold.
//!
//! A spec's strings end up in shell scripts, command lines, `#SBATCH` comments and file names on
//! a cluster, and in pages other people open. The launch artifacts quote what they interpolate,
//! but a string that can hold a line break or an invisible reordering character is trouble
//! wherever it lands, so validation refuses such characters where the text enters: control
//! characters (C0, DEL, C1, which include line feeds and carriage returns), Unicode line and
//! paragraph separators, bidirectional overrides and isolates, and zero-width characters. A
//! dataset, which becomes a path or an id on the cluster, is held to a narrower set still.

use super::checker::Checker;
use crate::diag::Code;
use crate::spec::{JobSpec, ModelRef};

/// How a field's text is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TextKind {
    /// A display name: any printable character, spaces included.
    Label,
    /// A dataset id or a path: letters, digits and `-_./:@+=~,%`, not starting with `-`.
    Path,
    /// A prompt for the model: a label that may also hold line feeds and tabs.
    Prompt,
}

/// Why a character is refused, for the message.
fn refused(c: char) -> Option<(&'static str, &'static str)> {
    match c {
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}' => {
            Some(("a line break", "换行符"))
        }
        c if c.is_control() => Some(("a control character", "控制字符")),
        '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{180e}' => {
            Some(("an invisible character", "不可见字符"))
        }
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}' => {
            Some(("a text-direction control", "文字方向控制符"))
        }
        _ => None,
    }
}

/// A JSON Schema `pattern` (an ECMA-262 regular expression, one Python's `re` reads too) that a
/// label holds exactly when [`is_clean_text`] takes it as one: none of the characters
/// [`refused`] names.
pub const LABEL_PATTERN: &str = concat!(
    "^[^\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u180e\\u200b-\\u200f",
    "\\u2028-\\u202e\\u2060-\\u2064\\u2066-\\u2069\\ufeff]*$"
);

/// Whether a character may appear in a dataset id or path.
fn path_char(c: char) -> bool {
    c.is_alphanumeric() || "-_./:@+=~,%".contains(c)
}

/// `U+000A`-style name of a character, so the message shows what cannot be seen.
fn code_point(c: char) -> String {
    format!("U+{:04X}", u32::from(c))
}

/// Checks one free-text field and reports at most one problem for it (the first bad character
/// and where it is), so a pasted blob does not flood the editor.
pub(super) fn check_text(c: &mut Checker<'_>, path: &str, value: &str, kind: TextKind) {
    for (i, ch) in value.chars().enumerate() {
        let position = i + 1;
        if let Some((en, zh)) =
            refused(ch).filter(|_| !(kind == TextKind::Prompt && "\n\t".contains(ch)))
        {
            c.error(
                Code::BadText,
                path,
                if kind == TextKind::Prompt {
                    format!(
                        "`{path}` holds {en} ({}) at character {position}; a prompt must be visible text (line feeds and tabs allowed)",
                        code_point(ch)
                    )
                } else {
                    format!(
                        "`{path}` holds {en} ({}) at character {position}; it must be one line of visible text",
                        code_point(ch)
                    )
                },
                if kind == TextKind::Prompt {
                    format!(
                        "`{path}` 的第 {position} 个字符是{zh}（{}）；提示只能是可见文字（可含换行和制表符）",
                        code_point(ch)
                    )
                } else {
                    format!(
                        "`{path}` 的第 {position} 个字符是{zh}（{}）；只能是一行可见文字",
                        code_point(ch)
                    )
                },
            );
            return;
        }
        if kind == TextKind::Path && !path_char(ch) {
            c.error(
                Code::BadText,
                path,
                format!(
                    "`{path}` holds `{ch}` ({}) at character {position}; a dataset id or path may use letters, digits and - _ . / : @ + = ~ , %",
                    code_point(ch)
                ),
                format!(
                    "`{path}` 的第 {position} 个字符是 `{ch}`（{}）；数据集 id 或路径只能使用字母、数字和 - _ . / : @ + = ~ , %",
                    code_point(ch)
                ),
            );
            return;
        }
    }
    if kind == TextKind::Path && value.starts_with('-') {
        c.error(
            Code::BadText,
            path,
            format!("`{path}` may not start with `-` (it would read as an option)"),
            format!("`{path}` 不能以 `-` 开头（会被当作命令行选项）"),
        );
    }
}

/// Whether validation refuses `c` in every free-text field.
pub(crate) fn is_refused(c: char) -> bool {
    refused(c).is_some()
}

/// `value` with every character that validation refuses in a label replaced by `?`: for text that
/// an artifact writes into a comment line, which must stay one line whatever it was given.
pub(crate) fn one_line(value: &str) -> String {
    value
        .chars()
        .map(|c| if is_refused(c) { '?' } else { c })
        .collect()
}

/// Whether `value` is a job's id as the edge makes them: 1 to 64 lower-case hex digits (so it
/// can name a folder and reach a URL as it is).
pub fn is_job_id(value: &str) -> bool {
    (1..=64).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The prefix of an uploaded dataset's id, and how many hex digits follow it.
pub const DATASET_ID_PREFIX: &str = "ds_";
pub const DATASET_ID_HEX: usize = 32;

/// Whether `value` has the shape of an uploaded dataset's id: `ds_` and 32 lower-case hex digits
/// (the start of its content's SHA-256).
pub fn is_dataset_id(value: &str) -> bool {
    value.strip_prefix(DATASET_ID_PREFIX).is_some_and(|h| {
        h.len() == DATASET_ID_HEX && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Why `value` in the key at `path` is refused as a job id, in English and Chinese.
pub(crate) fn not_a_job_id(path: &str, value: &str) -> (String, String) {
    (
        format!(
            "`{path}` = {:?} is not a job id; an id is the 1 to 64 lower-case hex digits `onramp jobs` lists",
            one_line(value)
        ),
        format!(
            "`{path}` = {:?} 不是作业 id；作业 id 是 `onramp jobs` 列出的 1 到 64 位小写十六进制数字",
            one_line(value)
        ),
    )
}

/// Whether `value` would pass [`check_text`] as `kind`: for callers outside validation (the
/// backends' configuration) that hold text to the same rules.
pub fn is_clean_text(value: &str, label: bool) -> bool {
    value
        .chars()
        .all(|ch| refused(ch).is_none() && (label || path_char(ch)))
        && (label || !value.starts_with('-'))
}

/// Every free-text field of the spec, held to its character rules (above). LoRA targets,
/// the card and a catalogue model id are checked against their lists elsewhere.
pub(super) fn check_free_text(c: &mut Checker<'_>, spec: &JobSpec) {
    check_text(c, "name", &spec.name, TextKind::Label);
    if let Some(id) = spec
        .checkpoint
        .resume_from
        .as_deref()
        .filter(|id| !is_job_id(id))
    {
        let (en, zh) = not_a_job_id("checkpoint.resume_from", id);
        c.error(Code::BadValue, "checkpoint.resume_from", en, zh);
    }
    if let ModelRef::Custom(m) = &spec.model {
        check_text(c, "model.name", &m.name, TextKind::Label);
        if m.name.chars().count() > 64 {
            c.error(
                Code::BadValue,
                "model.name",
                "`model.name` must be at most 64 characters".into(),
                "`model.name` 最多 64 个字符".into(),
            );
        }
    }
    check_dataset(c, "data.dataset", &spec.data.dataset);
}

/// A dataset id or path (`data.dataset`, `eval.dataset`): not empty, its length, its characters,
/// and that it stays inside the datasets root or the job's folder.
pub(super) fn check_dataset(c: &mut Checker<'_>, path: &str, dataset: &str) {
    // Blank; what else it holds (a line break, U+2028) is said below as the bad text it is.
    if dataset.trim().is_empty() {
        c.error(
            Code::BadValue,
            path,
            format!("`{path}` is empty"),
            format!("`{path}` 为空"),
        );
    }
    if dataset.len() > 512 {
        c.error(
            Code::BadValue,
            path,
            format!("`{path}` must be at most 512 bytes"),
            format!("`{path}` 最多 512 字节"),
        );
    }
    check_text(c, path, dataset, TextKind::Path);
    if let Some((en, zh)) = dataset_escape(dataset) {
        c.error(
            Code::BadValue,
            path,
            format!(
                "`{path}` = {:?} {en}; a job reads only a dataset of its own: upload the file \
                 (`onramp datasets upload FILE`, or the Plan page) and name the `ds_…` id it gives, or \
                 name a dataset the cluster holds by its id (such as `alpaca-zh`)",
                one_line(dataset)
            ),
            format!(
                "`{path}` = {:?} {zh}；作业只能读取自己的数据集：请上传文件\
                 （`onramp datasets upload FILE`，或在规划页上传），再写它给出的 `ds_…` id；\
                 或用 id 指定集群已有的数据集（例如 `alpaca-zh`）",
                one_line(dataset)
            ),
        );
    }
}

/// Why a dataset path would reach outside the datasets root or the job's folder, if it would: an
/// absolute path, a home folder, or a `..` component.
fn dataset_escape(dataset: &str) -> Option<(&'static str, &'static str)> {
    if dataset.starts_with('/') || dataset.starts_with('\\') {
        Some(("is an absolute path", "是绝对路径"))
    } else if dataset.starts_with('~') {
        Some(("names a home folder", "指向主目录"))
    } else if dataset.split(['/', '\\']).any(|part| part == "..") {
        Some(("leaves its folder through `..`", "用 `..` 跳出了所在文件夹"))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dataset_may_not_leave_the_datasets_root_or_the_job_folder() {
        for bad in [
            "/etc/passwd",
            "~/data.jsonl",
            "~root/x",
            "../x",
            "a/../../b",
            "data/..",
            "..",
        ] {
            assert!(dataset_escape(bad).is_some(), "{bad}");
        }
        for good in [
            "alpaca-zh",
            "data/train.jsonl",
            "a..b/c",
            "./x.txt",
            "hf:org/set",
            "x~",
        ] {
            assert_eq!(dataset_escape(good), None, "{good}");
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn the_label_pattern_refuses_exactly_the_refused_characters() {
        let pattern = regex::Regex::new(LABEL_PATTERN).unwrap();
        for c in (0..=0x3_0000u32).filter_map(char::from_u32) {
            let s = format!("a{c}b");
            assert_eq!(
                pattern.is_match(&s),
                is_clean_text(&s, true),
                "U+{:04X}",
                u32::from(c)
            );
        }
        assert!(pattern.is_match(""));
    }

    #[test]
    fn line_breaks_and_invisible_characters_are_refused() {
        for c in [
            '\n', '\r', '\u{85}', '\u{2028}', '\u{2029}', '\0', '\u{1b}', '\u{7f}',
        ] {
            assert!(refused(c).is_some(), "{c:?}");
        }
        for c in ['\u{202e}', '\u{2066}', '\u{200b}', '\u{feff}'] {
            assert!(refused(c).is_some(), "{c:?}");
        }
        for c in ['a', '中', ' ', '#', '$', '\'', '"', '(', '😀'] {
            assert!(refused(c).is_none(), "{c:?}");
        }
    }

    #[test]
    fn paths_allow_ids_and_paths_only() {
        for ok in [
            "tinyshakespeare",
            "/shared/data/zh-instruct.jsonl",
            "hf:org/name@v1.0",
            "数据/训练集.jsonl",
            "~/d,1%2=3+4",
        ] {
            assert!(is_clean_text(ok, false), "{ok}");
        }
        for bad in [
            "a b", "x;y", "$(id)", "`id`", "a'b", "a\"b", "-rf", "x|y", "a\\b",
        ] {
            assert!(!is_clean_text(bad, false), "{bad}");
        }
    }
}
