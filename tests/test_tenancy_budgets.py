"""Pool disruption budgets: validated against the pinned Karpenter's NodePool rules, rendered as written."""

from __future__ import annotations

import pytest

from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from gpushare.render import karpenter


def _with_budgets(raw, budgets):
    raw["gpushare:pools"][0]["disruption"] = {"budgets": budgets}
    return load_stack_config(raw)


def test_budgets_render_only_the_fields_set(dev_raw):
    config = _with_budgets(
        dev_raw,
        [
            {"nodes": 0, "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Underutilized", "Drifted"]},
            {"nodes": "20%"},
            {"nodes": "1", "schedule": "@daily", "duration": "1h30m"},
        ],
    )
    assert karpenter.node_pool(config, config.pools[0])["spec"]["disruption"]["budgets"] == [
        {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Underutilized", "Drifted"]},
        {"nodes": "20%"},
        {"nodes": "1", "schedule": "@daily", "duration": "1h30m"},
    ]


def test_no_budgets_leaves_karpenters_default(dev):
    assert "budgets" not in karpenter.node_pool(dev, dev.pool("g5-shared"))["spec"]["disruption"]


def test_dev_keeps_inference_pool_still_in_business_hours(dev):
    budgets = karpenter.node_pool(dev, dev.pool("g4dn-shared"))["spec"]["disruption"]["budgets"]
    assert {"nodes": "0", "schedule": "0 15 * * mon-fri", "duration": "9h"} in budgets


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ({"nodes": 1, "schedule": "0 9 * * *"}, ": schedule and duration must be set together"),
        ({"nodes": 1, "duration": "8h"}, ": schedule and duration must be set together"),
        ({"nodes": "101%"}, r"\.nodes: String should match pattern"),
        ({"nodes": "ten"}, r"\.nodes: String should match pattern"),
        ({"nodes": 1, "schedule": "0 9 * * *", "duration": "30s"}, r"\.duration: String should match"),
        ({"nodes": 1, "schedule": "9am daily", "duration": "8h"}, r"\.schedule: String should match"),
        ({"nodes": 1, "reasons": ["Expired"]}, r"\.reasons\[0\]: Input should be 'Underutilized'"),
        ({"nodes": 1, "reasons": ["Empty", "Empty"]}, r"\.reasons: .*lists a reason twice"),
        ({"schedule": "@daily", "duration": "1h"}, r"\.nodes: Field required"),
    ],
)
def test_bad_budgets_are_refused_with_the_key(dev_raw, budget, message):
    with pytest.raises(ConfigError, match=rf"^gpushare:pools\[0\]\.disruption\.budgets\[0\]{message}"):
        _with_budgets(dev_raw, [budget])
