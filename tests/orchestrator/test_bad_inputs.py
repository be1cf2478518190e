"""The bad-input corpus (tests/data/bad_inputs/expected.yaml): every malformed input gets one clear
error message and its documented exit code, and leaves the results root exactly as it was."""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from fakebench.fakerepo import FakeRepo, make_fake_repo

from orchestrator.cli.main import main
from orchestrator.contract import RunResult
from orchestrator.errors import ShasweepError
from orchestrator.plan.expand import build_plan, resolve_sweep
from orchestrator.plan.integrity import record_digest
from orchestrator.plan.lifecycle import new_record
from orchestrator.spec.load import load_spec
from orchestrator.store import records as sweep_record
from orchestrator.store.parquet import write_run
from orchestrator.worker.protocols.v1_records import StreamState
from orchestrator.worker.stream import follow_lines

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad_inputs"
CASES: dict[str, dict] = yaml.safe_load((CORPUS / "expected.yaml").read_text())
SEEDED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> tuple[FakeRepo, str]:
    """A two-commit repository whose results root holds one recorded sweep with one ok run."""
    repo = make_fake_repo(tmp_path_factory.mktemp("corpus"))
    resolved = resolve_sweep(load_spec(CORPUS / "sweeps" / "base.yaml"), repo.path)
    sweep_id = sweep_record.reserve_sweep_id(resolved.results_root, "corpus", SEEDED)
    runs = build_plan(resolved, sweep_id)
    sweep_record.write_record(resolved.results_root,
                              new_record(resolved, sweep_id, SEEDED, len(runs)))
    write_run(runs[0], RunResult(status="ok", error=None, started_at=SEEDED, ended_at=SEEDED, exit_code=0,
                                 log_dir=""))
    return repo, sweep_id


def snapshot(root: Path) -> dict[str, str]:
    """Every recorded file under ``root`` (hidden ones too) with a hash of its content; not the results
    index, derived data any reader may bring up to date (``store.index``: written whole or not at all)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).parts[0] != "index"}


def place(case: dict, repo: FakeRepo, root: Path, sweep_id: str) -> list[Path]:
    """Copy the case's corpus files into the results root; returns where they went."""
    placed = []
    for source, target in (case.get("place") or {}).items():
        path = root / target.format(sweep_id=sweep_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        if source.endswith(".json"):
            text = (CORPUS / source).read_text()
            for name, value in {"{repo}": repo.path, "{sha0}": repo.shas[0], "{sha1}": repo.shas[1]}.items():
                text = text.replace(name, str(value))
            path.write_text(with_real_digest(text, source))
        else:
            shutil.copyfile(CORPUS / source, path)
        placed.append(path)
    return placed


def with_real_digest(text: str, source: str) -> str:
    """``"{digest}"`` replaced by the digest of the record as written, less an edit the case makes."""
    if '"{digest}"' not in text:
        return text
    record = json.loads(text)
    if source.endswith("edited.json"):  # the digest of the record before its command was edited
        record["spec"].pop("command")
    return text.replace('"{digest}"', json.dumps(record_digest(record)))


def test_the_corpus_is_big_and_every_file_in_it_is_used():
    assert len(CASES) >= 30
    used = {Path(arg.format(data=CORPUS, sweep_id="x")).resolve() for case in CASES.values()
            for arg in case.get("argv", [])} | {(CORPUS / case["stream"]).resolve() for case in CASES.values()
                                                 if "stream" in case}
    used |= {(CORPUS / source).resolve() for case in CASES.values() for source in case.get("place", {})}
    files = {p.resolve() for p in CORPUS.rglob("*") if p.is_file() and p.name != "expected.yaml"}
    assert files <= used, f"corpus files no case uses: {sorted(map(str, files - used))}"


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if "argv" in case])
def test_bad_command_input(name, seeded, monkeypatch, capsys, tmp_path):
    case = CASES[name]
    repo, sweep_id = seeded
    root = repo.path / "results"
    home = tmp_path / "home"
    monkeypatch.setenv("SHASWEEP_HOME", str(home))
    monkeypatch.chdir(repo.path)
    placed = place(case, repo, root, sweep_id)
    before = snapshot(root)
    try:
        code = main([arg.format(data=CORPUS, sweep_id=sweep_id) for arg in case["argv"]])
        after = snapshot(root)
    finally:
        for path in placed:
            path.unlink()
    err = capsys.readouterr().err
    assert code == case["code"], err
    assert case["message"] in err
    kind = case.get("stderr", "error")
    assert "Traceback" not in err and len([line for line in err.splitlines() if f"{kind}:" in line]) == 1, err
    assert after == before, "the results root changed"
    assert not home.exists(), "something was dispatched"


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if "stream" in case])
def test_bad_stream(name):
    case = CASES[name]
    state = StreamState()
    with pytest.raises(ShasweepError) as info:
        for line in follow_lines(CORPUS / case["stream"], lambda: True):
            state.feed(line)
    assert info.value.exit_code == case["code"]
    assert case["message"] in str(info.value)
