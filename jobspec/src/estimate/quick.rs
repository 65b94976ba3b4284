//! The figures every estimate starts from: the parameter count as the spec trains it, and memory,
//! time and cost without the prose (what the comparison table and the fix search need).

use super::memory::{self, MemoryEstimate};
use super::params::{self, ParamCount};
use super::time::{self, CostEstimate, TimeEstimate};
use crate::validate::ValidSpec;

/// Parameters of the model as this spec trains it (adapters counted for LoRA/QLoRA).
pub fn parameters(v: &ValidSpec) -> ParamCount {
    let mut pc = params::count(v.arch());
    if v.spec().task.is_adapter() {
        pc.adapter = params::lora_adapter(v.arch(), v.family(), v.lora_rank(), v.lora_targets());
        pc.trainable = pc.adapter;
    }
    pc
}

/// Memory and time only: what the comparison table and the fix search need, without the prose.
pub(crate) fn quick(v: &ValidSpec) -> (MemoryEstimate, TimeEstimate, CostEstimate) {
    let pc = parameters(v);
    let m = memory::estimate(v, &pc);
    let t = time::estimate(v, &pc);
    let c = time::cost(v, &t);
    (m, t, c)
}
