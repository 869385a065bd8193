"""Changes that break `monitoring-webui-reads-hami-metrics`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from gpushare import pins
from tests.policies.rules.breaking import (
    caught,
    release,
    set_at,
)

# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
    "webui for HAMi 2.8 metrics": (
        "monitoring-webui-reads-hami-metrics",
        lambda r: set_at(release(r, "hami-webui"), ["version"], "1.1.0"),
        ['Release hami-webui: version is "1.1.0"', f"HAMi chart {pins.chart_version('hami')}", "1.2.0 with HAMi 2.9.0"],
    ),
    "HAMi held back on 2.8 metrics": (
        "monitoring-webui-reads-hami-metrics",
        lambda r: set_at(release(r, "hami"), ["version"], "2.8.3"),
        ['Release hami-webui: version is "1.2.0"', "HAMi chart 2.8.3", "1.1.0 with HAMi 2.4.0 to below 2.9.0"],
    ),
    "a WebUI whose queries gpushare has not read": (
        "monitoring-webui-reads-hami-metrics",
        lambda r: set_at(release(r, "hami-webui"), ["version"], "1.3.0"),
        ['Release hami-webui: version is "1.3.0"', "does not read the metric names"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_monitoring_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])
