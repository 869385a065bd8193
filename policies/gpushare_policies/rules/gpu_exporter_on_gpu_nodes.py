"""The GPU exporter runs on GPU pool nodes, and only there."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.render import monitoring

from ..rule import Finding, Rule, finding
from ..stack import StackView, sorted_by_name


def check_exporter_placement(view: StackView, _config: None) -> Iterator[Finding]:
    for release in sorted_by_name(view.releases(monitoring.DCGM_CHART)):
        for problem in monitoring.exporter_placement_problems(release.get("values") or {}):
            yield finding(
                release,
                "values",
                None if not release.get("values") else "set",
                f"the GPU exporter {problem}: it never reaches Karpenter's tainted GPU nodes, or lands on every node",
                f"tolerate {names.GPU_TAINT['key']}:{names.GPU_TAINT['effect']} and require the node label "
                f"{names.SHARING_LABEL} (Exists) in values.affinity",
            )


RULE = Rule(
    name="gpu-exporter-on-gpu-nodes",
    order=26,
    description=f"{monitoring.DCGM_CHART} tolerates the GPU taint and requires a GPU pool label.",
    why="Without the toleration it never runs on Karpenter's tainted GPU nodes; without the affinity it runs "
    "(and fails) on every system node.",
    remediation=f"Keep the exporter values gpushare renders (toleration + nodeAffinity on {names.SHARING_LABEL}).",
    enforcement="mandatory",
    severity="medium",
    check=check_exporter_placement,
)
