"""Training data, read as the dataset checker (Rust, datacheck) reads it, so that the counts a
user is shown before paying are the counts trained on.

Layouts: JSON lines, one JSON array of records, or plain text (a `.txt`/`.text`/`.md` name, or a
file whose first byte that is not whitespace is neither `{` nor `[`). Record formats, each with
a closed set of keys: chat (`messages`: an optional system message, then user and assistant in
turn, the assistant's last), alpaca (`instruction`, `input`, `output`), `prompt`/`completion`,
and `{"text": …}`. Chat, alpaca and prompt/completion are one padded example each, rendered with
the model's chat template, the prompt masked; text (records, or plain-text lines in pieces of at
most TEXT_PIECE characters) is packed into `seq_len` sequences, the last partial one dropped.
One file holds one format, set by its first usable record.

An uploaded dataset (`ds_…`) is fetched from the edge into the job's folder (`fetch.py`). Any
other dataset id resolves under `ONRAMP_DATASETS` (`<id>`, `<id>.jsonl`, `<id>.json`, `<id>.txt`),
else the value is a path inside the job's folder; an absolute path, a home folder or `..` is
refused. Bad lines are reported with their line numbers; a dataset with no usable example is
refused before training.
"""

from __future__ import annotations

import array
import json
import mmap
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import fetch
from .errors import DataError

IGNORE = -100
MAX_REPORTED = 10
# The longest piece of a plain-text line tokenized at once, in characters (datacheck's too).
TEXT_PIECE = 16384
BOM = b"\xef\xbb\xbf"
SPACE = b" \t\n\r\x0b\x0c"
# Python's str.isspace() also takes the separators \x1c-\x1f, which Rust's trim() keeps.
_NOT_BLANK = "\x1c\x1d\x1e\x1f"


@dataclass
class Examples:
    """Tokenized examples (`input_ids`, `labels`) and what was wrong with the rest."""

    # A list, or for text the packed sequences (`Packed`), made one at a time.
    items: Sequence[dict[str, list[int]]]
    fmt: str
    path: Path
    bad_lines: list[str] = field(default_factory=list)
    tokens: int = 0
    records: int = 0


