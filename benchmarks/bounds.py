"""The committed bounds of ``bounds.yaml``, for the benchmark scripts."""

from __future__ import annotations

from pathlib import Path

import yaml


def bound(name: str) -> float:
    data = yaml.safe_load((Path(__file__).with_name("bounds.yaml")).read_text())
    return float(data[name])
