"""``shasweep ci``'s machine-readable outputs: one flat set of values (verdict, exit code, counts,
file paths: ``ci_comment.report_values``), written as GitHub step outputs (``$GITHUB_OUTPUT``) and as
a dotenv file (GitLab's ``artifacts:reports:dotenv``; names ``SHASWEEP_<NAME>``).

A value holding a line break is written in GitHub's delimited form, with a random delimiter; in the
dotenv file, which has no such form, its line breaks become blanks.
"""

from __future__ import annotations

import secrets


def github_output_text(values: dict[str, str]) -> str:
    """``name=value`` lines (the delimited form for a value with a line break)."""
    lines = []
    for name, value in values.items():
        if "\n" in value or "\r" in value:
            delimiter = f"SHASWEEP_{secrets.token_hex(8)}"
            lines += [f"{name}<<{delimiter}", value, delimiter]
        else:
            lines.append(f"{name}={value}")
    return "\n".join(lines) + "\n"


def dotenv_text(values: dict[str, str]) -> str:
    """``SHASWEEP_NAME=value`` lines; line breaks in a value become blanks."""
    return "".join(f"SHASWEEP_{name.upper().replace('-', '_')}={' '.join(value.split())}\n"
                   for name, value in values.items())
