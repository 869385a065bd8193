"""HAMi values and the mock device plugin; the NVIDIA device plugin's DaemonSet lands on exclusive and
time-sliced pool nodes and on no HAMi node.

The chart's default affinity is data in gpushare/compat.py (NVIDIA_CHART_DEFAULT_NODE_SELECTOR_TERMS, from
NVIDIA/k8s-device-plugin deployments/helm/nvidia-device-plugin/values.yaml): any one term admits a node. Helm
merges our values into these defaults, so an `affinity: {}` from us would delete nothing; what counts is
whether our nodes carry labels one term admits.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpushare import names, pins
from gpushare.compat import NVIDIA_CHART_DEFAULT_NODE_SELECTOR_TERMS
from gpushare.config import PoolConfig, StackConfig
from gpushare.loader import load_stack_config
from gpushare.render import hami
from gpushare.render.hami import nvidia_device_plugin_values
from gpushare.render.karpenter import pool_labels
from tests.conftest import PLAN_DATE, raw_stack


def _admitted(config: StackConfig, labels: dict[str, str]) -> bool:
    """Scheduler semantics: OR over terms, AND over a term's expressions (only `In` occurs here)."""
    values = nvidia_device_plugin_values(config)
    terms: Any = NVIDIA_CHART_DEFAULT_NODE_SELECTOR_TERMS
    override = values.get("affinity")
    if override:
        terms = [
            term["matchExpressions"]
            for term in override["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        ]
    selector_ok = all(labels.get(key) == value for key, value in values["nodeSelector"].items())
    affinity_ok = any(all(labels.get(e["key"]) in e["values"] for e in term) for term in terms)
    return selector_ok and affinity_ok


def _pool(sharing: str) -> PoolConfig:
    return PoolConfig.model_validate({"name": "p", "instanceTypes": ["p4d.24xlarge"], "maxGpus": 8, "sharing": sharing})


@pytest.mark.parametrize(
    ("chart", "key", "absent"),
    [("2.8.3", "nvidiaNodeSelector", "nvidianodeSelector"), ("2.7.1", "nvidianodeSelector", "nvidiaNodeSelector")],
)
def test_hami_node_selector_key_follows_the_chart_version(chart, key, absent):
    raw = raw_stack("dev")
    raw["gpushare:hami"]["chartVersion"] = chart
    plugin = hami.hami_values(load_stack_config(raw, today=PLAN_DATE))["devicePlugin"]
    assert plugin[key] == {"gpu": "on"}
    assert absent not in plugin


@pytest.mark.parametrize("minor", pins.kubernetes_minors())
def test_hami_scheduler_runs_the_pinned_patch_of_the_cluster_minor(minor):
    raw = raw_stack("dev")
    raw["gpushare:cluster"]["kubernetesVersion"] = minor
    raw["gpushare:cluster"]["supportType"] = "EXTENDED"  # a minor past standard support on PLAN_DATE is allowed
    for team in raw["gpushare:teams"]:  # before 1.36 no MutatingAdmissionPolicy applies them
        team.pop("schedulerPolicy", None)
        team["priority"] = "standard"
    config = load_stack_config(raw, today=PLAN_DATE)
    image = hami.hami_values(config)["scheduler"]["kubeScheduler"]["image"]
    tag = pins.kube_scheduler_tag(minor)
    assert image == {"registry": "registry.k8s.io", "repository": "kube-scheduler", "tag": tag}
    assert tag.startswith(f"v{minor}.") and tag.count(".") == 2 and tag.rsplit(".", 1)[1].isdigit()


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


def test_exclusive_pool_nodes_run_the_nvidia_plugin(dev: StackConfig) -> None:
    assert _admitted(dev, pool_labels(_pool("exclusive")))


def test_time_sliced_pool_nodes_run_it_with_their_config(dev: StackConfig) -> None:
    pool = PoolConfig.model_validate(
        {"name": "p", "instanceTypes": ["g6.xlarge"], "maxGpus": 2, "sharing": "timeslice", "replicas": 4}
    )
    labels = pool_labels(pool)
    assert _admitted(dev, labels)
    config_map = nvidia_device_plugin_values(dev)["config"]["map"]
    assert labels[names.NVIDIA_PLUGIN_CONFIG_LABEL] in config_map


def test_hami_pool_nodes_never_run_it(dev: StackConfig) -> None:
    assert not _admitted(dev, pool_labels(_pool("hami")))


def test_values_do_not_pretend_to_remove_the_chart_affinity(dev: StackConfig) -> None:
    assert nvidia_device_plugin_values(dev).get("affinity") != {}
