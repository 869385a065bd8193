"""What the stack sets on purpose so `pulumi destroy` leaves no EBS volume billing behind: the monitoring release's
volume claims are deleted with their StatefulSet, and the release depends on the EBS CSI add-on, so destroy
removes it (and the claims) while the driver that deletes the volumes still runs.

StatefulSet `persistentVolumeClaimRetentionPolicy.whenDeleted` defaults to Retain (apps/v1 API; GA in Kubernetes
1.32): a retained claim keeps its EBS volume after the release is gone. The prometheus-operator passes the field
from the Prometheus and Alertmanager specs (pkg/apis/monitoring/v1 prometheus_types.go, alertmanager_types.go),
which kube-prometheus-stack 88.5.3 fills from `prometheusSpec.` and `alertmanagerSpec.` +
`persistentVolumeClaimRetentionPolicy`.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpushare.eks import EBS_CSI_DRIVER_ADDON

from ..prometheus import VOLUME_CLAIMS, kube_prometheus_stack
from ..rule import Finding, Rule, finding, finding_about
from ..stack import StackView

ADDON = "aws:eks/addon:Addon"
DELETE = "Delete"


def check_volumes(view: StackView, _config: None) -> Iterator[Finding]:
    release = kube_prometheus_stack(view)
    if release is None:
        return
    claiming = [claim for claim in VOLUME_CLAIMS if claim.template(release) is not None]
    for claim in claiming:
        when_deleted = release.get(*claim.spec, "persistentVolumeClaimRetentionPolicy", "whenDeleted")
        if when_deleted != DELETE:
            yield finding(
                release,
                claim.path("persistentVolumeClaimRetentionPolicy", "whenDeleted"),
                when_deleted,
                f"{claim.what}'s volume claim outlives its StatefulSet (Retain is the default): after `pulumi "
                "destroy` its EBS volume stays and bills; the stack sets Delete so the volume goes with the release",
                f'set it to "{DELETE}" (whenScaled may stay Retain)',
            )
    if not claiming or view.existing_cluster() is not None:
        return  # an existing cluster's driver is its owner's (docs/existing-cluster.md): destroy never removes it
    drivers = [a for a in view.of_type(ADDON) if a.get("addonName") == EBS_CSI_DRIVER_ADDON]
    if not any(view.depends_on(release, driver) for driver in drivers):
        yield finding_about(
            release,
            f"does not depend on the {EBS_CSI_DRIVER_ADDON} EKS add-on"
            + ("" if drivers else " (the stack has none)")
            + ": only that driver provisions and deletes EBS volumes, so its claims stay Pending without it, and "
            "`pulumi destroy` may remove the driver first, after which no one deletes the volumes the claims leave",
            f"install the {EBS_CSI_DRIVER_ADDON} add-on and declare the release with depends_on it (gpushare does "
            "whenever the stack runs its own Prometheus)",
        )


RULE = Rule(
    name="monitoring-volumes-go-with-the-stack",
    order=71,
    description="Every volume kube-prometheus-stack claims (Prometheus, Alertmanager) has "
    "persistentVolumeClaimRetentionPolicy.whenDeleted Delete, and the release depends on the aws-ebs-csi-driver "
    "EKS add-on (the stack's own; an existing cluster brings its driver).",
    why="Both are set on purpose for destroy: a retained claim, or a driver removed before the release, leaves the "
    "EBS volume billing after `pulumi destroy`; without the driver the claim never binds.",
    remediation="Keep the values and the dependency gpushare renders (render/monitoring.py, __main__.py).",
    enforcement="mandatory",
    severity="medium",
    check=check_volumes,
)
