//! `checkpoint.resume_from`: what a spec that continues an earlier job may say with it; and
//! `checkpoint.upload`, which lets a later job continue it from any backend.

use super::checker::Checker;
use crate::diag::Code;
use crate::spec::{JobSpec, Task};

/// `checkpoint.resume_from` continues an onramp-train run from its checkpoint: tiny-train keeps
/// no checkpoint to continue from, and a spec that also says `resume = false` contradicts itself.
pub(super) fn check_resume_from(c: &mut Checker<'_>, spec: &JobSpec) {
    if spec.checkpoint.upload && spec.task == Task::TinyTrain {
        c.error(
            Code::Conflict,
            "checkpoint.upload",
            "`checkpoint.upload` pushes onramp-train's checkpoint; tiny-train always pushes its model, which is its checkpoint".into(),
            "`checkpoint.upload` 上传的是 onramp-train 的检查点；tiny-train 总会上传它的模型，那就是它的检查点".into(),
        );
    }
    if spec.checkpoint.resume_from.is_none() {
        return;
    }
    if spec.task == Task::TinyTrain {
        c.error(
            Code::Conflict,
            "checkpoint.resume_from",
            "`checkpoint.resume_from` needs an onramp-train task; tiny-train always starts from the model it names".into(),
            "`checkpoint.resume_from` 需要 onramp-train 的任务；tiny-train 总是从所给模型开始".into(),
        );
    }
    if !spec.checkpoint.resume {
        c.error(
            Code::Conflict,
            "checkpoint.resume_from",
            "`checkpoint.resume_from` continues from a checkpoint, but `checkpoint.resume = false` says not to; drop one of them".into(),
            "`checkpoint.resume_from` 要从检查点继续，而 `checkpoint.resume = false` 表示不继续；请删去其中之一".into(),
        );
    }
}
