"""Robot constants: model paths, joint/body/sensor names and keyframes of the project's robots.
Imports nothing of envruntime outside ``envruntime.robots``; the models live in ``envruntime/assets``."""

from __future__ import annotations

from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"
"""``envruntime/assets``: the MJCF models and the G1 reference clip (package data)."""
