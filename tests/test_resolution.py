"""pip's and uv's resolutions side by side (``compat/resolution.py``), on excerpts of what
pip 26.3 and uv 0.13.10 answered for Airflow 3.2.2's plain install."""

from __future__ import annotations

from typing import Any

import pytest

from compat.resolution import Comparison, Difference, compare, from_pip_report, from_requirements

WHEEL = "file:///work/.venv-compat/dist/airflow_quota_provider-0.1.0-py3-none-any.whl"
PIP_REPORT: dict[str, Any] = {
    "version": "1",
    "pip_version": "26.3",
    "install": [
        {
            "download_info": {"url": WHEEL, "archive_info": {}},
            "is_direct": True,
            "requested": True,
            "requested_extras": ["postgres"],
            "metadata": {
                "metadata_version": "2.4",
                "name": "airflow-quota-provider",
                "version": "0.1.0",
            },
        },
        {
            "download_info": {"url": "https://files.pythonhosted.org/packages/pyyaml-6.0.4.whl"},
            "is_direct": False,
            "requested": False,
            "metadata": {"metadata_version": "2.4", "name": "PyYAML", "version": "6.0.4"},
        },
        {
            "download_info": {"url": "https://files.pythonhosted.org/packages/te-4.16.0.whl"},
            "is_direct": False,
            "requested": False,
            "metadata": {
                "metadata_version": "2.4",
                "name": "typing_extensions",
                "version": "4.16.0",
            },
        },
    ],
    "environment": {"python_full_version": "3.11.7"},
}
UV_TXT = f"""\
airflow-quota-provider @ {WHEEL}
pyyaml==6.0.4
typing-extensions==4.16.0
"""


def test_pips_report_gives_each_package_it_would_install_by_its_normalized_name() -> None:
    assert from_pip_report(PIP_REPORT) == {
        "airflow-quota-provider": "0.1.0",
        "pyyaml": "6.0.4",
        "typing-extensions": "4.16.0",
    }


def test_uvs_requirements_give_pinned_versions_and_a_wheels_version_from_its_file_name() -> None:
    annotated = "# a comment\n" + UV_TXT.replace("==6.0.4", "==6.0.4  # via apache-airflow")
    assert from_requirements(annotated) == from_pip_report(PIP_REPORT)


def test_a_requirement_that_pins_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="'pyyaml>=6' pins no single version"):
        from_requirements("pyyaml>=6\n")


PIP = {"airflow-quota-provider": "0.1.0", "PyYAML": "6.0.4", "typing_extensions": "4.16.0"}
AGREED = Comparison(
    same=("airflow-quota-provider", "pyyaml", "typing-extensions"),
    versions=(),
    only_pip=(),
    only_uv=(),
)


@pytest.mark.parametrize(
    ("uv", "want", "lines"),
    [
        pytest.param(
            from_requirements(UV_TXT),
            AGREED,
            ["pip and uv agree: the same 3 packages at the same versions"],
            id="the same packages, named as each resolver names them, agree",
        ),
        pytest.param(
            {**from_requirements(UV_TXT), "pyyaml": "6.0.4.0"},
            AGREED,
            ["pip and uv agree: the same 3 packages at the same versions"],
            id="versions are compared as versions, not as text",
        ),
        pytest.param(
            {"airflow-quota-provider": "0.1.0", "pyyaml": "6.0.3", "typing-extensions-x": "1.0"},
            Comparison(
                same=("airflow-quota-provider",),
                versions=(Difference("pyyaml", "6.0.4", "6.0.3"),),
                only_pip=(Difference("typing-extensions", "4.16.0", None),),
                only_uv=(Difference("typing-extensions-x", None, "1.0"),),
            ),
            [
                "PACKAGE              PIP     UV",
                "pyyaml               6.0.4   6.0.3",
                "typing-extensions    4.16.0  -",
                "typing-extensions-x  -       1.0",
                "pip and uv differ on 3 of 4 packages: 1 at other versions, "
                "1 only pip takes, 1 only uv takes",
            ],
            id="another version, and a package only one takes, are told apart",
        ),
    ],
)
def test_two_resolutions_compared(uv: dict[str, str], want: Comparison, lines: list[str]) -> None:
    got = compare(PIP, uv)
    assert got == want
    assert got.agree == (not want.differences)
    assert [*got.table(), got.verdict()] == lines


def test_a_package_named_twice_in_one_resolution_is_refused() -> None:
    with pytest.raises(
        ValueError,
        match="^typing_extensions and typing-extensions are one package "
        r"\(typing-extensions\), taken twice$",
    ):
        compare({"typing_extensions": "4.16.0", "typing-extensions": "4.16.0"}, {})
