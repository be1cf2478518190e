"""Several pyperf scripts as one suite run: ``python -m orchestrator.suitekit.pyperf_scripts --out
RESULT SCRIPT... [-- ARG...]`` runs each script (``python SCRIPT ARG... -o FILE``) one after
another, as a process of its own, and writes their benchmarks to ``RESULT`` as one pyperf file, each
benchmark keeping its script's common metadata. Nothing of it runs inside a measured process: pyperf
spawns its own workers under each script. A script that fails ends the run with its exit code.

``shasweep ci`` renders this command for a project with more than one pyperf script (docs/ci.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

FORMAT_VERSION = "1.0"
SUITE_METADATA = ("perf_version", "python_version")  # what the merged file's own metadata keeps
USAGE = "usage: python -m orchestrator.suitekit.pyperf_scripts --out RESULT SCRIPT... [-- ARG...]"


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    ours, extra = argv[:split], argv[split + 1:]
    if len(ours) < 3 or ours[0] != "--out":
        print(USAGE, file=sys.stderr)
        return 2
    documents = []
    with tempfile.TemporaryDirectory(prefix="pyperf-scripts-") as tmp:
        for i, script in enumerate(ours[2:]):
            out = Path(tmp) / f"{i}.json"
            code = subprocess.run([sys.executable, script, *extra, "-o", str(out)], check=False).returncode
            if code != 0:
                print(f"pyperf_scripts: {script} exited {code}", file=sys.stderr)
                return code
            documents.append(json.loads(out.read_text(encoding="utf-8")))
    Path(ours[1]).write_text(json.dumps(merged(documents)), encoding="utf-8")
    return 0


def merged(documents: list[dict]) -> dict:
    """One pyperf document of ``documents``' benchmarks, in order; each benchmark's metadata is its
    file's common metadata under its own."""
    common = documents[0].get("metadata", {}) if documents else {}
    benchmarks = [{**bench, "metadata": {**document.get("metadata", {}), **bench.get("metadata", {})}}
                  for document in documents for bench in document.get("benchmarks", [])]
    return {"version": FORMAT_VERSION, "benchmarks": benchmarks,
            "metadata": {key: common[key] for key in SUITE_METADATA if key in common}}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
