//! clap's usage errors in Chinese. clap writes its errors in English only; a run in Chinese
//! gets the same error, line by line, with clap's fixed phrases translated and what it quotes
//! (an argument, a value, the usage line) kept as written.

/// The Chinese of one of clap's rendered errors (`Error::render`, without styles).
pub fn translate(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(&line_zh(line));
        out.push('\n');
    }
    out
}

fn line_zh(line: &str) -> String {
    let indent = &line[..line.len() - line.trim_start().len()];
    let body = line.trim_start();
    let (body, error) = match body.strip_prefix("error: ") {
        Some(rest) => (rest, true),
        None => (body, false),
    };
    let zh = phrase_zh(body);
    if error {
        format!("{indent}错误：{zh}")
    } else {
        format!("{indent}{zh}")
    }
}

/// One line's text: each of clap's sentences that it knows, else the line as it is.
fn phrase_zh(s: &str) -> String {
    // Whole sentences first.
    let fixed: &[(&str, &str)] = &[
        (
            "the following required arguments were not provided:",
            "缺少以下必需的参数：",
        ),
        (
            "For more information, try '--help'.",
            "更多信息请运行 '--help'。",
        ),
    ];
    for (en, zh) in fixed {
        if s == *en {
            return (*zh).to_string();
        }
    }
    if let Some(rest) = s.strip_prefix("Usage: ") {
        return format!("用法：{rest}");
    }
    if let Some(values) = s
        .strip_prefix("[possible values: ")
        .and_then(|r| r.strip_suffix(']'))
    {
        return format!("[可选值：{values}]");
    }
    // A value our own parser refused: clap's head, then the parser's reason.
    if let Some((head, why)) = s
        .split_once("': ")
        .filter(|_| s.starts_with("invalid value '"))
    {
        return format!("{}：{}", phrase_zh(&format!("{head}'")), reason_zh(why));
    }
    // Sentences with quoted parts: 'a' and 'b' are what the user or clap named.
    let q = quoted(s);
    let shape = unquoted(s);
    match (shape.as_str(), q.as_slice()) {
        ("invalid value '' for ''", [v, arg]) => format!("'{v}' 不是 '{arg}' 的有效值"),
        ("unexpected argument '' found", [a]) => format!("意外的参数 '{a}'"),
        ("unrecognized subcommand ''", [a]) => format!("无法识别的子命令 '{a}'"),
        ("the argument '' cannot be used with ''", [a, b]) => {
            format!("参数 '{a}' 不能与 '{b}' 一起使用")
        }
        ("the argument '' cannot be used multiple times", [a]) => {
            format!("参数 '{a}' 不能多次使用")
        }
        ("a value is required for '' but none was supplied", [a]) => {
            format!("参数 '{a}' 需要一个值，但没有给出")
        }
        ("unexpected value '' for '' found; no more were expected", [v, a]) => {
            format!("'{a}' 多出了值 '{v}'")
        }
        ("tip: a similar argument exists: ''", [a]) => format!("提示：有一个相似的参数：'{a}'"),
        ("tip: a similar value exists: ''", [a]) => format!("提示：有一个相似的值：'{a}'"),
        ("tip: a similar subcommand exists: ''", [a]) => format!("提示：有一个相似的子命令：'{a}'"),
        ("tip: some similar subcommands exist: ''", [a]) => {
            format!("提示：有相似的子命令：'{a}'")
        }
        ("tip: to pass '' as a value, use ''", [a, b]) => {
            format!("提示：要把 '{a}' 作为值传入，请写 '{b}'")
        }
        _ => s.to_string(),
    }
}

/// The reasons the CLI's own value parsers give (`args.rs`).
fn reason_zh(why: &str) -> String {
    match why.strip_suffix(" is not a job id") {
        Some(id) => format!("{id} 不是作业 id"),
        None => why.to_string(),
    }
}

/// The parts of `s` between single quotes, in order.
fn quoted(s: &str) -> Vec<&str> {
    s.split('\'').skip(1).step_by(2).collect()
}

/// `s` with what is between single quotes taken out (the quotes kept).
fn unquoted(s: &str) -> String {
    s.split('\'')
        .enumerate()
        .map(|(i, part)| if i % 2 == 0 { part } else { "" })
        .collect::<Vec<_>>()
        .join("'")
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn clap_s_phrases_are_translated_and_what_they_quote_is_kept() {
        let en = "error: invalid value 'foo' for '<SHELL>'\n  [possible values: bash, zsh]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            translate(en),
            "错误：'foo' 不是 '<SHELL>' 的有效值\n  [可选值：bash, zsh]\n\n更多信息请运行 '--help'。\n"
        );
        let en = "error: the following required arguments were not provided:\n  <SPEC>\n\nUsage: onramp plan <SPEC>\n";
        assert_eq!(
            translate(en),
            "错误：缺少以下必需的参数：\n  <SPEC>\n\n用法：onramp plan <SPEC>\n"
        );
        let en = "error: unexpected argument '--frob' found\n\n  tip: to pass '--frob' as a value, use '-- --frob'\n";
        assert_eq!(
            translate(en),
            "错误：意外的参数 '--frob'\n\n  提示：要把 '--frob' 作为值传入，请写 '-- --frob'\n"
        );
        assert_eq!(
            translate("error: invalid value 'x/y' for '<JOB>': `x/y` is not a job id\n"),
            "错误：'x/y' 不是 '<JOB>' 的有效值：`x/y` 不是作业 id\n"
        );
        // A line clap did not write stays as it is.
        assert_eq!(translate("  <SPEC>\n"), "  <SPEC>\n");
    }
}
