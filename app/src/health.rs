//! What the app shows of `GET /api/health`: the public liveness answer (the edge's version and
//! whether it answers), as one line in the page's language. The deep check, with storage and
//! backends, is for operators (`GET /api/admin/health`) and never reaches the page.

use crate::i18n::{Key, Lang};

/// The edge's public health answer.
pub use api::Liveness as Health;

/// One line for the footer, e.g. `Onramp 0.1.0: online`.
pub fn summary(h: &Health, lang: Lang) -> String {
    let word = if h.ok {
        Key::ServiceOnline
    } else {
        Key::ServiceTrouble
    };
    format!("Onramp {}: {}", h.version, word.text(lang))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_edge_answer_and_says_only_whether_it_answers() {
        let h: Health =
            serde_json::from_str(r#"{"ok":true,"service":"onramp-edge","version":"0.1.0"}"#)
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(summary(&h, Lang::En), "Onramp 0.1.0: online");
        assert_eq!(summary(&h, Lang::Zh), "Onramp 0.1.0: 运行正常");
        let down = Health { ok: false, ..h };
        assert_eq!(
            summary(&down, Lang::En),
            "Onramp 0.1.0: not answering properly"
        );
    }
}
