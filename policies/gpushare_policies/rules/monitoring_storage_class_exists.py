"""The volumes the stack's Prometheus and Alertmanager claim name a StorageClass the cluster has."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.eks import EKS_STORAGE_CLASSES

from ..prometheus import VOLUME_CLAIMS
from ..rule import Finding, Rule, finding
from ..stack import StackView

STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"


def check_storage_class(view: StackView, _config: None) -> Iterator[Finding]:
    created = {c.object_name for c in view.of_type(STORAGE_CLASS)}
    existing = ", ".join(sorted({*EKS_STORAGE_CLASSES, *created}))
    for release in view.releases(names.KUBE_PROMETHEUS_STACK_CHART):
        for claim in VOLUME_CLAIMS:
            template = claim.template(release)
            wanted = template.get("spec", {}).get("storageClassName") if isinstance(template, dict) else None
            if wanted is None or wanted in EKS_STORAGE_CLASSES or wanted in created:
                continue
            yield finding(
                release,
                claim.path(claim.storage, "volumeClaimTemplate", "spec", "storageClassName"),
                wanted,
                f"the cluster has no such StorageClass (EKS creates only {', '.join(EKS_STORAGE_CLASSES)} and the "
                f"stack creates {', '.join(sorted(created)) or 'none'}): {claim.what}'s volume claim stays Pending "
                f"and {claim.what} never starts",
                f"use one of {existing} (gpushare:monitoring.storageClass), or create that StorageClass in the stack",
            )


RULE = Rule(
    name="monitoring-storage-class-exists",
    order=68,
    description="Prometheus' and Alertmanager's volume claims name a StorageClass EKS creates (gp2) or the stack "
    "creates.",
    why="A claim on a StorageClass nobody created stays Pending: Prometheus never starts and no alert ever fires.",
    remediation="Use gp2, or create the StorageClass (e.g. gp3 on the EBS CSI driver) in the stack.",
    enforcement="mandatory",
    severity="high",
    check=check_storage_class,
)
