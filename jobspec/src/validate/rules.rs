//! The semantic rules: cluster shape, DeepSpeed's combinations, card and backend, run length,
//! LoRA, and the ranges a form-built spec must respect.

use super::checker::Checker;
use super::derive::{self, RunLength};
use super::lora::check_adapter;
use super::ranges::check_ranges;
use super::text::check_free_text;
use super::valid::ValidSpec;
use crate::catalog::{self, Arch};
use crate::diag::{Code, Diagnostic, did_you_mean, hint};
use crate::duration::{MAX_TIME_LIMIT_S, RUNNER_MAX_TIME_LIMIT_S};
use crate::node::Node;
use crate::spec::*;

pub(super) fn check(
    spec: JobSpec,
    diags: &mut Vec<Diagnostic>,
    root: Option<&Node>,
) -> Option<ValidSpec> {
    let mut c = Checker { root, diags };
    let card = resolve_card(&mut c, &spec);
    let (arch, model_name, model_max_seq_len, is_tiny) = resolve_model(&mut c, &spec);
    check_ranges(&mut c, &spec);
    if spec.name.trim().is_empty() || spec.name.chars().count() > 128 {
        c.error(
            Code::BadValue,
            "name",
            "`name` must be 1 to 128 characters".into(),
            "`name` 须为 1 到 128 个字符".into(),
        );
    }
    check_free_text(&mut c, &spec);
    let (world, dp) = check_cluster(&mut c, &spec, card);
    if let Some(a) = &arch {
        check_heads(&mut c, &spec.parallel, a);
    }
    super::parallel::check_sequence_parallel(&mut c, &spec, arch.as_ref());
    super::parallel::check_tensor_parallel(&mut c, &spec, arch.as_ref());
    super::parallel::check_deepspeed(&mut c, &spec.parallel);
    super::parallel::check_recompute(&mut c, &spec.train);
    super::tuning::check_tuning(&mut c, &spec, card);
    check_card_and_task(&mut c, &spec, card, world, is_tiny);
    check_pretrained(&mut c, &spec);
    super::resume::check_resume_from(&mut c, &spec);
    let (steps, train_tokens) = run_length(&mut c, &spec, dp);
    check_schedule(&mut c, &spec, steps, model_max_seq_len, &model_name);
    super::eval::check_eval(&mut c, &spec, steps, world);
    let (lora_rank, lora_alpha, lora_targets) = check_adapter(&mut c, &spec);
    let (time_limit_s, claimed_s) = durations(&mut c, &spec);
    let mfu = derive::mfu(&spec, card);

    Some(ValidSpec {
        card: card?,
        arch: arch?,
        model_name,
        model_max_seq_len,
        world,
        dp,
        steps,
        train_tokens,
        time_limit_s: time_limit_s?,
        claimed_s,
        mfu,
        lora_rank,
        lora_alpha,
        lora_targets,
        price_overrides: Vec::new(),
        node_override: Default::default(),
        spec,
    })
}

