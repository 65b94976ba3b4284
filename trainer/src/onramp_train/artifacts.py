"""Pushing what a job trained to the edge, which keeps it in R2 as the job's artifacts.

Each file is declared (`POST /api/jobs/{id}/artifacts/{name}`: its size and sha256), then sent
in parts of the size the edge answers, in order (`PUT …?part=N`); the last part completes it. A
try cut off declares the file again and is told which parts arrived, so it sends only the rest.
The job's own token is the credential; the URL is the report URL's job (`ONRAMP_REPORT_URL`,
`…/api/jobs/{id}/report`). Standard library only: it runs wherever the trainer runs.

From a job script (the Slurm wrapper, which keeps the token from the training itself):
`python -m onramp_train.artifacts OUT` pushes what a training left in OUT; by hand,
`python -m onramp_train.artifacts FOLDER PREFIX` pushes every file of FOLDER as `PREFIX/<path>`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

#: How many times one request is tried before the push gives up.
TRIES = 4

#: The artifact the job's log goes to.
LOG_ARTIFACT = "job.log"

#: The most bytes of the log pushed: a longer log goes as its last `MAX_LOG_BYTES`, from the
#: start of a line, so that a job that prints without end cannot fill the account's quota.
MAX_LOG_BYTES = 32 << 20


class PushError(Exception):
    pass


def base_from_report_url(report_url: str) -> str:
    """`…/api/jobs/{id}/report` → `…/api/jobs/{id}/artifacts`."""
    if not report_url.endswith("/report"):
        raise PushError(f"{report_url!r} is not a job's report URL")
    return report_url[: -len("/report")] + "/artifacts"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _upload(url: str, text: bytes) -> dict:
    """The edge's answer about an upload, checked: an answer of another shape (not the edge, or
    not this contract) stops the push instead of being guessed at."""
    try:
        up = json.loads(text)
    except ValueError as e:
        raise PushError(f"{url} answered what is not JSON: {text[:200]!r}") from e
    shape = {"received": int, "part_size": int, "parts": int, "complete": bool}
    if not isinstance(up, dict) or any(not isinstance(up.get(k), t) for k, t in shape.items()):
        raise PushError(f"{url} answered {text[:200]!r}, not the state of an upload")
    return up


class Pusher:
    def __init__(self, base: str, token: str, timeout: float = 120.0):
        self.base, self.token, self.timeout = base.rstrip("/"), token, timeout

    def _url(self, name: str, query: str = "") -> str:
        return f"{self.base}/{urllib.parse.quote(name, safe='')}{query}"

    def _call(self, method: str, url: str, body: bytes, ctype: str) -> dict:
        """One request, tried again on a network failure or a 5xx; a 4xx is final."""
        last = None
        for attempt in range(TRIES):
            req = urllib.request.Request(
                url,
                data=body,
                method=method,
                headers={"content-type": ctype, "authorization": f"Bearer {self.token}"},
            )
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    text = resp.read()
                return _upload(url, text)
            except urllib.error.HTTPError as e:
                text = e.read().decode("utf-8", "replace")
                if e.code < 500:
                    raise PushError(f"{method} {url}: {e.code} {text[:300]}") from e
                last = f"{e.code} {text[:200]}"
            except OSError as e:
                last = str(e)
            time.sleep(min(8.0, 0.5 * 2**attempt))
        raise PushError(f"{method} {url} failed {TRIES} times: {last}")

    def push_file(self, path: Path, name: str) -> dict:
        """Uploads one file (resuming what arrived of it before); the edge's last answer."""
        size, sha = path.stat().st_size, sha256_of(path)
        declared = json.dumps({"size": size, "sha256": sha}).encode()
        up = self._call("POST", self._url(name), declared, "application/json")
        with path.open("rb") as f:
            while not up.get("complete"):
                n = int(up["received"]) + 1
                part = int(up["part_size"])
                f.seek((n - 1) * part)
                chunk = f.read(part)
                try:
                    up = self._call(
                        "PUT", self._url(name, f"?part={n}"), chunk, "application/octet-stream"
                    )
                except PushError:
                    # Cut off mid-part: ask what arrived, then go on from there (once).
                    up = self._call("POST", self._url(name), declared, "application/json")
                    if int(up["received"]) + 1 != n:
                        continue
                    up = self._call(
                        "PUT", self._url(name, f"?part={n}"), chunk, "application/octet-stream"
                    )
        return up

    def push_folder(self, folder: Path, prefix: str) -> list[str]:
        """Every file under `folder`, as `prefix/<relative path>`; the names pushed."""
        names = []
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = path.relative_to(folder).as_posix()
            name = f"{prefix}/{rel}" if prefix else rel
            self.push_file(path, name)
            names.append(name)
        return names


