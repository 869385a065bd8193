"""Changes that break `monitoring-alerts-can-fire`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import messages, resources_of
from tests.policies.rules.breaking import alert_rule, caught, release, set_at

RULE = "monitoring-alerts-can-fire"
QUOTA_RATIO = (
    'kube_resourcequota{type="used"} / on (namespace, resourcequota, resource) (kube_resourcequota{type="hard"} > 0)'
)


def _set(alert, **fields):
    return lambda r: alert_rule(r, alert).update(fields)


# (policy, change, every fragment one message must contain), on the prod plan
CASES = {
    "a ratio compared above 1": (
        RULE,
        _set("GpuTeamQuotaHigh", expr=f"{QUOTA_RATIO} > 90"),
        ["(GpuTeamQuotaHigh) compares > 90", "only takes values from 0 to 1", "multiplied by 100"],
    ),
    "a percentage compared above 100": (
        RULE,
        _set("GpuTeamQuotaHigh", expr=f"100 * {QUOTA_RATIO} > 120"),
        ["compares > 120", "from 0 to 100"],
    ),
    "utilization below 0": (
        RULE,
        _set("GpuNodeIdle", expr="avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL) < 0"),
        ["(GpuNodeIdle) compares < 0", "from 0 to 100"],
    ),
    "up compared with 2": (
        RULE,
        _set("HamiDevicePluginDown", expr='up{job="hami-device-plugin-monitor"} == 2'),
        ["compares == 2"],
    ),
    "for longer than the retention": (
        RULE,
        _set("GpuNodeIdle", **{"for": "30d"}),
        ["(GpuNodeIdle) needs for 30d, longer than the 15d", "raise gpushare:monitoring.retention"],
    ),
    "a range longer than the retention": (
        RULE,
        _set("HamiDevicePluginDown", expr='max_over_time(up{job="hami-device-plugin-monitor"}[20d]) == 0'),
        ["needs a range of 20d, longer than the 15d"],
    ),
    "retention cut below an alert's wait": (
        RULE,
        lambda r: set_at(
            release(r, "kube-prometheus-stack"), ["values", "prometheus", "prometheusSpec", "retention"], "30m"
        ),
        ["(GpuNodeIdle) needs for 60m, longer than the 30m"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, CASES[case])


def test_a_percentage_threshold_within_range_passes(plans):
    resources = resources_of(plans["prod"])
    alert_rule(resources, "GpuTeamQuotaHigh").update(expr=f"100 * {QUOTA_RATIO} > 99")
    assert messages(resources, RULE) == []