def escapes(dataset: str) -> str | None:
    """Why `dataset` would reach outside the datasets root or the job's folder (jobspec refuses
    the same: an absolute path, a home folder, a `..` component), or None."""
    if dataset.startswith(("/", "\\")):
        return "is an absolute path"
    if dataset.startswith("~"):
        return "names a home folder"
    if ".." in dataset.replace("\\", "/").split("/"):
        return "leaves its folder through `..`"
    return None


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, links followed, is a file inside `root`."""
    try:
        return path.is_file() and path.resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def resolve(dataset: str) -> Path:
    why = escapes(dataset)
    if why:
        raise DataError(
            f"dataset `{dataset}` {why}; a job reads only a dataset of its own: upload the file "
            "(`onramp datasets upload FILE`, or the Plan page) and name the `ds_…` id it gives, "
            "or name a dataset the cluster holds by its id"
        )
    if fetch.is_uploaded(dataset):
        return fetch.fetch(dataset)
    looked = []
    root = os.environ.get("ONRAMP_DATASETS")
    if root:
        for name in (dataset, f"{dataset}.jsonl", f"{dataset}.json", f"{dataset}.txt"):
            p = Path(root) / name
            if p.is_file():  # the operator's folder: its links are the operator's
                return p
        looked.append(f"{Path(root) / dataset}[.jsonl|.json|.txt]")
    else:
        looked.append("ONRAMP_DATASETS/<id> (ONRAMP_DATASETS is not set)")
    p = Path(dataset)
    if inside(p, Path.cwd()):
        return p
    looked.append(f"the path {p.resolve()}")
    raise DataError(f"dataset `{dataset}` not found; looked in: " + "; ".join(looked))


def load(dataset: str, tokenizer, seq_len: int, task: str) -> Examples:
    path = resolve(dataset)
    try:
        with path.open("rb") as f:
            # Mapped, not read: a corpus larger than memory is paged in as it is read (a file
            # system that cannot map it is read whole, as before).
            try:
                raw = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if _size(f) else b""
            except (OSError, ValueError):
                raw = f.read()
    except OSError as e:
        raise DataError(f"cannot read {path}: {e}") from e
    ex = Reader(tokenizer, seq_len).read(path, raw)
    if not len(ex.items):
        detail = "; ".join(ex.bad_lines[:MAX_REPORTED])
        raise DataError(
            f"{path} has no usable example" + (f": {detail}" if detail else " (it is empty)")
        )
    if task == "pretrain" and ex.fmt != "text":
        # Pretraining learns every token, prompt included.
        for item in ex.items:
            item["labels"] = list(item["input_ids"])
    return ex


def _size(f) -> int:
    return os.fstat(f.fileno()).st_size


# How far the counts found may be from the plan's before the job says so.
TOLERANCE = 0.02


def plan_mismatch(data_examples: int | None, data_tokens: int | None, ex: Examples) -> str | None:
    """What differs between the counts the plan assumed and the examples found, past the
    tolerance, or None."""
    found_tokens = ex.tokens
    wrong = []
    if (
        data_examples
        and ex.fmt != "text"
        and abs(len(ex.items) - data_examples) > TOLERANCE * data_examples
    ):
        wrong.append(f"{len(ex.items)} examples, the plan assumed data.examples = {data_examples}")
    if data_tokens and abs(found_tokens - data_tokens) > TOLERANCE * data_tokens:
        wrong.append(f"{found_tokens} tokens, the plan assumed data.tokens = {data_tokens}")
    if not wrong:
        return None
    return (
        f"the dataset holds {' and '.join(wrong)}: epochs, time and cost were planned on the "
        "plan's counts; `onramp datasets check` counts the file as the trainer does"
    )


def layout(name: str, raw, start: int = 0) -> str | None:
    """`jsonl`, `json_array` or `text`, or None for a file of nothing but whitespace: as
    datacheck's `layout_of`, a `.txt`, `.text` or `.md` file is text whatever it starts with; a
    `.json`, `.jsonl` or `.ndjson` file an array when it starts with `[`, else JSON lines; any
    other by its first byte. `raw`: bytes or a mapped file, read from `start`."""
    first = first_byte(raw, start)
    if first is None:
        return None
    ext = name.rsplit(".", 1)[1].lower() if "." in name else None
    if ext in ("txt", "text", "md"):
        return "text"
    if ext in ("json", "jsonl", "ndjson"):
        return "json_array" if first == ord("[") else "jsonl"
    return {ord("["): "json_array", ord("{"): "jsonl"}.get(first, "text")


def first_byte(raw, start: int = 0) -> int | None:
    """The first byte of `raw` (bytes or a mapped file) from `start` that is not whitespace."""
    n = len(raw)
    while start < n:
        piece = raw[start : start + 65536]
        head = piece.lstrip(SPACE)
        if head:
            return head[0]
        start += len(piece)
    return None


def lines(raw, start: int = 0):
    """(line number, line without its `\n`, whether a `\n` ended it) of bytes or a mapped
    file from `start`, one at a time, as `raw.split(b"\n")` would give them."""
    n, no = len(raw), 0
    while True:
        no += 1
        end = raw.find(b"\n", start)
        if end < 0:
            yield no, raw[start:n], False
            return
        yield no, raw[start:end], True
        start = end + 1


def blank(s: str) -> bool:
    return all(c.isspace() and c not in _NOT_BLANK for c in s)


def _no_constant(name: str):
    raise ValueError(f"`{name}` is not JSON")


class Reader:
    """Reads one file into examples, as datacheck's checker does."""

    def __init__(self, tokenizer, seq_len: int):
        self.tok, self.seq_len = tokenizer, seq_len
        self.items: list[dict[str, list[int]]] = []
        self.bad: list[str] = []
        self.fmt: str | None = None
        self.first_line = 0
        self.stream = TokenStream()

    def read(self, path: Path, raw) -> Examples:
        """`raw`: the file's bytes, or the file mapped (`mmap`): lines are taken one at a time,
        and text's tokens kept in a file, so that a corpus larger than memory is read."""
        start = len(BOM) if raw[: len(BOM)] == BOM else 0
        kind = layout(fetch.layout_name(path), raw, start)
        if kind == "text":
            self._plain(raw, start)
        elif kind == "jsonl":
            for no, line, _ in lines(raw, start):
                if line.strip(SPACE):
                    self._record(no, line.removesuffix(b"\r"))
        elif kind == "json_array":
            # One JSON value: read whole (its records are examples in memory anyway).
            for no, unit in array_records(bytes(raw[start:])):
                if isinstance(unit, str):
                    self.bad.append(f"line {no}: {unit}")
                else:
                    self._record(no, unit)
        if self.fmt == "text":
            return self._pack(path)
        tokens = sum(len(i["input_ids"]) for i in self.items)
        return Examples(self.items, self.fmt or "jsonl", path, self.bad, tokens)

    def _plain(self, raw, start: int) -> None:
        for no, line, ended in lines(raw, start):
            if ended:
                line += b"\n"
            if not line:
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                self.bad.append(f"line {no}: not valid UTF-8")
                continue
            for i in range(0, len(text), TEXT_PIECE):
                self.stream.extend(self._ids(text[i : i + TEXT_PIECE]))
        self.fmt = "text"

    def _ids(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def _record(self, no: int, line: bytes) -> None:
        try:
            record = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
            json.dumps(record, ensure_ascii=False).encode("utf-8")  # lone surrogates
            kind, rec = read_record(record)
            if self.fmt is not None and kind != self.fmt:
                raise ValueError(
                    f"a {kind} record in a {self.fmt} file (set by line {self.first_line})"
                )
            self._count(kind, rec)
        except UnicodeError:
            self.bad.append(f"line {no}: not valid UTF-8")
            return
        except RecursionError:
            # datacheck refuses JSON nested past 128 levels as invalid; no record nests so deep.
            self.bad.append(f"line {no}: JSON nested too deeply")
            return
        except ValueError as e:
            self.bad.append(f"line {no}: {e}")
            return
        if self.fmt is None:
            self.fmt, self.first_line = kind, no

    def _count(self, kind: str, rec) -> None:
        if kind == "text":
            ids = self._ids(rec)
            if self.tok.eos_token_id is not None:
                ids.append(self.tok.eos_token_id)
            self.stream.extend(ids)
            return
        if kind == "prompt_completion":
            prompt, completion = rec
            item = _masked(
                self._ids(prompt),
                self._ids(prompt + completion + (self.tok.eos_token or "")),
                self.seq_len,
            )
        else:
            item = _render(rec, self.tok, self.seq_len)
        self.items.append(item)

    def _pack(self, path: Path) -> Examples:
        packed = Packed(self.stream.close(), self.seq_len)
        if not len(packed):
            self.bad.append(
                f"only {self.stream.count} tokens, fewer than one sequence of {self.seq_len}"
            )
        return Examples(packed, "text", path, self.bad, len(packed) * self.seq_len)


class TokenStream:
    """Token ids appended in order, kept in an unnamed file of the job's folder (4 bytes each,
    written in blocks), never as a Python list: a corpus's tokens need not fit in memory."""

    BLOCK = 1 << 20

    def __init__(self):
        self.buf = array.array("I")
        self.file = None
        self.count = 0

    def extend(self, ids) -> None:
        self.buf.extend(ids)
        self.count += len(ids)
        if len(self.buf) >= self.BLOCK:
            self._flush()

    def _flush(self) -> None:
        if self.file is None:
            try:
                self.file = tempfile.TemporaryFile(dir=os.getcwd(), prefix=".onramp-tokens-")
            except OSError:  # a folder the job cannot write to
                self.file = tempfile.TemporaryFile(prefix="onramp-tokens-")
        self.buf.tofile(self.file)
        self.buf = array.array("I")

    def close(self):
        """Every id, as a read-only sequence of ints (the file mapped)."""
        if self.file is None:
            return self.buf
        self._flush()
        self.file.flush()
        mapped = mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ)
        self.file.close()  # the mapping keeps the unnamed file
        return memoryview(mapped).cast("I")


