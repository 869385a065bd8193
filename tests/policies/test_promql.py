"""The PromQL model the monitoring rules share: what an expression reads and the values it can take."""

from __future__ import annotations

import math

import pytest

from policies.gpushare_policies import promql


def _tree(expr):
    tree, error = promql.parse(expr)
    assert error is None, error
    return tree


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("DCGM_FI_DEV_GPU_UTIL", (0, 100)),
        ('avg by (node) (label_replace(DCGM_FI_DEV_GPU_UTIL, "node", "$1", "Hostname", "(.+)"))', (0, 100)),
        ("100 - DCGM_FI_DEV_GPU_UTIL", (0, 100)),
        ("DCGM_FI_DEV_GPU_UTIL / 100", (0, 1)),
        ('100 * kube_resourcequota{type="used"} / kube_resourcequota{type="hard"}', (0, 100)),
        ('kube_resourcequota{type="hard"} / kube_resourcequota{type="used"}', (-math.inf, math.inf)),
        ("sum(DCGM_FI_DEV_GPU_UTIL)", (-math.inf, math.inf)),
        ("up > bool 0", (0, 1)),
    ],
)
def test_bounds_follow_the_catalogue_and_the_arithmetic(expr, expected):
    assert promql.bounds(_tree(expr)) == expected


def test_only_filters_that_drop_every_sample_are_dead():
    assert promql.dead_comparisons(_tree("up == 2 or up > bool 5")) == [("==", 2.0, (0.0, 1.0))]
    assert promql.dead_comparisons(_tree("DCGM_FI_DEV_GPU_UTIL >= 100")) == []


def test_selectors_windows_and_durations():
    tree = _tree('max_over_time({__name__="up", job="x"}[1h]) + rate(GPUDeviceSharedNum[5m:1m])')
    assert [promql.metric_name(s) for s in promql.selectors(tree)] == ["up", "GPUDeviceSharedNum"]
    assert sorted(promql.windows(tree)) == [300, 3600]
    assert (promql.duration(1728000), promql.duration(5400), promql.duration(90)) == ("20d", "90m", "90s")
    assert promql.parse("sum(")[0] is None
