//! The command line's help in Chinese: clap's help is written in English on the types
//! (`args.rs`); when the run speaks Chinese, every about, help and heading of the built
//! command is swapped for its Chinese text from [`ZH`], looked up by the English text. A test
//! walks the whole command and fails on any text without its Chinese twin.

use clap::Command;

/// English text (as clap has it) → Chinese.
const ZH: &[(&str, &str)] = &[
    (
        "Two or more runs side by side, your jobs or saved experiments: state, cards, cost and time, what each achieved, train loss at the steps all reported, and their specs diffed key by key",
        "把两个或更多运行并排比较（你的作业或保存的实验）：状态、卡、费用与时长、各自的成果、都报告过的步上的训练损失，以及逐键对比的规格差异",
    ),
    (
        "The runs: a job's id (onramp jobs lists them), or an experiment as e/ID or its link",
        "要比较的运行：作业的 id（onramp jobs 会列出它们），或实验，写作 e/ID 或它的链接",
    ),
    (
        "What a job achieved: its eval set, base against trained (loss, perplexity, token accuracy), the measures at each evaluation, and the prompts both models answered",
        "作业的成果：评估集、基础模型与训练后模型的对比（损失、困惑度、token 准确率）、每次评估的结果，以及两个模型对同一提示的回答",
    ),
    (
        "Your datasets: check one here before training on it, upload it, list and delete them",
        "你的数据集：训练前在本地检查、上传、列出与删除",
    ),
    (
        "Check a dataset, then upload it to your account in parts (a cut-off upload resumes); prints the id a spec names it by (data.dataset)",
        "检查数据集，再分块上传到你的账户（中断的上传可以续传）；打印规格中引用它的 id（data.dataset）",
    ),
    (
        "The dataset file (JSONL, a JSON array, or plain text)",
        "数据集文件（JSONL、一个 JSON 数组或纯文本）",
    ),
    (
        "Upload even when some lines are bad (the trainer skips them)",
        "即使有问题的行也上传（训练器会跳过它们）",
    ),
    (
        "Your uploaded datasets, newest first, and the quota they use",
        "你上传的数据集（最新的在前）及其占用的配额",
    ),
    ("Delete an uploaded dataset", "删除一个已上传的数据集"),
    (
        "The dataset's id (ds_…, as onramp datasets list shows)",
        "数据集的 id（ds_…，见 onramp datasets list）",
    ),
    (
        "Check a dataset here, offline: its format, every bad line with its number, and its examples and tokens as the trainer will count them",
        "在本地离线检查数据集：格式、每一行问题及其行号，以及训练器将统计的样本数与 token 数",
    ),
    (
        "Check a dataset here, offline: its format, every bad line with its number, and its examples and tokens as the trainer will count them\n\nExits 1 when any line is bad or nothing in the file can be trained on.",
        "在本地离线检查数据集：格式、每一行问题及其行号，以及训练器将统计的样本数与 token 数\n\n有任何一行有问题、或文件中没有可训练的样本时，退出码为 1。",
    ),
    (
        "The dataset (JSONL, a JSON array, or plain text), or - for stdin",
        "数据集（JSONL、一个 JSON 数组或纯文本），- 表示标准输入",
    ),
    (
        "The catalogue model whose tokenizer counts (its folder under ONRAMP_MODELS) and whose chat layout renders",
        "目录中的模型：用它的分词器计数（ONRAMP_MODELS 下它的文件夹），用它的对话格式渲染",
    ),
    (
        "A Hugging Face tokenizer folder (tokenizer.json) to count with, instead of the model's",
        "用于计数的 Hugging Face 分词器文件夹（含 tokenizer.json），代替模型自带的",
    ),
    (
        "The sequence length examples are cut at and text is packed into",
        "序列长度：样本在此截断，纯文本按此打包",
    ),
    (
        "Apply fix N (numbered as the plan lists them) to the spec, keeping its comments, and show the new plan",
        "把第 N 条修复建议（按计划列出的编号）应用到规格上，保留注释，并显示新的计划",
    ),
    (
        "Print the launch artifacts even when the spec has errors (by default only a plan without errors shows them)",
        "即使规格有错误也打印启动文件（默认只有没有错误的计划才显示）",
    ),
    (
        "With --fix or --deepspeed: write the patched spec here instead of over SPEC (- for stdout)",
        "与 --fix 或 --deepspeed 一起用：把修改后的规格写到这里，而不是覆盖 SPEC（- 表示标准输出）",
    ),
    (
        "Carry a DeepSpeed config (ds_config.json) into the spec: its batch, precision, ZeRO, offload, optimizer and schedule, \"auto\" left to the spec; lists what the job will not run as written",
        "把 DeepSpeed 配置（ds_config.json）导入规格：批大小、精度、ZeRO、卸载、优化器与学习率调度，\"auto\" 的值沿用规格；并列出作业不会照原样运行的设置",
    ),
    (
        "A job's log from a byte offset; --follow keeps reading until the job ends",
        "作业日志，从某个字节偏移开始；加 --follow 会一直读到作业结束",
    ),
    ("A template id from the list", "列表中的模板 id"),
    (
        "Add the formula and assumptions behind every figure",
        "附上每个数字背后的公式与假设",
    ),
    (
        "Cancel a job; its hold settles to what it used",
        "取消作业；预扣款按实际用量结算",
    ),
    (
        "Check a DeepSpeed config with DeepSpeed's own batch and offload rules",
        "用 DeepSpeed 自己的批大小与卸载规则检查 DeepSpeed 配置",
    ),
    (
        "Check a spec here, then submit it once; rerun with the printed --key to retry safely",
        "先在本地检查规格，再提交一次；用打印出的 --key 重跑可安全重试",
    ),
    (
        "Data-parallel degree (world size), to check train_batch_size against",
        "数据并行度（world size），用来核对 train_batch_size",
    ),
    (
        "Diagnostics, memory per card, time and cost on every card type, fixes and launch artifacts",
        "诊断、每卡显存、各卡型的时间与费用、修复建议和启动文件",
    ),
    (
        "Diagnostics, memory per card, time and cost on every card type, fixes and launch artifacts\n\nExits 1 when the spec has errors (including: does not fit, cannot finish).",
        "诊断、每卡显存、各卡型的时间与费用、修复建议和启动文件\n\n规格有错误时（包括放不下、跑不完）退出码为 1。",
    ),
    (
        "Exit codes: 0 success; 1 the spec has errors or the edge refused; 2 usage error; 3 a file, stdin or the saved sign-in could not be read or written.\n\nRemote commands talk to --edge URL, else ONRAMP_EDGE, else the edge you logged in to, else http://localhost:8787; ONRAMP_TOKEN overrides the saved token.",
        "退出码：0 成功；1 规格有错误或边缘服务拒绝；2 用法错误；3 无法读写文件、标准输入或已保存的登录信息。\n\n远程命令连接 --edge URL，否则 ONRAMP_EDGE，否则你登录过的边缘服务，否则 http://localhost:8787；ONRAMP_TOKEN 优先于已保存的令牌。",
    ),
    (
        "Forget the saved token on this machine",
        "删除本机保存的令牌",
    ),
    (
        "Keep polling until the job has ended and its log is read to the end",
        "持续轮询，直到作业结束且日志读完",
    ),
    (
        "Language of the output: en or zh (else LC_ALL, LC_MESSAGES or LANG starting with zh)",
        "输出语言：en 或 zh（否则看 LC_ALL、LC_MESSAGES 或 LANG 是否以 zh 开头）",
    ),
    (
        "Leave out the DeepSpeed JSON, the launch commands and the sbatch script",
        "不输出 DeepSpeed JSON、启动命令和 sbatch 脚本",
    ),
    (
        "List the starter templates, or print one",
        "列出入门模板，或打印其中一个",
    ),
    (
        "List the starter templates, or print one\n\nA printed template starts with a `#:schema` line pointing at the edge's JSON Schema, so editors that read it (Taplo, Even Better TOML) complete and check the spec.",
        "列出入门模板，或打印其中一个\n\n打印出的模板以指向边缘服务 JSON Schema 的 `#:schema` 行开头，支持它的编辑器（Taplo、Even Better TOML）会补全并检查规格。",
    ),
    (
        "One job: state, backend, cards, hold or charge, times, why it waits",
        "单个作业：状态、后端、卡、预扣或扣费、时间、等待原因",
    ),
    (
        "Plan GPU training jobs offline, submit them and watch them on an Onramp edge",
        "离线规划 GPU 训练作业，提交到 Onramp 边缘服务并查看进展",
    ),
    ("Print help", "打印帮助"),
    (
        "Print help (see a summary with '-h')",
        "打印帮助（用 '-h' 看摘要）",
    ),
    (
        "Print help (see more with '--help')",
        "打印帮助（用 '--help' 看更多）",
    ),
    (
        "Print shell completions for bash, zsh, fish, elvish or PowerShell",
        "打印 bash、zsh、fish、elvish 或 PowerShell 的补全脚本",
    ),
    (
        "Print shell completions for bash, zsh, fish, elvish or PowerShell\n\nFor example: onramp completions bash > ~/.local/share/bash-completion/completions/onramp",
        "打印 bash、zsh、fish、elvish 或 PowerShell 的补全脚本\n\n例如：onramp completions bash > ~/.local/share/bash-completion/completions/onramp",
    ),
    (
        "Print the JSON Schema of the job spec",
        "打印作业规格的 JSON Schema",
    ),
    (
        "Print the edge's answer as JSON",
        "以 JSON 打印边缘服务的回答",
    ),
    (
        "Print this message or the help of the given subcommand(s)",
        "打印本帮助或指定子命令的帮助",
    ),
    ("Print version", "打印版本"),
    (
        "Sign in and save an API token (0600) for the remote commands",
        "登录并为远程命令保存 API 令牌（权限 0600）",
    ),
    (
        "Sign in and save an API token (0600) for the remote commands\n\nThe password comes from ONRAMP_PASSWORD, else the first line of stdin.",
        "登录并为远程命令保存 API 令牌（权限 0600）\n\n密码取自 ONRAMP_PASSWORD，否则取标准输入的第一行。",
    ),
    ("Start at this byte of the log", "从日志的这个字节开始"),
    (
        "The DeepSpeed config (ds_config.json), or - for stdin",
        "DeepSpeed 配置（ds_config.json），或用 - 表示标准输入",
    ),
    (
        "The Idempotency-Key of an earlier try (a fresh one otherwise)",
        "上一次尝试的 Idempotency-Key（否则新生成一个）",
    ),
    ("The account and its balance", "账户及其余额"),
    (
        "The edge's URL (else ONRAMP_EDGE, else the one you logged in to, else http://localhost:8787)",
        "边缘服务的 URL（否则 ONRAMP_EDGE，否则你登录过的那个，否则 http://localhost:8787）",
    ),
    (
        "The job spec (TOML, or JSON when it ends in .json), or - for stdin",
        "作业规格（TOML；以 .json 结尾时为 JSON），或用 - 表示标准输入",
    ),
    (
        "The job's id (onramp jobs lists them)",
        "作业 id（onramp jobs 会列出）",
    ),
    (
        "Print the run onramp-train reads (onramp-run.json, its ds_config in it) instead of the plan",
        "输出 onramp-train 读取的运行文件（onramp-run.json，含 ds_config），而不是规划",
    ),
    (
        "Print the log as the job wrote it, terminal control sequences included (by default they are shown escaped, so a job's output cannot drive your terminal)",
        "按作业写出的原样打印日志，包括终端控制序列（默认会转义显示，作业输出无法操控你的终端）",
    ),
    (
        "The plan as JSON (the same shape the app reads)",
        "以 JSON 输出规划（与应用读取的格式相同）",
    ),
    ("Your jobs, newest first", "你的作业，最新的在前"),
    (
        "A job's artifacts (name, size, sha256), or download or delete them",
        "作业的产物（名称、大小、sha256），或下载、删除它们",
    ),
    (
        "Download a job's artifacts, resuming one cut off and checking each file's sha256",
        "下载作业的产物：中断的下载会续传，并校验每个文件的 sha256",
    ),
    (
        "The artifact's name (else every artifact of the job)",
        "产物名称（省略则下载该作业的全部产物）",
    ),
    (
        "The folder to write into (else the current one)",
        "写入的文件夹（省略则为当前文件夹）",
    ),
    (
        "Replace files in DIR that differ from the artifacts of the same names (else such a file is kept and the download refused)",
        "替换 DIR 中与同名产物不同的文件（省略则保留这样的文件并拒绝下载）",
    ),
    (
        "Delete one of a job's artifacts, freeing its bytes from your quota",
        "删除作业的一个产物，释放它占用的配额",
    ),
    ("The artifact's name", "产物名称"),
    (
        "Your API tokens (id, when made, name), or revoke one",
        "你的 API 令牌（id、创建时间、名称），或吊销其中一个",
    ),
    (
        "Revoke the token with this id: it signs nobody in any more",
        "吊销此 id 的令牌：它不能再用于登录",
    ),
    (
        "The shell to write completions for",
        "要生成补全脚本的 shell",
    ),
];

