"""The package as published: built, checked as PyPI would, installed beside Airflow.

The sdist is built from the checkout and the wheel from the sdist
(``compat/package.py``); both pass ``twine check --strict``. The wheel goes into a
new virtualenv with the Airflow release of this one and nothing else pinned, as a
user installs it; everything below runs from that virtualenv, in a folder outside
the checkout, so nothing can come from the source tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from compat.package import Package, build, check

pytestmark = pytest.mark.slow

UV = Path(sys.executable).with_name("uv")
QUOTA = "job_queue: ml-training\ncapacity: {gpu: 4}\nshares:\n  - {name: a, capacity: {gpu: 4}}\n"


@dataclass(frozen=True)
class Installed:
    venv: Path
    home: Path
    """A folder outside the checkout: the working directory and AIRFLOW_HOME."""

    def run(self, *command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("AIRFLOW", "PYTHON", "VIRTUAL_ENV"))
        }
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
        done = self.run(str(self.venv / "bin" / "python"), "-c", source, timeout=timeout)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Package:
    built = build(tmp_path_factory.mktemp("dist"))
    check(built)
    return built


@pytest.fixture(scope="module")
def installed(package: Package, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    if not UV.exists():
        pytest.skip(f"uv is missing beside {sys.executable}: `make .venv/.installed` installs it")
    from airflow import __version__ as airflow_version

    home = tmp_path_factory.mktemp("user")
    venv = home / "venv"
    subprocess.run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    wanted = [f"apache-airflow=={airflow_version}", f"{package.wheel}[postgres]"]
    environment = {**os.environ, "VIRTUAL_ENV": str(venv)}
    subprocess.run([str(UV), "pip", "install", "--quiet", *wanted], check=True, env=environment)
    yield Installed(venv, home)
    shutil.rmtree(venv, ignore_errors=True)


def test_the_sdist_carries_what_the_wheel_is_built_from(package: Package) -> None:
    import tarfile
    import zipfile

    with tarfile.open(package.sdist) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"README.md", "pyproject.toml"} <= names
    wheel = set(zipfile.ZipFile(package.wheel).namelist())
    data = {
        "airflow_quota_provider/py.typed",
        "airflow_quota_provider/simulation/example.yaml",
        "airflow_quota_provider/view/static/index.html",
        "airflow_quota_provider/view/static/app.js",
        "airflow_quota_provider/view/static/app.css",
    }
    assert data <= wheel
    sources = {
        str(path.relative_to(Path(__file__).parents[1]))
        for path in (Path(__file__).parents[1] / "airflow_quota_provider").rglob("*.py")
    }
    assert sources <= wheel and sources <= names
    assert not any(name.startswith(("tests/", "dags/", "compat/")) for name in wheel)


def test_it_is_installed_not_read_from_the_checkout_and_has_its_files(
    installed: Installed,
) -> None:
    found = json.loads(
        installed.python(
            textwrap.dedent(
                """
                import json
                from importlib import resources
                import airflow_quota_provider as p
                files = resources.files(p)
                print(json.dumps({
                    "file": p.__file__,
                    "typed": files.joinpath("py.typed").is_file(),
                    "example": files.joinpath("simulation", "example.yaml").is_file(),
                    "page": files.joinpath("view", "static", "index.html").is_file(),
                }))
                """
            )
        )
    )
    assert found["file"].startswith(str(installed.venv)), found
    assert found["typed"] and found["example"] and found["page"], found


def test_airflow_lists_the_provider_and_its_commands_run(installed: Installed) -> None:
    providers = installed.run("airflow", "providers", "list", "--output", "json")
    assert providers.returncode == 0, providers.stderr[-2000:]
    listed = {
        p["package_name"] for p in json.loads(providers.stdout[providers.stdout.index("[") :])
    }
    assert "airflow-quota-provider" in listed
    helped = installed.run("airflow-quota", "--help")
    assert helped.returncode == 0 and "pool-manager" in helped.stdout, helped.stderr
    simulated = installed.run("airflow-quota", "simulate")  # its bundled example scenario
    assert simulated.returncode == 0, simulated.stderr[-2000:]
    assert simulated.stdout.strip()


def test_the_api_server_serves_the_gpu_quotas_page_and_its_files(installed: Installed) -> None:
    served = installed.python(
        textwrap.dedent(
            f"""
            import json, urllib.request
            from pathlib import Path
            from airflow_quota_provider.demo.processes import Processes
            from airflow_quota_provider.demo.stack import Stack, StackSettings

            QUOTA = {QUOTA!r}
            work = Path({str(installed.home / "stack")!r})
            (work / "dags").mkdir(parents=True, exist_ok=True)
            config = work / "quota.yaml"
            config.write_text(QUOTA)
            settings = StackSettings(workdir=work, dags_folder=work / "dags", quota_config=config)
            answers = {{}}
            with Processes(work / "logs") as processes:
                stack = Stack(settings, processes)
                stack.start_api_server()
                for path in ("/quota/", "/quota/static/app.js", "/quota/static/app.css"):
                    with urllib.request.urlopen(stack.api_url + path, timeout=30) as answer:
                        body = answer.read().decode()
                        answers[path] = [answer.status, answer.headers["content-type"], body[:2000]]
            print(json.dumps(answers))
            """
        ),
        timeout=400,
    )
    answers = json.loads(served.strip().splitlines()[-1])
    status, kind, body = answers["/quota/"]
    assert (status, kind.split(";")[0]) == (200, "text/html") and "GPU Quotas" in body
    status, kind, body = answers["/quota/static/app.js"]
    assert status == 200 and "javascript" in kind and "function" in body
    assert answers["/quota/static/app.css"][:2] == [200, "text/css; charset=utf-8"]
