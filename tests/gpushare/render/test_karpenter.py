"""Karpenter objects: pools carry the labels, taints, limits and overlays the cluster needs; disruption
budgets are validated against the pinned Karpenter's NodePool rules and rendered as written."""

from __future__ import annotations

import pytest
import yaml

from gpushare import names, pins
from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from gpushare.render import karpenter
from gpushare.render.releases import helm_releases
from tests.conftest import PLAN_DATE


def _with_budgets(raw, budgets):
    raw["gpushare:pools"][0]["disruption"] = {"budgets": budgets}
    return load_stack_config(raw, today=PLAN_DATE)


def test_hami_pool_carries_hami_selector_label_and_gpu_taint(dev):
    pool = dev.pools[0]
    spec = karpenter.node_pool(dev, pool)["spec"]
    assert spec["template"]["metadata"]["labels"]["gpu"] == "on"
    assert spec["template"]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert spec["template"]["spec"]["requirements"][0]["values"] == list(pool.instance_types)


def test_exclusive_pool_never_gets_the_hami_label(prod):
    labels = karpenter.node_pool(prod, prod.pool("training"))["spec"]["template"]["metadata"]["labels"]
    assert "gpu" not in labels
    assert labels[names.SHARING_LABEL] == "exclusive"


def test_limits_count_vgpus_on_shared_pools_and_gpus_on_exclusive(prod):
    assert karpenter.node_pool(prod, prod.pool("g5-shared"))["spec"]["limits"] == {"nvidia.com/gpu": "320"}
    assert karpenter.node_pool(prod, prod.pool("training"))["spec"]["limits"] == {"nvidia.com/gpu": "16"}


def test_one_overlay_per_type_scoped_to_its_pool(dev):
    pool = dev.pools[0]
    overlays = karpenter.node_overlays(dev, pool)
    assert [o["spec"]["requirements"][1]["values"] for o in overlays] == [[t] for t in pool.instance_types]
    for overlay in overlays:
        assert overlay["spec"]["requirements"][0] == {
            "key": "karpenter.sh/nodepool",
            "operator": "In",
            "values": [pool.name],
        }


def test_overlay_capacity_is_what_hami_registers(dev):
    overlay = karpenter.node_overlays(dev, dev.pools[0])[0]
    assert overlay["metadata"]["name"] == "g5-shared-g5-xlarge"
    assert overlay["spec"]["capacity"] == {
        "nvidia.com/gpu": "10",
        "nvidia.com/gpumem": "23028",
        "nvidia.com/gpucores": "100",
        "nvidia.com/gpumem-percentage": "100",
    }


def test_exclusive_pools_get_no_overlays(prod):
    assert karpenter.node_overlays(prod, prod.pool("training")) == []


def test_overlay_names_are_unique_across_the_stack(plans):
    overlays = [r["inputs"] for r in plans["prod"]["resources"] if r["type"].endswith(":NodeOverlay")]
    assert len({o["metadata"]["name"] for o in overlays}) == len(overlays) == 7


def test_node_class_is_hardened(prod):
    spec = karpenter.ec2_node_class(prod)["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@v20260903"}]
    assert spec["metadataOptions"]["httpTokens"] == "required"
    assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert spec["associatePublicIPAddress"] is False
    ebs = spec["blockDeviceMappings"][0]["ebs"]
    assert ebs["encrypted"] is True and ebs["volumeSize"] == "200Gi"
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "gpushare-prod"}}]
    assert spec["role"] == "gpushare-prod-karpenter-node"


def test_karpenter_values_turn_the_overlay_gate_on(dev):
    settings = karpenter.karpenter_values(dev)["settings"]
    assert settings == {
        "clusterName": "gpushare-dev",
        "interruptionQueue": "gpushare-dev-karpenter",
        "featureGates": {"nodeOverlay": True},
    }


def test_time_sliced_pool_gets_its_plugin_config_overlays_and_replica_limit(dev):
    plugin = next(r for r in helm_releases(dev) if r.name == "nvidia-device-plugin")
    assert plugin.values["config"]["default"] == "exclusive"
    slicing = yaml.safe_load(plugin.values["config"]["map"]["timeslice-4"])["sharing"]["timeSlicing"]
    assert slicing["renameByDefault"] is True
    assert slicing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    pool = dev.pool("g6-timeslice")
    assert karpenter.node_pool(dev, pool)["spec"]["limits"] == {"nvidia.com/gpu.shared": "8"}
    assert karpenter.node_pool(dev, pool)["spec"]["template"]["metadata"]["labels"][
        "nvidia.com/device-plugin.config"
    ] == ("timeslice-4")
    overlays = {o["metadata"]["name"]: o["spec"]["capacity"] for o in karpenter.node_overlays(dev, pool)}
    assert overlays == {
        "g6-timeslice-g6-xlarge": {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "4"},
        "g6-timeslice-g6-2xlarge": {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "4"},
    }
    assert plugin.version == pins.chart_version("nvidia-device-plugin")


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
        ({"nodes": 1, "schedule": "0 9 * * *"}, r"\.duration: is required with schedule"),
        ({"nodes": 1, "duration": "8h"}, r"\.schedule: is required with duration"),
        ({"nodes": "101%"}, r"\.nodes: '101%' is not a number of nodes like 1, or a percentage"),
        ({"nodes": "ten"}, r"\.nodes: 'ten' is not a number of nodes"),
        (
            {"nodes": 1, "schedule": "0 9 * * *", "duration": "30s"},
            r"\.duration: '30s' is not a duration in hours and minutes",
        ),
        ({"nodes": 1, "schedule": "9am daily", "duration": "8h"}, r"\.schedule: '9am daily': the NodePool CRD refuses"),
        (
            {"nodes": 1, "reasons": ["Expired"]},
            r"\.reasons\[0\]: 'Expired' is not one of the choices; allowed: Underutilized, Empty, Drifted",
        ),
        ({"nodes": 1, "reasons": ["Empty", "Empty"]}, r"\.reasons\[1\]: 'Empty' is listed twice \(first at \[0\]\)"),
        ({"schedule": "@daily", "duration": "1h"}, r"\.nodes: is required"),
    ],
)
def test_bad_budgets_are_refused_with_the_key(dev_raw, budget, message):
    with pytest.raises(ConfigError, match=rf"^gpushare:pools\[0\]\.disruption\.budgets\[0\]{message}"):
        _with_budgets(dev_raw, [budget])
