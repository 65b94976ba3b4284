"""The dataset checker (`onramp datasets check`, Rust) counts what the trainer trains on: the
same examples, tokens and bad lines, on every format and layout, with tokenizers trained here."""

from __future__ import annotations

import array
import json
import random
import subprocess
from pathlib import Path

import pytest
from conftest import onramp_cli

from onramp_train import data
from onramp_train.models import CHAT_TEMPLATES, chat_template_for

WORDS = (
    "the king shall speak of love and war to thee my lord good night sweet prince 我们 今天 "
    "训练 模型 à été naïve café 🙂 zebra quartz"
).split()


def sentence(rng: random.Random, lo: int = 1, hi: int = 30) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    return " ".join(words) + rng.choice(["", ".", "!\n", "?"])


def train_tokenizer(folder: Path, kind: str, template: str | None) -> Path:
    """A small BPE (byte-level) or Unigram (SentencePiece-like) tokenizer, saved as a Hugging
    Face folder the way Transformers saves one."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    rng = random.Random(kind)
    corpus = [sentence(rng) for _ in range(3000)]
    specials = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
    if kind == "bpe":
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=1200,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
    else:
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(
            vocab_size=200, special_tokens=specials, unk_token="<unk>"
        )
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    if template is not None:
        fast.chat_template = template
    fast.save_pretrained(str(folder))
    return folder


def trainer_tokenizer(folder: Path, model_id: str | None):
    """The tokenizer as onramp-train loads a model folder's (models.tokenizer)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    if tok.pad_token is None:
        tok.pad_token = tok.unk_token or tok.eos_token
    if tok.chat_template is None:
        tok.chat_template = chat_template_for(model_id)
    return tok


def datasets(rng: random.Random) -> dict[str, str]:
    """One file of each format and layout, with bad lines, long examples and CJK text."""
    alpaca = [
        {
            "instruction": sentence(rng),
            "input": rng.choice(["", sentence(rng)]),
            "output": sentence(rng, 1, 80),
        }
        for _ in range(40)
    ]
    chat = []
    for _ in range(40):
        msgs = [{"role": "system", "content": sentence(rng)}] if rng.random() < 0.3 else []
        for _ in range(rng.randint(1, 3)):
            msgs += [
                {"role": "user", "content": sentence(rng)},
                {"role": "assistant", "content": sentence(rng, 1, 60)},
            ]
        chat.append({"messages": msgs})
    pc = [{"prompt": sentence(rng), "completion": sentence(rng, 1, 90)} for _ in range(40)]
    text = [{"text": sentence(rng, 5, 120)} for _ in range(40)]
    bad = [
        '{"instruction": "x"',
        '{"instruction": "x", "output": "y", "extra": 1}',
        '{"messages": [{"role": "user", "content": "hi"}]}',
        '{"prompt": 3, "completion": "y"}',
        "[1]",
        '{"text": "   "}',
        '{"instruction": "' + "lord " * 400 + '", "output": "y"}',  # the prompt fills seq_len
        "[" * 3000 + "]" * 3000,  # nested past both readers' depth
    ]

    def jsonl(records, with_bad=True):
        lines = [json.dumps(r, ensure_ascii=rng.random() < 0.5) for r in records]
        if with_bad:
            for b in bad:
                lines.insert(rng.randrange(len(lines)), b)
            lines.insert(5, "")
        return "\n".join(lines) + "\n"

    return {
        "alpaca.jsonl": jsonl(alpaca),
        "chat.jsonl": jsonl(chat),
        "pc.jsonl": jsonl(pc),
        "text.jsonl": jsonl(text),
        "mixed.jsonl": jsonl(alpaca[:5] + pc[:3] + alpaca[5:9], with_bad=False),
        "alpaca.json": "[\n" + ",\n".join(json.dumps(r, indent=1) for r in alpaca) + "\n]\n",
        "broken.json": "[" + ",".join(json.dumps(r) for r in chat[:9]) + ',, {"x": 1}\n',
        "book.txt": "\n".join(sentence(rng, 0, 40) for _ in range(300)) + "\n\n\nend",
        # The name decides where the first byte would say otherwise.
        "notes.md": "[![b](u)](u)\n" + "\n".join(sentence(rng) for _ in range(50)),
        "records.txt": jsonl(text, with_bad=False),
        "cut.jsonl": 'ion": "x"}\n' + jsonl(text, with_bad=False),
        "lines.json": jsonl(pc, with_bad=False),
        # A last line of only spaces, with no line break after it, is blank.
        "tail.jsonl": jsonl(alpaca, with_bad=False) + "  \t",
    }


