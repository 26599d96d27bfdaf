"""The history charts in a real browser: headless Chromium (Debian's) logs into a real
``airflow api-server`` reading the story of ``tests/history/test_usage_story.py``
(borrowing, a reclaim, an in-share preemption), picks a range and a share, and reads
what the charts drew. Skipped, saying why, without ``/usr/bin/chromium``.

Saves what a person sees to ``docs/history.png`` with ``UPDATE_SCREENSHOT=1``.

Time: about 1 min on 2 cores (``tests/DURATIONS.md``): each test starts its own api-server
(15-20 s) and a browser.
"""

from __future__ import annotations

import csv
import io
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_quota_provider.demo.ports import free_port
from tests.emulator.conftest import P4D, QUEUE
from tests.history.test_usage_story import END, ms
from tests.history.test_usage_story import Story as UsageStory
from tests.history.test_usage_story import story as usage_story  # noqa: F401 - a fixture
from tests.view.test_browser import (  # noqa: F401 - fixtures, and the browser tests' marks
    browser,
    fleet_api_server,
    log_in,
    pytestmark,
    serving_api,
)

DOCS_SCREENSHOT = Path(__file__).parents[2] / "docs" / "history.png"
SHARE_SERIES = "used within own|borrowed|lent|idle|owned|waiting demand"


@pytest.fixture
def story_server(
    airflow_auth: None,
    usage_story: UsageStory,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> Iterator[str]:
    """The api-server reading the story's endpoint; its base URL."""
    env = {"AWS_ENDPOINT_URL": usage_story.endpoint.url}
    with serving_api(env, free_port(), tmp_path / "api-server.log") as url:
        yield url


def drawn(page: Any, range_name: str, share: str) -> None:
    page.wait_for_function(
        "([range, share]) => { const h = document.getElementById('history');"
        " return h.dataset.range === range && h.dataset.share === share; }",
        arg=[range_name, share],
    )


def test_a_person_reads_a_share_history_and_who_preempted_whom(
    browser: Any,  # noqa: F811
    story_server: str,
    tmp_path: Path,
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 1800}, accept_downloads=True)
    page = context.new_page()
    log_in(page, story_server)
    page.goto(f"{story_server}/quota/")
    started = time.monotonic()
    page.locator("#history [data-chart=fleet]").wait_for()
    print(f"history charts drawn {time.monotonic() - started:.2f} s after the page loaded")
    drawn(page, "24h", "")

    page.get_by_label("range").select_option("6h")
    drawn(page, "6h", "")
    charts = page.locator("#history-shares [data-chart]")
    assert [charts.nth(i).get_attribute("data-chart") for i in range(charts.count())] == [
        f"share:cv:{P4D}",
        f"share:nlp:{P4D}",
    ]
    cv = page.locator(f"[data-chart='share:cv:{P4D}']")
    # 6 h by 5 minutes: 72 points of each series, labelled as uPlot's legend shows them
    assert cv.get_attribute("data-series") == SHARE_SERIES
    assert cv.get_attribute("data-points") == "72"
    assert cv.locator(".u-legend .u-series .u-label").all_inner_texts()[1:] == (
        SHARE_SERIES.split("|")
    )
    fleet = page.locator("[data-chart=fleet]")
    assert fleet.get_attribute("data-series") == f"{P4D} utilization %"
    assert page.locator("[data-chart=days]").get_attribute("data-points") == "2"

    # the two preemptions of c1: a reclaim by nlp's n1, then in-share by cv's c3
    marks = cv.locator(".mark")
    assert marks.count() == 2
    marks.first.hover()
    reclaim = marks.first.get_attribute("title")
    assert reclaim.startswith("2026-11-30 00:10:03 UTC RECLAIM: c1 (cv) preempted by n1 (nlp);")
    assert "Cross-share preemption triggered to reclaim borrowed capacity" in reclaim
    in_share = marks.nth(1).get_attribute("title")
    assert "IN_SHARE: c1 (cv) preempted by c3 (cv); lost 0.15 ml.p4d.24xlarge-h" in in_share
    # nlp's chart marks only what nlp took part in: the reclaim it caused
    assert page.locator(f"[data-chart='share:nlp:{P4D}'] .mark").count() == 1

    page.get_by_label("share").select_option("nlp")
    drawn(page, "6h", "nlp")
    assert page.locator("#history-shares [data-chart]").count() == 1
    assert page.locator("#usage tbody tr").all_inner_texts() == [
        # instance-hours: own 4832 s, lent 9686, idle 14282 + 4 h x 4 p4d; n1 waited 3 s
        "\t".join(
            ["nlp", P4D, "1.34", "0.00", "2.69", "19.97", "1", "3 s", "3 s", "0", "1", "0.00"]
        )
    ]
    with page.expect_download() as downloading:
        page.get_by_role("button", name="Download usage (CSV)").click()
    download = downloading.value
    assert download.suggested_filename == f"usage-{QUEUE}-6h-{ms(END) // 1000}.csv"
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))
    assert [(r["share"], r["jobs_started"]) for r in rows] == [("nlp", "1")]

    page.get_by_label("share").select_option("")
    drawn(page, "6h", "")
    page.locator("#history").scroll_into_view_if_needed()
    screenshot = tmp_path / "history.png"
    if os.environ.get("UPDATE_SCREENSHOT"):
        screenshot = DOCS_SCREENSHOT
    page.locator("#history").screenshot(path=str(screenshot))
    assert screenshot.stat().st_size > 10_000


def test_the_charts_follow_airflows_dark_theme(
    browser: Any,  # noqa: F811
    story_server: str,
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 1200}, color_scheme="dark")
    page = context.new_page()
    log_in(page, story_server)
    page.get_by_role("link", name="GPU Quotas").first.click()
    view = page.frame_locator("iframe[title='GPU Quotas']")
    view.locator("#history [data-chart=fleet]").wait_for()
    # Airflow follows the system's dark scheme (class "dark" on its <html>); the page, in
    # its frame, follows Airflow
    assert "dark" in (page.locator("html").get_attribute("class") or "")
    assert view.locator("html").get_attribute("data-theme") == "dark"
    background = view.locator("body").evaluate("b => getComputedStyle(b).backgroundColor")
    assert background == "rgb(26, 32, 44)"


def test_a_pools_fleet_whose_database_holds_no_history_says_so(
    browser: Any,  # noqa: F811
    fleet_api_server: str,  # noqa: F811
) -> None:
    page = browser.new_context(viewport={"width": 1280, "height": 1200}).new_page()
    log_in(page, fleet_api_server)
    page.goto(f"{fleet_api_server}/quota/")
    message = page.locator("#history-message")
    message.wait_for()
    assert message.inner_text() == (  # the fixture's database was made without the history
        "503: no usage history of fleet gpus is recorded: its pool manager's database lacks "
        "the history's tables (quota_history_bucket, quota_history_change, quota_history_mark, "
        "quota_history_start): a manager of this version adds them when it starts"
    )
    assert page.locator("#history-body").is_hidden()
    assert page.locator("#history [data-chart]").count() == 0
