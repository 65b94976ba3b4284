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

#[cfg(test)]
mod tests {
    use super::*;

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
