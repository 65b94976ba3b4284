//! State shared by the pages through context: the language, the spec being planned and the
//! playground's settings (what a share link carries).

use crate::i18n::{Key, Lang};
use jobspec::share::Playground;
use leptos::prelude::*;

const LANG_KEY: &str = "onramp.lang";

/// The language in use; reading it inside a view makes that view follow a switch.
#[derive(Clone, Copy)]
pub struct I18n {
    pub lang: RwSignal<Lang>,
}

impl I18n {
    /// The stored choice, else the browser's language.
    pub fn install() -> I18n {
        let stored = local_storage().and_then(|s| s.get_item(LANG_KEY).ok().flatten());
        let browser = web_sys::window().and_then(|w| w.navigator().language());
        let lang = Lang::from_tag(stored.or(browser).as_deref().unwrap_or("en"));
        let i18n = I18n {
            lang: RwSignal::new(lang),
        };
        set_document_lang(lang);
        provide_context(i18n);
        i18n
    }

    pub fn t(self, key: Key) -> &'static str {
        key.text(self.lang.get())
    }

    /// A duration as a reader of the language writes it (years are 年 in Chinese).
    pub fn duration(self, seconds: f64) -> String {
        match self.lang.get() {
            Lang::En => jobspec::spec::format_duration(seconds),
            Lang::Zh => jobspec::spec::format_duration_zh(seconds),
        }
    }

    /// Switches to the other language and remembers the choice.
    pub fn toggle(self) {
        let next = match self.lang.get_untracked() {
            Lang::En => Lang::Zh,
            Lang::Zh => Lang::En,
        };
        self.lang.set(next);
        set_document_lang(next);
        if let Some(s) = local_storage() {
            let _ = s.set_item(LANG_KEY, next.tag());
        }
    }
}

pub fn use_i18n() -> I18n {
    use_context::<I18n>().unwrap_or_else(I18n::install)
}

fn set_document_lang(lang: Lang) {
    if let Some(el) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
    {
        let _ = el.set_attribute("lang", lang.tag());
    }
}

pub fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

/// What the pages share and a share link restores.
#[derive(Clone, Copy)]
pub struct Shared {
    pub spec: RwSignal<String>,
    pub playground: RwSignal<Playground>,
}

impl Shared {
    pub fn install() -> Shared {
        // The schema line points at this edge's schema, so the spec completes in an editor.
        let first = jobspec::templates()
            .first()
            .map(|t| t.toml_for(&crate::api::absolute("")))
            .unwrap_or_default();
        let s = Shared {
            spec: RwSignal::new(first.to_string()),
            playground: RwSignal::new(default_playground()),
        };
        provide_context(s);
        s
    }
}

pub fn use_shared() -> Shared {
    use_context::<Shared>().unwrap_or_else(Shared::install)
}

/// The playground's starting settings: llama2.c's defaults with a budget that fits the page.
pub fn default_playground() -> Playground {
    Playground {
        prompt: String::new(),
        temperature: 1.0,
        top_p: 0.9,
        seed: 42,
        max_tokens: 256,
    }
}
