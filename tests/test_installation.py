"""The checks of ``airflow-quota doctor`` on installations given as tables of versions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from airflow_quota_provider.installation import (
    KNOWN_BREAKAGES,
    Finding,
    airflow_finding,
    botocore_finding,
    breakage_findings,
    fernet_finding,
    line_of,
    pins_of,
    requirement_findings,
)
from airflow_quota_provider.versions import SUPPORTED

CRYPTOGRAPHY_WHY = next(b.why for b in KNOWN_BREAKAGES if b.package == "cryptography")


@pytest.mark.parametrize(
    ("line", "pins"),
    [
        ("2.11", ("cryptography<51",)),
        ("3.0", ("cryptography<51", "pyjwt<2.11", "cadwyn<6", "fastapi<0.118")),
        ("3.1", ("cryptography<51",)),
        ("3.2", ("fastapi<0.156.1", "svcs<26")),
        ("3.3", ()),
    ],
)
def test_each_line_pins_what_is_known_to_break_it(line: str, pins: tuple[str, ...]) -> None:
    assert pins_of(line) == pins


def test_every_breakage_names_supported_lines_and_a_pin_of_its_own_package() -> None:
    for breakage in KNOWN_BREAKAGES:
        assert set(breakage.lines) <= set(SUPPORTED), breakage
        assert breakage.pin.startswith(breakage.package), breakage


@pytest.mark.parametrize(
    ("airflow", "installed", "expected"),
    [
        pytest.param(
            "3.1.8",
            {"cryptography": "51.0.1"},
            [
                Finding(
                    f"cryptography 51.0.1 breaks Airflow 3.1.8: {CRYPTOGRAPHY_WHY}",
                    False,
                    'pip install "cryptography<51"',
                )
            ],
            id="cryptography 51 beside Airflow 3.1",
        ),
        pytest.param(
            "3.1.8",
            {"cryptography": "50.0.2"},
            [Finding("cryptography 50.0.2 (Airflow 3.1.8 needs cryptography<51)", True)],
            id="cryptography 50 beside Airflow 3.1",
        ),
        pytest.param(
            "3.0.0rc1",
            {"cryptography": "51.0.0", "pyjwt": "2.10.1", "fastapi": "0.118.0"},
            [
                Finding(
                    f"cryptography 51.0.0 breaks Airflow 3.0.0rc1: {CRYPTOGRAPHY_WHY}",
                    False,
                    'pip install "cryptography<51"',
                ),
                Finding("pyjwt 2.10.1 (Airflow 3.0.0rc1 needs pyjwt<2.11)", True),
                Finding(
                    "fastapi 0.118.0 breaks Airflow 3.0.0rc1: "
                    + next(b.why for b in KNOWN_BREAKAGES if b.pin == "fastapi<0.118"),
                    False,
                    'pip install "fastapi<0.118"',
                ),
            ],
            id="a 3.0 release candidate is of line 3.0; cadwyn absent is not checked",
        ),
        pytest.param("3.3.2", {"cryptography": "51.0.1"}, [], id="Airflow 3.3 wraps the fernet"),
    ],
)
def test_known_breakages_are_found_by_the_installed_versions(
    airflow: str, installed: dict[str, str], expected: list[Finding]
) -> None:
    assert breakage_findings(airflow, installed) == expected


def test_an_unsupported_airflow_says_which_lines_are() -> None:
    assert line_of("2.10.5") == "2.10"
    assert airflow_finding("2.10.5") == Finding(
        "Airflow 2.10.5: the provider supports the lines 2.11, 3.0, 3.1, 3.2, 3.3, not 2.10",
        False,
        'install a supported Airflow (pip install "apache-airflow==3.3.*")',
    )
    assert airflow_finding("3.3.2") == Finding("Airflow 3.3.2: supported (everything)", True)


def test_requirements_missing_or_too_old_are_named_with_the_requirement() -> None:
    requirements = [
        "botocore>=1.42.72",
        "PyYAML",
        "asgiref",
        'matplotlib; extra == "report"',
    ]
    installed = {"botocore": "1.40.0", "pyyaml": "6.0.2"}
    assert requirement_findings(requirements, installed) == [
        Finding(
            "botocore 1.40.0 is not what the provider needs (>=1.42.72)",
            False,
            'pip install "botocore>=1.42.72"',
        ),
        Finding("asgiref is not installed", False, 'pip install "asgiref"'),
    ]
    met = {"botocore": "1.44.0", "pyyaml": "6.0.2", "asgiref": "3.8"}
    assert requirement_findings(requirements, met) == [
        Finding("airflow-quota-provider's requirements are met", True)
    ]


def test_a_botocore_without_quota_share_calls_is_told_to_upgrade() -> None:
    found = botocore_finding("1.40.0", ["SubmitJob", "ListQuotaShares"])
    assert found == Finding(
        "botocore 1.40.0 has no AWS Batch quota-share calls (CreateQuotaShare, UpdateQuotaShare)",
        False,
        'pip install "boto3>=1.42.72" "botocore>=1.42.72" (Airflow\'s constraint files pin an '
        "older one: lift those pins, as the README's install section shows)",
    )
    operations = ["CreateQuotaShare", "ListQuotaShares", "UpdateQuotaShare"]
    assert botocore_finding("1.44.0", operations).ok


def test_a_fernet_that_fails_names_the_error_and_the_lines_pins() -> None:
    def broken() -> None:
        raise AttributeError("'MultiFernet' object has no attribute 'is_encrypted'")

    assert fernet_finding(broken, "3.0.6") == Finding(
        "Airflow 3.0.6 cannot encrypt or decrypt connections and Variables (AttributeError: "
        "'MultiFernet' object has no attribute 'is_encrypted')",
        False,
        'pip install "cryptography<51" "pyjwt<2.11" "cadwyn<6" "fastapi<0.118" '
        "(the pins of Airflow 3.0.6)",
    )
    assert fernet_finding(lambda: None, "3.3.2") == Finding(
        "Airflow 3.3.2 encrypts and decrypts with its fernet key", True
    )


def test_a_finding_is_one_line_with_its_fix() -> None:
    assert Finding("a", True).line() == "ok    a"
    assert Finding("b", False, "do c").line() == "FAIL  b; fix: do c"


def test_the_readme_gives_each_lines_pins_as_the_table_has_them() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    rows = readme.split("| Airflow | a plain install also pins | because |\n|---|---|---|\n")[1]
    said: dict[str, set[str]] = {line: set() for line in SUPPORTED}
    for row in rows.split("\n\n")[0].splitlines():
        lines, pins = row.split(" | ")[0].strip("| "), row.split(" | ")[1]
        for line in lines.split(", "):
            said[line] |= set(re.findall(r"`([^`]+)`", pins))
    assert said == {line: set(pins_of(line)) for line in SUPPORTED}
