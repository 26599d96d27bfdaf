"""The tags apply records its changes with: their form, what a change writes, and what the
usage history reads back."""

from __future__ import annotations

import pytest

from airflow_quota_provider.aws_batch.change_tags import (
    BEFORE,
    CHANGED_AT,
    CREATED_AT,
    MAX_VALUE,
    SETTINGS,
    aws_time,
    capacity_settings,
    change_tags,
    parse_stamp,
    read_capacity,
    reader_of_share,
    share_settings,
    stamp,
)
from tests.core.builders import ShareBuilder, share

ALLOWED = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.:/=+-@")
"""The characters AWS allows in a tag value."""


def test_a_stamp_is_a_utc_second_and_reads_back() -> None:
    assert stamp(1_795_996_800_999) == "2026-11-30T00:00:00Z"
    assert parse_stamp("2026-11-30T00:00:00Z") == 1_795_996_800_000
    assert parse_stamp("yesterday") is None
    assert parse_stamp(None) is None


@pytest.mark.parametrize(
    ("built", "written"),
    [
        pytest.param(
            share("nlp").capacity(**{"ml.p4d.24xlarge": 8}).lend_and_borrow(100),
            "ml.p4d.24xlarge=8 strategy=LEND_AND_BORROW borrow=100",
            id="a borrowing share writes its limit",
        ),
        pytest.param(
            share("cv").capacity(**{"ml.g5.12xlarge": 2, "ml.p4d.24xlarge": 6}).lend(),
            "ml.g5.12xlarge=2 ml.p4d.24xlarge=6 strategy=LEND",
            id="a lending share has no borrow limit, units in name order",
        ),
        pytest.param(
            share("r").capacity(gpu=1).lend_and_borrow(),
            "gpu=1 strategy=LEND_AND_BORROW borrow=-1",
            id="an unlimited borrow limit is -1, as AWS spells it",
        ),
    ],
)
def test_share_settings_read_back(built: ShareBuilder, written: str) -> None:
    today = built.build()
    assert share_settings(today) == written
    assert set(written) <= ALLOWED
    assert reader_of_share(today)(written) == today


def test_five_long_units_with_their_before_fit_a_tag_value() -> None:
    units = {f"ml.p5en.48xlarge{n}": 2_147_483_647 for n in range(5)}
    written = share_settings(share("s").capacity(**units).lend_and_borrow(100).build())
    before = change_tags({}, written, written)[BEFORE]
    assert len(before) <= MAX_VALUE
    assert len(written) < MAX_VALUE


def test_unreadable_settings_are_none() -> None:
    read = reader_of_share(share("s").capacity(gpu=1).build())
    assert read("gpu=one strategy=LEND") is None
    assert read("gpu=1 strategy=SHARE") is None
    assert read_capacity("gpu") is None
    assert read_capacity(capacity_settings({"gpu": 8})) == {"gpu": 8}


@pytest.mark.parametrize(
    ("tags", "since"),
    [
        pytest.param(
            {CREATED_AT: "2026-11-30T00:00:00Z", SETTINGS: "gpu=6"},
            "2026-11-30T00:00:00Z",
            id="unchanged since apply created it: since its creation",
        ),
        pytest.param(
            {
                CREATED_AT: "2026-11-30T00:00:00Z",
                CHANGED_AT: "2026-12-01T00:00:00Z",
                SETTINGS: "gpu=6",
            },
            "2026-12-01T00:00:00Z",
            id="changed by apply before: since that change",
        ),
        pytest.param(
            {CREATED_AT: "2026-11-30T00:00:00Z", SETTINGS: "gpu=2"},
            "unknown",
            id="changed since by something else: not known",
        ),
        pytest.param({}, "unknown", id="never recorded: not known"),
    ],
)
def test_a_change_records_what_was_before_and_since_when(tags: dict[str, str], since: str) -> None:
    assert change_tags(tags, "gpu=6", "gpu=8") == {
        BEFORE: f"since={since} gpu=6",
        SETTINGS: "gpu=8",
    }


def test_aws_time_is_the_answer_date_else_this_host() -> None:
    answer = {"ResponseMetadata": {"HTTPHeaders": {"date": "Mon, 30 Nov 2026 00:00:05 GMT"}}}
    assert aws_time(answer) == 1_795_996_805_000
    assert aws_time({}) > 1_700_000_000_000
