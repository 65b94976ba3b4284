"""The tokenizer that onramp-train gives a model of numbers (a custom `[model]` architecture of
vocabulary N), written as the Hugging Face files the browser's dataset check counts with.

    python -m onramp_train.export_tokenizer VOCAB OUT

finds the tokenizer exactly as a training job does (`ONRAMP_TOKENIZER`, else
`ONRAMP_MODELS/tok<VOCAB>.model`, a SentencePiece model read through Transformers) and saves it to
the folder OUT. An operator stores its `tokenizer.json` and `tokenizer_config.json` on the edge
as the tokenizer of `tok<VOCAB>` (`PUT /api/admin/models/tok<VOCAB>/tokenizer/<file>`); the Plan
page then counts a dataset for such a model with the trainer's own tokens. No chat template is
written: the trainer and the checker both use the plain fallback layout for it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .errors import ModelNotFound
from .models import _tokenizer_for_vocab

#: The files the edge keeps of a tokenizer (api::datasets::TOKENIZER_FILES) that this writes.
FILES = ("tokenizer.json", "tokenizer_config.json")


def export(vocab: int, out: Path) -> list[Path]:
    """Saves the tokenizer of vocabulary `vocab` to `out`; the files to store on the edge."""
    tok = _tokenizer_for_vocab(vocab)
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(out))
    written = [out / name for name in FILES]
    missing = [p.name for p in written if not p.is_file()]
    if missing:
        raise ModelNotFound(f"Transformers wrote no {', '.join(missing)} in {out}")
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[0].isdigit() or int(argv[0]) < 1:
        print("usage: python -m onramp_train.export_tokenizer VOCAB OUT", file=sys.stderr)
        return 2
    try:
        files = export(int(argv[0]), Path(argv[1]))
    except ModelNotFound as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for f in files:
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