class Packed:
    """Text's tokens as `seq_len` sequences (the last partial one dropped), each made into an
    example (`input_ids`, `labels`) only when asked for."""

    def __init__(self, ids, seq_len: int):
        self.ids, self.seq_len = ids, seq_len

    def __len__(self) -> int:
        return len(self.ids) // self.seq_len

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        if not isinstance(i, int):
            raise TypeError("a packed example is asked for by its index")
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        ids = self.ids[i * self.seq_len : (i + 1) * self.seq_len].tolist()
        return {"input_ids": ids, "labels": list(ids)}

    def __iter__(self):
        return (self[i] for i in range(len(self)))


_IN_STRING = re.compile(rb'["\\\n]')
_SPACE_SET = frozenset(SPACE)


def _string_end(raw: bytes, i: int) -> tuple[int, int]:
    """Past the string that opens at `i`, and the line breaks inside it."""
    lines, j, n = 0, i + 1, len(raw)
    while True:
        m = _IN_STRING.search(raw, j)
        if m is None:
            return n, lines
        k = m.start()
        if raw[k] == 0x0A:
            lines, j = lines + 1, k + 1
        elif raw[k] == 0x5C:
            lines += k + 1 < n and raw[k + 1] == 0x0A
            j = k + 2
        else:
            return k + 1, lines


