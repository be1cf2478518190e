"""The sweep YAML of ``shasweep bisect``: an ordinary sweep file with exactly one case and one gate.

``sides`` and ``baseline`` (and a gate's ``side``) may be present and are ignored: every step of a
bisect compares a candidate commit (side ``cand``) with the good one (side ``good``, the baseline).
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, ListConfig

from orchestrator.errors import SpecError
from orchestrator.spec.load import read_yaml, spec_from_config
from orchestrator.spec.schema import SweepSpec

GOOD_SIDE, CANDIDATE_SIDE = "good", "cand"


def load_bisect_spec(path: str | Path, dotlist: list[str], good: str, bad: str) -> SweepSpec:
    """Load and validate ``path`` with ``dotlist`` as the spec of a bisect from ``good`` to ``bad``."""
    return bisect_spec_from_config(read_yaml(Path(path)), dotlist, good, bad, Path(path).resolve().parent)


def bisect_spec_from_config(raw: DictConfig, dotlist: list[str], good: str, bad: str,
                            base: Path | None = None) -> SweepSpec:
    """``raw`` with its sides replaced by ``good`` (baseline) and ``cand`` at ``bad``, validated
    (``base``: where relative paths start, as for ``spec_from_config``)."""
    raw = raw.copy()
    for key in ("sides", "baseline"):
        raw.pop(key, None)
    raw["sides"] = {GOOD_SIDE: {"ref": good}, CANDIDATE_SIDE: {"ref": bad}}
    raw["baseline"] = GOOD_SIDE
    if isinstance(raw.get("gates"), ListConfig):
        for gate in raw["gates"]:
            if isinstance(gate, DictConfig):
                gate.pop("side", None)
    kept = [item for item in dotlist if not item.startswith(("sides", "baseline"))]
    spec = spec_from_config(raw, kept, base)
    if len(spec.cases) != 1:
        raise SpecError(f"a bisect takes exactly one case, got {len(spec.cases)}: {', '.join(spec.cases)}",
                        "cases")
    if len(spec.gates) != 1:
        raise SpecError(f"a bisect takes exactly one gate (it defines a bad commit), got {len(spec.gates)}",
                        "gates")
    return spec
