"""What a reader does to rows of an older results format as it reads them (docs/design.md, "Results",
format versions), so every reader sees today's shape whatever version a file is.

Version 1 wrote every run's ``variant`` (the spec's default, ``manager``, for a bench command that
never received it); version 2 writes it only where the command passes ``{variant}``. Read, a row's
``variant`` is null unless its command passes it, in both versions.
"""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.compute as pc

from orchestrator.spec.commands import passes_variant

# a column a reader needs to migrate another it asked for: variant -> command
NEEDED_FOR: dict[str, str] = {"variant": "command"}


def stored_passes_variant(command: object) -> bool:
    """``spec.commands.passes_variant`` of a run row's ``command`` cell (the argv template as JSON); a
    row without one was written before the column existed, by envruntime's command, which passes it."""
    if command is None or (isinstance(command, float) and math.isnan(command)):
        return True
    try:
        argv = json.loads(command) if isinstance(command, str) else None
    except ValueError:
        return False
    return isinstance(argv, list) and passes_variant([str(arg) for arg in argv])


def migrated_runs(table: pa.Table) -> pa.Table:
    """``table`` (runs rows; ``command`` read beside ``variant``) with a variant only where the row's
    command passes ``{variant}``."""
    if "variant" not in table.column_names or "command" not in table.column_names or not table.num_rows:
        return table
    commands = table.column("command")
    passing = [command for command in pc.unique(commands).to_pylist() if stored_passes_variant(command)]
    keep = pc.fill_null(pc.is_in(commands, pa.array(passing, commands.type)), True)  # null: envruntime's
    variant = pc.if_else(keep, table.column("variant"), pa.scalar(None, table.schema.field("variant").type))
    return table.set_column(table.schema.get_field_index("variant"), "variant", variant)
