"""Run the steps of shasweep's GitHub Action (action.yml) and GitLab template (templates/gitlab-ci.yml)
on this machine as their runners would: each ``run:`` script with bash (GitHub's ``bash --noprofile
--norc -eo pipefail``), its ``env:`` and ``if:`` evaluated from the inputs, the earlier steps' outputs
(read back from each step's ``$GITHUB_OUTPUT`` file) and the ``github`` context. ``uses:`` steps
(GitHub's cache and artifact actions) are not run: they are returned with their ``with:`` evaluated,
so a test can check what they would cache or upload."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
GITLAB_TEMPLATE = ROOT / "templates" / "gitlab-ci.yml"
_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}")
_TOKEN = re.compile(r"\s*(\|\||&&|==|!=|\(|\)|'[^']*'|[A-Za-z_][\w.-]*(?:\(\))?)")


@dataclass
class Step:
    """A step as it ran (``code``, ``output``, ``outputs``) or was skipped (``code`` None)."""

    name: str
    uses: str | None = None
    with_: dict[str, str] = field(default_factory=dict)
    code: int | None = None
    output: str = ""
    outputs: dict[str, str] = field(default_factory=dict)


def evaluate(expression: str, context: dict[str, object]) -> object:
    """A GitHub expression of the forms action.yml uses: context lookups (``inputs.x``,
    ``steps.ci.outputs.y``, ``github.x``), string literals, ``==``, ``!=``, ``&&``, ``||``,
    parentheses and ``always()``."""
    tokens = _TOKEN.findall(expression)
    position = 0

    def take() -> str:
        nonlocal position
        position += 1
        return tokens[position - 1]

    def atom() -> object:
        token = take()
        if token == "(":
            value = either()
            take()
            return value
        if token == "always()":
            return True
        if token.startswith("'"):
            return token[1:-1]
        value: object = context
        for part in token.split("."):
            value = value.get(part, "") if isinstance(value, dict) else ""
        return value

    def compare() -> object:
        left = atom()
        while position < len(tokens) and tokens[position] in ("==", "!="):
            equal = take() == "=="
            left = (str(left) == str(atom())) == equal
        return left

    def joined(operator: str, operand: Callable[[], object]) -> object:
        """``a && b`` is b when a is truthy, else a; ``a || b`` is a when a is truthy, else b."""
        left = operand()
        while position < len(tokens) and tokens[position] == operator:
            take()
            right = operand()
            left = (right if left else left) if operator == "&&" else (left or right)
        return left

    def both() -> object:
        return joined("&&", compare)

    def either() -> object:
        return joined("||", both)

    return either()


def substitute(text: str | None, context: dict[str, object]) -> str:
    """``text`` with every ``${{ expression }}`` replaced by its value."""
    return _EXPRESSION.sub(lambda m: str(evaluate(m.group(1), context)), "" if text is None else text)


def read_outputs(path: Path) -> dict[str, str]:
    """A ``$GITHUB_OUTPUT`` file: ``name=value`` lines and ``name<<DELIMITER`` blocks; the last wins."""
    outputs: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.exists() else []
    index = 0
    while index < len(lines):
        line = lines[index]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, index + 1)
            outputs[name] = "\n".join(lines[index + 1 : end])
            index = end + 1
            continue
        name, value = line.split("=", 1)
        outputs[name] = value
        index += 1
    return outputs


def run_action(
    inputs: dict[str, str],
    env: dict[str, str],
    github: dict[str, str],
    work: Path,
    only: set[str] | None = None,
    earlier: dict[str, dict[str, str]] | None = None,
) -> list[Step]:
    """The action's steps run in order (``only``: these step names alone, ``earlier``: the outputs of
    steps not run, by id), as GitHub would with ``inputs`` (the others at their defaults), the process
    environment ``env`` and the ``github`` context; a step's ``if:`` holds only while every earlier
    step succeeded unless it says ``always()``."""
    document = yaml.safe_load(ACTION.read_text())
    given = {name: spec.get("default", "") for name, spec in document["inputs"].items()}
    context: dict[str, object] = {
        "github": github,
        "runner": {"os": "Linux"},
        "steps": {name: {"outputs": outputs} for name, outputs in (earlier or {}).items()},
    }
    context["inputs"] = {name: substitute(value, context) for name, value in {**given, **inputs}.items()}
    steps, failed = [], False
    for index, raw in enumerate(document["runs"]["steps"]):
        step = Step(raw["name"], uses=raw.get("uses"))
        steps.append(step)
        wanted = only is None or step.name in only
        condition = raw.get("if", "success()").replace("success()", "always()")
        # without always(), a condition holds only while every earlier step succeeded (GitHub's rule)
        run = (
            wanted and bool(evaluate(condition, context)) and ("always()" in raw.get("if", "") or not failed)
        )
        if step.uses is not None or not run:
            step.with_ = {key: substitute(value, context) for key, value in raw.get("with", {}).items()}
            continue
        outputs_file = work / f"github_output.{index}"
        step_env = {
            **env,
            **{key: substitute(value, context) for key, value in raw.get("env", {}).items()},
            "GITHUB_OUTPUT": str(outputs_file),
        }
        script = work / f"step.{index}.sh"
        script.write_text(raw["run"])
        where = substitute(raw.get("working-directory", "."), context)
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=Path(env.get("GITHUB_WORKSPACE", work)) / where,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        step.code, step.output = done.returncode, done.stdout + done.stderr
        step.outputs = read_outputs(outputs_file)
        if "id" in raw:
            context["steps"][raw["id"]] = {"outputs": step.outputs}  # type: ignore[index]
        failed = failed or (done.returncode != 0 and not raw.get("continue-on-error", False))
    return steps


def run_gitlab_job(
    variables: dict[str, str], env: dict[str, str], cwd: Path, template: Path = GITLAB_TEMPLATE
) -> subprocess.CompletedProcess:
    """The ``.shasweep`` job's script as GitLab's runner runs it: one shell, the template's variables
    (``variables`` over them) in its environment, stopping at the first command that fails."""
    job = yaml.safe_load(template.read_text())[".shasweep"]
    script = "\n".join(job["script"])
    job_env = {**env, **{key: str(value) for key, value in job["variables"].items()}, **variables}
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=job_env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def base_env(home: Path) -> dict[str, str]:
    """The test process's environment for a step: shasweep from this checkout, its own home."""
    return {
        **os.environ,
        "SHASWEEP_HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
