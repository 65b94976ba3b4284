//! The two languages Onramp speaks, one type for the app, the CLI and jobspec's own texts.

/// The language a text is shown in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    En,
    /// Simplified Chinese (`zh-CN`).
    Zh,
}

impl Lang {
    /// The BCP 47 tag (for `<html lang>` and the app's stored choice).
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh-CN",
        }
    }

    /// Reads a stored tag, a browser language (`navigator.language`) or a locale (`LANG`): any
    /// `zh*` is Chinese, everything else English.
    pub fn from_tag(tag: &str) -> Lang {
        if tag.trim().to_ascii_lowercase().starts_with("zh") {
            Lang::Zh
        } else {
            Lang::En
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Lang;

    #[test]
    fn tags_read_back() {
        for lang in [Lang::En, Lang::Zh] {
            assert_eq!(Lang::from_tag(lang.tag()), lang);
        }
        assert_eq!(Lang::from_tag("zh_CN.UTF-8"), Lang::Zh);
        assert_eq!(Lang::from_tag(" ZH-tw"), Lang::Zh);
        assert_eq!(Lang::from_tag("en_US.UTF-8"), Lang::En);
        assert_eq!(Lang::from_tag(""), Lang::En);
    }
}
