//! Where the checks of a spec write their findings: each with the span of the key it names.

use crate::diag::{Code, Diagnostic, Span};
use crate::node::{Node, Val};

/// Finds the span of a dotted path in the source tree, for semantic diagnostics.
pub(super) fn span_at(root: Option<&Node>, path: &str) -> Option<Span> {
    let mut node = root?;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let Val::Table(entries) = &node.val else {
            return node.span;
        };
        match entries.iter().rev().find(|(k, _)| k.name == part) {
            Some((_, v)) => node = v,
            None => {
                return node.span.map(|s| Span {
                    start: s.start,
                    end: s.start,
                });
            }
        }
    }
    node.span
}

pub(super) struct Checker<'a> {
    pub(super) root: Option<&'a Node>,
    pub(super) diags: &'a mut Vec<Diagnostic>,
}

impl Checker<'_> {
    /// Adds a finding with its key's span; past [`crate::diag::MAX_DIAGNOSTICS`] only an error
    /// while none is kept, as the reader does.
    pub(super) fn push(&mut self, d: Diagnostic) {
        let span = span_at(self.root, &d.path);
        crate::diag::push_capped(self.diags, d.with_span(span));
    }
    pub(super) fn error(&mut self, code: Code, path: &str, en: String, zh: String) {
        self.push(Diagnostic::error(code, path, en, zh));
    }
    pub(super) fn warn(&mut self, code: Code, path: &str, en: String, zh: String) {
        self.push(Diagnostic::warning(code, path, en, zh));
    }
    pub(super) fn info(&mut self, code: Code, path: &str, en: String, zh: String) {
        self.push(Diagnostic::info(code, path, en, zh));
    }
}
