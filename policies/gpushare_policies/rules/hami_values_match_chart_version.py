"""HAMi values use the key names of the pinned chart version; the kube-scheduler matches the cluster's minor."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import compat, pins

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
    minor = str(cluster_version)
    pinned = pins.kube_scheduler_tag(minor) if minor in pins.kubernetes_minors() else None
    fix = f"set it to {pinned}, the patch gpushare pins for {minor}" if pinned else f"set it to a v{minor} patch"
    parsed = version_of(tag)
    if parsed is None or f"{parsed[0]}.{parsed[1]}" != minor or not str(tag).startswith("v"):
        yield finding(
            hami.resource,
            "values.scheduler.kubeScheduler.image.tag",
            tag,
            f"the cluster runs Kubernetes {minor} and HAMi's kube-scheduler must be a vMAJOR.MINOR.PATCH tag of that "
            "minor",
            fix,
        )
    elif pinned is not None and parsed < compat.parse_version(pinned):
        yield finding(
            hami.resource,
            "values.scheduler.kubeScheduler.image.tag",
            tag,
            f"an older {minor} patch than the {pinned} gpushare pins: HAMi's kube-scheduler misses the fixes since",
            fix,
        )


RULE = Rule(
    name="hami-values-match-chart-version",
    order=9,
    description="HAMi values use the key names of the pinned chart version, and a set kube-scheduler tag is a "
    "vMAJOR.MINOR.PATCH of the cluster's minor, not older than the patch gpushare pins for it.",
    why="A key of another chart version (nvidianodeSelector, kubeScheduler.imageTag) is ignored without a "
    "word; a kube-scheduler of another minor fails against the API server, and an old patch lacks its fixes.",
    remediation="Use devicePlugin.nvidiaNodeSelector from 2.8.0 (nvidianodeSelector before) and "
    "scheduler.kubeScheduler.image.tag at the cluster minor's patch pinned in gpushare/pins.yaml.",
    enforcement="mandatory",
    severity="high",
    check=check_hami_values,
)
