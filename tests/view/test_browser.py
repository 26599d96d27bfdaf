"""GPU Quotas in a real browser: headless Chromium (Debian's) logs into a real
``airflow api-server`` and opens the view from Airflow's navigation.

Skipped, saying why, when ``/usr/bin/chromium`` is missing (``make chromium``
installs it as root). Takes about a minute (the api-server starts in ~25 s).
Saves what a person sees (to ``docs/gpu-quotas.png`` with ``UPDATE_SCREENSHOT=1``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_quota_provider.airflow_pools.decide import Stop
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.config_file import load_config
from airflow_quota_provider.core import PreemptionKind
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.demo.ports import free_port
from tests.emulator.conftest import G5, P4D, Endpoint
from tests.view.conftest import PASSWORD, TASK_TAGS, USER, Story

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DOCS_SCREENSHOT = Path(__file__).parents[2] / "docs" / "gpu-quotas.png"
FLEET_CONFIG = Path(__file__).parents[1] / "pool_manager" / "fleet.yaml"
"""Rewritten only with ``UPDATE_SCREENSHOT=1``, so a test run leaves the tree as it was."""

pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason=f"{CHROMIUM} not found: install Debian's chromium (`make chromium` as root, "
        "or apt-get install -y chromium chromium-driver)",
    ),
    pytest.mark.usefixtures("aws_env"),
    pytest.mark.slow,
]


@contextmanager
def serving_api(env: dict[str, str], port: int, log_path: Path) -> Iterator[str]:
    """``airflow api-server`` as deployed, with ``env`` on top of this process's; its URL."""
    log = log_path.open("w")
    airflow = Path(sys.executable).with_name("airflow")
    process = subprocess.Popen(
        [str(airflow), "api-server", "--host", "127.0.0.1", "--port", str(port), "-w", "1"],
        env={**os.environ, "AIRFLOW__QUOTA_PROVIDER__VIEW_CACHE_SECONDS": "1", **env},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(f"{url}/api/v2/monitor/health", process, log_path)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


@pytest.fixture
def story_api_server(airflow_auth: None, story: Story, tmp_path: Path) -> Iterator[str]:
    """The api-server reading the populated endpoint; its base URL."""
    with serving_api({}, free_port(), tmp_path / "api-server.log") as url:
        yield url


@pytest.fixture
def fleet_api_server(airflow_auth: None, tmp_path: Path) -> Iterator[str]:
    """The api-server showing the pools fleet of ``tests/pool_manager/fleet.yaml``: it reads
    its own REST API as the test's user, and a manager database that recorded one
    preemption (vision's 2-slot task, 30 minutes after it started)."""
    database = f"sqlite:///{tmp_path / 'pool-manager.db'}"
    fleet = Fleet.of(load_config(FLEET_CONFIG))
    now = time.time()
    victim, preemptor = TaskKey("train", "run-1", "v-borrow"), TaskKey("train", "run-1", "n")
    stop = Stop(
        victim,
        fleet.pool_of("vision", "gpu"),
        PreemptionKind.RECLAIM,
        preemptor,
        fails=False,
        note="share vision borrows 2 gpu",
        slots=2,
        started=now - 1800,
    )
    Store(database).record_preemption(stop, datetime.fromtimestamp(now, UTC))
    port = free_port()
    env = {
        "AIRFLOW__QUOTA_PROVIDER__VIEW_FLEET_CONFIG": str(FLEET_CONFIG),
        "AIRFLOW__QUOTA_PROVIDER__VIEW_POOL_MANAGER_DATABASE": database,
        "AIRFLOW_CONN_AIRFLOW_API_DEFAULT": f"http://{USER}:{PASSWORD}@127.0.0.1:{port}",
    }
    with serving_api(env, port, tmp_path / "api-server.log") as url:
        yield url


def wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"api-server exited {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.5)
    pytest.fail(f"api-server not up after 120 s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        found = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield found
        found.close()


def test_a_person_sees_borrowing_waiting_and_preemption(
    browser: Any, story_api_server: str, story: Story, endpoint: Endpoint, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 1500})
    page = context.new_page()
    log_in(page, story_api_server)

    page.get_by_role("link", name="GPU Quotas").first.click()
    page.wait_for_url(f"{story_api_server}/plugin/gpu-quotas")
    view = page.frame_locator("iframe[title='GPU Quotas']")

    # a job queue, with its utilization over the last hours
    assert view.locator("header label").inner_text().startswith("Job queue")
    expect(view.get_by_role("heading", name="Utilization")).to_be_visible()

    # how each share shares, as the backend words it
    head = view.locator("[data-share=nlp] h3").inner_text()
    assert "LEND_AND_BORROW, borrow limit unlimited" in head

    # a share borrowing: nlp holds 2 g5 it does not own, lent by vision
    nlp_g5 = view.locator(f"[data-share=nlp] [data-unit='{G5}']")
    assert "owns 0 · uses 0 own + borrows 2" in nlp_g5.inner_text()
    assert nlp_g5.locator(".borrowed").bounding_box()["width"] > 0
    assert "lends 2" in view.locator(f"[data-share=vision] [data-unit='{G5}']").inner_text()

    # a waiting job with its reason and numbers, linked to its task instance
    waiting = view.locator("#waiting tbody tr")
    assert waiting.count() == 1
    row = waiting.first.inner_text()
    assert "NO_IDLE_CAPACITY" in row and f"vision needs 2 {P4D}" in row
    task = waiting.first.get_by_role("link", name="nlp_<finetune>.train")
    assert task.get_attribute("title") == TASK_TAGS["airflow:run_id"]
    runs = f"{story_api_server}/dags/nlp_%3Cfinetune%3E/runs/"
    assert task.get_attribute("href").startswith(runs)
    assert view.locator("img").count() == 0  # the run id's <img ...> stayed text

    # running jobs: who borrows and who a reclaim would take next
    victim = view.locator("#running tbody tr", has_text="n2").inner_text()
    assert "borrowing" in victim and "if vision reclaims (RECLAIM)" in victim

    # the preemption: who, by whom, why
    event = view.locator("#events tbody tr").first.inner_text()
    assert "v2" in event and "RECLAIM" in event and "n1 (nlp)" in event
    assert "reclaims it for job" in event

    view.get_by_role("link", name="v2").first.click()
    expect(view.locator("#explain-summary")).to_contain_text(f"waits for 2 {P4D}")
    page.evaluate("window.scrollTo(0, 0)")
    screenshot = DOCS_SCREENSHOT if os.environ.get("UPDATE_SCREENSHOT") else tmp_path / "view.png"
    view.locator("h1").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot))
    assert screenshot.stat().st_size > 10_000

    # links leave the sandboxed frame: the console in a new window, the task in Airflow
    context.route(
        "https://console.aws.amazon.com/**",
        lambda route: route.fulfill(body="the AWS console", content_type="text/plain"),
    )
    with context.expect_page() as opened:
        waiting.first.get_by_title("AWS console").click()
    opened.value.wait_for_load_state()
    assert opened.value.url.endswith(f"#service-jobs/detail/{story.v2}")
    task.click()
    page.wait_for_url(f"{story_api_server}/dags/nlp_%3Cfinetune%3E/runs/**/tasks/train")


