"""The NVIDIA device plugin's DaemonSet lands on exclusive and time-sliced pool nodes and on no HAMi node.

The chart's default affinity is data in gpushare/compat.py (NVIDIA_CHART_DEFAULT_NODE_SELECTOR_TERMS, from
NVIDIA/k8s-device-plugin deployments/helm/nvidia-device-plugin/values.yaml): any one term admits a node. Helm
merges our values into these defaults, so an `affinity: {}` from us would delete nothing; what counts is
whether our nodes carry labels one term admits.
"""

from __future__ import annotations

from typing import Any

from gpushare import names
from gpushare.compat import NVIDIA_CHART_DEFAULT_NODE_SELECTOR_TERMS
from gpushare.config import PoolConfig, StackConfig
from gpushare.render.hami import nvidia_device_plugin_values
from gpushare.render.karpenter import pool_labels


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
