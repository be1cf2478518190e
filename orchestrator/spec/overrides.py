"""The command line's ``KEY=VALUE`` overrides follow the omegaconf/Hydra convention: ``KEY=VALUE``
changes a key the sweep already has, ``+KEY=VALUE`` adds one it does not have (``+sides.new.ref=main``,
``+env.OMP_PROC_BIND=close``), ``~KEY`` removes one the sweep file has (``~sides.old``: a dict
override can only merge, so dropping a side needs its own word). Anything else is a typo that would
silently change the sweep (a third side from ``sides.manger.ref=HEAD~1``, removing a key that is not
there), so it is an error naming the key."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from orchestrator.errors import SpecError

ADD_PREFIX = "+"
REMOVE_PREFIX = "~"
TEXT_LEAVES = ("ref",)  # git refs: text even where YAML reads a number (short SHA 5e51197, 0123456)
_QUOTES = ("'", '"')
_ABSENT = object()


def plain_overrides(base: DictConfig, dotlist: list[str] | tuple[str, ...]) -> list[str]:
    """``dotlist`` with every key checked against ``base`` (the sweep before overrides) and the ``+``
    of added keys removed; ``SpecError`` names a key that is missing without ``+`` or present with it."""
    plain = []
    for i, item in enumerate(dotlist):
        key, sep, value = item.partition("=")
        adds = key.startswith(ADD_PREFIX)
        name = key.removeprefix(ADD_PREFIX).strip()
        if not sep or not name:
            raise SpecError(f"{item!r} is not of the form key=value or +key=value", f"override[{i}]")
        exists = has_key(base, name)
        if adds and exists:
            raise SpecError(f"{name!r} is already in the sweep; change it with {name}={value} (no '+')",
                            f"override[{i}]")
        if not adds and not exists and _open_parent(base, name):
            raise SpecError(f"{name!r} is not in the sweep; to add it, write +{name}={value}"
                            f"{_near(base, name)}", f"override[{i}]")
        plain.append(f"{name}={_as_text(value) if name.rpartition('.')[2] in TEXT_LEAVES else value}")
    return plain


def _as_text(value: str) -> str:
    """``value`` YAML-quoted, so the parser keeps it as written; a value already quoted stays as is."""
    stripped = value.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in _QUOTES:
        return value
    return "'" + stripped.replace("'", "''") + "'"


def apply_removals(raw: DictConfig, dotlist: list[str] | tuple[str, ...]) -> list[str]:
    """Remove from ``raw`` (the sweep file, in place) every key a ``~KEY`` item names; returns the
    other items. ``SpecError`` names a ``~KEY`` the file does not have, a value, or a list item."""
    rest = []
    for i, item in enumerate(dotlist):
        if not item.startswith(REMOVE_PREFIX):
            rest.append(item)
            continue
        key = item.removeprefix(REMOVE_PREFIX).strip()
        where = f"override[{i}]"
        if not key or "=" in key:
            raise SpecError(f"{item!r}: ~KEY removes a key and takes no value", where)
        if "[" in key:
            raise SpecError(f"{item!r}: a list item cannot be removed; set the list whole, e.g. cases=[a, b]",
                            where)
        if not has_key(raw, key):
            raise SpecError(f"{key!r} is not in the sweep file, so ~{key} removes nothing{_near(raw, key)}",
                            where)
        parent, _, leaf = key.rpartition(".")
        node = OmegaConf.select(raw, parent) if parent else raw
        if not isinstance(node, DictConfig):
            raise SpecError(f"{item!r}: {parent!r} is not a mapping", where)
        del node[leaf]
    return rest


def has_key(config: DictConfig, key: str) -> bool:
    """Whether ``key`` (dotted, ``a[0]`` allowed) exists in ``config``, a mandatory unset value included."""
    try:
        return OmegaConf.select(config, key, default=_ABSENT, throw_on_missing=True) is not _ABSENT
    except MissingMandatoryValue:
        return True
    except OmegaConfBaseException:
        return False


def _deepest_parent(config: DictConfig, key: str) -> tuple[str, DictConfig]:
    """The deepest mapping above ``key`` that exists, and its dotted name ('' for the root)."""
    parts = key.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:depth])
        node = OmegaConf.select(config, parent, default=None) if has_key(config, parent) else None
        if isinstance(node, DictConfig):
            return parent, node
    return "", config


def _open_parent(config: DictConfig, key: str) -> bool:
    """Whether the mapping ``key`` would land in takes new keys (``sides``, ``env``); a typed one
    (the schema's dataclasses) rejects them itself, naming the key."""
    _, node = _deepest_parent(config, key)
    return OmegaConf.get_type(node) is dict


def _near(config: DictConfig, key: str) -> str:
    """``' (sides has: old, new)'``: the keys the deepest existing parent of ``key`` has."""
    parent, node = _deepest_parent(config, key)
    return f" ({parent} has: {', '.join(map(str, node.keys())) or 'nothing'})" if parent else ""
