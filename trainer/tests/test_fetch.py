"""fetch.py against a stand-in for the edge's `GET /api/jobs/{id}/dataset?id=…`: the file lands in
the job's folder checked by its id; a download cut off goes on with `Range`; a file that does
not hash to its id is never used; a refusal says what the edge answered."""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from onramp_train import data, fetch
from onramp_train.errors import DataError


def _serve(body: bytes, cut_first: bool, status: int = 200, extension: str | None = None):
    seen: list[dict[str, str]] = []

    class Edge(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            seen.append({k.lower(): v for k, v in self.headers.items()} | {":path": self.path})
            if status != 200:
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            start = 0
            rng = self.headers.get("range")
            if rng:
                start = int(rng.removeprefix("bytes=").split("-")[0])
                self.send_response(206)
                self.send_header("content-range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            self.send_header("content-length", str(len(body) - start))
            if extension is not None:
                self.send_header("x-onramp-extension", extension)
            self.end_headers()
            if cut_first and len(seen) == 1:
                self.wfile.write(body[start : start + len(body) // 2])
                self.wfile.flush()
                self.connection.close()
                return
            self.wfile.write(body[start:])

    server = HTTPServer(("127.0.0.1", 0), Edge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def _id(body: bytes) -> str:
    return "ds_" + hashlib.sha256(body).hexdigest()[:32]


@pytest.fixture
def job(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fetch.time, "sleep", lambda s: None)
    return tmp_path


def _route(monkeypatch, server):
    port = server.server_address[1]
    monkeypatch.setenv("ONRAMP_REPORT_URL", f"http://127.0.0.1:{port}/api/jobs/j1/report")
    monkeypatch.setenv("ONRAMP_REPORT_TOKEN", "tok")


def test_a_download_cut_off_goes_on_with_range_and_lands_checked(job, monkeypatch):
    body = b'{"text": "to be or not to be"}\n' * 20000
    server, seen = _serve(body, cut_first=True)
    _route(monkeypatch, server)
    ds = _id(body)
    path = data.resolve(ds)
    assert path == job / "datasets" / ds
    assert path.read_bytes() == body
    assert len(seen) == 2 and seen[1]["range"].startswith("bytes=")
    assert all(h["authorization"] == "Bearer tok" for h in seen)
    # The edge serves each dataset the spec names (training set, eval set) by its id.
    assert {h[":path"] for h in seen} == {f"/api/jobs/j1/dataset?id={ds}"}
    assert not list((job / "datasets").glob(".*.part"))
    # Found again without asking the edge.
    assert data.resolve(ds) == path and len(seen) == 2
    server.shutdown()


def test_a_file_that_is_not_its_id_is_never_used(job, monkeypatch):
    body = b"some text\n" * 100
    server, _ = _serve(body, cut_first=False)
    _route(monkeypatch, server)
    wrong = "ds_" + "0" * 32
    with pytest.raises(DataError, match="does not hash to its id"):
        data.resolve(wrong)
    assert not (job / "datasets" / wrong).exists()
    # A file planted in the folder under the id is replaced by the edge's.
    ds = _id(body)
    (job / "datasets").mkdir(exist_ok=True)
    (job / "datasets" / ds).write_bytes(b"planted")
    assert data.resolve(ds).read_bytes() == body
    server.shutdown()


def test_a_refusal_and_a_missing_route_are_said(job, monkeypatch):
    server, _ = _serve(b"", cut_first=False, status=404)
    _route(monkeypatch, server)
    with pytest.raises(DataError, match="HTTP 404"):
        data.resolve("ds_" + "a" * 32)
    server.shutdown()
    monkeypatch.delenv("ONRAMP_REPORT_TOKEN")
    with pytest.raises(DataError, match="no route"):
        data.resolve("ds_" + "b" * 32)


def test_the_job_scripts_fetch_command_fetches_or_says_why(job, monkeypatch, capsys):
    """`python -m onramp_train.fetch ID`, which the Slurm wrapper runs with the job's token."""
    body = b"a corpus\n" * 50
    server, seen = _serve(body, cut_first=False)
    _route(monkeypatch, server)
    ds = _id(body)
    assert fetch.main([ds]) == 0
    assert (job / "datasets" / ds).read_bytes() == body
    assert f"dataset {ds} is in the job's folder ({len(body)} bytes)" in capsys.readouterr().out
    assert fetch.main(["../etc/passwd"]) == 2
    assert fetch.main(["ds_" + "c" * 32]) == 4
    assert "onramp-train: error: [data]" in capsys.readouterr().err
    assert len(seen) == 2
    server.shutdown()


def test_an_uploaded_file_is_read_by_the_layout_its_declared_name_gave_it(job, monkeypatch):
    # Notes declared as `notes.md` that start like a JSON array: the checker read them as text
    # (by the name), and so does the trainer, though the file in the folder is named by its id.
    body = b"[![build](https://ci/badge.svg)](https://ci)\n# My notes\nprose\n"
    server, _ = _serve(body, cut_first=False, extension="md")
    _route(monkeypatch, server)
    path = data.resolve(_id(body))
    assert fetch.layout_name(path) == f"{path.name}.md"
    assert data.layout(fetch.layout_name(path), body) == "text"
    assert not list((job / "datasets").glob(".*.part*"))
    server.shutdown()
    # An extension that is not a plain word is not kept; the file's own name is used.
    body2 = b'{"text": "a"}\n'
    server, _ = _serve(body2, cut_first=False, extension="m d")
    _route(monkeypatch, server)
    path = data.resolve(_id(body2))
    assert fetch.layout_name(path) == path.name
    server.shutdown()


def test_layouts_go_by_the_name_as_the_checker_does():
    assert data.layout("a.txt", b'{"text": "a"}') == "text"
    assert data.layout("a.jsonl", b'ion": "cut"}\n{"text": "a"}') == "jsonl"
    assert data.layout("a.ndjson", b"[1]") == "json_array"
    assert data.layout("a.ndjson", b"x") == "jsonl"
    assert data.layout("a.json", b"[{}]") == "json_array"
    assert data.layout("a.json", b"not json") == "jsonl"
    assert data.layout("a.csv", b"instruction,output") == "text"
    assert data.layout("a", b" [") == "json_array"
    assert data.layout("a.txt", b" \n\t") is None
