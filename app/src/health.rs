//! What the app shows of `GET /api/health`: a wire type mirroring the edge's answer and the
//! summary line rendered on the page.

use serde::Deserialize;

/// The edge's health answer as the app reads it; unknown fields are ignored so that the edge can
/// grow without breaking older apps.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Health {
    pub ok: bool,
    pub version: String,
    pub bindings: Bindings,
    pub backends: Vec<Backend>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Bindings {
    pub d1: Check,
    pub kv: Check,
    pub durable_object: Check,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Check {
    pub ok: bool,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Backend {
    pub name: String,
    pub reachable: bool,
    pub detail: String,
}

impl Health {
    /// One line per fact, e.g. `edge 0.1.0: ok`, `D1: ok (1 migrations applied)`.
    pub fn lines(&self) -> Vec<String> {
        let mark = |ok: bool| if ok { "ok" } else { "FAILED" };
        let mut lines = vec![format!("edge {}: {}", self.version, mark(self.ok))];
        for (name, c) in [
            ("D1", &self.bindings.d1),
            ("KV", &self.bindings.kv),
            ("Durable Object", &self.bindings.durable_object),
        ] {
            lines.push(format!("{name}: {} ({})", mark(c.ok), c.detail));
        }
        for b in &self.backends {
            let state = if b.reachable {
                "reachable"
            } else {
                "unreachable"
            };
            lines.push(format!("backend {}: {state} ({})", b.name, b.detail));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_edge_answer_and_summarises_it() {
        let h: Health = serde_json::from_str(
            r#"{"ok":true,"service":"onramp-edge","version":"0.1.0",
               "bindings":{"d1":{"ok":true,"detail":"1 migrations applied"},
                           "kv":{"ok":true,"detail":"write and read back"},
                           "durable_object":{"ok":false,"detail":"boom"}},
               "backends":[{"name":"local","kind":"runner","reachable":true,"detail":"onramp-runner 0.1.0, 2 CPUs"}]}"#,
        )
        .unwrap();
        assert_eq!(
            h.lines(),
            vec![
                "edge 0.1.0: ok",
                "D1: ok (1 migrations applied)",
                "KV: ok (write and read back)",
                "Durable Object: FAILED (boom)",
                "backend local: reachable (onramp-runner 0.1.0, 2 CPUs)",
            ]
        );
    }
}
