"""No object of the stack uses a feature newer than the version of Karpenter, the NVIDIA device plugin or Kubernetes
the stack runs (gpushare/minimum-versions.yaml, the table config validation reads too), and Karpenter runs with the
cluster's Kubernetes minor (its compatibility matrix).

NodeOverlay's Karpenter version is judged by karpenter-node-overlay-enabled, HAMi's renamed value keys by
hami-values-match-chart-version; both read the same table.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import versions

from ..karpenter import running_karpenter
from ..nvidia import NvidiaPlugin
from ..prometheus import VOLUME_CLAIMS, kube_prometheus_stack
from ..rule import Finding, Rule, finding
from ..stack import NODE_POOL, Resource, StackView, sorted_by_name, version_of

ADMISSION = "kubernetes:admissionregistration.k8s.io/v1"
FIX = "upgrade what holds the version back, or do without the feature (the message names both)"


def _karpenter(view: StackView) -> tuple[str, str] | None:
    karpenter = running_karpenter(view)
    return None if karpenter is None else (str(karpenter.version), karpenter.version_holder)


def _kubernetes(view: StackView) -> tuple[str, str] | None:
    held = view.kubernetes_version()
    return None if held is None or not isinstance(held[0], str) else (held[0], held[1])


def _used(view: StackView) -> Iterator[tuple[str, Resource, str, object, tuple[str, str] | None, str]]:
    """(feature, resource, key, value, (held version, what holds it), the other way out) of every use."""
    karpenter, kubernetes = _karpenter(view), _kubernetes(view)
    for pool in sorted_by_name(view.of_type(NODE_POOL)):
        disruption = pool.get("spec", "disruption")
        policy = pool.get("spec", "disruption", "consolidationPolicy")
        if policy == "Balanced":
            key = "spec.disruption.consolidationPolicy"
            yield "balanced-consolidation", pool, key, policy, karpenter, "WhenEmpty or WhenEmptyOrUnderutilized"
        if isinstance(disruption, dict) and "consolidateAfter" not in disruption:
            yield "consolidate-after-optional", pool, "spec.disruption.consolidateAfter", None, karpenter, "set it"
    plugin = NvidiaPlugin.of(view)
    if plugin is not None:
        held = (str(plugin.resource.get("version")), f"{plugin.resource.label}'s version")
        for name in sorted(plugin.configs):
            if plugin.time_slicing(name) is not None:
                yield "time-slicing", plugin.resource, f"values.config.map.{name}", "timeSlicing", held, ""
    for kind, feature in (
        ("MutatingAdmissionPolicy", "mutating-admission-policy"),
        ("ValidatingAdmissionPolicy", "validating-admission-policy"),
    ):
        for policy in sorted_by_name(view.of_type(f"{ADMISSION}:{kind}")):
            yield feature, policy, "apiVersion", "admissionregistration.k8s.io/v1", kubernetes, ""
    release = kube_prometheus_stack(view)
    for claim in VOLUME_CLAIMS if release is not None else ():
        key = claim.path("persistentVolumeClaimRetentionPolicy")
        value = release.get(*claim.spec, "persistentVolumeClaimRetentionPolicy")
        if value is not None:
            yield "statefulset-pvc-retention", release, key, value, kubernetes, ""


def check_versions(view: StackView, _config: None) -> Iterator[Finding]:
    for feature, resource, key, value, held, instead in _used(view):
        problem = None if held is None else versions.too_old(feature, held[0], held[1], instead)
        if problem is not None:
            yield finding(resource, key, value, problem, FIX)
    karpenter, kubernetes = running_karpenter(view), _kubernetes(view)
    if karpenter is None or kubernetes is None:
        return
    needed = versions.karpenter_for_kubernetes(kubernetes[0])
    version = version_of(karpenter.version)
    if needed is not None and version is not None and version < versions.parse_version(needed):
        yield finding(
            karpenter.resource,
            karpenter.version_key,
            karpenter.version,
            f"Karpenter's compatibility matrix needs {needed} or newer on Kubernetes {kubernetes[0]} ({kubernetes[1]})",
            karpenter.upgrade(needed),
        )


RULE = Rule(
    name="features-within-held-versions",
    order=74,
    description="No NodePool, NVIDIA plugin config, admission policy or monitoring value uses a feature newer than "
    "the Karpenter, NVIDIA device plugin or Kubernetes version the stack runs (consolidationPolicy Balanced from "
    "Karpenter 1.14, a NodePool without consolidateAfter from 1.15, time-slicing from plugin 0.12, "
    "MutatingAdmissionPolicy from Kubernetes 1.36: gpushare/minimum-versions.yaml), and Karpenter is at least what "
    "its compatibility matrix needs for the cluster's Kubernetes minor.",
    why="A stack that holds a component back with chartVersion while its objects use a newer feature fails at "
    "`pulumi up` (the CRD or API server refuses the object) or, worse, is accepted and ignored.",
    remediation="Raise the held-back version (gpushare:*.chartVersion, gpushare:cluster.kubernetesVersion), or drop "
    "the feature; docs/configuration.md's Minimum versions table lists each.",
    enforcement="mandatory",
    severity="high",
    check=check_versions,
)
