//! Which language every command speaks: `--lang en|zh`, else the locale (`LC_ALL`,
//! `LC_MESSAGES`, `LANG` starting with `zh`), else English. Chosen once per run, then every
//! message picks its English or Chinese wording through [`t`].

use std::sync::OnceLock;

pub use jobspec::Lang;

static CHOSEN: OnceLock<Lang> = OnceLock::new();

/// `--lang`'s value, or the first locale variable that is set.
pub fn decide(flag: Option<&str>, locale: &[Option<String>]) -> Result<Lang, String> {
    match flag {
        Some("en") => return Ok(Lang::En),
        Some("zh" | "zh-CN" | "zh-cn") => return Ok(Lang::Zh),
        Some(other) => return Err(format!("--lang takes en or zh, not `{other}`")),
        None => {}
    }
    let first = locale.iter().flatten().find(|v| !v.is_empty());
    Ok(match first {
        Some(v) => Lang::from_tag(v),
        None => Lang::En,
    })
}

/// Fixes the language for this run (the first call wins).
pub fn choose(flag: Option<&str>) -> Result<Lang, String> {
    let var = |k: &str| std::env::var(k).ok();
    let lang = decide(flag, &[var("LC_ALL"), var("LC_MESSAGES"), var("LANG")])?;
    Ok(*CHOSEN.get_or_init(|| lang))
}

pub fn lang() -> Lang {
    CHOSEN.get().copied().unwrap_or(Lang::En)
}

/// The wording for this run's language.
pub fn t(en: String, zh: String) -> String {
    match lang() {
        Lang::En => en,
        Lang::Zh => zh,
    }
}

/// `s` padded with spaces to `width` terminal columns (a CJK character takes two), so that
/// columns line up in either language.
pub fn pad(s: &str, width: usize) -> String {
    let w = unicode_width::UnicodeWidthStr::width(s);
    format!("{s}{}", " ".repeat(width.saturating_sub(w)))
}

/// A job's output as a terminal may show it: whoever controls a job writes its log, so escape
/// sequences (ESC, the C1 controls, CSI) must not set the terminal's title, write to its
/// clipboard or move the cursor over earlier lines, and direction overrides must not reorder what
/// is shown. Line breaks and tabs stay; a carriage return that is not part of `\r\n` (a progress
/// bar redrawing its line) becomes a line break; every other control character is shown as an
/// escape (`\x1b`, `\u{202e}`).
pub fn terminal_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            c if c.is_control() || is_direction_control(c) => {
                let n = u32::from(c);
                if n < 0x80 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else {
                    out.push_str(&format!("\\u{{{n:x}}}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Unicode's explicit direction marks, embeddings, overrides and isolates.
fn is_direction_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_output_cannot_drive_the_terminal() {
        assert_eq!(
            terminal_safe("step 1\tloss 2.5\n中文\r\n"),
            "step 1\tloss 2.5\n中文\n"
        );
        // A title, a clipboard write (OSC 52), a cursor move, a C1 CSI, a bell, an override.
        let hostile =
            "\u{1b}]0;pwned\u{7}\u{1b}]52;c;ZWNobw==\u{7}\u{1b}[2A\u{9b}2J\u{202e}txt.exe";
        let safe = terminal_safe(hostile);
        assert!(
            !safe
                .chars()
                .any(|c| c.is_control() || is_direction_control(c)),
            "{safe:?}"
        );
        assert_eq!(
            safe,
            "\\x1b]0;pwned\\x07\\x1b]52;c;ZWNobw==\\x07\\x1b[2A\\u{9b}2J\\u{202e}txt.exe"
        );
        assert_eq!(terminal_safe("50%\r100%\n"), "50%\n100%\n");
    }

    #[test]
    fn padding_counts_display_columns() {
        assert_eq!(pad("预扣", 6), "预扣  ");
        assert_eq!(pad("hold", 6), "hold  ");
        assert_eq!(pad("too long", 3), "too long");
    }

    #[test]
    fn the_flag_wins_then_the_first_locale_variable_set() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(decide(Some("zh"), &[s("en_US.UTF-8")]), Ok(Lang::Zh));
        assert_eq!(decide(Some("en"), &[s("zh_CN.UTF-8")]), Ok(Lang::En));
        assert_eq!(decide(None, &[None, s(""), s("zh_CN.UTF-8")]), Ok(Lang::Zh));
        assert_eq!(
            decide(None, &[s("C.UTF-8"), s("zh_CN.UTF-8")]),
            Ok(Lang::En)
        );
        assert_eq!(decide(None, &[None, None, None]), Ok(Lang::En));
        assert_eq!(
            decide(Some("fr"), &[]),
            Err("--lang takes en or zh, not `fr`".into())
        );
    }
}
