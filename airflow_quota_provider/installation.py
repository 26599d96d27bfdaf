"""What the installation the provider runs in lacks, or holds that is known to break it.

Each check gives one :class:`Finding`: what was checked, whether it is fine, and how
to fix it when not. ``airflow-quota doctor`` prints them; ``compat/lines.py`` pins a
plain install of each Airflow line with the same :data:`KNOWN_BREAKAGES`, so what
the tests install and what users are told are one table.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from airflow_quota_provider.versions import SUPPORTED, release

DISTRIBUTION = "airflow-quota-provider"
QUOTA_SHARE_OPERATIONS = ("CreateQuotaShare", "ListQuotaShares", "UpdateQuotaShare")
"""AWS Batch calls the provider makes that older botocore releases do not know."""
FIRST_BOTOCORE_WITH_QUOTA_SHARES = "1.42.72"


@dataclass(frozen=True)
class Finding:
    """One check of the installation or of Airflow's api-server.

    :param what: what was checked, with what was found (``cryptography 50.0.2``).
    :param ok: whether it is fine.
    :param fix: what to do when it is not (empty when it is).
    """

    what: str
    ok: bool
    fix: str = ""

    def line(self) -> str:
        """The finding as one line: ``ok`` or ``FAIL``, what, and the fix."""
        mark = "ok  " if self.ok else "FAIL"
        return f"{mark}  {self.what}" + (f"; fix: {self.fix}" if self.fix else "")


@dataclass(frozen=True)
class Breakage:
    """Releases of a package that break an Airflow line, with or without this provider.

    :param lines: the Airflow release lines broken (``"3.1"``).
    :param package: the package's name on PyPI.
    :param breaking: the releases that break them, as a version specifier.
    :param pin: the requirement that avoids them.
    :param why: what fails, as seen.
    """

    lines: tuple[str, ...]
    package: str
    breaking: str
    pin: str
    why: str

    def breaks(self, version: str) -> bool:
        try:
            return Version(version) in SpecifierSet(self.breaking)
        except InvalidVersion:
            return False


KNOWN_BREAKAGES = (
    Breakage(
        ("2.11", "3.0", "3.1"),
        "cryptography",
        ">=51",
        "cryptography<51",
        "from 51 on cryptography's MultiFernet is a Rust object that takes no new attribute, "
        "and Airflow's get_fernet sets one (AttributeError: 'MultiFernet' object has no "
        "attribute 'is_encrypted'): with a fernet key set, as airflow.cfg has by default, no "
        "connection password or Variable can be stored or read",
    ),
    Breakage(
        ("3.0",),
        "pyjwt",
        ">=2.11",
        "pyjwt<2.11",
        "PyJWT 2.11 and later refuse the token Airflow 3.0's api-server signs (TypeError: "
        "Issuer (iss) must be a string): nobody logs in",
    ),
    Breakage(
        ("3.0",),
        "cadwyn",
        ">=6",
        "cadwyn<6",
        "with cadwyn 6 or later Airflow 3.0's execution API refuses every task's start "
        "(model_attributes_type)",
    ),
    Breakage(
        ("3.0",),
        "fastapi",
        ">=0.118",
        "fastapi<0.118",
        "from FastAPI 0.118 on (a dependency's exit code runs after the response) Airflow "
        "3.0's API answers a write before it commits it: a create of an existing pool "
        "answers 201, a pool read right after a change shows the old one",
    ),
    Breakage(
        ("3.2",),
        "fastapi",
        ">=0.156.1",
        "fastapi<0.156.1",
        "with fastapi 0.156.1 or later Airflow 3.2's execution API does not start (Model "
        "'TITerminalStatePayload' needs a discriminator field)",
    ),
    Breakage(
        ("3.2",),
        "svcs",
        ">=26",
        "svcs<26",
        "with svcs 26 dag.test()'s in-process execution API fails every task's state change "
        "('State' object has no attribute 'svcs_registry')",
    ),
)
"""Every package release known to break a supported Airflow line: a plain install of
that line pins them (the README's install section lists the pins per line)."""


def line_of(airflow: str) -> str:
    """The release line (``"3.1"``) of an Airflow version (``"3.1.8"``)."""
    found = release(airflow)
    return f"{found.major}.{found.minor}"


def breakages_of(line: str) -> tuple[Breakage, ...]:
    """The known breakages of one Airflow line."""
    return tuple(breakage for breakage in KNOWN_BREAKAGES if line in breakage.lines)


def pins_of(line: str) -> tuple[str, ...]:
    """What a plain install of ``line`` must pin."""
    return tuple(breakage.pin for breakage in breakages_of(line))


def airflow_finding(airflow: str) -> Finding:
    """Whether the provider supports this Airflow release."""
    line = line_of(airflow)
    if line in SUPPORTED:
        return Finding(f"Airflow {airflow}: supported ({SUPPORTED[line]})", True)
    lines = ", ".join(SUPPORTED)
    return Finding(
        f"Airflow {airflow}: the provider supports the lines {lines}, not {line}",
        False,
        f'install a supported Airflow (pip install "apache-airflow=={max(SUPPORTED)}.*")',
    )


def breakage_findings(airflow: str, installed: Mapping[str, str]) -> list[Finding]:
    """One finding per known breakage of ``airflow``'s line whose package is installed.

    :param installed: package name (lower case) -> installed version.
    """
    found = []
    for breakage in breakages_of(line_of(airflow)):
        version = installed.get(breakage.package)
        if version is None:
            continue
        what = f"{breakage.package} {version}"
        if breakage.breaks(version):
            what += f" breaks Airflow {airflow}: {breakage.why}"
            found.append(Finding(what, False, f'pip install "{breakage.pin}"'))
        else:
            found.append(Finding(f"{what} (Airflow {airflow} needs {breakage.pin})", True))
    return found


def requirement_findings(
    requirements: Iterable[str], installed: Mapping[str, str]
) -> list[Finding]:
    """The provider's own requirements (no extras) that are missing or of a refused release;
    one finding saying all are met when none is."""
    unmet = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = requirement.name.lower()
        version = installed.get(name)
        if version is None:
            unmet.append(Finding(f"{name} is not installed", False, f'pip install "{text}"'))
        elif not requirement.specifier.contains(version, prereleases=True):
            what = f"{name} {version} is not what the provider needs ({requirement.specifier})"
            unmet.append(Finding(what, False, f'pip install "{requirement}"'))
    return unmet or [Finding(f"{DISTRIBUTION}'s requirements are met", True)]


def botocore_finding(version: str, operations: Iterable[str]) -> Finding:
    """Whether botocore knows AWS Batch's quota-share calls.

    :param operations: the operations of botocore's own ``batch`` service model.
    """
    missing = [name for name in QUOTA_SHARE_OPERATIONS if name not in set(operations)]
    if not missing:
        return Finding(f"botocore {version} has AWS Batch's quota-share calls", True)
    first = FIRST_BOTOCORE_WITH_QUOTA_SHARES
    return Finding(
        f"botocore {version} has no AWS Batch quota-share calls ({', '.join(missing)})",
        False,
        f'pip install "boto3>={first}" "botocore>={first}" (Airflow\'s constraint files pin '
        "an older one: lift those pins, as the README's install section shows)",
    )


def fernet_finding(round_trip: Callable[[], None], airflow: str) -> Finding:
    """Whether Airflow's own fernet encrypts and decrypts (connections and Variables take
    that path whenever a fernet key is set); ``round_trip`` raises if it cannot."""
    try:
        round_trip()
    except Exception as error:  # whatever breaks it, the user must hear of it
        pins = " ".join(f'"{pin}"' for pin in pins_of(line_of(airflow)))
        fix = f"pip install {pins} (the pins of Airflow {airflow})" if pins else ""
        what = (
            f"Airflow {airflow} cannot encrypt or decrypt connections and Variables "
            f"({type(error).__name__}: {error})"
        )
        return Finding(what, False, fix or "see the error above")
    return Finding(f"Airflow {airflow} encrypts and decrypts with its fernet key", True)


# -- what this installation holds ----------------------------------------------------------


def installed_versions() -> dict[str, str]:
    """Every installed distribution's version, by its lower-case name (the first found on
    ``sys.path`` wins, as for imports)."""
    found: dict[str, str] = {}
    for distribution in importlib.metadata.distributions():
        name = distribution.metadata["Name"]
        if name:
            found.setdefault(_canonical(name), distribution.version)
    return found


def provider_requirements() -> list[str]:
    return importlib.metadata.requires(DISTRIBUTION) or []


def airflow_fernet_round_trip() -> None:
    """Encrypt and decrypt a text with Airflow's own fernet, as it does a connection's
    password; with a fresh key when the configuration sets none."""
    import os

    from cryptography.fernet import Fernet

    key = "AIRFLOW__CORE__FERNET_KEY"
    from airflow.configuration import conf

    if not conf.get("core", "fernet_key", fallback=""):
        os.environ[key] = Fernet.generate_key().decode()
    from airflow.models.crypto import get_fernet

    fernet = get_fernet()
    secret = b"airflow-quota doctor"
    if fernet.decrypt(fernet.encrypt(secret)) != secret:
        raise ValueError("a decrypted text differs from what was encrypted")


def local_findings() -> list[Finding]:
    """Every check of this installation: Airflow's line, known breakages, the provider's
    requirements, botocore's AWS Batch model, Airflow's fernet."""
    installed = installed_versions()
    airflow = installed.get("apache-airflow")
    if airflow is None:
        return [Finding("Airflow is not installed", False, 'pip install "apache-airflow"')]
    findings = [airflow_finding(airflow), *breakage_findings(airflow, installed)]
    findings += requirement_findings(provider_requirements(), installed)
    if "botocore" in installed:
        import botocore.session

        model = botocore.session.get_session().get_service_model("batch")
        findings.append(botocore_finding(installed["botocore"], model.operation_names))
    findings.append(fernet_finding(airflow_fernet_round_trip, airflow))
    return findings


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")
