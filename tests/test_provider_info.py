"""Airflow finds the provider through its entry point and accepts what it declares."""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from pathlib import Path

import airflow
import jsonschema

import airflow_quota_provider


def test_the_entry_point_gives_provider_info_that_matches_airflows_schema() -> None:
    (point,) = [
        p
        for p in entry_points(group="apache_airflow_provider")
        if p.value.startswith("airflow_quota_provider")
    ]
    info = point.load()()
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    jsonschema.validate(info, schema)
    assert info["package-name"] == "airflow-quota-provider"
    assert info["versions"] == [airflow_quota_provider.__version__]


def test_it_names_every_airflow_line_it_is_tested_on() -> None:
    from compat.lines import LINES

    info = airflow_quota_provider.get_provider_info()
    lines = info["supported-airflow-versions"]
    assert list(lines) == [*(line.name for line in LINES), "3.3"]
    assert all(isinstance(what, str) and what for what in lines.values())
    assert airflow.__version__.startswith("3.3."), "the current line is the one make test runs"


def test_airflows_providers_manager_lists_the_provider() -> None:
    from airflow.providers_manager import ProvidersManager

    # Airflow leaves ProvidersManager.__init__ unannotated
    providers = ProvidersManager().providers  # type: ignore[no-untyped-call]
    assert "airflow-quota-provider" in providers
    assert providers["airflow-quota-provider"].version == airflow_quota_provider.__version__


def test_every_module_and_class_the_provider_declares_imports() -> None:
    import importlib

    info = airflow_quota_provider.get_provider_info()
    for kind in ("hooks", "operators", "sensors", "triggers"):
        for entry in info[kind]:
            for module in entry["python-modules"]:
                importlib.import_module(module)
    for path in info["extra-links"]:
        module, name = path.rsplit(".", 1)
        assert hasattr(importlib.import_module(module), name)
    assert info["config"]["quota_provider"]["options"]["poll_interval"]["default"] == "30"
