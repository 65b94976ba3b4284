//! Diagnostics: places, codes, both languages, "did you mean", JSON input and form input.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use expect_test::{Expect, expect};
use jobspec::{Lang, validate_json, validate_spec, validate_toml};

fn check(src: &str, expect: Expect) {
    let (valid, diags) = validate_toml(src);
    let mut out = String::new();
    for d in &diags {
        out.push_str(&format!(
            "{}:{} {} {} {}: {}\n",
            d.line,
            d.column,
            d.severity.as_str(),
            d.code.as_str(),
            d.path,
            d.message.get(Lang::En)
        ));
        if let Some(h) = &d.help {
            out.push_str(&format!("  help: {}\n", h.en));
        }
    }
    out.push_str(&format!("valid: {}\n", valid.is_some()));
    expect.assert_eq(&out);
}

const MINIMAL: &str = r#"name = "m"
task = "sft"
model = "qwen2.5-7b"
[data]
dataset = "d"
tokens = 1000000
seq_len = 1024
[resources]
card = "a100-80g"
"#;

#[test]
fn minimal_spec_is_valid() {
    check(
        MINIMAL,
        expect![[r#"
            1:1 info defaulted train.epochs: neither epochs nor steps given: training for 1 epoch
            8:1 info defaulted resources.time_limit: time_limit not given: using 24h; the hold on the balance is for the whole time limit
            8:1 info defaulted resources.cards_per_node: cards_per_node not given: using 1 card per node
            8:1 info defaulted resources.nodes: nodes not given: using 1 node
            valid: true
        "#]],
    );
}

#[test]
fn empty_input_reports_every_missing_key() {
    check(
        "",
        expect![[r#"
        1:1 error missing-key name: missing required key `name` (for example `name = "my-job"`)
        1:1 error missing-key task: missing required key `task` (for example `task = "sft"`)
        1:1 error missing-key model: missing required key `model` (for example `model = "qwen2.5-7b"`)
        1:1 error missing-key data: missing required key `data` (for example `data = { … }`)
        1:1 error missing-key resources: missing required key `resources` (for example `resources = { … }`)
        valid: false
    "#]],
    );
}

#[test]
fn syntax_errors_come_first_and_what_follows_from_them_goes() {
    check(
        "name = \"x\nmodel = 3\n[data\n",
        expect![[r#"
            1:10 error syntax : TOML syntax error: invalid basic string, expected `"`
            3:6 error syntax : TOML syntax error: unclosed table, expected `]`
            2:9 error wrong-type model: `model` must be a model id or a [model] table, found integer
            valid: false
        "#]],
    );
}

#[test]
fn a_value_lost_to_a_syntax_error_is_not_also_out_of_range() {
    check(
        "name = \"x\"\ntask = \"lora\"\nmodle = \"qwen2.5-7b\"\n[data]\ndataset = \"d\"\nseq_len = = 1024\n[resources]\ncard = \"rtx-4090\"\n",
        expect![[r#"
            6:11 error syntax : TOML syntax error: extra `=`, expected nothing
            6:13 error syntax : TOML syntax error: unexpected key or value, expected newline, `#`
            3:1 error unknown-key modle: unknown key `modle` at the top level
              help: did you mean `model`?
            valid: false
        "#]],
    );
}

#[test]
fn misplaced_key_names_its_table() {
    let src = format!("seq_len = 4096\n{MINIMAL}");
    check(
        &src,
        expect![[r#"
            1:1 error unknown-key seq_len: unknown key `seq_len` at the top level
              help: did you mean `data.seq_len`?
            1:1 info defaulted train.epochs: neither epochs nor steps given: training for 1 epoch
            9:1 info defaulted resources.time_limit: time_limit not given: using 24h; the hold on the balance is for the whole time limit
            9:1 info defaulted resources.cards_per_node: cards_per_node not given: using 1 card per node
            9:1 info defaulted resources.nodes: nodes not given: using 1 node
            valid: false
        "#]],
    );
}

/// Selective recomputation is not what the trainer runs: refused, naming the settings that run.
#[test]
fn selective_recomputation_is_refused() {
    let src = MINIMAL.replace(
        "[resources]\ncard = \"a100-80g\"\n",
        "[train]\nsteps = 10\ngrad_checkpointing = \"selective\"\n[resources]\ncard = \"a100-80g\"\ntime_limit = \"1h\"\n",
    );
    check(
        &src,
        expect![[r#"
        10:22 error bad-value train.grad_checkpointing: grad_checkpointing = "selective": onramp-train recomputes whole layers, not only attention, so the job would not run as planned; use "full" (true: least memory, about a third more compute) or "none" (false: fastest, most memory)
        11:1 info defaulted resources.cards_per_node: cards_per_node not given: using 1 card per node
        11:1 info defaulted resources.nodes: nodes not given: using 1 node
        valid: false
    "#]],
    );
}

#[test]
fn combination_rules() {
    let src = MINIMAL.replace(
        "[resources]\ncard = \"a100-80g\"\n",
        "[train]\nepochs = 1\nsteps = 10\n[parallel]\nzero_stage = 1\noffload_params = \"cpu\"\npp = 2\ntp = 3\n[resources]\ncard = \"a100-80g\"\ncards_per_node = 8\nbackend = 1\n",
    );
    check(
        &src,
        expect![[r#"
            10:9 error conflict train.steps: give `train.epochs` or `train.steps`, not both
            11:1 error conflict parallel: tp × pp × sp = 6 must divide the 8 cards
            13:18 error conflict parallel.offload_params: parameter offload needs ZeRO stage 3
            13:18 warning suspicious parallel.offload_params: parameters are offloaded but the optimizer is not; offload the optimizer first, it saves more
            14:6 error bad-value parallel.pp: pp = 2: onramp-train does not run pipeline parallelism, so the job would train without it; split the model's states across the cards with ZeRO-3 instead (parallel.zero_stage = 3, with offload_params = "cpu" if it still does not fit) and set pp = 1
            15:6 error conflict parallel.tp: tp = 3 must divide the 28 attention heads
            15:6 error conflict parallel.tp: tp = 3 must divide the 4 key/value heads: each rank holds an equal slice
            15:6 error conflict parallel.tp: tp = 3 must divide the 18944 MLP width (ffn): each rank holds an equal slice
            16:1 info defaulted resources.time_limit: time_limit not given: using 24h; the hold on the balance is for the whole time limit
            16:1 info defaulted resources.nodes: nodes not given: using 1 node
            19:1 error unknown-key resources.backend: unknown key `backend` in [resources]
            valid: false
        "#]],
    );
}

#[test]
fn json_input_has_paths() {
    let src = r#"{"name":"j","task":"lora","model":"llama-3-8b","data":{"dataset":"d","seq_len":2048,"tokens":1e9},
        "train":{"lora_targets":["q_proj","v_prj"]},"resources":{"card":"h100","time_limit":"2h"}}"#;
    let (valid, diags) = validate_json(src);
    assert!(valid.is_none());
    let got: Vec<String> = diags
        .iter()
        .map(|d| {
            format!(
                "{} {} {:?}",
                d.code.as_str(),
                d.path,
                d.help.as_ref().map(|h| h.en.clone())
            )
        })
        .collect();
    expect![[r#"
        [
            "unknown-card resources.card Some(\"did you mean `h100-80g`?\")",
        ]
    "#]]
    .assert_debug_eq(&got);
}

#[test]
fn json_syntax_error_has_line_and_column() {
    let (_, diags) = validate_json("{\n  \"name\": }");
    assert_eq!(
        (diags[0].code.as_str(), diags[0].line, diags[0].column),
        ("syntax", 2, 11)
    );
}

#[test]
fn form_specs_are_range_checked() {
    let (Some(v), _) = validate_toml(MINIMAL) else {
        panic!()
    };
    let mut spec = v.spec().clone();
    spec.parallel.tp = 0;
    spec.train.micro_batch = 0;
    spec.data.seq_len = 0;
    let (valid, diags) = validate_spec(spec);
    assert!(valid.is_none());
    let codes: Vec<_> = diags
        .iter()
        .map(|d| (d.code.as_str(), d.path.as_str()))
        .collect();
    assert!(
        codes.contains(&("out-of-range", "parallel.tp")),
        "{codes:?}"
    );
    assert!(
        codes.contains(&("out-of-range", "train.micro_batch")),
        "{codes:?}"
    );
}

#[test]
fn columns_count_characters_not_bytes() {
    let src = MINIMAL.replace("name = \"m\"", "name = \"模型\"\n# 注释\n  \"模\" = 1");
    let (_, diags) = validate_toml(&src);
    let d = diags
        .iter()
        .find(|d| d.code.as_str() == "unknown-key")
        .unwrap();
    assert_eq!((d.line, d.column), (3, 3));
}

#[test]
fn json_diagnostics_have_line_and_column() {
    let src = "{\n  \"name\": \"j\",\n  \"task\": \"sft\",\n  \"model\": \"llama-3-8b\",\n  \"data\": {\"dataset\": \"d\", \"seq_len\": 2048, \"tokns\": 5},\n  \"resources\": {\"card\": \"h100-80g\", \"time_limit\": \"soon\"}\n}";
    let (_, diags) = validate_json(src);
    let got: Vec<_> = diags
        .iter()
        .map(|d| (d.code.as_str(), d.line, d.column))
        .collect();
    assert_eq!(
        got,
        [
            ("defaulted", 1, 1),
            ("missing-key", 5, 11),
            ("unknown-key", 5, 45),
            // cards_per_node and nodes, left out: at the table that lacks them.
            ("defaulted", 6, 16),
            ("defaulted", 6, 16),
            ("bad-duration", 6, 51)
        ],
        "{diags:#?}"
    );
}

/// Names from other tools get the key they mean: bare in their own table, qualified elsewhere.
#[test]
fn names_people_bring_get_a_hint() {
    let src = MINIMAL.replace("[data]", "sequence_length = 2048\ngpus = 2\n[data]")
        + "[train]\nlearning_rate = 1e-4\nbatch_size = 4\n";
    let (_, diags) = validate_toml(&src);
    let help = |path: &str| {
        diags
            .iter()
            .find(|d| d.path == path)
            .and_then(|d| d.help.as_ref())
            .map(|h| h.en.clone())
            .unwrap_or_default()
    };
    assert_eq!(help("sequence_length"), "did you mean `data.seq_len`?");
    assert_eq!(help("gpus"), "did you mean `resources.cards_per_node`?");
    assert_eq!(help("train.learning_rate"), "did you mean `lr`?");
    assert_eq!(help("train.batch_size"), "did you mean `micro_batch`?");
}

/// `backend = "ray"` is refused by name: there is no Ray backend.
#[test]
fn ray_is_refused_until_it_exists() {
    let src = MINIMAL.replace("[data]", "backend = \"ray\"\n[data]");
    let (valid, diags) = validate_toml(&src);
    assert!(valid.is_none());
    let d = diags.iter().find(|d| d.path == "backend").unwrap();
    assert!(
        d.is_error() && d.message.en.contains("no Ray backend"),
        "{d:?}"
    );
    assert!(d.message.zh.contains("Ray 后端"), "{d:?}");
    assert!(!jobspec::schema::json_schema_text().contains("\"ray\""));
}

/// A `[model]` table has random weights: fine-tuning it is warned about, pretraining it is not,
/// and continuing an earlier job's weights is not either.
#[test]
fn fine_tuning_an_architecture_says_its_weights_are_random() {
    let table = "[model]\nname = \"mini\"\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 2\nffn = 172\nvocab = 512\n";
    let spec = |task: &str, tail: &str| {
        MINIMAL
            .replace("task = \"sft\"", &format!("task = \"{task}\""))
            .replace("model = \"qwen2.5-7b\"\n", "")
            .replace("[data]", &format!("{table}[data]"))
            + tail
    };
    let warned = |src: &str| {
        validate_toml(src)
            .1
            .iter()
            .any(|d| d.code.as_str() == "suspicious" && d.path == "model")
    };
    for task in ["sft", "lora", "qlora"] {
        assert!(warned(&spec(task, "")), "{task}");
    }
    assert!(!warned(&spec("pretrain", "")));
    let resumed = "[checkpoint]\nresume_from = \"0123456789abcdef0123456789abcdef\"\n";
    assert!(!warned(&spec("sft", resumed)));
    assert!(!warned(MINIMAL), "a catalogue model is pretrained");
}

/// The model names people type: a Hugging Face repo id is its catalogue entry (instruct and
/// chat variants included), said as an info; an id or card written another way gets the ids
/// that hold it as "did you mean".
#[test]
fn hub_repo_ids_resolve_and_near_ids_are_suggested() {
    let with = |model: &str, card: &str| {
        validate_toml(
            &MINIMAL
                .replace("qwen2.5-7b", model)
                .replace("a100-80g", card),
        )
    };
    for (repo, id) in [
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b-instruct"),
        ("meta-llama/Meta-Llama-3-8B", "llama-3-8b"),
        (
            "meta-llama/meta-llama-3-70b-instruct",
            "llama-3-70b-instruct",
        ),
        ("deepseek-ai/deepseek-llm-7b-chat", "deepseek-llm-7b-chat"),
        ("Qwen2.5-7B-Instruct", "qwen2.5-7b-instruct"),
    ] {
        let (v, diags) = with(repo, "a100-80g");
        let v = v.unwrap_or_else(|| panic!("{repo}: {diags:#?}"));
        assert_eq!(v.model_name(), jobspec::catalog::model(id).unwrap().display);
        assert!(
            v.spec().to_toml().contains(&format!("model = \"{id}\"")),
            "{repo}"
        );
    }
    let (_, diags) = with("Qwen/Qwen2.5-7B-Instruct", "a100-80g");
    assert!(diags.iter().any(|d| {
        d.path == "model"
            && d.message
                .en
                .contains("is the catalogue's `qwen2.5-7b-instruct`")
    }));
    let help = |model: &str, card: &str, code: &str| {
        let (_, diags) = with(model, card);
        diags
            .iter()
            .find(|d| d.code.as_str() == code)
            .and_then(|d| d.help.clone())
            .map(|h| h.en)
            .unwrap_or_default()
    };
    assert_eq!(
        help("qwen2.5-7b", "4090", "unknown-card"),
        "did you mean `rtx-4090`?"
    );
    assert_eq!(
        help("qwen2.5-7b", "RTX4090", "unknown-card"),
        "did you mean `rtx-4090`?"
    );
    assert_eq!(
        help("qwen2.5-7b", "A100", "unknown-card"),
        "did you mean one of `a100-40g`, `a100-80g`?"
    );
    assert_eq!(
        help("llama3-8b", "a100-80g", "unknown-model"),
        "did you mean `llama-3-8b`?"
    );
    assert_eq!(
        help("mistralai/Mistral-7B-v0.3", "a100-80g", "unknown-model"),
        "did you mean `mistral-7b`?"
    );
}

#[test]
fn lora_targets_are_the_models_own_layer_names() {
    let lora = |model: &str, targets: &str| {
        MINIMAL
            .replace("task = \"sft\"", "task = \"lora\"")
            .replace("qwen2.5-7b", model)
            .replace(
                "[resources]\ncard = \"a100-80g\"\n",
                &format!("[train]\nsteps = 10\n{targets}[resources]\ncard = \"a100-80g\"\ntime_limit = \"1h\"\n"),
            )
    };
    // ChatGLM fuses q, k and v into one layer: Llama's names are not its layers.
    check(
        &lora("chatglm3-6b", "lora_targets = [\"q_proj\", \"dense\"]\n"),
        expect![[r#"
            8:1 info defaulted train.lora_rank: lora_rank not given: using 16
            10:16 error bad-value train.lora_targets: `q_proj` is not a layer of `chatglm3-6b`; its LoRA targets are query_key_value, dense, dense_h_to_4h, dense_4h_to_h, all-linear
              help: did you mean `query_key_value`?
            11:1 info defaulted resources.cards_per_node: cards_per_node not given: using 1 card per node
            11:1 info defaulted resources.nodes: nodes not given: using 1 node
            valid: false
        "#]],
    );
    // ChatGLM's names are not a Llama's either.
    let (valid, diags) = validate_toml(&lora(
        "qwen2.5-7b",
        "lora_targets = [\"query_key_value\"]\n",
    ));
    assert!(valid.is_none(), "{diags:?}");
    // Without targets each family adapts its own attention layers, and the estimate counts
    // ChatGLM's fused q/k/v layer as one: r × (4096 + 4096 + 2 × 2 × 128) for it, r × 2 × 4096
    // for `dense`, in each of 28 blocks.
    let glm = validate_toml(&lora("chatglm3-6b", "")).0.unwrap();
    assert_eq!(glm.lora_targets(), ["query_key_value", "dense"]);
    let adapter = jobspec::estimate::parameters(&glm).adapter;
    assert_eq!(adapter, 16 * ((4096 + 4096 + 512) + 2 * 4096) * 28);
    let plan = jobspec::trainer::trainer_plan(&glm);
    assert!(plan.model.remote_code);
    let llama = validate_toml(&lora("llama-3-8b", "")).0.unwrap();
    assert_eq!(
        llama.lora_targets(),
        ["q_proj", "k_proj", "v_proj", "o_proj"]
    );
    assert!(!jobspec::trainer::trainer_plan(&llama).model.remote_code);
}

#[test]
fn sequence_parallelism_is_refused_where_ulysses_cannot_run_it() {
    let sp = |model: &str, extra: &str, sp: u32| {
        let src = MINIMAL.replace("qwen2.5-7b", model).replace(
            "[resources]\ncard = \"a100-80g\"\n",
            &format!(
                "[train]\nsteps = 10\n{extra}[parallel]\nzero_stage = 3\nsp = {sp}\n\
                 [resources]\ncard = \"a100-80g\"\ncards_per_node = 8\ntime_limit = \"1h\"\n"
            ),
        );
        let (valid, diags) = validate_toml(&src);
        let errors: Vec<String> = diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{}: {}", d.path, d.message.get(Lang::En)))
            .collect();
        (valid.is_some(), errors)
    };
    // Llama 3 8B: 32 heads, 8 key/value heads: sp = 8 splits both, sp = 4 splits both.
    assert_eq!(sp("llama-3-8b", "", 8), (true, vec![]));
    // Qwen2.5 7B: 28 heads, 4 key/value heads; sp = 2 splits both.
    assert_eq!(sp("qwen2.5-7b", "", 2), (true, vec![]));
    let (ok, e) = sp("llama-3-8b", "flash_attention = false\n", 8);
    assert!(
        !ok && e[0].starts_with("train.flash_attention: sp = 8"),
        "{e:?}"
    );
    let (ok, e) = sp("chatglm3-6b", "", 2);
    assert!(
        !ok && e.iter().any(|e| e.contains("repository's own code")),
        "{e:?}"
    );
    // A custom model of 12 heads and 3 key/value heads: sp = 4 splits the heads, not the 3.
    let custom =
        "[model]\nlayers = 2\nhidden = 768\nheads = 12\nkv_heads = 3\nffn = 2048\nvocab = 32000\n";
    let src = MINIMAL
        .replace("task = \"sft\"", "task = \"pretrain\"")
        .replace("model = \"qwen2.5-7b\"\n", "")
        .replace(
            "[resources]\ncard = \"a100-80g\"\n",
            &format!(
                "[train]\nsteps = 10\n[parallel]\nsp = 4\n{custom}[resources]\ncard = \"a100-80g\"\ncards_per_node = 4\ntime_limit = \"1h\"\n"
            ),
        );
    let (valid, diags) = validate_toml(&src);
    assert!(valid.is_none());
    assert!(
        diags.iter().any(|d| d.is_error()
            && d.message
                .get(Lang::En)
                .contains("3 key/value heads must divide one another")),
        "{diags:?}"
    );
}

/// `checkpoint.upload` pushes onramp-train's latest checkpoint, which the trainer's run carries;
/// tiny-train, whose model is its checkpoint and always pushed, refuses it.
#[test]
fn a_checkpoint_upload_is_carried_to_the_trainer_and_refused_for_tiny_train() {
    let spec = format!("{MINIMAL}\n[checkpoint]\nupload = true\n");
    let (v, diags) = validate_toml(&spec);
    let v = v.unwrap_or_else(|| panic!("{diags:#?}"));
    assert!(v.spec().to_toml().contains("upload = true"));
    let run = jobspec::trainer::trainer_run(&v);
    assert!(run.plan.upload_checkpoint && run.plan.resume_from.is_none());
    let tiny = format!(
        "{}\n[checkpoint]\nupload = true\n",
        include_str!("../specs/tiny-train-stories260k.toml")
    );
    let (v, diags) = validate_toml(&tiny);
    assert!(v.is_none());
    assert!(
        diags
            .iter()
            .any(|d| d.path == "checkpoint.upload" && d.code.as_str() == "conflict"),
        "{diags:#?}"
    );
}
