"""Warm headroom objects: the template states what admission gives the team's real pods (virtual pods never pass
admission), the buffer names it, and Karpenter's gate follows whether any team keeps headroom."""

from __future__ import annotations

from typing import Any

from gpushare import names
from gpushare.loader import load_stack_config
from gpushare.render.headroom import headroom_objects
from gpushare.render.karpenter import karpenter_values
from tests.conftest import PLAN_DATE, on_minor


def _objects(raw: dict[str, Any], team: int) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    return headroom_objects(load_stack_config(raw, today=PLAN_DATE), team)


def test_prod_template_is_the_inference_pod_after_admission(prod):
    [(pool, template, buffer)] = headroom_objects(prod, 1)
    assert pool == "g5-shared"
    assert template["metadata"] == {
        "name": "gpushare-headroom-g5-shared",
        "namespace": "inference",
        "labels": {names.POOL_LABEL: "g5-shared", names.TEAM_LABEL: "inference"},
    }
    spec = template["template"]["spec"]
    assert spec["schedulerName"] == "hami-scheduler"  # what HAMi's webhook sets
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
        "gpushare-standard",
        100_000,
        "PreemptLowerPriority",
    )
    assert spec["nodeSelector"] == {names.POOL_LABEL: "g5-shared"}
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    [container] = spec["containers"]
    gpu = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "7676", "nvidia.com/gpucores": "33"}
    assert container["resources"] == {"requests": {"cpu": "1", "memory": "4096Mi", **gpu}, "limits": gpu}
    assert container["image"] == "registry.k8s.io/pause:3.10.2"
    assert buffer == {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": template["metadata"],
        "spec": {
            "provisioningStrategy": "buffer.x-k8s.io/active-capacity",
            "podTemplateRef": {"name": "gpushare-headroom-g5-shared"},
            "replicas": 2,
        },
    }


def test_a_team_policy_and_spot_reach_the_template(dev_raw):
    dev_raw["gpushare:teams"][1]["headroom"] = {"pods": 1, "shape": {"gpuMemoryMib": 5120, "gpuCores": 33}}
    [(_, template, _)] = _objects(dev_raw, 1)
    assert template["template"]["metadata"]["annotations"] == {
        "hami.io/gpu-scheduler-policy": "binpack",
        "hami.io/node-scheduler-policy": "spread",
    }
    assert template["template"]["spec"]["priorityClassName"] == "gpushare-critical"
    for pool in dev_raw["gpushare:pools"]:
        pool["capacityTypes"] = ["spot", "on-demand"]
    dev_raw["gpushare:teams"][0]["spotOnly"] = True  # ml-research, a batch team on all three pools
    dev_raw["gpushare:teams"][0]["headroom"] = {"pods": 1, "shape": {"gpuMemoryMib": 5120}, "pools": ["g5-shared"]}
    [(_, template, _)] = _objects(dev_raw, 0)
    assert template["template"]["spec"]["nodeSelector"] == {
        names.POOL_LABEL: "g5-shared",
        names.CAPACITY_TYPE_LABEL: "spot",
    }


def test_a_whole_gpu_vgpu_gets_the_cores_the_webhook_adds(dev_raw):
    dev_raw["gpushare:teams"][1]["headroom"] = {"pods": 1, "shape": {"gpus": 1}}
    [(_, template, _)] = _objects(dev_raw, 1)
    limits = template["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": "1", "nvidia.com/gpucores": "100"}


def test_an_exclusive_pool_template_skips_hami(prod_raw):
    prod_raw["gpushare:teams"][0]["headroom"] = {"pods": 1, "shape": {"gpus": 4}, "pools": ["training"]}
    [(_, template, _)] = _objects(prod_raw, 0)
    pod = template["template"]
    assert pod["metadata"]["labels"][names.HAMI_WEBHOOK_IGNORE[0]] == names.HAMI_WEBHOOK_IGNORE[1]
    assert "schedulerName" not in pod["spec"]
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "4"}


def test_before_kubernetes_1_36_no_admission_policy_sets_a_class(dev_raw):
    on_minor(dev_raw, "1.35")
    dev_raw["gpushare:teams"][1]["headroom"] = {"pods": 1, "shape": {"gpuMemoryMib": 5120, "gpuCores": 33}}
    [(_, template, _)] = _objects(dev_raw, 1)
    assert not {"priorityClassName", "priority", "preemptionPolicy"} & set(template["template"]["spec"])


def test_the_pause_image_goes_through_the_registry_mirror(prod_raw):
    prod_raw["gpushare:registryMirrors"] = {"registry.k8s.io": "123456789012.dkr.ecr.us-east-1.amazonaws.com/k8s"}
    [(_, template, _)] = _objects(prod_raw, 1)
    image = template["template"]["spec"]["containers"][0]["image"]
    assert image == "123456789012.dkr.ecr.us-east-1.amazonaws.com/k8s/pause:3.10.2"


def test_the_capacity_buffer_gate_is_on_only_with_headroom(dev, prod):
    assert karpenter_values(dev)["settings"]["featureGates"] == {"nodeOverlay": True}
    assert karpenter_values(prod)["settings"]["featureGates"] == {"nodeOverlay": True, "capacityBuffer": True}
    assert headroom_objects(dev, 0) == headroom_objects(dev, 1) == []