/// The Chinese text of an English one (the English itself when the table lacks it, which the
/// test below forbids).
fn zh(en: &str) -> String {
    ZH.iter()
        .find(|(e, _)| *e == en)
        .map_or_else(|| en.to_string(), |(_, z)| z.to_string())
}

/// The command with its help in Chinese. Builds it first, so clap's own `--help`, `--version`
/// and `help` are there to translate.
pub fn localize(mut cmd: Command) -> Command {
    cmd.build();
    localize_built(cmd)
}

fn localize_built(mut cmd: Command) -> Command {
    if let Some(about) = cmd.get_about().map(|s| s.to_string()) {
        cmd = cmd.about(zh(&about));
    }
    if let Some(long) = cmd.get_long_about().map(|s| s.to_string()) {
        cmd = cmd.long_about(zh(&long));
    }
    if let Some(after) = cmd.get_after_help().map(|s| s.to_string()) {
        cmd = cmd.after_help(zh(&after));
    }
    let ids: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    for id in ids {
        cmd = cmd.mut_arg(id, |mut a| {
            if let Some(h) = a.get_help().map(|s| s.to_string()) {
                a = a.help(zh(&h));
            }
            if let Some(h) = a.get_long_help().map(|s| s.to_string()) {
                a = a.long_help(zh(&h));
            }
            let heading = if a.is_positional() {
                "参数"
            } else {
                "选项"
            };
            a.help_heading(heading)
        });
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, localize_built);
    }
    cmd.subcommand_help_heading("命令")
        .help_template("{about-with-newline}\n用法：{usage}\n\n{all-args}{after-help}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every English text of the built command: abouts, long abouts, after-helps, argument helps.
    fn texts(cmd: &Command) -> Vec<String> {
        let mut out = Vec::new();
        let mut push = |s: Option<&clap::builder::StyledStr>| {
            if let Some(s) = s {
                out.push(s.to_string());
            }
        };
        push(cmd.get_about());
        push(cmd.get_long_about());
        push(cmd.get_after_help());
        for a in cmd.get_arguments() {
            push(a.get_help());
            push(a.get_long_help());
        }
        for s in cmd.get_subcommands() {
            out.extend(texts(s));
        }
        out
    }

    #[test]
    fn every_help_text_has_its_chinese_twin() {
        let mut cmd = crate::args::Cli::command();
        cmd.build();
        let mut missing: Vec<String> = texts(&cmd)
            .into_iter()
            .filter(|t| !ZH.iter().any(|(e, _)| e == t))
            .collect();
        missing.sort();
        missing.dedup();
        assert!(
            missing.is_empty(),
            "no Chinese for:\n{}",
            missing.join("\n---\n")
        );
        let zh = texts(&localize(crate::args::Cli::command()));
        assert!(zh.iter().all(|t| !t.is_ascii()), "{zh:?}");
    }
}