def array_records(raw: bytes):
    """(line, bytes) of each record of one JSON array, or (line, why) where its brackets are
    wrong, cut as datacheck's scanner cuts them."""
    first = len(raw) - len(raw.lstrip(SPACE))
    line = 1 + raw[:first].count(b"\n")
    i, n, depth, start, start_line, after_comma = first + 1, len(raw), 0, None, 0, False
    while i < n:
        b = raw[i]
        if b in (0x2C, 0x5D) and depth == 0:
            close = b == 0x5D
            if start is not None:
                yield start_line, raw[start:i]
                start = None
            elif not close or after_comma:
                yield (
                    line,
                    (
                        "a `,` with no record after it"
                        if close
                        else "a `,` with no record before it"
                    ),
                )
            after_comma = not close
            if close:
                rest = raw[i + 1 :]
                tail = rest.lstrip(SPACE)
                if tail:
                    yield (
                        line + rest[: len(rest) - len(tail)].count(b"\n"),
                        ("there is text after the JSON array's closing `]`"),
                    )
                return
            i += 1
            continue
        if start is None:
            if b in _SPACE_SET:
                line += b == 0x0A
                i += 1
                continue
            start, start_line, after_comma = i, line, False
        if b == 0x22:
            i, breaks = _string_end(raw, i)
            line += breaks
            continue
        if b in (0x7B, 0x5B):
            depth += 1
        elif b in (0x7D, 0x5D):
            depth = max(0, depth - 1)
        elif b == 0x0A:
            line += 1
        i += 1
    if start is not None:
        yield start_line, raw[start:]
    yield line, "the JSON array is not closed with `]`"


FORMAT_KEYS = {
    "chat": ("messages",),
    "alpaca": ("instruction", "input", "output"),
    "prompt_completion": ("prompt", "completion"),
    "text": ("text",),
}


def format_of(record: dict) -> str | None:
    if "messages" in record:
        return "chat"
    if "instruction" in record or "output" in record:
        return "alpaca"
    if "prompt" in record or "completion" in record:
        return "prompt_completion"
    if "text" in record:
        return "text"
    return None


def _text(record: dict, key: str, kind: str) -> str:
    if key not in record:
        raise ValueError(f"a record of the {kind} format needs `{key}`")
    v = record[key]
    if not isinstance(v, str):
        raise ValueError(f"`{key}` must be a string")
    if blank(v):
        raise ValueError(f"`{key}` is empty")
    return v


