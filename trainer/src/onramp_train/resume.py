"""A job that continues an earlier one on another backend (`checkpoint.resume_from`, the earlier
job having pushed its checkpoint with `checkpoint.upload = true`): that job's latest checkpoint,
fetched from the edge into this job's `out/checkpoint-<step>` before training, where the Trainer
resumes from it as from one of its own. On the same cluster the runner or the job script copies
the earlier job's folder instead, and nothing is fetched.

The edge lists the files (`GET …/api/jobs/{id}/resume`, the job's own token: it checked that the
earlier job is the same account's) and serves each (`…/resume/{name}`); every file is checked by
its SHA-256, and the folder takes its name only once whole, so a cut-off fetch is never resumed
from. Rank 0 fetches; the other ranks wait for the folder. Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from . import artifacts, fetch
from .errors import DataError

#: A checkpoint's folder as the Trainer names it.
CHECKPOINT = re.compile(r"checkpoint-(\d+)")
#: How long a rank other than 0 waits for rank 0's fetch.
WAIT_S = 3600


def has_checkpoint(out: Path) -> bool:
    """Whether `out` holds a checkpoint whose save finished (its `trainer_state.json`)."""
    return artifacts.latest_checkpoint(out) is not None


def _listing(url: str, token: str, earlier: str) -> list[dict]:
    req = urllib.request.Request(url, headers={"authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            doc = json.loads(resp.read())
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise DataError(
                f"job {earlier}, which this job continues, left no checkpoint on this backend "
                "and uploaded none to the edge (a job uploads its latest checkpoint with "
                "`checkpoint.upload = true`)"
            ) from e
        raise DataError(f"the edge refused the checkpoint of job {earlier}: HTTP {e.code}") from e
    except (OSError, ValueError) as e:
        raise DataError(f"cannot list the checkpoint of job {earlier} on the edge: {e}") from e
    files = doc.get("artifacts") if isinstance(doc, dict) else None
    if not isinstance(files, list) or not files:
        raise DataError(f"the edge listed no checkpoint files of job {earlier}")
    return files


def _folder_of(files: list[dict]) -> str:
    """The one `checkpoint-<step>` folder every listed file is in."""
    tops = {str(f.get("name", "")).split("/", 1)[0] for f in files}
    if len(tops) != 1 or not CHECKPOINT.fullmatch(next(iter(tops))):
        raise DataError(f"the edge listed files of more than one checkpoint: {sorted(tops)}")
    return tops.pop()


def _fetch_all(url: str, token: str, files: list[dict], into: Path) -> None:
    for f in files:
        name, digest = str(f.get("name", "")), str(f.get("sha256", ""))
        parts = name.split("/")
        if any(p in ("", ".", "..") or p.startswith(".") for p in parts):
            raise DataError(f"the edge listed a checkpoint file with a bad name: {name!r}")
        dest = into.joinpath(*parts)
        dest.parent.mkdir(parents=True, exist_ok=True)
        file_url = f"{url}/{urllib.parse.quote(name, safe='')}"
        fetch.download(file_url, token, dest, f"checkpoint file {name}")
        if fetch._digest(dest) != digest:
            raise DataError(f"checkpoint file {name} fetched from the edge is not what it uploaded")


def resume(out: Path, earlier: str | None) -> Path | None:
    """The earlier job's checkpoint in `out`, fetched when `out` has none of its own yet; None
    when this job continues nothing or already has a checkpoint (started again, or copied)."""
    if not earlier or has_checkpoint(out):
        return None
    if os.environ.get("RANK", "0") != "0":
        deadline = time.monotonic() + WAIT_S
        while not has_checkpoint(out):
            if time.monotonic() > deadline:
                raise DataError(f"rank 0 did not fetch the checkpoint of job {earlier} in time")
            time.sleep(1)
        return None
    route = fetch.job_url("resume")
    if route is None:
        raise DataError(
            f"job {earlier}, which this job continues, left no checkpoint here, and this job "
            "has no route to the edge to fetch the one it uploaded; run the job through Onramp"
        )
    url, token = route
    files = _listing(url, token, earlier)
    folder = _folder_of(files)
    tmp = out / f".resume-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _fetch_all(url, token, files, tmp)
        dest = out / folder
        if not dest.exists():
            os.replace(tmp / folder, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"onramp-train: fetched the checkpoint of job {earlier} from the edge: out/{folder}",
        flush=True,
    )
    return out / folder


def main(argv: list[str]) -> int:
    """`OUT EARLIER`: what a job script that holds the token runs before the training."""
    if len(argv) != 2:
        print("usage: python -m onramp_train.resume OUT EARLIER_JOB_ID", file=sys.stderr)
        return 2
    try:
        resume(Path(argv[0]), argv[1])
    except DataError as e:
        print(f"onramp-train: error: [{e.kind}] {e}", file=sys.stderr, flush=True)
        return e.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
