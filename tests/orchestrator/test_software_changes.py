"""Two real batches of the same SHAs whose benches report different package versions (the runtime
package upgraded on the host between them): drift names the package, and `compare` lists it in its
software section next to the ratio of each batch."""

from __future__ import annotations

import json

import pytest
import yaml
from fakebench.fakerepo import COMMAND, make_fake_repo

from orchestrator.cli.main import main
from orchestrator.errors import EXIT_OK

EARLIER = {"mujoco-uni-runtime": "0.3.1", "numpy": "2.1.0"}
LATER = {"mujoco-uni-runtime": "0.4.0", "numpy": "2.1.0"}


@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    """(results root, earlier sweep id, later sweep id) of two sweeps of the fake repo's two commits."""
    tmp = tmp_path_factory.mktemp("software")
    repo = make_fake_repo(tmp)
    sweep = {"name": "batch", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
             "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []}, "command": list(COMMAND),
             "params": {"num_envs": 8, "warmup": 1, "measure": 4, "threads": 1}, "repeats": 2,
             "timeout_s": 60, "gates": [{"metric": "physics_ms", "max_ratio": 0.6}]}
    path = tmp / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHASWEEP_HOME", str(tmp / "home"))
        mp.chdir(repo.path)
        for versions in (EARLIER, LATER):  # the bench worker inherits the variable
            mp.setenv("FAKE_BENCH_VERSIONS", json.dumps(versions))
            assert main(["run", str(path), "--no-progress"]) == EXIT_OK
    root = repo.path / "results"
    ids = sorted(p.stem for p in (root / "sweeps").glob("batch-*.json"))
    assert len(ids) == 2
    return root, ids[0], ids[1]


@pytest.mark.slow
def test_drift_names_the_package_that_changed(batches, capsys):
    root, _, later = batches
    capsys.readouterr()
    main(["report", later, "--results", str(root)])
    capsys.readouterr()
    md = (root / "reports" / f"{later}.md").read_text()  # the terminal shows a compact rendering
    drift = md.split("## Drift", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in drift.splitlines() if line.startswith("| sac/fake/none | ")]
    assert rows and all("| mujoco-uni-runtime 0.3.1 -> 0.4.0 |" in row for row in rows), drift
    assert "numpy" not in drift, "an unchanged package is not named"
    csv = (root / "reports" / f"{later}.csv").read_text()
    assert "mujoco-uni-runtime 0.3.1 -> 0.4.0" in csv


@pytest.mark.slow
def test_compare_lists_the_software_and_both_ratios(batches, capsys):
    root, earlier, later = batches
    capsys.readouterr()
    out_html = root / "cmp.html"
    assert main(["compare", earlier, later, "--results", str(root), "--format", "html",
                 "--out", str(out_html)]) == EXIT_OK
    md = capsys.readouterr().out
    software = md.split("## Software", 1)[1].split("\n## ", 1)[0]
    assert "| mujoco-uni-runtime | bench | 0.3.1 | 0.4.0 |" in software
    assert "numpy" not in software and "Warning" not in md, "same settings, same host"
    ratio_rows = [line for line in md.splitlines() if line.startswith("| new / old | physics_ms | ")]
    (row,) = ratio_rows
    before, after = row.split(" | ")[2].split(" -> ")
    assert float(before) == pytest.approx(0.5, abs=0.02) and float(after) == pytest.approx(0.5, abs=0.02)
    assert row.count("95% CI [") == 2, "both batches' intervals"
    page = out_html.read_text()
    assert "<td>mujoco-uni-runtime</td><td>bench</td><td>0.3.1</td><td>0.4.0</td>" in page
