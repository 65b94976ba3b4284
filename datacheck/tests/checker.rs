//! The checker over every format and every kind of bad line, fed whole and byte by byte.

use datacheck::hf::{HfCounter, TokenizerFiles, template_for};
use datacheck::{Checker, Estimate, Format, Layout, Report, check_bytes};
use jobspec::Lang;

fn est() -> Estimate {
    Estimate { why: "test".into() }
}

fn check(name: &str, text: &str) -> Report {
    check_bytes(Some(name), text.as_bytes(), est(), 64)
}

/// The same file fed one byte at a time gives the same report.
fn check_bytewise(name: &str, bytes: &[u8]) -> Report {
    let mut c = Checker::new(Some(name), est(), 64);
    for b in bytes {
        c.push(std::slice::from_ref(b));
    }
    c.finish()
}

fn codes(r: &Report) -> Vec<(u64, &'static str)> {
    r.bad.iter().map(|b| (b.line, b.code)).collect()
}

#[test]
fn every_format_is_recognised() {
    let cases = [
        (
            "a.jsonl",
            r#"{"instruction": "Add", "input": "1 1", "output": "2"}"#,
            Format::Alpaca,
        ),
        (
            "c.jsonl",
            r#"{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]}"#,
            Format::Chat,
        ),
        (
            "p.jsonl",
            r#"{"prompt": "Q", "completion": "A"}"#,
            Format::PromptCompletion,
        ),
        ("t.jsonl", r#"{"text": "once upon a time"}"#, Format::Text),
    ];
    for (name, line, format) in cases {
        let r = check(name, &format!("{line}\n\n{line}\n"));
        assert_eq!(r.format, Some(format), "{name}");
        assert_eq!(r.layout, Some(Layout::Jsonl));
        assert_eq!(r.records, 2, "{name}: {:?}", r.bad);
        assert!(r.bad.is_empty());
        let array = check("x.json", &format!("[\n {line},\n {line}\n]\n"));
        assert_eq!(array.layout, Some(Layout::JsonArray));
        assert_eq!(array.records, 2, "{name} as an array: {:?}", array.bad);
        assert_eq!(array.format, Some(format));
    }
    let text = check("book.txt", "First line.\n\nThird line.\n");
    assert_eq!(text.format, Some(Format::Text));
    assert_eq!(text.layout, Some(Layout::Text));
    assert_eq!(text.records, 3);
}

#[test]
fn every_bad_line_kind_has_its_line_and_both_languages() {
    let file = [
        r#"{"instruction": "ok", "output": "fine"}"#, // 1
        r#"{"instruction": "x", "output": "y""#,      // 2 invalid json
        r#"[1, 2]"#,                                  // 3 not an object
        r#"{"instruction": 3, "output": "y"}"#,       // 4 wrong type
        r#"{"instruction": "x", "output": "y", "extra": 1}"#, // 5 unknown key
        r#"{"instruction": "x"}"#,                    // 6 missing key
        r#"{"question": "x"}"#,                       // 7 no format
        r#"{"instruction": "x", "output": "  "}"#,    // 8 empty content
        r#"{"prompt": "x", "completion": "y"}"#,      // 9 mixed formats
    ]
    .join("\n");
    let mut bytes = file.into_bytes();
    bytes.extend_from_slice(b"\n{\"instruction\": \"\xff\", \"output\": \"y\"}\n"); // 10 utf-8
    let r = check_bytes(Some("a.jsonl"), &bytes, est(), 64);
    assert_eq!(
        codes(&r),
        [
            (2, "invalid_json"),
            (3, "not_an_object"),
            (4, "wrong_type"),
            (5, "unknown_key"),
            (6, "missing_key"),
            (7, "no_format"),
            (8, "empty_content"),
            (9, "mixed_formats"),
            (10, "invalid_utf8"),
        ]
    );
    assert_eq!(r.records, 1);
    for b in &r.bad {
        let (en, zh) = (b.problem.text(Lang::En), b.problem.text(Lang::Zh));
        assert!(!en.is_empty() && !zh.is_empty() && en != zh, "{b:?}");
        assert!(
            zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
            "{zh}"
        );
    }
    assert!(r.bad[3].en.contains("`extra`"), "{}", r.bad[3].en);
    assert!(r.bad[7].en.contains("line 1"), "{}", r.bad[7].en);
}

#[test]
fn conversations_are_checked_turn_by_turn() {
    let chat = |msgs: &str| format!(r#"{{"messages": [{msgs}]}}"#);
    let m = |role: &str, content: &str| format!(r#"{{"role": "{role}", "content": "{content}"}}"#);
    let lines = [
        chat(&[m("user", "hi"), m("assistant", "yo")].join(",")),
        chat(&[m("user", "hi"), m("robot", "yo")].join(",")),
        chat(&[m("user", "hi"), m("user", "again"), m("assistant", "yo")].join(",")),
        chat(&[m("user", "hi"), m("assistant", "yo"), m("user", "more")].join(",")),
        chat(&[m("user", ""), m("assistant", "yo")].join(",")),
        chat(""),
        chat(&[m("assistant", "first")].join(",")),
        chat(&[m("user", "hi"), m("assistant", "yo"), m("system", "late")].join(",")),
        r#"{"messages": [{"role": "user", "content": "hi", "name": "x"}, {"role": "assistant", "content": "a"}]}"#.into(),
        r#"{"messages": "hi"}"#.into(),
    ];
    let r = check("c.jsonl", &lines.join("\n"));
    assert_eq!(
        codes(&r),
        [
            (2, "unknown_role"),
            (3, "role_order"),
            (4, "last_not_assistant"),
            (5, "empty_content"),
            (6, "empty_content"),
            (7, "role_order"),
            (8, "role_order"),
            (9, "unknown_key"),
            (10, "wrong_type"),
        ]
    );
    assert!(r.bad[1].en.contains("messages[1].role"), "{}", r.bad[1].en);
}

#[test]
fn a_json_array_is_read_record_by_record_and_its_brackets_are_checked() {
    let r = check(
        "a.json",
        "[\n{\"text\": \"a\"},\n{\"text\": 1},\n\n{\"text\": \"c\"}\n]",
    );
    assert_eq!(r.records, 2);
    assert_eq!(codes(&r), [(3, "wrong_type")]);
    let unclosed = check("a.json", "[{\"text\": \"a\"}, {\"text\": \"b\"}\n");
    assert_eq!(unclosed.records, 2);
    assert_eq!(codes(&unclosed), [(2, "array_shape")]);
    let trailing = check("a.json", "[{\"text\": \"a\"},]\n[]");
    assert_eq!(codes(&trailing), [(1, "array_shape"), (2, "array_shape")]);
    let strings = check("a.json", r#"[{"text": "a ] , [ { \" b"}]"#);
    assert_eq!(strings.records, 1, "{:?}", strings.bad);
}

#[test]
fn chunk_boundaries_change_nothing() {
    let cases: [(&str, &[u8]); 4] = [
        ("a.jsonl", b"\xef\xbb\xbf{\"text\": \"a\"}\r\n\r\n{\"text\": \"b\xc3\xa9\"}\n{bad\n"),
        ("a.json", b"  [ {\"prompt\": \"p\", \"completion\": \"c\"} , {\"x\": 1} ]  "),
        ("t.txt", b"\n\nline one\nline \xe4\xb8\xad two\n\xff\nend"),
        ("t", b"{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}, {\"role\": \"assistant\", \"content\": \"a\"}]}"),
    ];
    for (name, bytes) in cases {
        let whole = check_bytes(Some(name), bytes, est(), 64);
        assert_eq!(whole, check_bytewise(name, bytes), "{name}");
    }
    let text = check_bytes(Some("t.txt"), cases[2].1, est(), 64);
    assert_eq!(codes(&text), [(5, "invalid_utf8")]);
    assert_eq!(text.records, 5);
}

#[test]
fn a_file_with_nothing_usable_is_not_usable() {
    assert!(!check("e.jsonl", "").usable());
    assert!(!check("e.jsonl", "\n  \n").usable());
    assert!(!check("e.jsonl", "{\"nope\": 1}\n").usable());
    // Plain text shorter than one sequence packs into none.
    let short = check("e.txt", "tiny\n");
    assert_eq!(short.records, 1);
    assert!(!short.usable());
    assert!(check("e.jsonl", "{\"text\": \"x\"}\n").tokens_uncut > 0);
}

#[test]
fn counts_cut_padded_examples_at_seq_len_and_pack_text() {
    let long = "word ".repeat(200);
    let file = format!(
        "{{\"prompt\": \"short\", \"completion\": \"{long}\"}}\n{{\"prompt\": \"{long}\", \"completion\": \"x\"}}\n{{\"prompt\": \"a\", \"completion\": \"b\"}}\n"
    );
    let r = check("p.jsonl", &file);
    assert_eq!(codes(&r), [(2, "prompt_too_long")]);
    assert_eq!(r.examples, 2);
    assert_eq!(r.truncated, 1);
    assert_eq!(r.tokens, 64 + 3);
    assert!(!r.exact);
    let text = check("t.txt", &"abcd".repeat(1000));
    assert_eq!(text.tokens_uncut, 1000);
    assert_eq!(text.examples, 1000 / 64);
    assert_eq!(text.tokens, 1000 / 64 * 64);
    assert_eq!(text.lengths.max, 1000);
}

/// A word-level tokenizer over a handful of words, with `<s>`, `</s>` and `<unk>`.
fn word_tokenizer() -> TokenizerFiles {
    let words = [
        "<unk>",
        "<s>",
        "</s>",
        "<|user|>",
        "<|assistant|>",
        "hello",
        "there",
        "how",
        "are",
        "you",
        "fine",
        "thanks",
    ];
    let vocab: serde_json::Map<String, serde_json::Value> = words
        .iter()
        .enumerate()
        .map(|(i, w)| ((*w).to_string(), serde_json::json!(i)))
        .collect();
    let added: Vec<_> = (0..3)
        .map(|i| serde_json::json!({"id": i, "content": words[i], "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}))
        .collect();
    let tok = serde_json::json!({
        "version": "1.0", "truncation": {"direction": "Right", "max_length": 2, "strategy": "LongestFirst", "stride": 0}, "padding": null,
        "added_tokens": added, "normalizer": null,
        "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
    });
    TokenizerFiles {
        tokenizer_json: serde_json::to_vec(&tok).expect("json"),
        tokenizer_config: Some(
            br#"{"bos_token": "<s>", "eos_token": {"content": "</s>"}}"#.to_vec(),
        ),
        ..Default::default()
    }
}

#[test]
fn the_tokenizer_counts_the_rendered_conversation_and_masks_the_prompt() {
    let tok = word_tokenizer();
    let counter = HfCounter::new(&tok, &template_for(None), "words".into()).expect("loads");
    // The fallback layout: `<|user|>\nhello there\n<|assistant|>\nfine thanks</s>\n`.
    let line = r#"{"messages": [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "fine thanks"}]}"#;
    let r = check_bytes(Some("c.jsonl"), line.as_bytes(), counter, 64);
    assert!(r.exact && r.bad.is_empty(), "{:?}", r.bad);
    // `<|user|>` is not an added token, so the word-level pre-tokenizer splits it into pieces.
    let counter = HfCounter::new(&tok, &template_for(None), "words".into()).expect("loads");
    let (p, f) = {
        let mut c = counter;
        use datacheck::Counter;
        let rec = datacheck::record::read(serde_json::from_str(line).expect("json"))
            .expect("record")
            .1;
        c.example(&rec).expect("counts")
    };
    assert!(p > 0 && f > p, "{p} {f}");
    assert_eq!(r.tokens, f);
    // Truncation in tokenizer.json is the trainer's to set, not the file's: it is off.
    assert!(f > 2);
    let docs = check_bytes(
        Some("t.jsonl"),
        b"{\"text\": \"hello there\"}\n{\"text\": \"how are you\"}\n",
        HfCounter::new(&tok, &template_for(None), "w".into()).expect("loads"),
        4,
    );
    // 2 + `</s>`, 3 + `</s>`: 7 tokens, one sequence of 4.
    assert_eq!((docs.tokens_uncut, docs.examples, docs.tokens), (7, 1, 4));
}

#[test]
fn a_template_that_raises_is_a_bad_line() {
    let mut tok = word_tokenizer();
    tok.chat_template = Some(
        "{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}{{ messages[0]['content'] }}"
            .into(),
    );
    let counter = HfCounter::new(&tok, "", "t".into()).expect("loads");
    let line = r#"{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]}"#;
    let r = check_bytes(Some("c.jsonl"), line.as_bytes(), counter, 64);
    assert_eq!(codes(&r), [(1, "template")]);
    assert!(r.bad[0].en.contains("no system role"), "{}", r.bad[0].en);
}

mod no_panic {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn no_input_panics_and_chunks_do_not_matter(
            bytes in proptest::collection::vec(prop_oneof![
                Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b'\\'),
                Just(b','), Just(b':'), Just(b'\n'), Just(b' '), Just(0xff), Just(0xef), any::<u8>()
            ], 0..200),
            cut in 0usize..200,
            name in prop_oneof![Just("a.jsonl"), Just("a.json"), Just("a.txt"), Just("a")],
        ) {
            let whole = check_bytes(Some(name), &bytes, est(), 8);
            let cut = cut.min(bytes.len());
            let mut c = Checker::new(Some(name), est(), 8);
            c.push(&bytes[..cut]);
            c.push(&bytes[cut..]);
            prop_assert_eq!(whole, c.finish());
        }

        /// With a real tokenizer and chat template (the path the browser and the edge take for a
        /// catalogue model), records of every shape and any text never panic, and a file cut
        /// anywhere checks as the whole.
        #[test]
        fn the_tokenizer_path_never_panics(
            s in "\\{(\"(messages|text|prompt|completion|instruction|output|input)\": ?(\"[a-z \\\\<>|/]{0,6}\"|\\[\\]|1|\\[\\{\"role\": \"(user|assistant|system|x)\", \"content\": \"[a-z<>|]{0,4}\"\\}(, ?\\{\"role\": \"(user|assistant)\", \"content\": \"[a-z]{0,3}\"\\}){0,2}\\]),? ?){0,3}\\}",
            copies in 1usize..4,
            cut in 0usize..400,
            seq_len in 1u32..16,
        ) {
            let tok = word_tokenizer();
            let counter = || HfCounter::new(&tok, &template_for(None), "w".into()).expect("loads");
            let file = format!("{s}\n").repeat(copies);
            let whole = check_bytes(Some("a.jsonl"), file.as_bytes(), counter(), seq_len);
            let cut = cut.min(file.len());
            let mut c = Checker::new(Some("a.jsonl"), counter(), seq_len);
            c.push(&file.as_bytes()[..cut]);
            c.push(&file.as_bytes()[cut..]);
            prop_assert_eq!(whole, c.finish());
        }

        #[test]
        fn records_of_json_never_panic(s in "\\{(\"(messages|text|prompt|completion|instruction|output|input|role|content)\": ?(\"[a-z ]{0,4}\"|\\[\\]|1|null|\\{\\}|\\[\\{\"role\": \"(user|assistant|system|x)\", \"content\": \"[a-z]{0,3}\"\\}\\]),? ?){0,4}\\}") {
            let r = check_bytes(Some("a.jsonl"), s.as_bytes(), est(), 8);
            prop_assert!(r.records + r.bad_lines <= 1);
        }
    }
}

#[test]
fn the_name_decides_the_layout_where_the_first_byte_would_mislead() {
    use datacheck::scan::layout_of;
    assert_eq!(layout_of(Some("a.txt"), b'{'), Layout::Text);
    assert_eq!(layout_of(Some("notes.md"), b'['), Layout::Text);
    // A JSON file whose first line was cut short: JSON lines, that line bad, not prose.
    assert_eq!(layout_of(Some("a.jsonl"), b'i'), Layout::Jsonl);
    assert_eq!(layout_of(Some("a.JSON"), b'['), Layout::JsonArray);
    assert_eq!(layout_of(Some("a.ndjson"), b'['), Layout::JsonArray);
    assert_eq!(layout_of(Some("a.csv"), b'i'), Layout::Text);
    assert_eq!(layout_of(None, b'{'), Layout::Jsonl);
    assert_eq!(layout_of(None, b'['), Layout::JsonArray);
}