/// The spec's card from the catalogue, or an error with the nearest id.
fn resolve_card(c: &mut Checker<'_>, spec: &JobSpec) -> Option<&'static catalog::Card> {
    match catalog::card(&spec.resources.card) {
        Some(card) => Some(card),
        None => {
            c.push(
                Diagnostic::error(
                    Code::UnknownCard,
                    "resources.card",
                    format!("unknown card `{}`", spec.resources.card),
                    format!("未知的卡型 `{}`", spec.resources.card),
                )
                .with_help(hint(did_you_mean(
                    &spec.resources.card,
                    catalog::card_ids(),
                ))),
            );
            None
        }
    }
}

/// The model's architecture, its name, the sequence length it was trained for, and whether it
/// is a llama2.c model (what tiny-train trains).
fn resolve_model(c: &mut Checker<'_>, spec: &JobSpec) -> (Option<Arch>, String, Option<u32>, bool) {
    match &spec.model {
        ModelRef::Id(id) => match catalog::model(id) {
            Some(m) => (
                Some(m.arch),
                m.display.to_string(),
                Some(m.max_seq_len),
                m.id.starts_with("stories"),
            ),
            None => {
                c.push(
                    Diagnostic::error(
                        Code::UnknownModel,
                        "model",
                        format!("unknown model `{id}`"),
                        format!("未知的模型 `{id}`"),
                    )
                    .with_help(hint(did_you_mean(id, catalog::model_ids()))),
                );
                (None, id.clone(), None, false)
            }
        },
        ModelRef::Custom(m) => {
            let name = if m.name.is_empty() {
                "custom".to_string()
            } else {
                m.name.clone()
            };
            let arch = Arch {
                layers: m.layers,
                hidden: m.hidden,
                heads: m.heads,
                kv_heads: m.kv_heads,
                ffn: m.ffn,
                vocab: m.vocab,
                tied_embeddings: m.tied_embeddings,
                qkv_bias: m.qkv_bias,
            };
            check_custom(c, &arch);
            (Some(arch), name, None, false)
        }
    }
}

/// The shape of the cluster: cards per node, and how the cards split into model-parallel groups;
/// returns the world size and the data-parallel degree.
fn check_cluster(c: &mut Checker<'_>, spec: &JobSpec, card: Option<&catalog::Card>) -> (u32, u32) {
    let (p, r) = (&spec.parallel, &spec.resources);
    let (world, dp) = derive::world_and_dp(spec);
    if let Some(card) = card
        && r.cards_per_node > card.max_per_node
    {
        c.error(
            Code::OutOfRange,
            "resources.cards_per_node",
            format!(
                "a {} node holds at most {} cards, not {}",
                card.display, card.max_per_node, r.cards_per_node
            ),
            format!(
                "每个 {} 节点最多 {} 张卡，而不是 {}",
                card.display, card.max_per_node, r.cards_per_node
            ),
        );
    }
    let model_par = p.tp.saturating_mul(p.pp).saturating_mul(p.sp);
    let dp = dp.unwrap_or_else(|| {
        c.error(
            Code::Conflict,
            "parallel",
            format!("tp × pp × sp = {model_par} must divide the {world} cards"),
            format!("tp × pp × sp = {model_par} 必须整除总卡数 {world}"),
        );
        0
    });
    if p.tp > r.cards_per_node {
        c.warn(
            Code::Suspicious,
            "parallel.tp",
            format!(
                "tp = {} spans nodes; tensor parallelism across nodes is slow",
                p.tp
            ),
            format!("tp = {} 跨节点；跨节点的张量并行非常慢", p.tp),
        );
    }
    (world, dp)
}

/// Tensor and pipeline parallelism against the model's heads and layers.
fn check_heads(c: &mut Checker<'_>, p: &ParallelSpec, a: &Arch) {
    if a.heads.checked_rem(p.tp) != Some(0) {
        c.error(
            Code::Conflict,
            "parallel.tp",
            format!("tp = {} must divide the {} attention heads", p.tp, a.heads),
            format!("tp = {} 必须整除 {} 个注意力头", p.tp, a.heads),
        );
    }
    if a.layers.checked_rem(p.pp) != Some(0) {
        c.warn(
            Code::Suspicious,
            "parallel.pp",
            format!(
                "pp = {} does not divide {} layers: stages are uneven",
                p.pp, a.layers
            ),
            format!("pp = {} 不能整除 {} 层：各流水线阶段不均衡", p.pp, a.layers),
        );
    }
}

/// A `[model]` table is an architecture, not a pretrained model: its weights start random, so
/// fine-tuning it (sft, lora, qlora) tunes noise, unless it continues an earlier job's weights.
fn check_pretrained(c: &mut Checker<'_>, spec: &JobSpec) {
    let fine_tune = matches!(spec.task, Task::Sft | Task::Lora | Task::Qlora);
    if fine_tune
        && matches!(spec.model, ModelRef::Custom(_))
        && spec.checkpoint.resume_from.is_none()
    {
        let task = spec.task.as_str();
        c.warn(
            Code::Suspicious,
            "model",
            format!(
                "a [model] table describes an architecture, not a pretrained model: its weights \
                 start random, so {task} fine-tunes noise; name a catalogue model (`model = \
                 \"qwen2.5-7b\"`) or use task = \"pretrain\""
            ),
            format!(
                "[model] 表只描述结构，不是预训练模型：其权重随机初始化，{task} 微调的是噪声；请指定目录中的\
                 模型（`model = \"qwen2.5-7b\"`）或使用 task = \"pretrain\""
            ),
        );
    }
}

/// What the card and the backend can run, and what each task needs.
fn check_card_and_task(
    c: &mut Checker<'_>,
    spec: &JobSpec,
    card: Option<&catalog::Card>,
    world: u32,
    is_tiny: bool,
) {
    let (t, p) = (&spec.train, &spec.parallel);
    if let Some(card) = card {
        if !card.is_gpu {
            // onramp-train runs pretrain, sft and lora on the CPU too (small models, the tests);
            // QLoRA's 4-bit base needs bitsandbytes on CUDA.
            if spec.task == Task::Qlora {
                c.error(
                    Code::Conflict,
                    "resources.card",
                    "card = \"cpu\" cannot run task = \"qlora\": its 4-bit base needs a CUDA GPU; use task = \"lora\"".into(),
                    "card = \"cpu\" 不能运行 task = \"qlora\"：4 位底座需要 CUDA GPU；请用 task = \"lora\"".into(),
                );
            }
            if p.zero_stage > 0
                || p.offload_optimizer.is_on()
                || p.tp > 1
                || p.pp > 1
                || p.sp > 1
                || world > 1
            {
                c.error(
                    Code::Conflict,
                    "parallel",
                    "the CPU runner trains on one process: no ZeRO, offload or model parallelism, one card".into(),
                    "CPU 运行器只用单进程训练：不支持 ZeRO、卸载或模型并行，且只能一张卡".into(),
                );
            }
            if t.precision != Precision::Fp32 {
                c.warn(
                    Code::Suspicious,
                    "train.precision",
                    format!(
                        "the CPU runner trains in fp32; {} will be ignored",
                        t.precision.as_str()
                    ),
                    format!(
                        "CPU 运行器使用 fp32 训练；{} 将被忽略",
                        t.precision.as_str()
                    ),
                );
            }
        }
        if spec.backend == Backend::Runner && card.is_gpu {
            c.error(
                Code::Conflict,
                "backend",
                format!("backend = \"runner\" has only CPU cores; use card = \"cpu\" or backend = \"slurm\" for {}", card.display),
                format!("backend = \"runner\" 只有 CPU；请用 card = \"cpu\"，或对 {} 使用 backend = \"slurm\"", card.display),
            );
        }
    }
    check_tiny_train(c, spec, card, is_tiny);
    if spec.task == Task::Qlora && t.precision == Precision::Fp32 {
        c.error(
            Code::Conflict,
            "train.precision",
            "QLoRA computes in bf16 or fp16 over a 4-bit base, not fp32".into(),
            "QLoRA 在 4 位底座上以 bf16 或 fp16 计算，不能用 fp32".into(),
        );
    }
}

/// tiny-train trains a llama2.c model with onramp-runner, on a CPU card.
fn check_tiny_train(
    c: &mut Checker<'_>,
    spec: &JobSpec,
    card: Option<&catalog::Card>,
    is_tiny: bool,
) {
    if spec.task == Task::TinyTrain
        && let Some(card) = card.filter(|card| card.is_gpu)
    {
        // Its launch is onramp-runner's CPU trainer; a GPU job runs onramp-train, which does not
        // train llama2.c models.
        let cpu = cpu_card_ids();
        c.error(
            Code::Conflict,
            "resources.card",
            format!(
                "task = \"tiny-train\" trains on the CPU runner only ({cpu}), not on a GPU ({})",
                card.display
            ),
            format!(
                "task = \"tiny-train\" 只在 CPU 运行器上训练（{cpu}），不能用 GPU（{}）",
                card.display
            ),
        );
    }
    if spec.task == Task::TinyTrain && !is_tiny {
        c.error(
            Code::Conflict,
            "model",
            "task = \"tiny-train\" trains a llama2.c model: stories260K, stories15M, stories42M or stories110M".into(),
            "task = \"tiny-train\" 只训练 llama2.c 模型：stories260K、stories15M、stories42M 或 stories110M".into(),
        );
    }
}

/// The length of the run: its steps and the tokens it trains on, from epochs or steps.
fn run_length(c: &mut Checker<'_>, spec: &JobSpec, dp: u32) -> (u64, u64) {
    if spec.train.epochs.is_none() && spec.train.steps.is_none() {
        c.info(
            Code::Defaulted,
            "train.epochs",
            "neither epochs nor steps given: training for 1 epoch".into(),
            "未给出 epochs 或 steps：默认训练 1 个 epoch".into(),
        );
    }
    match derive::run_length(spec, dp) {
        RunLength::BothGiven => {
            c.error(
                Code::Conflict,
                "train.steps",
                "give `train.epochs` or `train.steps`, not both".into(),
                "`train.epochs` 与 `train.steps` 只能给一个".into(),
            );
            (0, 0)
        }
        RunLength::NoTokens => {
            c.error(
                Code::MissingKey,
                "data.tokens",
                "training by epochs needs the data's counts: `data.examples` for chat, alpaca and prompt/completion data (one example per sequence) and `data.tokens` for text (`onramp datasets check` counts a file; an uploaded dataset, `ds_…`, gets them when submitted); or give `train.steps`".into(),
                "按 epoch 训练需要数据的统计：对话、alpaca 与 prompt/completion 数据给 `data.examples`（每个样本一条序列），文本给 `data.tokens`（`onramp datasets check` 可统计文件；已上传的数据集 `ds_…` 在提交时自动填入）；或改为给出 `train.steps`".into(),
            );
            (0, 0)
        }
        RunLength::Run { steps: 0, .. } => {
            let seq_len = spec.data.seq_len;
            c.error(
                Code::BadValue,
                "data.tokens",
                format!("an epoch of this data trains no step: it makes no whole sequence of seq_len = {seq_len} tokens to train on; give more data, a shorter seq_len, or `train.steps`"),
                format!("这份数据的一个 epoch 训练不了一步：凑不出一条 seq_len = {seq_len} 个 token 的完整序列；请提供更多数据、缩短 seq_len，或改为给出 `train.steps`"),
            );
            (0, 0)
        }
        RunLength::Run { steps, tokens } => (steps, tokens),
    }
}

/// The schedule against the run: warmup, learning rate, and the model's trained sequence length.
fn check_schedule(
    c: &mut Checker<'_>,
    spec: &JobSpec,
    steps: u64,
    model_max_seq_len: Option<u32>,
    model_name: &str,
) {
    let t = &spec.train;
    if steps > 0 && t.warmup > steps {
        c.warn(
            Code::Suspicious,
            "train.warmup",
            format!(
                "warmup ({} steps) is longer than the run ({steps} steps)",
                t.warmup
            ),
            format!("预热（{} 步）比整个训练（{steps} 步）还长", t.warmup),
        );
    }
    let lr_high = if spec.task.is_adapter() { 1e-2 } else { 1e-3 };
    if t.lr > lr_high && spec.task != Task::TinyTrain {
        c.warn(
            Code::Suspicious,
            "train.lr",
            format!("lr = {} is unusually high for {}", t.lr, spec.task.as_str()),
            format!("对 {} 来说 lr = {} 偏高", spec.task.as_str(), t.lr),
        );
    }
    if let Some(max) = model_max_seq_len
        && spec.data.seq_len > max
    {
        c.warn(
            Code::Suspicious,
            "data.seq_len",
            format!("seq_len = {} is longer than the {max} tokens {model_name} was trained for; plan for RoPE scaling", spec.data.seq_len),
            format!("seq_len = {} 超过 {model_name} 训练时的 {max} 个 token；需要 RoPE 外推/缩放", spec.data.seq_len),
        );
    }
}

/// The time limit and the claimed time, in seconds (`None` when unreadable).
fn durations(c: &mut Checker<'_>, spec: &JobSpec) -> (Option<u64>, Option<u64>) {
    let r = &spec.resources;
    let time_limit_s = parse_duration_s(&r.time_limit).filter(|s| *s > 0);
    if time_limit_s.is_none() {
        c.error(
            Code::BadDuration,
            "resources.time_limit",
            format!(
                "cannot read time_limit \"{}\"; write e.g. \"24h\", \"30m\", \"1h30m\" or \"2d\"",
                r.time_limit
            ),
            format!(
                "无法识别 time_limit \"{}\"；请写成 \"24h\"、\"30m\"、\"1h30m\" 或 \"2d\"",
                r.time_limit
            ),
        );
    }
    if let Some(claim) = &spec.estimate.claimed_time
        && parse_duration_s(claim).is_none_or(|s| s == 0)
    {
        c.error(
            Code::BadDuration,
            "estimate.claimed_time",
            format!("cannot read claimed_time \"{claim}\"; write e.g. \"30h\""),
            format!("无法识别 claimed_time \"{claim}\"；请写成 \"30h\" 这样的形式"),
        );
    }
    let claimed_s = spec
        .estimate
        .claimed_time
        .as_deref()
        .and_then(parse_duration_s);
    let time_limit_s = time_limit_s.filter(|s| within_backends(c, spec, *s));
    (time_limit_s, claimed_s)
}

/// Whether a backend runs a job for `time_limit_s`: none runs one for more than
/// [`MAX_TIME_LIMIT_S`], the local runner none for more than [`RUNNER_MAX_TIME_LIMIT_S`], so
/// the plan refuses what the dispatch would.
fn within_backends(c: &mut Checker<'_>, spec: &JobSpec, time_limit_s: u64) -> bool {
    let runner = spec.backend == Backend::Runner;
    let max_s = if runner {
        RUNNER_MAX_TIME_LIMIT_S
    } else {
        MAX_TIME_LIMIT_S
    };
    if time_limit_s <= max_s {
        return true;
    }
    let (days, limit) = (max_s / 86_400, &spec.resources.time_limit);
    let (en, zh) = if runner {
        (
            format!("backend = \"runner\" runs a job for at most {days} days"),
            format!("backend = \"runner\" 运行一个作业最多 {days} 天"),
        )
    } else {
        (
            format!("no backend runs a job for more than {days} days"),
            format!("没有后端会运行一个作业超过 {days} 天"),
        )
    };
    c.error(
        Code::OutOfRange,
        "resources.time_limit",
        format!("time_limit \"{limit}\" is too long: {en} (\"{days}d\")"),
        format!("time_limit \"{limit}\" 太长：{zh}（\"{days}d\"）"),
    );
    false
}

fn check_custom(c: &mut Checker<'_>, a: &Arch) {
    if [a.layers, a.hidden, a.heads, a.kv_heads, a.ffn, a.vocab].contains(&0) {
        c.error(
            Code::OutOfRange,
            "model",
            "custom model numbers must all be at least 1".into(),
            "自定义模型的各项数值都必须至少为 1".into(),
        );
        return;
    }
    if !a.hidden.is_multiple_of(a.heads) {
        c.error(
            Code::Conflict,
            "model.heads",
            format!("heads = {} must divide hidden = {}", a.heads, a.hidden),
            format!("heads = {} 必须整除 hidden = {}", a.heads, a.hidden),
        );
    }
    // RoPE rotates pairs of each head's dimensions: an odd head dimension has a dimension left
    // over, and the trainer's first forward pass fails on the shapes.
    let head_dim = a.hidden / a.heads;
    if a.hidden.is_multiple_of(a.heads) && !head_dim.is_multiple_of(2) {
        c.error(
            Code::Conflict,
            "model.heads",
            format!("hidden / heads = {} / {} = {head_dim} is each head's dimension, which must be even (RoPE rotates its dimensions in pairs)", a.hidden, a.heads),
            format!("hidden / heads = {} / {} = {head_dim} 是每个注意力头的维度，必须为偶数（RoPE 按成对的维度旋转）", a.hidden, a.heads),
        );
    }
    if a.kv_heads > a.heads || !a.heads.is_multiple_of(a.kv_heads) {
        c.error(
            Code::Conflict,
            "model.kv_heads",
            format!("kv_heads = {} must divide heads = {}", a.kv_heads, a.heads),
            format!("kv_heads = {} 必须整除 heads = {}", a.kv_heads, a.heads),
        );
    }
}

/// The catalogue's CPU cards, as a message lists them (`"cpu"`).
fn cpu_card_ids() -> String {
    catalog::CARDS
        .iter()
        .filter(|card| !card.is_gpu)
        .map(|card| format!("card = \"{}\"", card.id))
        .collect::<Vec<_>>()
        .join(", ")
}
