"""Renderers: the objects carry the labels, taints, capacities and keys the cluster needs."""

from __future__ import annotations

import pytest
import yaml

from gpushare import names, pins
from gpushare.loader import load_stack_config
from gpushare.render import hami, karpenter, tenancy
from gpushare.render.stack import helm_releases
from tests.conftest import raw_stack


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


@pytest.mark.parametrize(
    ("chart", "key", "absent"),
    [("2.8.3", "nvidiaNodeSelector", "nvidianodeSelector"), ("2.7.1", "nvidianodeSelector", "nvidiaNodeSelector")],
)
def test_hami_node_selector_key_follows_the_chart_version(chart, key, absent):
    raw = raw_stack("dev")
    raw["gpushare:hami"]["chartVersion"] = chart
    plugin = hami.hami_values(load_stack_config(raw))["devicePlugin"]
    assert plugin[key] == {"gpu": "on"}
    assert absent not in plugin


def test_hami_scheduler_image_matches_cluster_minor(dev):
    image = hami.hami_values(dev)["scheduler"]["kubeScheduler"]["image"]
    assert image == {"registry": "registry.k8s.io", "repository": "kube-scheduler", "tag": "v1.36.0"}


def test_hami_device_plugin_tolerates_the_gpu_taint(dev):
    assert hami.hami_values(dev)["devicePlugin"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_mock_daemonset_reads_the_hami_release_configmap_on_hami_nodes(dev):
    daemonset = next(o for o in hami.mock_device_plugin_objects(dev) if o["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu": "on"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    config_volume = next(v for v in pod["volumes"] if v["name"] == "device-config")
    assert config_volume["configMap"]["name"] == "hami-scheduler-device"
    container = pod["containers"][0]
    assert container["image"] == pins.image("docker.io/projecthami/mock-device-plugin")
    assert "--device-config-file=/device-config.yaml" in container["command"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_mock_rbac_only_reads_nodes(dev):
    role = next(o for o in hami.mock_device_plugin_objects(dev) if o["kind"] == "ClusterRole")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]


def test_hami_webhook_certgen_is_upstream_and_services_stay_in_the_cluster(dev):
    values = hami.hami_values(dev)
    for key in ("image", "imageNew"):
        image = values["scheduler"]["patch"][key]
        assert (image["registry"], image["repository"]) == ("registry.k8s.io", "ingress-nginx/kube-webhook-certgen")
        assert image["tag"].startswith("v")
    assert values["scheduler"]["service"]["type"] == "ClusterIP"
    assert values["devicePlugin"]["service"]["type"] == "ClusterIP"


def test_team_quota_covers_hami_resources(prod):
    objects = tenancy.team_objects(prod, prod.teams[0])
    assert [o["kind"] for o in objects][:3] == ["Namespace", "ResourceQuota", "LimitRange"]
    assert objects[1]["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "120",
        "requests.nvidia.com/gpumem": "368448",
        "requests.nvidia.com/gpucores": "1600",
    }


def test_team_only_on_exclusive_pools_skips_the_hami_webhook(prod_raw):
    prod_raw["gpushare:teams"][0]["pools"] = ["training", "g5-shared"]
    prod_raw["gpushare:teams"].append({"name": "trainers", "pools": ["training"], "quota": {"gpus": 8}})
    config = load_stack_config(prod_raw)
    namespace = tenancy.team_objects(config, config.teams[-1])[0]
    assert namespace["metadata"]["labels"]["hami.io/webhook"] == "ignore"
    mixed = tenancy.team_objects(config, config.teams[0])[0]
    assert "hami.io/webhook" not in mixed["metadata"]["labels"]


def test_team_scheduler_policy_and_pools_are_recorded_on_the_namespace(dev):
    namespace = tenancy.team_objects(dev, dev.teams[1])[0]
    assert namespace["metadata"]["annotations"] == {
        "gpushare.io/gpu-scheduler-policy": "binpack",
        "gpushare.io/node-scheduler-policy": "spread",
        "gpushare.io/pools": "g4dn-shared",
    }
    assert tenancy.team_objects(dev, dev.teams[0])[0]["metadata"]["annotations"] == {
        "gpushare.io/pools": "g5-shared,g4dn-shared,g6-timeslice"
    }


def test_nvidia_plugin_release_only_with_exclusive_or_time_sliced_pools(dev_raw, prod):
    dev_raw["gpushare:pools"].pop()
    dev_raw["gpushare:teams"][0]["pools"].pop()
    del dev_raw["gpushare:teams"][0]["quota"]["sharedGpus"]
    assert "nvidia-device-plugin" not in [r.name for r in helm_releases(load_stack_config(dev_raw))]
    plugin = next(r for r in helm_releases(prod) if r.name == "nvidia-device-plugin")
    assert plugin.values["nodeSelector"] == {"gpushare.io/device-plugin": "nvidia"}
    assert "config" not in plugin.values, "without time-sliced pools every node takes whole GPUs"


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
