"""HAMi values and the mock device plugin; every sharing mode's nodes get exactly their device plugins.

Where a DaemonSet lands is computed by the pack's placement model (policies/gpushare_policies/placement.py) from
the values the renderers write and the chart defaults in gpushare/compat.py, merged as Helm merges them: the
renderers must not be able to produce a pool that gets the wrong plugins.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpushare import compat, names, pins
from gpushare.config import PoolConfig, StackConfig
from gpushare.loader import load_stack_config
from gpushare.render import hami
from gpushare.render.hami import nvidia_device_plugin_values
from gpushare.render.karpenter import pool_labels
from gpushare.render.monitoring import dcgm_exporter_values
from policies.gpushare_policies.placement import gpu_daemonsets
from policies.gpushare_policies.stack import DAEMON_SET, HELM_RELEASE, Resource, StackView
from tests.conftest import PLAN_DATE, on_minor, raw_stack


def _landing(raw: dict[str, Any], pool: PoolConfig) -> set[str]:
    """The kinds of GPU DaemonSet whose rendered placement lands on the pool's tainted nodes."""
    config = load_stack_config(raw, today=PLAN_DATE)
    values = {
        names.HAMI_CHART: hami.hami_values(config),
        names.NVIDIA_PLUGIN_CHART: nvidia_device_plugin_values(config),
        names.DCGM_CHART: dcgm_exporter_values(config),
    }
    resources = [
        Resource(
            f"urn:{chart}", HELM_RELEASE, chart, {"chart": chart, "version": config.hami.chart_version, "values": v}
        )
        for chart, v in values.items()
    ]
    daemonset = next(o for o in hami.mock_device_plugin_objects(config) if o["kind"] == "DaemonSet")
    resources.append(Resource("urn:mock", DAEMON_SET, names.MOCK_NAME, daemonset))
    placements = gpu_daemonsets(StackView(tuple(resources), PLAN_DATE))
    return {p.kind for p in placements if p.blocker(pool_labels(pool), (dict(names.GPU_TAINT),)) is None}


def test_hami_node_selector_key_is_the_pinned_charts(dev):
    plugin = hami.hami_values(dev)["devicePlugin"]
    assert plugin[compat.hami_node_selector_key(dev.hami.chart_version)] == {"gpu": "on"}
    assert compat.hami_wrong_node_selector_key(dev.hami.chart_version) not in plugin


@pytest.mark.parametrize(("chart", "key"), [("2.10.0", "nvidiaNodeSelector"), ("2.7.1", "nvidianodeSelector")])
def test_hami_node_selector_key_follows_the_chart_version(chart, key):
    assert compat.hami_node_selector_key(chart) == key


def test_hami_device_config_content_is_the_whole_config_with_the_profile(dev_raw):
    dev_raw["gpushare:hami"]["profile"] = {"deviceSplitCount": 12, "deviceMemoryScaling": 0.9, "memoryFactor": 6}
    config = load_stack_config(dev_raw, today=PLAN_DATE)
    values = hami.hami_values(config)
    nvidia = yaml.safe_load(values["device-config"]["content"])["nvidia"]
    assert {k: nvidia[k] for k in ("deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling", "memoryFactor")} == {
        "deviceSplitCount": 12,
        "deviceMemoryScaling": 0.9,
        "deviceCoreScaling": 1.0,
        "memoryFactor": 6,
    }
    assert set(compat.HAMI_CONTENT_REQUIRED) <= set(nvidia)
    assert compat.hami_nvidia_config(config.hami.chart_version, values) == nvidia
    # The chart writes the devicePlugin profile keys only into a config it builds itself: none are rendered.
    assert not {"deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling"} & set(values["devicePlugin"])


@pytest.mark.parametrize("minor", pins.kubernetes_minors())
def test_hami_scheduler_runs_the_pinned_patch_of_the_cluster_minor(minor):
    raw = on_minor(raw_stack("dev"), minor)
    raw["gpushare:cluster"]["supportType"] = "EXTENDED"  # a minor past standard support on PLAN_DATE is allowed
    config = load_stack_config(raw, today=PLAN_DATE)
    image = hami.hami_values(config)["scheduler"]["kubeScheduler"]["image"]
    tag = pins.kube_scheduler_tag(minor)
    assert image == {"registry": "registry.k8s.io", "repository": "kube-scheduler", "tag": tag}
    assert tag.startswith(f"v{minor}.") and tag.count(".") == 2 and tag.rsplit(".", 1)[1].isdigit()


