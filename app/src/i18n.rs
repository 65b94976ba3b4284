//! Every user-visible string of the app in English and Simplified Chinese: a typed key per
//! string, so a missing translation is a compile error and a misspelt key cannot exist.

pub use jobspec::Lang;

macro_rules! messages {
    ($($key:ident => $en:literal, $zh:literal;)*) => {
        /// A user-visible string.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Key { $($key,)* }

        impl Key {
            /// Every key, for the completeness test.
            pub const ALL: &'static [Key] = &[$(Key::$key,)*];

            /// The text in `lang`.
            pub fn text(self, lang: Lang) -> &'static str {
                match (self, lang) {
                    $((Key::$key, Lang::En) => $en, (Key::$key, Lang::Zh) => $zh,)*
                }
            }
        }
    };
}

messages! {
    AppName => "Onramp", "Onramp";
    Tagline => "From a tiny model in your browser to a training job on a cluster", "从浏览器里的小模型到集群上的训练作业";
    NavMain => "Main", "主导航";
    NavTry => "Try", "试用";
    NavPlan => "Plan", "规划";
    NavJobs => "Jobs", "作业";
    NavAccount => "Account", "账户";
    NavStatus => "Status", "状态";
    Language => "Language", "语言";
    SwitchLanguage => "中文", "English";
    NotFound => "There is no page at this address.", "此地址没有页面。";
    PageNotFound => "Page not found", "页面不存在";
    StackTitle => "Stack", "系统状态";
    CheckingEdge => "Checking the edge…", "正在检查服务端…";
    ServiceOnline => "online", "运行正常";
    ServiceTrouble => "not answering properly", "服务异常";
    // Try
    TryTitle => "Try a tiny language model", "试用一个小型语言模型";
    TryIntro => "The model runs in your browser, in a background worker.", "模型在你的浏览器中、在后台线程里运行。";
    Model => "Model", "模型";
    Prompt => "Prompt", "提示词";
    PromptPlaceholder => "Once upon a time", "从前有一天";
    Temperature => "Temperature", "温度";
    TopP => "Top-p", "Top-p";
    Seed => "Seed", "随机种子";
    MaxTokens => "Max tokens", "最大 token 数";
    Generate => "Generate", "生成";
    Stop => "Stop", "停止";
    Output => "Output", "输出";
    StartingWorker => "Starting the model worker…", "正在启动模型线程…";
    Downloading => "Downloading the model", "正在下载模型";
    LoadedFromCache => "Model loaded from the browser cache", "已从浏览器缓存加载模型";
    LoadedFromNetwork => "Model downloaded and cached", "模型已下载并缓存";
    Generating => "Generating…", "正在生成…";
    Stopped => "Stopped", "已停止";
    Finished => "Finished", "已完成";
    TokensPerSecond => "tokens/s", "token/秒";
    TimeToFirstToken => "time to first token", "首个 token 用时";
    Tokens => "tokens", "个 token";
    ErrDownload => "The model could not be downloaded", "无法下载模型";
    ErrFormat => "The model file is not usable", "模型文件无法使用";
    ErrModelTooLarge => "This model is too large for a browser tab (parameters, and the most the playground opens)", "该模型太大，浏览器标签页无法运行（参数量，以及试用页可打开的上限）";
    ErrAdapterOnly => "This job trained an adapter only, which needs its base model: set output.merge_adapter = true to try the merged model here", "此作业只训练了适配器，需要基座模型才能运行：设置 output.merge_adapter = true 后即可在此试用合并后的模型";
    ErrGenerate => "Generation failed", "生成失败";
    ErrWorker => "The model worker failed", "模型线程出错";
    ErrBadInput => "A setting is out of range", "某项设置超出范围";
    ErrPromptTooLong => "the prompt is longer than 16 KiB: shorten it", "提示词超过 16 KiB，请缩短";
    // Plan
    PlanTitle => "Plan a training job", "规划训练作业";
    Templates => "Start from a template", "从模板开始";
    SpecEditor => "Job spec (TOML)", "作业配置（TOML）";
    FormView => "Form", "表单";
    Diagnostics => "Problems", "问题";
    NoProblems => "No problems found.", "未发现问题。";
    Line => "line", "行";
    Column => "column", "列";
    MemoryPerGpu => "Memory per card", "每张卡的显存";
    Params => "parameters", "参数";
    Grads => "gradients", "梯度";
    Optimizer => "optimizer", "优化器";
    Activations => "activations", "激活值";
    Buffers => "buffers", "缓冲区";
    CardMemory => "card memory", "卡显存";
    HostRamPerNode => "Offloaded states, host RAM per node", "卸载的状态，每节点主机内存";
    NvmePerNode => "Offloaded states, NVMe per node", "卸载的状态，每节点 NVMe";
    FitsOnCards => "fits on", "可放下于";
    OffloadTime => "of which offload traffic and CPU optimizer", "其中卸载传输与 CPU 优化器";
    Fits => "Fits", "放得下";
    HowComputed => "How these figures are computed", "这些数字是怎么算的";
    HowIsThisComputed => "How is this computed?", "这是怎么算的？";
    Formula => "Formula", "公式";
    Assumptions => "Assumptions", "假设";
    FigParameters => "Parameters", "参数量";
    FigModelStates => "Model states (parameters, gradients, optimizer)", "模型状态（参数、梯度、优化器）";
    FigActivations => "Activations", "激活值";
    FigBuffers => "Buffers", "缓冲区";
    FigHostMemory => "Host RAM and NVMe per node", "每节点主机内存与 NVMe";
    FigOffloadTime => "Offload traffic and the CPU optimizer", "卸载传输与 CPU 优化器";
    FigTime => "Time", "时间";
    FigCost => "Cost", "费用";
    DoesNotFit => "Does not fit", "放不下";
    AcrossCards => "Time and cost on every card", "各种卡上的时间与费用";
    Card => "Card", "卡";
    Cards => "Cards", "卡数";
    Time => "Time", "时间";
    Cost => "Cost", "费用";
    Memory => "Memory", "显存";
    Suggestions => "Ways to make it fit", "让它放得下的办法";
    Apply => "Apply", "应用";
    Artifacts => "Launch files", "启动文件";
    Copy => "Copy", "复制";
    Copied => "Copied", "已复制";
    ImportDs => "Import a DeepSpeed config (JSON)", "导入 DeepSpeed 配置（JSON）";
    DatasetCheck => "Check a dataset file", "检查数据集文件";
    DatasetHint => "Checked here, in your browser, before anything is paid: nothing is uploaded.", "在你的浏览器里检查，付费之前：不会上传任何内容。";
    DatasetDrop => "Drop a file here, or choose one:", "把文件拖到这里，或选择一个：";
    DatasetReading => "Reading", "正在读取";
    DatasetCheckStopped => "The check stopped: the browser ended the page's worker (the file may be too large for this tab; `onramp datasets check FILE` reads any size). The browser said", "检查中止：浏览器结束了页面的后台线程（文件可能超出此标签页能处理的大小；`onramp datasets check FILE` 可读任意大小）。浏览器给出的原因";
    DatasetNoWorkers => "This browser cannot check files here (it runs no Web Workers): use `onramp datasets check FILE`.", "此浏览器无法在这里检查文件（不支持 Web Worker）：请使用 `onramp datasets check FILE`。";
    DatasetFormat => "Format", "格式";
    DatasetRecords => "Records", "记录";
    DatasetExamples => "Examples per epoch", "每轮样本";
    DatasetTokens => "Tokens per epoch", "每轮 token";
    DatasetEstimate => "(an estimate: this Onramp does not hold the model's tokenizer)", "（估算：此 Onramp 上没有该模型的分词器）";
    DatasetExact => "(counted with the model's own tokenizer, as the trainer counts)", "（用模型自己的分词器计数，与训练程序一致）";
    DatasetCut => "Examples cut at seq_len", "超过 seq_len 被截断的样本";
    DatasetLengths => "Tokens per record (median / p90 / max)", "每条记录的 token（中位 / p90 / 最多）";
    DatasetBad => "Bad lines", "有问题的行";
    DatasetUnusable => "Nothing in this file can be trained on", "文件中没有可训练的样本";
    DatasetUse => "Use these counts in the spec", "把这些计数填入作业配置";
    DatasetUsed => "Set in [data]: epochs, time and cost now follow this file", "已填入 [data]：epoch、时间与费用现在按这个文件计算";
    DatasetUpload => "Upload to my account", "上传到我的账户";
    DatasetUploading => "Uploading", "正在上传";
    DatasetUploaded => "Uploaded; data.dataset names it:", "已上传；data.dataset 已指向它：";
    ImportButton => "Import", "导入";
    Imported => "Imported into the spec", "已导入到作业配置";
    InvalidSpec => "Fix the problems above to see estimates.", "修正上面的问题后即可看到估算。";
    SummaryInvalid => "No estimates until the spec is valid", "配置有效后才有估算";
    NeedsTokens => "time and cost need data.tokens (the tokens in one epoch)", "时间与费用需要 data.tokens（每个 epoch 的 token 数）";
    FieldName => "Name", "名称";
    FieldCard => "Card", "卡型";
    FieldCardsPerNode => "Cards per node", "每节点卡数";
    FieldNodes => "Nodes", "节点数";
    FieldMicroBatch => "Micro batch", "微批大小";
    FieldSeqLen => "Sequence length", "序列长度";
    FieldZero => "ZeRO stage", "ZeRO 阶段";
    FormNeedsValidToml => "The form shows the spec once the TOML parses.", "TOML 能解析后表单才会显示。";
    // Share
    CopyLink => "Copy link", "复制链接";
    LinkCopied => "Link copied", "链接已复制";
    ShareBroken => "This share link cannot be opened", "无法打开此分享链接";
    ShareTooNew => "This share link comes from a newer Onramp", "此分享链接来自更新版本的 Onramp";
    ShareErrTooLong => "the link is too long", "链接过长";
    ShareErrNoVersion => "the link has no version tag", "链接缺少版本标记";
    ShareErrBase64 => "the link is damaged (not base64url)", "链接已损坏（不是 base64url）";
    ShareErrCorrupt => "the link's data is corrupt", "链接数据已损坏";
    ShareErrContent => "the link's content is invalid", "链接内容无效";
    ShareLink => "Share link", "分享链接";
    ShareNothingLoaded => "Nothing was loaded from it.", "未从中加载任何内容。";
    Dismiss => "Dismiss", "关闭";
    // Accounts, credits, jobs and experiments
    Loading => "Loading…", "正在加载…";
    SignIn => "Sign in", "登录";
    SignUp => "Create account", "注册";
    SignOut => "Sign out", "退出登录";
    SignInTitle => "Sign in to Onramp", "登录 Onramp";
    SignUpTitle => "Create an Onramp account", "注册 Onramp 账户";
    SignUpInstead => "New here? Create an account", "还没有账户？注册一个";
    SignInInstead => "Have an account? Sign in", "已有账户？登录";
    Email => "Email", "邮箱";
    Password => "Password", "密码";
    PasswordHint => "At least 8 characters", "至少 8 个字符";
    SignedInAs => "Signed in as", "已登录：";
    SignUpGrant => "New accounts receive trial credit.", "新账户会获得试用额度。";
    AccountTitle => "Account and trial credit", "账户与试用额度";
    Balance => "Balance", "余额";
    RedeemTitle => "Redeem a promotion code", "兑换优惠码";
    PromoCode => "Promotion code", "优惠码";
    Redeem => "Redeem", "兑换";
    RedeemedAmount => "Redeemed", "已兑换";
    LedgerTitle => "Every credit movement", "额度明细";
    Amount => "Amount", "金额";
    Kind => "Kind", "类型";
    Reference => "Reference", "关联";
    NoEntries => "No movements yet.", "暂无记录。";
    TokensTitle => "API tokens (for the onramp CLI)", "API 令牌（供 onramp 命令行使用）";
    NoTokens => "No API tokens: `onramp login` makes one.", "没有 API 令牌：`onramp login` 会创建一个。";
    TokenName => "Name", "名称";
    TokenCreatedAt => "Made", "创建时间";
    RevokeToken => "Revoke", "吊销";
    KindGrant => "sign-up grant", "注册赠送";
    KindRedeem => "promotion code", "优惠码兑换";
    KindHold => "hold for a job", "作业预扣";
    KindCapture => "charged", "实际扣费";
    KindRelease => "hold released", "预扣释放";
    KindRefund => "refund", "退款";
    SubmitTitle => "Run this job", "运行此作业";
    SubmitJob => "Submit job", "提交作业";
    Backend => "Backend", "后端";
    MaxHold => "Held while it runs (the most it can cost)", "运行期间预扣（最高费用）";
    Held => "Held", "已预扣";
    OpeningJob => "Opening the job…", "正在打开作业…";
    SignInToSubmit => "Sign in to submit jobs.", "登录后才能提交作业。";
    NoBackendForCard => "No backend here offers this card; the edge will refuse the job.", "这里没有后端提供这种卡，服务端会拒绝该作业。";
    JobsTitle => "Your jobs", "你的作业";
    NoJobs => "No jobs yet. Plan one and submit it.", "还没有作业。先规划一个再提交吧。";
    State => "State", "状态";
    Charged => "Charged", "已扣费";
    Created => "Created", "创建时间";
    Started => "Started", "开始时间";
    Ended => "Ended", "结束时间";
    JobTitle => "Job", "作业";
    WaitingReason => "Waiting", "等待原因";
    BackendSays => "Backend says", "后端消息";
    StateDispatching => "dispatching", "提交中";
    StateQueued => "queued", "排队中";
    StateRunning => "running", "运行中";
    StateRequeued => "requeued", "已重新排队";
    Attempts => "Attempts", "运行次数";
    AttemptBegins => "── attempt {n} begins: the cluster stopped the run before it, which continues from its last checkpoint ──", "── 第 {n} 次运行开始：集群停止了上一次运行，本次从最近的检查点继续 ──";
    StateSucceeded => "succeeded", "已成功";
    StateFailed => "failed", "已失败";
    StateCancelled => "cancelled", "已取消";
    StateTimedOut => "timed out", "已超时";
    StateLost => "lost", "已丢失";
    Logs => "Logs", "日志";
    NoLogsYet => "No log output yet.", "暂无日志输出。";
    LogTruncated => "(earlier lines are not shown)", "（更早的日志未显示）";
    JobArtifacts => "Artifacts", "产物";
    ResultsTitle => "What the run achieved", "训练成果";
    EvalOnHoldout => "Evaluated on a held-out share of the training data:", "在留出的一部分训练数据上评估：";
    EvalOnDataset => "Evaluated on its own dataset:", "在单独的数据集上评估：";
    EvalExamples => "examples", "条样本";
    ResultsMeasure => "Measure", "指标";
    ResultsBase => "Base model", "基础模型";
    ResultsTrained => "Trained", "训练后";
    ResultsChange => "Change", "变化";
    MeasureEvalLoss => "eval loss", "评估损失";
    MeasurePerplexity => "perplexity", "困惑度";
    MeasureTokenAccuracy => "token accuracy", "token 准确率";
    Better => "better", "更好";
    Worse => "worse", "更差";
    ResultsAnswers => "Answers to the same prompts (greedy decoding)", "对同一提示的回答（贪心解码）";
    ResultsPrompt => "Prompt", "提示";
    ResultsBenchmarks => "Benchmarks (lm-evaluation-harness), few-shot examples:", "基准任务（lm-evaluation-harness），少样本示例数：";
    ResultsTask => "Task", "任务";
    NoAnswer => "(none)", "（无）";
    CompareTitle => "Compare runs", "对比运行";
    CompareNeedsTwo => "Pick two or more runs to compare: tick them on your jobs page.", "请选择两个或更多运行进行对比：在作业页面勾选它们。";
    CompareSelected => "Compare selected", "对比所选";
    ComparePick => "Pick to compare", "选中以对比";
    ComparePickHint => "Tick two or more jobs to compare them.", "勾选两个或更多作业即可对比。";
    CompareRun => "Run", "运行";
    CompareCurves => "Loss curves, overlaid", "损失曲线（叠加）";
    AlignBy => "Align by", "对齐方式";
    AlignStep => "step", "步数";
    AlignTokens => "tokens trained", "已训练 token 数";
    TokensTrained => "tokens", "token 数";
    TokensUnknown => "A run's spec does not say how many tokens a step trains: aligned by step.", "有运行的规格无法算出每步训练的 token 数：按步数对齐。";
    RanFor => "Ran for", "运行时长";
    SpecDiffTitle => "What changed between the specs", "规格之间的差异";
    SpecKey => "Key", "键";
    SpecSame => "Nothing: the specs are the same, defaults filled in.", "没有差异：补全默认值后规格相同。";
    ShareComparison => "Share this comparison", "分享此对比";
    ShareComparisonNote => "Saves each job as a published experiment (without its files); anyone with the link sees the comparison read-only.", "将每个作业保存为已发布的实验（不含其文件）；任何拿到链接的人都能只读查看此对比。";
    ComparisonLink => "Link to this comparison:", "此对比的链接：";
    NoArtifactsYet => "No artifacts yet: a job pushes what it trained as it ends.", "暂无产物：作业结束时会上传训练结果。";
    ArtifactName => "Name", "名称";
    ArtifactSize => "Size", "大小";
    ArtifactUploading => "uploading, parts:", "上传中，分片：";
    ShareArtifacts => "Share its artifacts with the link", "通过链接共享其产物";
    ArtifactsUsed => "Your account's artifacts use", "账户的产物已用";
    ExperimentsUsed => "Your saved experiments", "已保存的实验";
    ExperimentIsPublic => "Anyone with the link can see this experiment.", "任何拿到链接的人都能查看这个实验。";
    ExperimentIsPrivate => "Only you can see this experiment: its link shows nothing to anyone else.", "只有你能查看这个实验：别人打开链接什么也看不到。";
    ExperimentUnpublish => "Take the link back", "收回链接";
    ExperimentPublish => "Publish the link", "公开链接";
    ExperimentDelete => "Delete the experiment", "删除实验";
    ExperimentDeleteConfirm => "Click again to delete it for good", "再点一次即永久删除";
    ExperimentDeletedNote => "Deleted: the experiment and its link are gone.", "已删除：实验和它的链接都已不存在。";
    ArtifactsKeptDays => "kept for days:", "保留天数：";
    LossCurve => "Loss curve", "损失曲线";
    TrainLoss => "train loss", "训练损失";
    ValLoss => "validation loss", "验证损失";
    Step => "step", "步数";
    Loss => "loss", "损失";
    NoMetricsYet => "No metrics reported yet.", "尚未上报指标。";
    ProgressLabel => "Progress", "进度";
    StepOfTotal => "step {step} of {total}", "第 {step} 步，共 {total} 步";
    TimeLeft => "Time left", "预计剩余";
    Throughput => "Throughput", "吞吐";
    DownloadCsv => "Download the metrics (CSV)", "下载指标（CSV）";
    LossTableCaption => "Loss by step", "各步的损失";
    ElapsedSeconds => "Elapsed (s)", "已用时间（秒）";
    CancelJob => "Cancel job", "取消作业";
    NotifyMe => "Notify me when this job ends", "作业结束时通知我";
    NotifyTitle => "Job {name} has ended", "作业 {name} 已结束";
    NotifyBlocked => "Notifications are blocked for this site in your browser's settings.", "浏览器设置中已禁止本站发送通知。";
    NotifySent => "You were notified that the job ended.", "已通知你作业结束。";
    NotifyFailed => "The browser did not show the notification.", "浏览器未能显示通知。";
    SaveExperiment => "Save as experiment", "保存为实验";
    ExperimentSaved => "Saved. Share this link:", "已保存，分享此链接：";
    OpenInPlayground => "Open in playground", "在试用页中打开";
    ExperimentTitle => "Saved experiment", "已保存的实验";
    ReadOnly => "A read-only snapshot.", "只读快照。";
    SpecTitle => "Job spec", "作业配置";
    Estimates => "Estimates", "估算";
    ResultTitle => "Result", "结果";
    MaxCost => "at most", "最多";
    ErrInvalidEmail => "That is not an email address.", "这不是有效的邮箱地址。";
    ErrWeakPassword => "The password is too weak: use at least 8 characters.", "密码太弱：至少需要 8 个字符。";
    ErrEmailTaken => "Another account verified this email first. Sign in to it, or ask for a new password on the sign-in form.", "另一个账户已先验证此邮箱。请登录该账户，或在登录表单中申请重置密码。";
    ErrWrongPassword => "The current password is not right.", "当前密码不正确。";
    ErrBadCredentials => "Wrong email or password.", "邮箱或密码错误。";
    ErrRateLimited => "Too many attempts.", "尝试次数过多。";
    ErrInvalidLink => "This verification link is not valid. Open the link from the newest mail, or send a new one from your account page.", "该验证链接无效。请打开最新邮件中的链接，或在账户页重新发送。";
    ErrLinkExpired => "This verification link has expired. Send a new one from your account page.", "该验证链接已过期。请在账户页重新发送。";
    ErrAlreadyVerified => "Your email is verified already.", "你的邮箱已经验证过了。";
    ErrEmailNotVerified => "Verify your email first: open the link in the mail we sent you.", "请先验证邮箱：打开我们发给你的邮件中的链接。";
    ErrTrialTaken => "Your email is verified, but this mailbox's trial credit went to another account (an address of the same mailbox, for example with a +tag).", "邮箱已验证，但该邮箱的试用额度已发放给另一个账户（同一邮箱的其他地址，例如带 +标签 的地址）。";
    ErrSignInFirst => "You are not signed in.", "你尚未登录。";
    ErrBadOrigin => "This request came from another site and was refused.", "该请求来自其他网站，已被拒绝。";
    ErrInvalidCode => "A promotion code has 3 to 64 letters, digits, '-' or '_'.", "优惠码由 3 到 64 个字母、数字、“-”或“_”组成。";
    ErrCodeUnknown => "There is no such promotion code.", "没有这个优惠码。";
    ErrCodeExpired => "This promotion code has expired.", "该优惠码已过期。";
    ErrCodeExhausted => "This promotion code has been used up.", "该优惠码已被领完。";
    ErrCodeAlreadyRedeemed => "You have already redeemed this code.", "你已经兑换过这个优惠码。";
    ErrInsufficientCredit => "Not enough credit for the most this job can cost. Redeem a code or shorten the time limit.", "余额不足以覆盖该作业的最高费用。请兑换优惠码或缩短时间上限。";
    ErrBackendDown => "The backend is down right now; nothing was charged. Try again later.", "后端暂时不可用，未产生任何费用。请稍后再试。";
    ErrBackendError => "The backend answered unexpectedly.", "后端返回了异常结果。";
    ErrNoBackend => "No backend offers the cards this job asks for.", "没有后端能提供该作业所需的卡。";
    ErrInvalidSpec => "The edge refused the spec:", "服务端拒绝了该配置：";
    ErrAlreadyFinished => "The job has already finished.", "该作业已经结束。";
    ErrNotDispatched => "The job has not reached its backend yet.", "该作业尚未到达后端。";
    ErrJobNotFinished => "The job is still running; save it once it ends.", "作业仍在运行，结束后再保存。";
    ErrTooLarge => "That is too large to send.", "内容过大，无法发送。";
    ErrNotFound => "Nothing exists at this address.", "此地址下没有内容。";
    ErrNetwork => "The edge could not be reached. Check the connection and try again.", "无法连接服务端，请检查网络后重试。";
    ErrUnexpected => "Something went wrong on the edge.", "服务端出错了。";
    ErrBackendRefused => "The backend will not run this job as asked (for example, no node has that many GPUs):", "后端不会按要求运行该作业（例如没有节点有这么多 GPU）：";
    ErrForbidden => "You may not do that with these credentials.", "当前凭据无权执行此操作。";
    ErrInternal => "The edge failed on its own side. Try again in a moment.", "服务端内部出错，请稍后重试。";
    ErrUnavailable => "The edge's storage did not answer in time. Try again in a moment.", "服务端存储未能及时响应，请稍后重试。";
    ErrBadRequest => "The edge could not read that request.", "服务端无法识别该请求。";
    ErrConflict => "That conflicts with what was done before.", "该操作与之前的操作冲突。";
    ErrLimitReached => "You have reached the most of these you may keep.", "已达到可保留的数量上限。";
    UnknownExperiment => "There is no saved experiment with this id.", "没有这个编号的已保存实验。";
    UnknownJob => "There is no job of yours with this id.", "你没有这个编号的作业。";
    TryAgainIn => "Try again in {wait}.", "请在 {wait}后再试。";
    VerifyEmailNote => "Verify your email to get your trial credit: we sent a link to {email}.", "验证邮箱即可领取试用额度：验证链接已发送至 {email}。";
    ResendLink => "Send the link again", "重新发送验证链接";
    LinkSent => "Sent to {email}. The link works until {time}.", "已发送至 {email}，链接在 {time} 前有效。";
    VerifyTitle => "Verify email", "验证邮箱";
    Verifying => "Verifying your email…", "正在验证邮箱…";
    VerifiedGranted => "Your email is verified. Trial credit added: {amount}.", "邮箱已验证，已发放试用额度：{amount}。";
    VerifiedAlready => "Your email is verified.", "邮箱已验证。";
    NoVerifyToken => "This page needs the link from the verification mail.", "请通过验证邮件中的链接打开此页面。";
    GoToAccount => "Go to your account", "前往账户页";
    ForgotPassword => "Forgot your password?", "忘记密码？";
    ForgotHint => "We mail a link to the email above that sets a new password; it works once, for an hour.", "我们会向上面的邮箱发送一个设置新密码的链接，只能使用一次，一小时内有效。";
    ForgotSend => "Mail me a reset link", "发送重置链接";
    ForgotSent => "If an account has {email}, a reset link is on its way there.", "如果 {email} 有账户，重置链接已发往该邮箱。";
    ResetTitle => "Set a new password", "设置新密码";
    NewPassword => "New password", "新密码";
    ResetSubmit => "Set the password and sign in", "设置密码并登录";
    ResetDone => "Your new password is set and you are signed in; every other session and API token of the account is signed out.", "新密码已设置，你已登录；该账户的其他会话和 API 令牌都已退出。";
    NoResetToken => "This page needs the link from the password reset mail.", "请通过密码重置邮件中的链接打开此页面。";
    SecurityTitle => "Password and sessions", "密码与登录会话";
    CurrentPassword => "Current password", "当前密码";
    ChangePassword => "Change the password", "修改密码";
    PasswordChangedNote => "The password is changed. This session stays signed in; {n} other sessions were signed out.", "密码已修改。当前会话保持登录；另有 {n} 个会话已退出。";
    SignOutEverywhereHint => "Signs out every browser and device signed in to this account, this one included.", "退出此账户在所有浏览器和设备上的登录，包括当前这个。";
    AlsoRevokeTokens => "Revoke every API token too", "同时吊销所有 API 令牌";
    SignOutEverywhere => "Sign out everywhere", "在所有设备上退出";
}

