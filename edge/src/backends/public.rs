//! `GET /api/backends`: where jobs can run, as the app's backend picker needs it — each
//! configured backend's name, kind and cards. Never its URL or secret: those stay in the edge.

use super::config::BackendConfig;
use api::{BackendList, PublicBackend};

/// The answer: `{"backends": [...]}` in configuration order (the order the edge tries them in).
pub fn list(configured: &[BackendConfig]) -> BackendList {
    BackendList {
        backends: configured
            .iter()
            .map(|b| PublicBackend {
                name: b.name.clone(),
                kind: b.kind,
                cards: b.cards.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_names_kinds_and_cards_but_no_urls_or_secrets() {
        let configured = crate::backends::config::parse(Some(
            r#"[{"name":"local","kind":"runner","url":"http://127.0.0.1:8788","secret":"s3cret","cards":{"cpu":1}},
                {"name":"hpc","kind":"slurm","url":"http://10.0.0.1:6820","secret":"jwt","cards":{"a100-80g":8}}]"#,
        ))
        .unwrap();
        let v = serde_json::to_value(list(&configured)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"backends": [
                {"name": "local", "kind": "runner", "cards": {"cpu": 1}},
                {"name": "hpc", "kind": "slurm", "cards": {"a100-80g": 8}}
            ]})
        );
        let text = v.to_string();
        assert!(!text.contains("s3cret") && !text.contains("http"), "{text}");
    }
}
