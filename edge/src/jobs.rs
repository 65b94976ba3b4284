//! Job states and the pure decisions about jobs: which transitions are allowed, which backend
//! takes a spec, and what a job's wire form shows.

use crate::backends::config::{BackendConfig, BackendKind};
use crate::error::{ApiError, ErrorCode};

pub use api::JobState;

/// The backend for a spec: one that has enough cards of its type, of the preferred kind if the
/// spec names one. The first fitting backend in configuration order wins.
pub fn pick_backend<'a>(
    backends: &'a [BackendConfig],
    card: &str,
    cards_needed: u32,
    preference: &jobspec::spec::Backend,
) -> Result<&'a BackendConfig, ApiError> {
    use jobspec::spec::Backend as Pref;
    let kind_ok = |b: &BackendConfig| match preference {
        Pref::Auto => true,
        Pref::Runner => b.kind == BackendKind::Runner,
        Pref::Slurm => b.kind == BackendKind::Slurm,
    };
    backends
        .iter()
        .filter(|b| kind_ok(b))
        .find(|b| b.cards.get(card).is_some_and(|n| *n >= cards_needed))
        .ok_or_else(|| {
            ApiError::new(ErrorCode::NoBackend,
                format!("no configured backend offers {cards_needed} × {card} for backend = {preference:?}"),
            )
            .with_details(serde_json::json!({"card": card, "cards": cards_needed}))
        })
}

/// One text in the app's languages (the wire type).
pub use api::Messages;

/// Why a job waits, from its backend's reason code, in every language of the app. The codes are
/// Slurm's, or the runner's `CardsInUse` (its declared cards are all taken); an unknown code
/// still reads as "waiting".
pub fn reason_messages(reason: &str) -> Messages {
    let (en, zh_cn) = crate::backends::slurm::state::pending_reason(reason);
    Messages { en, zh_cn }
}

/// A job as the API shows it to its owner.
pub use api::Job as JobWire;

#[cfg(test)]
mod tests {
    use super::*;
    use jobspec::spec::Backend as Pref;

    fn b(name: &str, kind: BackendKind, card: &str, n: u32) -> BackendConfig {
        BackendConfig {
            name: name.into(),
            kind,
            url: "http://x".into(),
            secret: String::new(),
            cards: [(card.to_string(), n)].into(),
            ..BackendConfig::default()
        }
    }

    #[test]
    fn picks_a_backend_with_the_cards() {
        let list = vec![
            b("small", BackendKind::Runner, "a100-80g", 2),
            b("big", BackendKind::Slurm, "a100-80g", 8),
        ];
        assert_eq!(
            pick_backend(&list, "a100-80g", 2, &Pref::Auto)
                .unwrap()
                .name,
            "small"
        );
        assert_eq!(
            pick_backend(&list, "a100-80g", 4, &Pref::Auto)
                .unwrap()
                .name,
            "big"
        );
        assert_eq!(
            pick_backend(&list, "a100-80g", 1, &Pref::Slurm)
                .unwrap()
                .name,
            "big"
        );
        assert_eq!(
            pick_backend(&list, "h100", 1, &Pref::Auto)
                .unwrap_err()
                .code,
            ErrorCode::NoBackend
        );
        assert_eq!(
            pick_backend(&list, "a100-80g", 16, &Pref::Auto)
                .unwrap_err()
                .status,
            409
        );
    }

    #[test]
    fn wait_reasons_read_in_both_languages() {
        let m = reason_messages("Resources");
        assert!(m.en.starts_with("waiting for resources"), "{m:?}");
        assert!(m.zh_cn.contains("GPU"), "{m:?}");
        let json = serde_json::to_value(&m).unwrap();
        assert!(json["zh-CN"].is_string(), "{json}");
        assert_eq!(reason_messages("Whatever").en, "waiting (Whatever)");
        let m = reason_messages("CardsInUse");
        assert!(m.en.starts_with("waiting for a free card"), "{m:?}");
        assert!(m.zh_cn.starts_with("等待空闲的卡"), "{m:?}");
    }
}