def log_in(page: Any, url: str) -> None:
    page.goto(f"{url}/")
    page.get_by_label("Username").fill(USER)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{url}/")


def test_a_pools_fleet_is_named_a_fleet_with_no_aws_and_its_own_unit(
    browser: Any, fleet_api_server: str
) -> None:
    page = browser.new_context(viewport={"width": 1280, "height": 1200}).new_page()
    log_in(page, fleet_api_server)
    page.goto(f"{fleet_api_server}/quota/")
    event = page.locator("#events tbody tr", has_text="v-borrow")
    event.wait_for()
    assert page.locator("header label").inner_text().startswith("Fleet")
    assert page.get_by_role("combobox", name="fleet").input_value() == "gpus"
    # work lost in the fleet's unit; a task has no AWS console
    assert "1.00 gpu-h (no checkpoint)" in event.inner_text()
    assert page.get_by_title("AWS console").count() == 0
    # no history is kept of a fleet: no utilization panel, not even its heading
    assert page.get_by_role("heading", name="Utilization").count() == 0
    assert page.get_by_role("heading", name="Recent preemptions").count() == 1


def test_it_fits_a_phone_and_refreshes_itself(
    browser: Any, story_api_server: str, endpoint: Endpoint
) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    # the page needs no login, its data does: it says so and shows none
    assert page.goto(f"{story_api_server}/quota/").status == 200
    page.locator("#error").wait_for()
    assert page.locator("#error").inner_text() == (
        "401: Not authenticated: log in to Airflow first, then come back to this page"
    )
    assert page.locator("#waiting tbody tr").count() == 0
    log_in(page, story_api_server)
    page.goto(f"{story_api_server}/quota/?refresh=2")
    page.locator("#waiting tbody tr").first.wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    before = page.locator("#updated").inner_text()
    endpoint.advance(3600)
    page.wait_for_function(
        "text => document.getElementById('updated').textContent !== text", arg=before
    )
    assert page.locator("#updated").inner_text() != before
