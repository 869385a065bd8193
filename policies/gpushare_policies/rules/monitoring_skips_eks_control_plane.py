"""kube-prometheus-stack scrapes no component EKS hides, so none of its `...Down` alerts fires forever."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpushare import compat, names

from ..rule import Finding, Rule, finding
from ..stack import StackView, sorted_by_name


def hidden_components_scraped(values: Mapping[str, Any]) -> list[str]:
    """Value keys of components EKS hides that the release leaves on (the chart turns every one on by default)."""
    return [
        key
        for key in compat.KPS_COMPONENTS_EKS_HIDES
        if not isinstance(values.get(key), Mapping) or values[key].get("enabled") is not False
    ]


def check_eks_control_plane_not_scraped(view: StackView, _config: None) -> Iterator[Finding]:
    for release in sorted_by_name(view.releases(names.KUBE_PROMETHEUS_STACK_CHART)):
        values = release.get("values") or {}
        for key in hidden_components_scraped(values):
            yield finding(
                release,
                f"values.{key}.enabled",
                (values.get(key) or {}).get("enabled") if isinstance(values.get(key), Mapping) else None,
                f"{compat.KPS_COMPONENTS_EKS_HIDES[key]}: its target is never up, so its critical alert fires on "
                "every healthy cluster and pages someone for nothing",
                f"set values.{key}.enabled: false",
            )


RULE = Rule(
    name="monitoring-skips-eks-control-plane",
    order=69,
    description="kube-prometheus-stack has kubeScheduler, kubeControllerManager, kubeEtcd and kubeProxy turned off.",
    why="EKS runs the scheduler, controller manager and etcd in its managed control plane and binds kube-proxy's "
    "metrics to localhost: the chart's defaults scrape targets that never answer, and KubeSchedulerDown, "
    "KubeControllerManagerDown, etcd and KubeProxyDown fire forever.",
    remediation="Keep the kube-prometheus-stack values gpushare renders (enabled: false for each).",
    enforcement="mandatory",
    severity="medium",
    check=check_eks_control_plane_not_scraped,
)