def read_record(record):
    """(format, what to render) of one record, or ValueError saying what is wrong."""
    if not isinstance(record, dict):
        raise ValueError("a record must be a JSON object")
    kind = format_of(record)
    if kind is None:
        raise ValueError(
            "no known format: a record needs `messages`, `instruction` and `output`, "
            "`prompt` and `completion`, or `text`"
        )
    extra = [k for k in record if k not in FORMAT_KEYS[kind]]
    if extra:
        raise ValueError(f"unknown key `{extra[0]}` in a record of the {kind} format")
    if kind == "chat":
        return kind, _conversation(record["messages"])
    if kind == "alpaca":
        inst = _text(record, "instruction", kind)
        inp = record.get("input", "")
        if not isinstance(inp, str):
            raise ValueError("`input` must be a string")
        out = _text(record, "output", kind)
        prompt = inst if blank(inp) else f"{inst}\n\n{inp}"
        return kind, [
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": out},
        ]
    if kind == "prompt_completion":
        return kind, (_text(record, "prompt", kind), _text(record, "completion", kind))
    return kind, _text(record, "text", kind)


def _conversation(msgs) -> list[dict[str, str]]:
    if not isinstance(msgs, list):
        raise ValueError("`messages` must be a list")
    if not msgs:
        raise ValueError("`messages` is empty")
    out: list[dict[str, str]] = []
    for i, m in enumerate(msgs):
        key = f"messages[{i}]"
        if not isinstance(m, dict):
            raise ValueError(f"`{key}` must be an object")
        extra = [k for k in m if k not in ("role", "content")]
        if extra:
            raise ValueError(f"unknown key `{key}.{extra[0]}`")
        if "role" not in m:
            raise ValueError(f"`{key}.role` is missing")
        role = m["role"]
        if not isinstance(role, str):
            raise ValueError(f"`{key}.role` must be a string")
        if role not in ("system", "user", "assistant"):
            raise ValueError(f"unknown role {role!r} at `{key}.role`")
        prev = out[-1]["role"] if out else None
        expected = (
            "system"
            if prev is None and role == "system"
            else "user"
            if prev in (None, "system", "assistant")
            else "assistant"
        )
        if role != expected:
            raise ValueError(f"`{key}.role` is {role!r} where {expected} comes next")
        if "content" not in m:
            raise ValueError(f"`{key}.content` is missing")
        content = m["content"]
        if not isinstance(content, str):
            raise ValueError(f"`{key}.content` must be a string")
        if blank(content):
            raise ValueError(f"`{key}.content` is empty")
        out.append({"role": role, "content": content})
    if out[-1]["role"] != "assistant":
        raise ValueError("the last message must be the assistant's")
    return out


def _masked(prompt_ids: list[int], full_ids: list[int], seq_len: int) -> dict[str, list[int]]:
    if len(prompt_ids) >= seq_len:
        raise ValueError(f"the prompt alone is {len(prompt_ids)} tokens, seq_len is {seq_len}")
    full_ids = full_ids[:seq_len]
    labels = [IGNORE] * len(prompt_ids) + full_ids[len(prompt_ids) :]
    return {"input_ids": full_ids, "labels": labels[: len(full_ids)]}


def _render(messages, tokenizer, seq_len: int) -> dict[str, list[int]]:
    """Token ids of the whole conversation; only the last answer is learned (the rest is
    masked with -100)."""
    try:
        full = tokenizer.apply_chat_template(messages, tokenize=False)
        prompt = tokenizer.apply_chat_template(
            messages[:-1], tokenize=False, add_generation_prompt=True
        )
    except Exception as e:  # the template's own raise_exception, or a Jinja error
        raise ValueError(f"the model's chat template refuses this conversation: {e}") from e
    ids = tokenizer(full, add_special_tokens=False)["input_ids"]
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    return _masked(prompt_ids, ids, seq_len)