/// Formats a byte count for people: `1.5 GiB`, `12.0 MiB`.
pub fn bytes(b: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    let b = b as f64;
    if b >= GIB {
        format!("{:.1} GiB", b / GIB)
    } else if b >= MIB {
        format!("{:.1} MiB", b / MIB)
    } else {
        format!("{:.0} KiB", b / 1024.0)
    }
}

/// A wait as people say it, rounded up to the unit shown: "45 s", "49 min", "2 h 5 min"
/// (`45 秒`, `49 分钟`, `2 小时 5 分钟`), so a refusal states the real wait in words.
pub fn wait_text(seconds: u64, lang: Lang) -> String {
    let (s, min, h) = match lang {
        Lang::En => (" s", " min", " h"),
        Lang::Zh => (" 秒", " 分钟", " 小时"),
    };
    if seconds < 60 {
        return format!("{seconds}{s}");
    }
    let minutes = seconds.div_ceil(60);
    match (minutes / 60, minutes % 60) {
        (0, m) => format!("{m}{min}"),
        (hours, 0) => format!("{hours}{h}"),
        (hours, m) => format!("{hours}{h} {m}{min}"),
    }
}

/// The figures whose formula the Plan page explains, in the order of `jobspec`'s
/// `Estimate::explain`, with their names on the page.
pub const EXPLAINED_FIGURES: &[(&str, Key)] = &[
    ("parameters", Key::FigParameters),
    ("model_states", Key::FigModelStates),
    ("activations", Key::FigActivations),
    ("buffers", Key::FigBuffers),
    ("host_memory", Key::FigHostMemory),
    ("time", Key::FigTime),
    ("offload_time", Key::FigOffloadTime),
    ("cost", Key::FigCost),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings that are the same in both languages on purpose (names and technical terms).
    const SAME_IN_BOTH: &[Key] = &[Key::AppName, Key::TopP];

    fn has_cjk(s: &str) -> bool {
        s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    }

    #[test]
    fn every_key_has_both_languages() {
        for &k in Key::ALL {
            let (en, zh) = (k.text(Lang::En), k.text(Lang::Zh));
            assert!(!en.trim().is_empty(), "{k:?} has no English text");
            assert!(!zh.trim().is_empty(), "{k:?} has no Chinese text");
            if SAME_IN_BOTH.contains(&k) {
                continue;
            }
            // The language switch shows the other language's name in that language.
            if k == Key::SwitchLanguage {
                assert!(has_cjk(en) && !has_cjk(zh), "{k:?}");
                continue;
            }
            assert!(
                has_cjk(zh),
                "{k:?}: the Chinese text {zh:?} has no Chinese in it"
            );
            assert!(
                !has_cjk(en),
                "{k:?}: the English text {en:?} has Chinese in it"
            );
        }
    }

    #[test]
    fn language_tags_pick_the_right_table() {
        assert_eq!(Lang::from_tag("zh-CN"), Lang::Zh);
        assert_eq!(Lang::from_tag("zh-TW"), Lang::Zh);
        assert_eq!(Lang::from_tag("en-US"), Lang::En);
        assert_eq!(Lang::from_tag("fr"), Lang::En);
        assert_eq!(Lang::from_tag(Lang::Zh.tag()), Lang::Zh);
    }

    #[test]
    fn waits_read_as_people_say_them() {
        assert_eq!(wait_text(42, Lang::En), "42 s");
        assert_eq!(wait_text(2973, Lang::En), "50 min");
        assert_eq!(wait_text(2973, Lang::Zh), "50 分钟");
        assert_eq!(wait_text(3600, Lang::En), "1 h");
        assert_eq!(wait_text(3900, Lang::Zh), "1 小时 5 分钟");
        let en = Key::TryAgainIn
            .text(Lang::En)
            .replace("{wait}", &wait_text(2973, Lang::En));
        assert_eq!(en, "Try again in 50 min.");
        let zh = Key::TryAgainIn
            .text(Lang::Zh)
            .replace("{wait}", &wait_text(2973, Lang::Zh));
        assert_eq!(zh, "请在 50 分钟后再试。");
        assert!(!Key::ErrRateLimited.text(Lang::En).contains("moment"));
    }

    #[test]
    fn every_explained_figure_has_a_name_on_the_page() {
        // The page lists EXPLAINED_FIGURES; a figure jobspec adds must get a name here.
        for t in jobspec::templates() {
            let plan = jobspec::plan_toml(t.toml);
            let e = plan.estimate.expect("templates are valid");
            let figures: Vec<&str> = e.explain.iter().map(|x| x.figure).collect();
            let named: Vec<&str> = EXPLAINED_FIGURES.iter().map(|(f, _)| *f).collect();
            assert_eq!(figures, named, "{}", t.id);
        }
    }

    #[test]
    fn money_and_bytes_read_well() {
        // Amounts of a thousand yuan and more are grouped, as jobspec's reports always were.
        assert_eq!(jobspec::yuan(123_456u64), "¥1,234.56");
        assert_eq!(jobspec::yuan(5u64), "¥0.05");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(bytes(5 << 20), "5.0 MiB");
    }
}