def checker(path: Path, tokenizer: Path, seq_len: int, model: str | None) -> dict:
    cmd = [str(onramp_cli()), "datasets", "check", str(path), "--json", "--seq-len", str(seq_len)]
    cmd += ["--tokenizer", str(tokenizer)] + (["--model", model] if model else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


def bad_line_numbers(bad: list[str]) -> list[int]:
    return [int(b.split(":")[0].removeprefix("line ")) for b in bad if b.startswith("line ")]


@pytest.mark.parametrize(
    ("kind", "template", "model"),
    [
        ("bpe", CHAT_TEMPLATES["chatml"], None),  # the folder's own template
        ("unigram", None, None),  # none: the fallback layout
        ("bpe", None, "qwen2.5-7b"),  # none: the catalogue family's (chatml)
        ("unigram", None, "llama-3-8b"),  # the catalogue's llama-3 layout (bos, trim)
    ],
)
def test_the_checker_counts_what_the_trainer_trains_on(tmp_path, kind, template, model):
    folder = train_tokenizer(tmp_path / "tok", kind, template)
    tok = trainer_tokenizer(folder, model)
    rng = random.Random(f"{kind}-{model}")
    seen = {"examples": 0, "truncated": 0, "bad": 0}
    for name, text in datasets(rng).items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        for seq_len in (96, 1024):
            ex = data.Reader(tok, seq_len).read(path, path.read_bytes())
            got = checker(path, folder, seq_len, model)
            what = f"{name} at seq_len {seq_len}: {got['bad'][:3]} vs {ex.bad_lines[:3]}"
            assert got["exact"], got["counted_with"]
            assert got["examples"] == len(ex.items), what
            assert got["tokens"] == sum(len(i["input_ids"]) for i in ex.items), what
            assert [b["line"] for b in got["bad"]] == bad_line_numbers(ex.bad_lines), what
            if ex.items:
                assert got["format"] == ex.fmt, what
            seen["examples"] += len(ex.items)
            seen["truncated"] += got["truncated"]
            seen["bad"] += len(ex.bad_lines)
    # Not vacuous: examples counted, some cut at seq_len, bad lines found.
    assert all(seen.values()), seen


def test_the_shared_tokenizer_folder_counts_the_same(models_dir, tmp_path):
    """The tests' stories260K folder (a SentencePiece model saved by Transformers)."""
    folder = models_dir / "stories260K"
    if not (folder / "tokenizer.json").is_file():
        pytest.skip("this Transformers saves no tokenizer.json for a SentencePiece model")
    tok = trainer_tokenizer(folder, "stories260K")
    path = tmp_path / "alpaca.jsonl"
    path.write_text(datasets(random.Random(7))["alpaca.jsonl"], encoding="utf-8")
    ex = data.Reader(tok, 128).read(path, path.read_bytes())
    got = checker(path, folder, 128, "stories260K")
    assert (got["examples"], got["tokens"]) == (
        len(ex.items),
        sum(len(i["input_ids"]) for i in ex.items),
    )


def train_sentencepiece(folder: Path, kind: str, vocab: int) -> Path:
    """A SentencePiece model (`bpe` or `unigram`, with byte fallback) trained here on the
    tests' sentences, as `tok<vocab>.model` in `folder`: what a model of numbers trains with."""
    import sentencepiece as spm

    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.txt"
    rng = random.Random(f"spm-{kind}")
    corpus.write_text("\n".join(sentence(rng) for _ in range(3000)), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(folder / f"tok{vocab}"),
        model_type=kind,
        vocab_size=vocab,
        byte_fallback=True,
        character_coverage=1.0,
        minloglevel=2,
    )
    return folder / f"tok{vocab}.model"


@pytest.mark.parametrize(("kind", "vocab"), [("bpe", 400), ("unigram", 300), ("shared", 512)])
def test_a_model_of_numbers_tokenizer_exported_counts_as_the_trainer(
    tmp_path, monkeypatch, kind, vocab
):
    """`python -m onramp_train.export_tokenizer` writes the files the edge serves for `tok<N>`:
    the checker counts with them exactly what a model of numbers' job trains on (its tokenizer
    found as a job finds it, the fallback layout)."""
    from onramp_train import export_tokenizer
    from onramp_train.models import _tokenizer_for_vocab

    models = tmp_path / "models"
    if kind == "shared":
        from conftest import shared_dir

        models.mkdir()
        (models / "tok512.model").write_bytes((shared_dir() / "models/tok512.model").read_bytes())
    else:
        train_sentencepiece(models, kind, vocab)
    monkeypatch.setenv("ONRAMP_MODELS", str(models))
    monkeypatch.delenv("ONRAMP_TOKENIZER", raising=False)
    out = tmp_path / f"tok{vocab}"
    assert export_tokenizer.main([str(vocab), str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) >= sorted(export_tokenizer.FILES)
    tok = _tokenizer_for_vocab(vocab)
    tok.pad_token = tok.pad_token or tok.unk_token or tok.eos_token
    tok.chat_template = tok.chat_template or chat_template_for(None)
    rng = random.Random(kind)
    for name, text in datasets(rng).items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        ex = data.Reader(tok, 96).read(path, path.read_bytes())
        got = checker(path, out, 96, None)
        assert got["exact"], got["counted_with"]
        assert (got["examples"], got["tokens"]) == (
            len(ex.items),
            sum(len(i["input_ids"]) for i in ex.items),
        ), name
    assert export_tokenizer.main([str(vocab + 1), str(tmp_path / "none")]) == 1


def test_counts_far_from_the_plan_are_a_warning(tmp_path):
    folder = train_tokenizer(tmp_path / "tok", "bpe", None)
    tok = trainer_tokenizer(folder, None)
    path = tmp_path / "pc.jsonl"
    path.write_text(datasets(random.Random(3))["pc.jsonl"], encoding="utf-8")
    ex = data.Reader(tok, 1024).read(path, path.read_bytes())
    n, tokens = len(ex.items), ex.tokens
    assert data.plan_mismatch(n, tokens, ex) is None
    assert data.plan_mismatch(n + n // 100, None, ex) is None  # within the tolerance
    said = data.plan_mismatch(n * 2, tokens // 2, ex)
    assert f"{n} examples" in said and f"data.examples = {n * 2}" in said
    assert f"data.tokens = {tokens // 2}" in said
    assert data.plan_mismatch(None, None, ex) is None


@pytest.mark.parametrize(("examples", "epochs"), [(7, 1), (19, 3), (20, 1), (1000, 2), (5000, 0.5)])
def test_epochs_of_padded_data_are_the_trainers_batches(tmp_path, examples, epochs):
    """jobspec's steps for `data.examples` are the trainer's: its train split over the global
    batch, epochs times."""
    import math

    from conftest import run_of

    from onramp_train.evaluate import split

    text = f"""name = "epochs"
task = "lora"
model = "stories260K"

[data]
dataset = "d"
seq_len = 64
examples = {examples}

[train]
epochs = {epochs}
micro_batch = 4
grad_accum = 3
lr = 1e-3
warmup = 0
precision = "fp32"

[resources]
card = "cpu"
"""
    plan = run_of(text, tmp_path).plan
    train, _, _ = split(list(range(examples)), plan, None)
    assert plan.data_examples == examples
    assert plan.max_steps == math.ceil(len(train) * epochs / plan.global_batch)


@pytest.mark.parametrize(("lines", "epochs"), [(40, 1), (400, 2), (3000, 0.5)])
def test_epochs_of_text_are_the_trainers_sequences(tmp_path, lines, epochs):
    """jobspec's steps for packed text (`data.tokens`, as the checker counts a file) are the
    trainer's: the whole sequences it cuts the file into, less those it holds out, over the
    global batch, epochs times."""
    import math

    from conftest import run_of

    from onramp_train.evaluate import split

    folder = train_tokenizer(tmp_path / "tok", "bpe", None)
    tok = trainer_tokenizer(folder, None)
    rng = random.Random(lines)
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(sentence(rng) for _ in range(lines)) + "\n", encoding="utf-8")
    ex = data.Reader(tok, 64).read(path, path.read_bytes())
    assert ex.fmt == "text" and ex.items, ex.bad_lines
    text = f"""name = "epochs"
task = "pretrain"

[model]
layers = 2
hidden = 64
heads = 4
kv_heads = 2
ffn = 172
vocab = 512

[data]
dataset = "d"
seq_len = 64
tokens = {ex.tokens}

[train]
epochs = {epochs}
micro_batch = 4
grad_accum = 3
lr = 1e-3
warmup = 0
precision = "fp32"

[resources]
card = "cpu"
"""
    plan = run_of(text, tmp_path).plan
    train, _, _ = split(ex.items, plan, tok)
    assert len(ex.items) == ex.tokens // 64
    assert plan.max_steps == math.ceil(len(train) * epochs / plan.global_batch)


@pytest.mark.parametrize("name", ["corpus.txt", "records.jsonl"])
def test_a_file_is_read_mapped_and_texts_tokens_are_kept_in_a_file(tmp_path, monkeypatch, name):
    """`data.load` maps the file (lines taken one at a time) and keeps text's tokens in an
    unnamed file of the job's folder, 4 bytes each: the same examples, counts and bad lines as
    the file read whole with its tokens in memory, each packed sequence made when asked for."""
    tok = trainer_tokenizer(train_tokenizer(tmp_path / "tok", "bpe", None), None)
    rng = random.Random(name)
    if name.endswith(".txt"):
        body = "".join(sentence(rng) + "\n" for _ in range(300)).encode()
        body += b"\xff not UTF-8, and no newline at the end"
    else:
        body = "".join(json.dumps({"text": sentence(rng)}) + "\n" for _ in range(300)).encode()
        body += b"{bad\n"
    path = tmp_path / name
    path.write_bytes(data.BOM + body)
    whole = data.Reader(tok, 32).read(path, path.read_bytes())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(data.TokenStream, "BLOCK", 100)
    mapped = data.load(name, tok, 32, "pretrain")
    assert isinstance(mapped.items, data.Packed) and isinstance(mapped.items.ids, memoryview)
    assert isinstance(whole.items.ids, array.array)
    assert (mapped.fmt, mapped.tokens) == (whole.fmt, whole.tokens)
    assert mapped.bad_lines == whole.bad_lines
    assert mapped.bad_lines, "the bad line is reported"
    assert len(mapped.items) == len(whole.items) == whole.tokens // 32 > 10
    assert list(mapped.items) == list(whole.items)
    assert mapped.items[-1] == whole.items[len(whole.items) - 1]
    with pytest.raises(IndexError):
        mapped.items[len(mapped.items)]
    assert not list(tmp_path.glob("*onramp-tokens*")), "the tokens' file has no name"
