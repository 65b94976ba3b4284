"""Where a job's dataset may come from: the datasets root by id, or its own folder."""

import os

import pytest

from onramp_train.data import DataError, resolve


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    root = tmp_path / "datasets"
    root.mkdir()
    (root / "shared-set.jsonl").write_text('{"text": "a"}\n')
    job = tmp_path / "job"
    job.mkdir()
    (job / "mine.txt").write_text("hello\n")
    monkeypatch.chdir(job)
    monkeypatch.setenv("ONRAMP_DATASETS", str(root))
    return tmp_path


def test_an_id_resolves_under_the_root_and_a_relative_path_inside_the_job(job_folder):
    assert resolve("shared-set") == job_folder / "datasets" / "shared-set.jsonl"
    assert resolve("mine.txt").resolve() == job_folder / "job" / "mine.txt"


@pytest.mark.parametrize(
    "escape",
    ["/etc/passwd", "~/x.txt", "../datasets/shared-set.jsonl", "sub/../../x", ".."],
)
def test_a_path_that_leaves_the_root_or_the_job_is_refused(job_folder, escape):
    with pytest.raises(DataError, match="absolute path|home folder|through `..`"):
        resolve(escape)


def test_a_link_out_of_the_job_folder_is_not_followed(job_folder):
    secret = job_folder / "secret.txt"
    secret.write_text("runner secret\n")
    os.symlink(secret, job_folder / "job" / "link.txt")
    with pytest.raises(DataError, match="not found"):
        resolve("link.txt")
