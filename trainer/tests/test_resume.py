"""resume.py against a stand-in for the edge's `GET /api/jobs/{id}/resume[/{name}]`: the
checkpoint an earlier job uploaded lands whole in `out/checkpoint-<step>`, each file checked by
its SHA-256; a job with a checkpoint of its own asks nothing; a job that continues a job which
uploaded none, a file that is not what was uploaded, and a job with no route are each said."""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from onramp_train import resume
from onramp_train.errors import DataError

FILES = {
    "checkpoint-12/adapter_model.safetensors": b"weights" * 1000,
    "checkpoint-12/trainer_state.json": b'{"global_step": 12}',
    "checkpoint-12/global_step12/rng.pt": b"rng",
}


def _serve(files: dict[str, bytes], listed: dict[str, bytes] | None = None, status=200):
    seen: list[str] = []
    listed = files if listed is None else listed

    class Edge(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            seen.append(self.path)
            assert self.headers["authorization"] == "Bearer tok"
            if status != 200:
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            if self.path.endswith("/resume"):
                doc = {
                    "job_id": "e1",
                    "step": 12,
                    "artifacts": [
                        {"name": n, "size": len(b), "sha256": hashlib.sha256(b).hexdigest()}
                        for n, b in listed.items()
                    ],
                }
                body = json.dumps(doc).encode()
            else:
                body = files[urllib.parse.unquote(self.path.rsplit("/", 1)[1])]
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = HTTPServer(("127.0.0.1", 0), Edge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


@pytest.fixture
def out(tmp_path, monkeypatch):
    monkeypatch.setattr(resume.time, "sleep", lambda s: None)
    monkeypatch.delenv("RANK", raising=False)
    return tmp_path / "out"


def _route(monkeypatch, server):
    port = server.server_address[1]
    monkeypatch.setenv("ONRAMP_REPORT_URL", f"http://127.0.0.1:{port}/api/jobs/j2/report")
    monkeypatch.setenv("ONRAMP_REPORT_TOKEN", "tok")


def test_the_uploaded_checkpoint_lands_whole_and_checked(out, monkeypatch):
    server, seen = _serve(FILES)
    _route(monkeypatch, server)
    assert resume.resume(out, None) is None and not seen
    got = resume.resume(out, "e1")
    assert got == out / "checkpoint-12"
    for name, body in FILES.items():
        assert (out / name).read_bytes() == body
    assert seen[0] == "/api/jobs/j2/resume" and len(seen) == 1 + len(FILES)
    assert [p.name for p in out.iterdir()] == ["checkpoint-12"], "no temporary folder left"
    # Started again, it has its own checkpoint: the edge is not asked.
    assert resume.resume(out, "e1") is None and len(seen) == 1 + len(FILES)
    server.shutdown()


def test_a_file_not_as_uploaded_and_one_of_another_checkpoint_are_refused(out, monkeypatch):
    changed = dict(FILES, **{"checkpoint-12/trainer_state.json": b"forged"})
    server, _ = _serve(changed, listed=FILES)
    _route(monkeypatch, server)
    with pytest.raises(DataError, match="not what it uploaded"):
        resume.resume(out, "e1")
    assert not (out / "checkpoint-12").exists()
    server.shutdown()
    two = dict(FILES, **{"checkpoint-6/trainer_state.json": b"{}"})
    server, _ = _serve(two)
    _route(monkeypatch, server)
    with pytest.raises(DataError, match="more than one checkpoint"):
        resume.resume(out, "e1")
    server.shutdown()


def test_none_uploaded_or_no_route_is_said(out, monkeypatch, capsys):
    server, _ = _serve({}, status=404)
    _route(monkeypatch, server)
    with pytest.raises(DataError, match="uploaded none"):
        resume.resume(out, "e1")
    assert resume.main([str(out), "e1"]) == 4
    assert "onramp-train: error: [data]" in capsys.readouterr().err
    server.shutdown()
    monkeypatch.delenv("ONRAMP_REPORT_TOKEN")
    with pytest.raises(DataError, match="no route"):
        resume.resume(out, "e1")
