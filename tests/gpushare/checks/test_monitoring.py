"""gpushare/checks/monitoring.py: alert waits the retention of the stack's own Prometheus lets fire."""

from __future__ import annotations

import pytest

from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, raw_stack


def test_alert_waits_longer_than_the_retention_are_refused_each_on_its_line():
    raw = raw_stack("prod")
    raw["gpushare:monitoring"]["retention"] = "1h"
    raw["gpushare:monitoring"]["alerts"]["nodeIdleMinutes"] = 61
    raw["gpushare:monitoring"]["alerts"]["podPendingMinutes"] = 90
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert str(caught.value).splitlines() == [
        "gpushare:monitoring.alerts.podPendingMinutes: 90 minutes is longer than gpushare:monitoring.retention 1h "
        "(60 minutes): the alert could never fire; allowed: at most 60, or a longer retention",
        "gpushare:monitoring.alerts.nodeIdleMinutes: 61 minutes is longer than gpushare:monitoring.retention 1h "
        "(60 minutes): the alert could never fire; allowed: at most 60, or a longer retention",
    ]
    raw["gpushare:monitoring"]["retention"] = "2w"
    assert load_stack_config(raw, today=PLAN_DATE).monitoring.alerts.node_idle_minutes == 61
