"""Cross-key checks of the Kubernetes and chart versions: the EKS support window, a pinned kube-scheduler per minor,
each feature against the version of its component (minimum-versions.yaml) and Karpenter against Kubernetes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from gpushare import eks, names, pins, versions
from gpushare.config import PROJECT, StackConfig
from gpushare.errors import ConfigError
from gpushare.versions import parse_version


def check_kubernetes_version(config: StackConfig, today: date, existing: bool) -> None:
    """A version past EKS standard support bills extended support or is upgraded by EKS: refused unless the
    stack opts into extended support (a cluster the stack creates; an existing cluster's owner decides); every
    minor needs a pinned kube-scheduler patch for HAMi."""
    cluster = config.cluster
    problem = None
    if not existing:
        problem = eks.support_problem(
            cluster.kubernetes_version,
            today,
            cluster.support_type == "EXTENDED",
            config.karpenter.chart_version,
            eks.load_eks_support(),
        )
    if problem is None and cluster.kubernetes_version not in pins.kubernetes_minors():
        problem = (
            f"{cluster.kubernetes_version} has no kube-scheduler patch pinned for HAMi in gpushare/pins.yaml; "
            f"allowed: {', '.join(pins.kubernetes_minors())}"
        )
    if problem is not None:
        raise ConfigError(f"{PROJECT}:cluster.kubernetesVersion", problem)


KARPENTER_VERSION_KEY = f"{PROJECT}:karpenter.chartVersion"
KUBERNETES_VERSION_KEY = f"{PROJECT}:cluster.kubernetesVersion"


def check_minimum_versions(config: StackConfig, ready: Callable[..., bool], version_known: bool) -> list[ConfigError]:
    """Every feature the config renders against the version of its component the stack holds
    (gpushare/minimum-versions.yaml), and Karpenter against the cluster's Kubernetes minor; MutatingAdmissionPolicy's
    keys are judged by check_admission and NodeOverlay's by the config schema."""
    used: list[tuple[str, str, str, str, str]] = []  # (feature, key, version, key holding it, the other way out)
    if ready("pools", "karpenter"):
        used += [
            (
                "balanced-consolidation",
                f"{PROJECT}:pools[{i}].disruption.consolidationPolicy",
                config.karpenter_version,
                config.karpenter_version_key,
                "WhenEmpty or WhenEmptyOrUnderutilized",
            )
            for i, pool in enumerate(config.pools)
            if pool.disruption.consolidation_policy == "Balanced"
        ]
    if ready("pools", "nvidia_device_plugin"):
        used += [
            (
                "time-slicing",
                f"{PROJECT}:pools[{i}].sharing",
                config.nvidia_device_plugin.chart_version,
                f"{PROJECT}:nvidiaDevicePlugin.chartVersion",
                "sharing hami or exclusive",
            )
            for i, pool in enumerate(config.pools)
            if pool.sharing == names.SHARING_TIMESLICE
        ]
    if version_known and ready("teams"):
        kubernetes = config.cluster.kubernetes_version
        used.append(("validating-admission-policy", KUBERNETES_VERSION_KEY, kubernetes, KUBERNETES_VERSION_KEY, ""))
    monitoring = ready("monitoring") and config.monitoring.enabled
    if version_known and monitoring and config.monitoring.existing_prometheus is None:
        kubernetes = config.cluster.kubernetes_version
        used.append(
            ("statefulset-pvc-retention", f"{PROJECT}:monitoring.enabled", kubernetes, KUBERNETES_VERSION_KEY, "")
        )
    errors = [
        ConfigError(key, problem)
        for feature, key, version, held_by, instead in used
        if (problem := versions.too_old(feature, version, held_by, instead)) is not None
    ]
    if not (version_known and ready("karpenter")):
        return errors
    karpenter, kubernetes = config.karpenter_version, config.cluster.kubernetes_version
    needed = versions.karpenter_for_kubernetes(kubernetes)
    if needed is not None and parse_version(karpenter) < parse_version(needed):
        errors.append(
            ConfigError(
                config.karpenter_version_key,
                f"{karpenter} does not run with Kubernetes {kubernetes} ({KUBERNETES_VERSION_KEY}): Karpenter's "
                f"compatibility matrix needs {needed} or newer there; allowed: {needed} or newer, or an older "
                "kubernetesVersion",
            )
        )
    return errors
