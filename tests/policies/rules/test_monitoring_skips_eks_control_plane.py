"""Changes that break `monitoring-skips-eks-control-plane`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import caught, delete_at, release, set_at

KPS = "kube-prometheus-stack"

# (policy, change, every fragment one message must contain), on the prod plan: each component turned back on,
# and one left to the chart's default (on).
PROD_CASES = {
    "scheduler scraped": (
        "monitoring-skips-eks-control-plane",
        lambda r: set_at(release(r, KPS), ["values", "kubeScheduler", "enabled"], True),
        ["Release kube-prometheus-stack: values.kubeScheduler.enabled is true", "KubeSchedulerDown"],
    ),
    "controller manager scraped": (
        "monitoring-skips-eks-control-plane",
        lambda r: set_at(release(r, KPS), ["values", "kubeControllerManager", "enabled"], True),
        ["values.kubeControllerManager.enabled is true", "KubeControllerManagerDown"],
    ),
    "etcd left to the chart default": (
        "monitoring-skips-eks-control-plane",
        lambda r: delete_at(release(r, KPS), ["values", "kubeEtcd"]),
        ["values.kubeEtcd.enabled not set", "etcd runs in the EKS-managed control plane"],
    ),
    "kube-proxy scraped": (
        "monitoring-skips-eks-control-plane",
        lambda r: set_at(release(r, KPS), ["values", "kubeProxy"], {"enabled": True}),
        ["values.kubeProxy.enabled is true", "127.0.0.1:10249", "set values.kubeProxy.enabled: false"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_monitoring_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])
