"""The uploaded dataset a job's spec names (`data.dataset = "ds_…"`), fetched from the edge into
the job's own folder (`datasets/<id>`) with the job's own token and checked by its SHA-256
before anything reads it. The id is the first 32 hex digits of the file's SHA-256, so a file in
the folder that does not hash to its id is never trained on.

The URL is the report URL's job (`…/api/jobs/{id}/report` → `…/api/jobs/{id}/dataset`); a job
script that keeps the token from the training (the Slurm wrapper) fetches the file there first,
and the trainer finds it. A download cut off goes on from where it stopped (`Range`). Standard
library only.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from .errors import DataError

#: An uploaded dataset's id (api::datasets: `ds_` and 32 lowercase hex digits).
DATASET_ID = re.compile(r"^ds_[0-9a-f]{32}$")
#: How many times the download is tried before the job gives up.
TRIES = 4


def is_uploaded(dataset: str) -> bool:
    return DATASET_ID.fullmatch(dataset) is not None


def local_path(dataset: str) -> Path:
    return Path.cwd() / "datasets" / dataset


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _matches(path: Path, dataset: str) -> bool:
    return _digest(path).startswith(dataset[len("ds_") :])


def job_url(name: str) -> tuple[str, str] | None:
    """`…/api/jobs/{id}/<name>` of this job's report URL, with the job's token; None when the
    job was given neither."""
    url, token = os.environ.get("ONRAMP_REPORT_URL"), os.environ.get("ONRAMP_REPORT_TOKEN")
    if not url or not token or not url.endswith("/report"):
        return None
    return url[: -len("/report")] + "/" + name, token


def dataset_url(dataset: str) -> tuple[str, str] | None:
    """Where the job fetches one uploaded dataset its spec names (the training set or the eval
    set): the edge serves only those."""
    return job_url(f"dataset?id={dataset}")


def extension_file(path: Path) -> Path:
    """Where the extension of the name an uploaded dataset was declared with is kept, beside it
    (the file itself is named by its id)."""
    return path.with_name(f".{path.name}.extension")


def layout_name(path: Path) -> str:
    """The name a dataset's layout goes by (`data.layout`): an uploaded one's id with the
    extension it was declared with, as the checker that counted it saw it; else its own name."""
    try:
        ext = extension_file(path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeError):
        return path.name
    return f"{path.name}.{ext}" if ext.isascii() and ext.isalnum() else path.name


def _download(url: str, token: str, part: Path) -> None:
    """Appends to `part` what the edge has past its length, until the edge has sent it all; the
    extension the edge names (`x-onramp-extension`) is kept beside `part`."""
    have = part.stat().st_size if part.exists() else 0
    headers = {"authorization": f"Bearer {token}"}
    if have:
        headers["range"] = f"bytes={have}-"
    req = urllib.request.Request(url, headers=headers)
    try:
        resp = urllib.request.urlopen(req, timeout=60)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:
            return  # nothing past what is here: the check decides
        raise
    with resp:
        total = _total(resp)
        ext = resp.headers.get("x-onramp-extension", "")
        if ext.isascii() and ext.isalnum():
            extension_file(part).write_text(ext, encoding="ascii")
        with part.open("ab" if resp.status == 206 else "wb") as f:
            for chunk in iter(lambda: resp.read(1 << 20), b""):
                f.write(chunk)
    got = part.stat().st_size
    if total is not None and got < total:
        # The connection dropped: the next try asks for the rest.
        raise ConnectionError(f"the download stopped at {got} of {total} bytes")


def _total(resp) -> int | None:
    """The whole file's size, as the answer gives it (Content-Range's, else Content-Length)."""
    rng = resp.headers.get("content-range", "")
    if resp.status == 206 and "/" in rng:
        tail = rng.rsplit("/", 1)[1]
        return int(tail) if tail.isdigit() else None
    length = resp.headers.get("content-length", "")
    return int(length) if length.isdigit() else None


def download(url: str, token: str, part: Path, what: str) -> None:
    """`url` into `part`, tried [`TRIES`] times, each try going on where the last one stopped;
    an answer that refuses (a 4xx but 429) is said at once, and `part` removed."""
    last: Exception | None = None
    for attempt in range(TRIES):
        try:
            _download(url, token, part)
            return
        except urllib.error.HTTPError as e:
            if e.code < 500 and e.code != 429:
                part.unlink(missing_ok=True)
                extension_file(part).unlink(missing_ok=True)
                raise DataError(f"the edge refused {what}: HTTP {e.code}") from e
            last = e
        except (OSError, http.client.HTTPException) as e:
            last = e
        time.sleep(min(2**attempt, 8))
    raise DataError(f"cannot fetch {what} from the edge: {last}")


def fetch(dataset: str) -> Path:
    """The dataset's file in the job's folder, fetched when it is not there yet."""
    dest = local_path(dataset)
    if dest.is_file():
        if _matches(dest, dataset):
            return dest
        dest.unlink()
        extension_file(dest).unlink(missing_ok=True)
    route = dataset_url(dataset)
    if route is None:
        raise DataError(
            f"dataset `{dataset}` is uploaded to the edge, and this job was given no route to "
            "it (ONRAMP_REPORT_URL and ONRAMP_REPORT_TOKEN); run the job through Onramp"
        )
    url, token = route
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Each rank downloads into its own file; the first whole, checked one takes the name.
    part = dest.with_name(f".{dataset}.{os.getpid()}.part")
    download(url, token, part, f"dataset `{dataset}`")
    if not _matches(part, dataset):
        part.unlink(missing_ok=True)
        extension_file(part).unlink(missing_ok=True)
        raise DataError(
            f"the file fetched for dataset `{dataset}` does not hash to its id; it was removed"
        )
    ext = extension_file(part)
    if ext.exists():
        os.replace(ext, extension_file(dest))
    os.replace(part, dest)
    return dest


def main(argv: list[str]) -> int:
    """`DATASET`: fetches the uploaded dataset into the job's folder (the current one), as a job
    script that holds the job's token does before the training, which then finds it there."""
    if len(argv) != 1 or not is_uploaded(argv[0]):
        print("usage: python -m onramp_train.fetch ds_<32 hex digits>", file=sys.stderr)
        return 2
    try:
        path = fetch(argv[0])
    except DataError as e:
        print(f"onramp-train: error: [{e.kind}] {e}", file=sys.stderr, flush=True)
        return e.exit_code
    size = path.stat().st_size
    print(f"onramp-train: dataset {argv[0]} is in the job's folder ({size} bytes)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
