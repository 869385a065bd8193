"""HAMi values use the key names of the pinned chart version; the kube-scheduler matches the cluster's minor."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import compat

from ..hami import Hami
from ..rule import Finding, Rule, finding
from ..stack import UNKNOWN, StackView, version_of


def check_hami_values(view: StackView, _config: None) -> Iterator[Finding]:
    hami = Hami.of(view)
    if hami is None:
        return
    if not hami.known_version:
        yield finding(
            hami.resource,
            "version",
            hami.version,
            "not a HAMi chart whose value keys gpushare knows",
            f"pin one of {', '.join(compat.HAMI_CHART_VERSIONS)}",
        )
        return
    wrong = compat.hami_wrong_node_selector_key(hami.version)
    if wrong in hami.device_plugin:
        yield finding(
            hami.resource,
            f"values.devicePlugin.{wrong}",
            hami.device_plugin[wrong],
            f"chart {hami.version} reads devicePlugin.{hami.selector_key} and silently ignores this key",
            f"rename it to devicePlugin.{hami.selector_key}",
        )
    kube_scheduler = (hami.values.get("scheduler") or {}).get("kubeScheduler") or {}
    if "imageTag" in kube_scheduler:
        yield finding(
            hami.resource,
            "values.scheduler.kubeScheduler.imageTag",
            kube_scheduler["imageTag"],
            f"chart {hami.version} reads scheduler.kubeScheduler.image.tag (renamed in 2.7.0) and ignores this key",
            "move the tag to scheduler.kubeScheduler.image.tag",
        )
    tag = (kube_scheduler.get("image") or {}).get("tag")
    clusters = view.eks_clusters()
    cluster_version = clusters[0].get("version") if clusters else None
    if not tag or tag is UNKNOWN or cluster_version in (None, UNKNOWN):
        return
    parsed = version_of(tag)
    if parsed is None or f"{parsed[0]}.{parsed[1]}" != str(cluster_version):
        yield finding(
            hami.resource,
            "values.scheduler.kubeScheduler.image.tag",
            tag,
            f"the cluster runs Kubernetes {cluster_version} and HAMi's kube-scheduler must match its minor version",
            f"set it to v{cluster_version}.0 (or a later v{cluster_version} patch)",
        )


RULE = Rule(
    name="hami-values-match-chart-version",
    order=9,
    description="HAMi values use the key names of the pinned chart version, and a set kube-scheduler tag "
    "matches the cluster's minor version.",
    why="A key of another chart version (nvidianodeSelector, kubeScheduler.imageTag) is ignored without a "
    "word; a kube-scheduler of another minor fails against the API server.",
    remediation="Use devicePlugin.nvidiaNodeSelector from 2.8.0 (nvidianodeSelector before) and "
    "scheduler.kubeScheduler.image.tag vMAJOR.MINOR.PATCH of the cluster minor.",
    enforcement="mandatory",
    severity="high",
    check=check_hami_values,
)