def test_hami_device_plugin_tolerates_the_gpu_taint(dev):
    assert hami.hami_values(dev)["devicePlugin"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_mock_daemonset_reads_its_own_configmap_on_hami_nodes(dev):
    objects = hami.mock_device_plugin_objects(dev)
    daemonset = next(o for o in objects if o["kind"] == "DaemonSet")
    config_map = next(o for o in objects if o["kind"] == "ConfigMap")
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu": "on"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    config_volume = next(v for v in pod["volumes"] if v["name"] == "device-config")
    assert config_volume["configMap"]["name"] == config_map["metadata"]["name"] == names.MOCK_DEVICE_CONFIG
    assert config_map["metadata"]["namespace"] == daemonset["metadata"]["namespace"]
    container = pod["containers"][0]
    assert container["image"] == pins.image("docker.io/projecthami/mock-device-plugin")
    assert "--device-config-file=/device-config.yaml" in container["command"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False


@pytest.mark.parametrize("factor", [1, 6])
def test_mock_config_holds_only_what_mock_1_0_1_parses_taken_from_the_hami_values(dev_raw, factor):
    dev_raw["gpushare:hami"]["profile"]["memoryFactor"] = factor
    config = load_stack_config(dev_raw, today=PLAN_DATE)
    config_map = hami.mock_device_config_map(config)
    document = yaml.safe_load(config_map["data"][names.HAMI_DEVICE_CONFIG_KEY])
    assert document == {
        "nvidia": {
            "resourceCountName": "nvidia.com/gpu",
            "resourceMemoryName": "nvidia.com/gpumem",
            "resourceCoreName": "nvidia.com/gpucores",
            "resourceMemoryPercentageName": "nvidia.com/gpumem-percentage",
            "memoryFactor": factor,
        }
    }
    hami_config = yaml.safe_load(hami.hami_values(config)["device-config"]["content"])["nvidia"]
    assert all(hami_config[key] == value for key, value in document["nvidia"].items())


def test_a_changed_mock_config_restarts_the_mock(dev_raw):
    """The mock reads its config once, at start: its pods carry the config's checksum."""

    def checksum(config):
        daemonset = next(o for o in hami.mock_device_plugin_objects(config) if o["kind"] == "DaemonSet")
        return daemonset["spec"]["template"]["metadata"]["annotations"][names.DEVICE_CONFIG_CHECKSUM_ANNOTATION]

    before = checksum(load_stack_config(dev_raw, today=PLAN_DATE))
    dev_raw["gpushare:hami"]["profile"]["memoryFactor"] = 2
    assert checksum(load_stack_config(dev_raw, today=PLAN_DATE)) != before


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


@pytest.mark.parametrize(
    ("sharing", "expected"),
    [("hami", {"hami", "mock", "dcgm"}), ("exclusive", {"nvidia", "dcgm"}), ("timeslice", {"nvidia", "dcgm"})],
)
def test_each_sharing_mode_gets_exactly_its_device_plugins(sharing, expected):
    raw = raw_stack("prod")
    extra = {"replicas": 4} if sharing == "timeslice" else {}
    pool = PoolConfig.model_validate(
        {"name": "p", "instanceTypes": ["g6.xlarge"], "maxGpus": 2, "sharing": sharing, **extra}
    )
    assert _landing(raw, pool) == expected


def test_time_sliced_pool_nodes_get_their_config(dev: StackConfig) -> None:
    pool = PoolConfig.model_validate(
        {"name": "p", "instanceTypes": ["g6.xlarge"], "maxGpus": 2, "sharing": "timeslice", "replicas": 4}
    )
    config_map = nvidia_device_plugin_values(dev)["config"]["map"]
    assert pool_labels(pool)[names.NVIDIA_PLUGIN_CONFIG_LABEL] in config_map


def test_values_do_not_pretend_to_remove_the_chart_affinity(dev: StackConfig) -> None:
    assert nvidia_device_plugin_values(dev).get("affinity") != {}


def test_hamis_scheduler_gets_kube_schedulers_client_rate_and_keeps_the_charts_own_arguments():
    """client-go's default 5 requests a second throttles HAMi's placements at a few dozen nodes; Helm replaces the
    chart's extraArgs list, so its --debug and -v=4 are written again."""
    args = hami.hami_values(load_stack_config(raw_stack("dev"), today=PLAN_DATE))["scheduler"]["extender"]["extraArgs"]
    flags = dict(arg.split("=", 1) for arg in args if arg.startswith("--kube-"))
    assert float(flags["--kube-qps"]) >= 50 and int(flags["--kube-burst"]) >= 2 * float(flags["--kube-qps"])
    assert {"--debug", "-v=4"} <= set(args)
