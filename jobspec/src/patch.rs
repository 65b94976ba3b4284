//! Patches: a list of `path = value` operations (`parallel.zero_stage = 3`), what a fix
//! suggestion, an imported ds_config and the Plan page's controls change a spec with. A patch
//! applies to a `JobSpec` (`apply_patch`, read again by the spec's reader) or, keeping the
//! user's comments and layout, to the TOML text (`apply_patch_toml`).

use crate::catalog;
use crate::node::{self, Node, Val};
use crate::parse::Reader;
use crate::spec::{JobSpec, Offload, Recompute, Task};
use serde::Serialize;
use serde_json::Value;

/// Set the key at a dotted path (`parallel.zero_stage`) to a value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PatchOp {
    pub path: String,
    pub value: Value,
}

/// `apply_patch` for the paths the candidates use, without the JSON round trip: the fix search
/// tries a hundred patches per keystroke. `None` for any other path or value (the search then
/// skips the candidate); a unit test checks it agrees with `apply_patch`.
pub(crate) fn apply_patch_fast(spec: &JobSpec, ops: &[PatchOp]) -> Option<JobSpec> {
    let mut s = spec.clone();
    for o in ops {
        let v = &o.value;
        let u32v = || v.as_u64().and_then(|n| u32::try_from(n).ok());
        match o.path.as_str() {
            "task" => s.task = Task::from_word(v.as_str()?)?,
            "train.grad_checkpointing" => {
                s.train.grad_checkpointing = if v.as_bool()? {
                    Recompute::Full
                } else {
                    Recompute::None
                }
            }
            "train.micro_batch" => s.train.micro_batch = u32v()?,
            "train.grad_accum" => s.train.grad_accum = u32v()?,
            "train.flash_attention" => s.train.flash_attention = v.as_bool()?,
            "train.lora_rank" => s.train.lora_rank = Some(u32v()?),
            "parallel.zero_stage" => s.parallel.zero_stage = u8::try_from(v.as_u64()?).ok()?,
            "parallel.offload_optimizer" => {
                s.parallel.offload_optimizer = Offload::from_word(v.as_str()?)?
            }
            "parallel.offload_params" => {
                s.parallel.offload_params = Offload::from_word(v.as_str()?)?
            }
            "parallel.sp" => s.parallel.sp = u32v()?,
            "resources.cards_per_node" => s.resources.cards_per_node = u32v()?,
            "resources.nodes" => s.resources.nodes = u32v()?,
            "resources.card" => s.resources.card = catalog::card(v.as_str()?)?.id.to_string(),
            _ => return None,
        }
    }
    Some(s)
}

/// Applies a patch to a spec, re-reading the result with the spec reader so that a patch can
/// never produce a spec the text format could not express.
pub fn apply_patch(spec: &JobSpec, ops: &[PatchOp]) -> Result<JobSpec, Vec<crate::Diagnostic>> {
    let mut value = serde_json::to_value(spec).unwrap_or(Value::Null);
    for o in ops {
        set_path(&mut value, &o.path, o.value.clone());
    }
    let root = node::from_json_value(&value, 0);
    let mut reader = Reader::new();
    let out = reader.spec(&root);
    match out {
        Some(s) if !reader.diags.iter().any(crate::Diagnostic::is_error) => Ok(s),
        _ => Err(reader.diags),
    }
}

fn set_path(value: &mut Value, path: &str, new: Value) {
    let mut cur = value;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(serde_json::Map::new());
        }
        let Value::Object(map) = cur else { return };
        if i + 1 == parts.len() {
            map.insert((*part).to_string(), new);
            return;
        }
        cur = map
            .entry((*part).to_string())
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
    }
}

/// Applies a patch to TOML text, keeping comments and layout: existing values are replaced in
/// place, new keys go under their table's header (or a new table at the end). `None` when the
/// text cannot be patched in place (syntax errors, inline tables); then use
/// `apply_patch(..)` and [`JobSpec::to_toml`].
pub fn apply_patch_toml(src: &str, ops: &[PatchOp]) -> Option<String> {
    let mut text = src.to_string();
    for o in ops {
        text = patch_one(&text, o)?;
    }
    Some(text)
}

fn render(value: &Value) -> Option<String> {
    match value {
        Value::String(_) | Value::Number(_) | Value::Bool(_) => serde_json::to_string(value).ok(),
        Value::Array(items) => {
            let parts: Option<Vec<String>> = items.iter().map(render).collect();
            Some(format!("[{}]", parts?.join(", ")))
        }
        _ => None,
    }
}

fn patch_one(src: &str, o: &PatchOp) -> Option<String> {
    let (root, errors) = node::from_toml(src);
    if !errors.is_empty() {
        return None;
    }
    let rendered = render(&o.value)?;
    let parts: Vec<&str> = o.path.split('.').collect();
    let (table_path, key) = match parts.as_slice() {
        [key] => (None, *key),
        [table, key] => (Some(*table), *key),
        _ => return None,
    };
    let table_node: &Node = match table_path {
        None => &root,
        Some(t) => match find(&root, t) {
            Some(n) => n,
            None => {
                let sep = if src.ends_with('\n') || src.is_empty() {
                    ""
                } else {
                    "\n"
                };
                return Some(format!("{src}{sep}\n[{t}]\n{key} = {rendered}\n"));
            }
        },
    };
    if let Some(existing) = find(table_node, key) {
        let span = existing.span?;
        let (before, after) = (src.get(..span.start)?, src.get(span.end..)?);
        return Some(format!("{before}{rendered}{after}"));
    }
    match table_path {
        None => {
            // Top-level keys must come before the first table header.
            let at = first_header(src).unwrap_or(src.len());
            let (before, after) = (src.get(..at)?, src.get(at..)?);
            let sep = if before.is_empty() || before.ends_with('\n') {
                ""
            } else {
                "\n"
            };
            Some(format!("{before}{sep}{key} = {rendered}\n{after}"))
        }
        Some(t) => {
            let header = format!("[{t}]");
            let mut offset = 0;
            for line in src.split_inclusive('\n') {
                offset += line.len();
                if line.trim() == header {
                    let (before, after) = (src.get(..offset)?, src.get(offset..)?);
                    let sep = if before.ends_with('\n') { "" } else { "\n" };
                    return Some(format!("{before}{sep}{key} = {rendered}\n{after}"));
                }
            }
            None
        }
    }
}

fn find<'a>(table: &'a Node, key: &str) -> Option<&'a Node> {
    match &table.val {
        Val::Table(entries) => entries
            .iter()
            .rev()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| v),
        _ => None,
    }
}

fn first_header(src: &str) -> Option<usize> {
    let mut offset = 0;
    for line in src.split_inclusive('\n') {
        if line.trim_start().starts_with('[') {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}
