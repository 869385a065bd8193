"""Prometheus durations read as Prometheus reads them: the config's retention check and the pack share the parser."""

from __future__ import annotations

import pytest

from gpushare.metrics import duration_seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1h30m", 5400), ("15d", 1296000), ("2w", 1209600), ("1y", 31536000), ("90s", 90), ("500ms", 0.5)],
)
def test_durations_in_seconds(text, seconds):
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["soon", "", None, "15", "30m1h", "1.5h", "d"])
def test_what_is_no_duration_reads_as_none(text):
    assert duration_seconds(text) is None
