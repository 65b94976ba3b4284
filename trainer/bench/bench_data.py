"""`cargo xtask bench data`: the dataset checker's native throughput (datacheck, Rust, one
thread) next to Python on the same file and the same tokenizer, measured in the same run.

The file is a chat JSONL made here (deterministic, CJK and emoji included) and the tokenizer a
byte-level BPE with a ChatML template trained here, saved as Transformers saves one. Two
references:

- onramp-train's own count (`data.Reader`: Transformers' chat template, then the fast
  tokenizer), which must give the same examples and tokens (checked here);
- the `tokenizers` library alone on one thread, encoding the same rendered examples (prompt and
  whole example, as the checker does) with their rendering done beforehand and not timed: the
  tokenizer's own speed, the floor of what any checker in Python could reach.

Goal (issue #26): the checker natively at >= 1.0x the Python `tokenizers` reference. With
`--keep DIR` the file and the tokenizer stay in DIR and the figures end in one JSON line, which
`cargo xtask bench data` reads to time the same check in the browser (xtask/src/bench_data.rs,
goal >= 0.5x the same reference).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# One thread for the tokenizers reference, as the checker runs on one.
os.environ["RAYON_RS_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

WORDS = (
    "the king shall speak of love and war to thee my lord good night sweet prince 我们 今天 "
    "训练 模型 à été naïve café 🙂 zebra quartz"
).split()


def sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))) + "."


def tokenizer_folder(folder: Path) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from onramp_train.models import CHAT_TEMPLATES

    rng = random.Random("bench-data")
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([sentence(rng, 1, 40) for _ in range(5000)], trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    fast.chat_template = CHAT_TEMPLATES["chatml"]
    fast.save_pretrained(str(folder))
    return folder


def chat_file(path: Path, mib: int) -> None:
    rng = random.Random(f"bench-data-{mib}")
    with path.open("w", encoding="utf-8") as f:
        while f.tell() < mib << 20:
            msgs = (
                [{"role": "system", "content": sentence(rng, 3, 20)}] if rng.random() < 0.3 else []
            )
            for _ in range(rng.randint(1, 3)):
                msgs += [
                    {"role": "user", "content": sentence(rng, 3, 40)},
                    {"role": "assistant", "content": sentence(rng, 5, 120)},
                ]
            f.write(json.dumps({"messages": msgs}, ensure_ascii=False) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checker", required=True, help="datacheck's bench example (release)")
    ap.add_argument("--mib", type=int, default=24, help="size of the file made (MiB)")
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument(
        "--keep",
        type=Path,
        help="write the file and the tokenizer here and keep them (the browser's run reads them)",
    )
    a = ap.parse_args()

    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    from onramp_train import data

    with tempfile.TemporaryDirectory(prefix="onramp-bench-data-") as tmp:
        tmp = a.keep or Path(tmp)
        tmp.mkdir(parents=True, exist_ok=True)
        folder = tokenizer_folder(tmp / "tok")
        path = tmp / "chat.jsonl"
        chat_file(path, a.mib)
        size = path.stat().st_size
        mb = size / 1e6

        # The checker, native (it reads the tokenizer folder too: part of what a check costs).
        p = subprocess.run(
            [a.checker, str(path), str(folder), str(a.seq_len)],
            capture_output=True,
            text=True,
            check=False,
        )
        if p.returncode != 0:
            print(p.stderr, file=sys.stderr)
            return 1
        rust = json.loads(p.stdout)

        # onramp-train's own count.
        t0 = time.perf_counter()
        tok = AutoTokenizer.from_pretrained(str(folder))
        if tok.pad_token is None:
            tok.pad_token = tok.unk_token or tok.eos_token
        ex = data.Reader(tok, a.seq_len).read(path, path.read_bytes())
        trainer_s = time.perf_counter() - t0
        trainer_tokens = sum(len(i["input_ids"]) for i in ex.items)
        if (len(ex.items), trainer_tokens) != (rust["examples"], rust["tokens"]):
            print(
                f"the counts differ: checker {rust['examples']} examples, {rust['tokens']} "
                f"tokens; onramp-train {len(ex.items)}, {trainer_tokens}",
                file=sys.stderr,
            )
            return 1

        # The tokenizers library alone, one thread, on the same rendered texts.
        texts = []
        for line in path.read_text(encoding="utf-8").splitlines():
            msgs = json.loads(line)["messages"]
            texts.append(
                tok.apply_chat_template(msgs[:-1], tokenize=False, add_generation_prompt=True)
            )
            texts.append(tok.apply_chat_template(msgs, tokenize=False))
        plain = Tokenizer.from_file(str(folder / "tokenizer.json"))
        t0 = time.perf_counter()
        encoded = 0
        for i in range(0, len(texts), 1024):
            batch = plain.encode_batch(texts[i : i + 1024], add_special_tokens=False)
            encoded += sum(len(e.ids) for e in batch)
        tok_s = time.perf_counter() - t0

    rust_s = rust["seconds"]
    print(
        f"file: {mb:.1f} MB of chat JSONL, {rust['examples']} examples, {rust['tokens']} tokens "
        f"(seq_len {a.seq_len}); the checker's counts equal onramp-train's"
    )
    print(
        f"datacheck (Rust, native, 1 thread): {rust_s:.2f} s = {mb / rust_s:.1f} MB/s, "
        f"{rust['tokens'] / rust_s / 1e6:.2f} M tokens/s counted"
    )
    print(
        f"onramp-train's count (Transformers + tokenizers): {trainer_s:.2f} s = "
        f"{mb / trainer_s:.1f} MB/s"
    )
    print(
        f"tokenizers alone (Python, 1 thread, {encoded} tokens encoded, rendering not timed): "
        f"{tok_s:.2f} s = {mb / tok_s:.1f} MB/s"
    )
    print(
        f"  = checker {trainer_s / rust_s:.2f}x onramp-train's count; "
        f"{tok_s / rust_s:.2f}x the tokenizers reference (goal >= 1.0x)"
    )
    # What `cargo xtask bench data` sets the browser's run next to (bench_data.rs).
    figures = {
        "mb": mb,
        "examples": rust["examples"],
        "tokens": rust["tokens"],
        "native_s": rust_s,
        "tokenizers_s": tok_s,
    }
    print("bench-data-json: " + json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
