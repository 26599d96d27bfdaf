"""The package as published: built, checked as PyPI would, installed beside Airflow.

The sdist is built from a copy of what git would commit and the wheel from the
sdist (``compat/package.py``); both pass ``twine check --strict``. The wheel goes
into a new virtualenv with this virtualenv's Airflow release and nothing else
pinned, as a user installs it; everything below runs from that virtualenv, in a
folder outside the checkout and without the caller's ``PYTHONPATH``, so nothing can
come from the source tree. uv's cache makes a second run quick; how long each step
took is printed at the end of the module (``pytest tests/test_package.py``) and with
``-rP``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.parser import HeaderParser
from importlib.metadata import version
from pathlib import Path, PurePosixPath

import pytest

from compat.package import ROOT, Package, build, check, source_files

pytestmark = pytest.mark.slow

UV = Path(sys.executable).with_name("uv")
PYPI = "https://pypi.org/simple"
PIP_INDEX = os.environ.get("PIP_INDEX_URL") or PYPI
"""Where ``python -m build`` gets setuptools from (its pip)."""
UV_INDEX = os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL") or PYPI
DISTRIBUTION = "airflow-quota-provider"
PACKAGE = "airflow_quota_provider"
SERVED = {  # what the api-server serves of the GPU Quotas page: path -> content type
    "/quota/": "text/html; charset=utf-8",
    "/quota/static/app.js": "text/javascript; charset=utf-8",
    "/quota/static/app.css": "text/css; charset=utf-8",
    "/quota/static/history.js": "text/javascript; charset=utf-8",
    "/quota/static/vendor/uPlot.iife.min.js": "text/javascript; charset=utf-8",
    "/quota/static/vendor/uPlot.min.css": "text/css; charset=utf-8",
}


@dataclass
class Timings:
    """How long each step of the module took, printed when the module ends."""

    steps: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.steps[name] = time.monotonic() - start
            print(f"test_package: {name}: {self.steps[name]:.1f} s")

    def summary(self) -> str:
        steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.steps.items())
        return f"test_package took {time.monotonic() - self.started:.1f} s ({steps})"


@dataclass(frozen=True)
class Installed:
    """The new virtualenv, and a folder outside the checkout to run its commands in."""

    venv: Path
    home: Path
    """The working directory; ``AIRFLOW_HOME`` is ``home/airflow``."""

    def run(self, *command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = _clean_environment()
        env.update(AIRFLOW_HOME=str(self.home / "airflow"), VIRTUAL_ENV=str(self.venv))
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return subprocess.run(
            list(command),
            cwd=self.home,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def python(self, source: str, timeout: float = 300) -> str:
        """Run ``source`` with the virtualenv's Python; its output, which must be a success."""
        done = self.run(str(self.venv / "bin" / "python"), "-c", source, timeout=timeout)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout


