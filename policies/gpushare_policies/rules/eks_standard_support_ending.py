"""The cluster's Kubernetes minor is not within 90 days of (or past) its end of EKS standard support."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import eks

from ..rule import Finding, Rule, finding
from ..stack import UNKNOWN, StackView, sorted_by_name

EXTENDED_PRICE = "$0.60 instead of $0.10 per cluster-hour"


def check_standard_support(view: StackView, _config: None) -> Iterator[Finding]:
    support = eks.load_eks_support()
    for cluster in sorted_by_name(view.eks_clusters()):
        version = cluster.get("version")
        support_type = cluster.get("upgradePolicy", "supportType")
        if version is UNKNOWN or support_type is UNKNOWN:
            continue
        ends = eks.standard_support_ends_within(str(version), view.today, support)
        if ends is None:
            continue
        days = (ends - view.today).days
        when = f"ends on {ends} (in {days} days)" if days > 0 else f"ended on {ends}"
        # EKS's own default is EXTENDED: an unset upgrade policy bills extended support too.
        then = (
            "EKS upgrades the control plane to the next minor itself"
            if support_type == "STANDARD"
            else f"EKS bills extended support, {EXTENDED_PRICE}"
        )
        yield finding(
            cluster,
            "version",
            version,
            f"EKS standard support for Kubernetes {version} {when}; from then on {then}",
            f"move gpushare:cluster.kubernetesVersion to a newer minor ({_newer(str(version), support) or 'none yet'}) "
            "in a planned upgrade before that date",
        )


def _newer(minor: str, support: eks.EksSupport) -> str:
    window = support.versions[minor]
    return ", ".join(
        other
        for other, later in support.versions.items()
        if later.end_of_standard_support > window.end_of_standard_support
    )


RULE = Rule(
    name="eks-standard-support-ending",
    order=40,
    description="The cluster's Kubernetes minor is not within 90 days of its end of EKS standard support, nor past "
    "it (dates in gpushare/eks-support.yaml, judged for the day the pack runs).",
    why="After the end of standard support EKS bills extended support, $0.60 instead of $0.10 per cluster-hour, or "
    "with supportType STANDARD upgrades the control plane on its own schedule, not the team's.",
    remediation="Upgrade gpushare:cluster.kubernetesVersion to a newer minor before the date in a planned window.",
    enforcement="advisory",
    severity="medium",
    check=check_standard_support,
)