def job_log(out: Path) -> Path | None:
    """The job's log: the file `ONRAMP_JOB_LOG` names (the Slurm wrapper's log of this run),
    else the runner's `output.log` beside `out/`; None when there is none."""
    named = os.environ.get("ONRAMP_JOB_LOG")
    path = Path(named) if named else out.parent / "output.log"
    return path if path.is_file() else None


def log_tail(path: Path, into: Path, limit: int = MAX_LOG_BYTES) -> Path:
    """`path` itself when it is at most `limit` bytes; else its last `limit` bytes from the
    first whole line, after a line that says how much was left out, written to `into`."""
    size = path.stat().st_size
    if size <= limit:
        return path
    with path.open("rb") as f:
        f.seek(size - limit)
        tail = f.read(limit)
    cut = tail.find(b"\n") + 1
    tail = tail[cut:]
    note = f"onramp-train: the first {size - len(tail)} bytes of this log are left out\n"
    into.write_bytes(note.encode() + tail)
    return into


def push_outputs(pusher: Pusher, out: Path) -> list[str]:
    """What a training left in its `out/`: `final/` (an adapter, when it holds
    `adapter_config.json`, else the model) with the run beside it, `merged/` when the adapter was
    merged, the latest checkpoint (`checkpoint-<step>/…`) when the run asks for it
    (`asks_checkpoint`), `metrics.json`, `results.json` (what the run achieved: evaluate.py),
    the spec the job ran (`spec.toml` beside `out/`, where the runner and the Slurm script write
    it), and the job's log as far as it was written (`job.log`: see `job_log`, cut by
    `log_tail`). The names pushed."""
    final = out / "final"
    prefix = "adapter" if (final / "adapter_config.json").exists() else "model"
    names = pusher.push_folder(final, prefix)
    if (out / "merged").is_dir():
        names += pusher.push_folder(out / "merged", "merged")
    latest = latest_checkpoint(out) if asks_checkpoint(final) else None
    if latest is not None:
        names += pusher.push_folder(latest, latest.name)
    for path, name in [
        (out / "metrics.json", "metrics.json"),
        (out / "results.json", "results.json"),
        (out.parent / "spec.toml", "spec.toml"),
    ]:
        if path.is_file():
            pusher.push_file(path, name)
            names.append(name)
    log = job_log(out)
    if log is not None:
        pusher.push_file(log_tail(log, out / "job.log.tail"), LOG_ARTIFACT)
        names.append(LOG_ARTIFACT)
    return names


def asks_checkpoint(final: Path) -> bool:
    """Whether the run, written beside the trained model, asks for its latest checkpoint to be
    pushed too (`checkpoint.upload`), so that a job on another backend can continue it."""
    try:
        doc = json.loads((final / "onramp-run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    plan = doc.get("plan") if isinstance(doc, dict) else None
    return isinstance(plan, dict) and plan.get("upload_checkpoint") is True


def latest_checkpoint(out: Path) -> Path | None:
    """The `checkpoint-<step>` folder of `out` with the highest step whose save finished."""
    found = [
        (int(d.name.split("-", 1)[1]), d)
        for d in out.glob("checkpoint-*")
        if d.is_dir() and d.name.split("-", 1)[1].isdigit() and (d / "trainer_state.json").is_file()
    ]
    return max(found)[1] if found else None


def from_env() -> Pusher | None:
    """The pusher this job's environment allows, or None (no report URL or token given)."""
    url, token = os.environ.get("ONRAMP_REPORT_URL"), os.environ.get("ONRAMP_REPORT_TOKEN")
    if not url or not token:
        return None
    return Pusher(base_from_report_url(url), token)


def main(argv: list[str]) -> int:
    """`OUT`: a training's `out/` folder, pushed as `push_outputs` says; `FOLDER PREFIX`: every
    file of FOLDER as `PREFIX/<path>`."""
    if len(argv) not in (1, 2):
        print(
            "usage: python -m onramp_train.artifacts OUT | FOLDER PREFIX",
            file=sys.stderr,
        )
        return 2
    pusher = from_env()
    if pusher is None:
        print(
            "onramp-train: ONRAMP_REPORT_URL and ONRAMP_REPORT_TOKEN are needed to push",
            file=sys.stderr,
        )
        return 2
    try:
        if len(argv) == 1:
            names = push_outputs(pusher, Path(argv[0]))
        else:
            names = pusher.push_folder(Path(argv[0]), argv[1])
    except (PushError, OSError) as e:
        print(f"onramp-train: could not push the artifacts: {e}", file=sys.stderr)
        return 1
    print(f"onramp-train: pushed {len(names)} artifacts to the edge", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