def _clean_environment() -> dict[str, str]:
    """This process's environment without what would point a child at the checkout."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AIRFLOW", "PYTHON", "VIRTUAL_ENV"))
    }


def _skip_if_offline(what: str, index: str) -> None:
    """Skip, saying why, when ``what`` failed because ``index`` cannot be reached."""
    url = index.rstrip("/") + "/pip/"
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=20).close()
    except urllib.error.HTTPError:
        return  # it answered: the index is there, so the failure is ours
    except OSError as error:
        pytest.skip(f"{what} needs the package index, and {url} cannot be reached ({error})")


@pytest.fixture(scope="module")
def timings(request: pytest.FixtureRequest) -> Iterator[Timings]:
    found = Timings()
    yield found
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is None or capture is None:  # a pytest-xdist worker: there -rP shows the steps
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        reporter.write_line(found.summary())


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory, timings: Timings) -> Package:
    with timings.step("build the sdist and the wheel from it, twine check"):
        try:
            built = build(tmp_path_factory.mktemp("dist"))
        except RuntimeError:  # the build's own environment comes from the index
            _skip_if_offline("python -m build", PIP_INDEX)
            raise
        check(built)
    return built


@pytest.fixture(scope="module")
def installed(
    package: Package, tmp_path_factory: pytest.TempPathFactory, timings: Timings
) -> Iterator[Installed]:
    if not UV.exists():
        pytest.skip(f"uv is missing beside {sys.executable}: `make .venv/.installed` installs it")
    home = tmp_path_factory.mktemp("user")
    venv = home / "venv"
    env = _clean_environment()
    with timings.step("uv: a new virtualenv with Airflow and the wheel"):
        subprocess.run(
            [str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, env=env
        )
        # As a user installs it: this Airflow release and the wheel, nothing else pinned
        # (no extras either: the base dependencies must be enough for all of the below).
        wanted = [f"apache-airflow=={version('apache-airflow')}", str(package.wheel)]
        command = [str(UV), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python")]
        done = subprocess.run(
            [*command, *wanted], env=env, capture_output=True, text=True, check=False
        )
    if done.returncode != 0:
        _skip_if_offline("uv pip install", UV_INDEX)
        pytest.fail(f"uv pip install {' '.join(wanted)} failed:\n{done.stderr[-3000:]}")
    yield Installed(venv, home)
    shutil.rmtree(venv, ignore_errors=True)


def test_the_sdist_and_the_wheel_carry_the_package_and_nothing_else(package: Package) -> None:
    with tarfile.open(package.sdist) as sdist:
        in_sdist = {file.name.split("/", 1)[1] for file in sdist.getmembers() if file.isfile()}
    with zipfile.ZipFile(package.wheel) as wheel:
        in_wheel = {name for name in wheel.namelist() if not name.endswith("/")}
    sources = {str(PurePosixPath(path)) for path in source_files() if path.parts[0] == PACKAGE}
    assert {f"{PACKAGE}/py.typed", f"{PACKAGE}/simulation/example.yaml"} <= sources
    licenses = {str(path) for path in source_files() if _is_license(path)}
    made_by_setuptools = {"PKG-INFO", "setup.cfg"} | {
        name for name in in_sdist if name.startswith(f"{PACKAGE}.egg-info/")
    }
    # the tests stay out (MANIFEST.in): they need the repository around them
    assert in_sdist == sources | licenses | made_by_setuptools | {
        "README.md",
        "pyproject.toml",
        "MANIFEST.in",
    }
    name, release = package.wheel.name.split("-")[:2]
    dist_info = f"{name}-{release}.dist-info/"
    assert {name for name in in_wheel if not name.startswith(dist_info)} == sources
    assert {f"{dist_info}licenses/{name}" for name in licenses} <= in_wheel


def _is_license(path: Path) -> bool:
    """A file setuptools ships by itself as a license file (PEP 639)."""
    names = ("LICEN", "COPYING", "NOTICE", "AUTHORS")
    return len(path.parts) == 1 and path.name.upper().startswith(names)


def test_the_metadata_names_the_entry_points_airflow_and_pypi_read(package: Package) -> None:
    with zipfile.ZipFile(package.wheel) as wheel:
        names = wheel.namelist()
        metadata = HeaderParser().parsestr(
            wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        )
        entry_points = wheel.read(
            next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        ).decode()
    assert metadata["Name"] == DISTRIBUTION
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata["Requires-Python"] == ">=3.11"
    assert "apache-airflow>=2.11" in metadata.get_all("Requires-Dist", [])
    for line in (
        "[apache_airflow_provider]",
        "provider_info = airflow_quota_provider:get_provider_info",
        "[airflow.plugins]",
        "gpu_quotas = airflow_quota_provider.view.plugin:QuotaViewPlugin",
        "[console_scripts]",
        "airflow-quota = airflow_quota_provider.cli:main",
    ):
        assert line in entry_points.splitlines(), entry_points


def test_it_is_installed_from_the_wheel_not_read_from_the_checkout(installed: Installed) -> None:
    found = json.loads(
        installed.python(
            textwrap.dedent(
                """
                import json
                from importlib import metadata, resources
                import yaml
                import airflow_quota_provider as p
                files = resources.files(p)
                static = files.joinpath("view", "static")
                example = files.joinpath("simulation", "example.yaml").read_text()
                print(json.dumps({
                    "file": p.__file__,
                    "from": json.loads(metadata.distribution(p.__name__).read_text(
                        "direct_url.json") or "{}"),
                    "typed": files.joinpath("py.typed").is_file(),
                    "example": sorted(yaml.safe_load(example)),
                    "static": sorted(f.name for f in static.iterdir() if f.is_file()),
                }))
                """
            )
        )
    )
    assert Path(found["file"]).is_relative_to(installed.venv), found
    assert found["from"]["url"].endswith(".whl"), found  # not a directory, nor editable
    assert "dir_info" not in found["from"], found
    assert found["typed"], found
    assert {"job_queue", "shares", "jobs"} <= set(found["example"]), found
    static = Path(PACKAGE, "view", "static")
    assert found["static"] == sorted(path.name for path in source_files() if path.parent == static)


def test_airflow_lists_the_provider_and_its_commands_run(installed: Installed) -> None:
    providers = installed.run("airflow", "providers", "list", "--output", "json")
    assert providers.returncode == 0, providers.stderr[-2000:]
    listed = {
        p["package_name"]: p["version"]
        for p in json.loads(providers.stdout[providers.stdout.index("[") :])
    }
    assert listed.get(DISTRIBUTION) == version(DISTRIBUTION), listed
    helped = installed.run("airflow-quota", "--help")
    assert helped.returncode == 0 and "pool-manager" in helped.stdout, helped.stderr
    simulated = installed.run("airflow-quota", "simulate")  # its bundled example scenario
    assert simulated.returncode == 0, simulated.stderr[-2000:]
    assert "RECLAIM" in simulated.stdout, simulated.stdout[-2000:]


def test_a_real_api_server_serves_the_gpu_quotas_page_and_its_files(installed: Installed) -> None:
    """The plugin as the api-server mounts it: the page, its files, its navigation entry."""
    served = installed.python(
        textwrap.dedent(
            f"""
            import json, urllib.error, urllib.request
            from pathlib import Path
            from airflow_quota_provider.demo.processes import Processes
            from airflow_quota_provider.demo.stack import Stack, StackSettings

            work = Path({str(installed.home / "stack")!r})
            (work / "dags").mkdir(parents=True, exist_ok=True)
            config = work / "quota.yaml"
            config.write_text("job_queue: q\\ncapacity: {{gpu: 4}}\\nshares: []\\n")
            settings = StackSettings(workdir=work, dags_folder=work / "dags", quota_config=config)
            answers = {{}}
            with Processes(work / "logs") as processes:
                stack = Stack(settings, processes)
                stack.start_api_server()
                for path in {sorted(SERVED)!r}:
                    with urllib.request.urlopen(stack.api_url + path, timeout=30) as answer:
                        body = answer.read().decode()
                        answers[path] = [answer.status, answer.headers["content-type"], body]
                try:  # the data needs a login, the page and its files do not
                    urllib.request.urlopen(stack.api_url + "/quota/api/v1/queues", timeout=30)
                except urllib.error.HTTPError as refused:
                    answers["anonymous"] = refused.code
                answers["plugins"] = stack.api.get("/api/v2/plugins")["plugins"]
            print(json.dumps(answers))
            """
        ),
        timeout=400,
    )
    answers = json.loads(served.strip().splitlines()[-1])
    for path, kind in SERVED.items():
        status, served_kind, body = answers[path]
        assert (status, served_kind) == (200, kind), path
        assert body == (ROOT / PACKAGE / "view" / "static").joinpath(
            "index.html" if path.endswith("/") else path.split("/static/", 1)[1]
        ).read_text(encoding="utf-8"), f"{path} is not the checkout's file"
    assert answers["anonymous"] == 401
    plugin = next(p for p in answers["plugins"] if p["name"] == "gpu_quotas")
    assert [view["href"] for view in plugin["external_views"]] == ["quota/"], plugin
    assert [app["url_prefix"] for app in plugin["fastapi_apps"]] == ["/quota"], plugin
