"""The GPU exporter runs on GPU pool nodes, and only there."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpushare import names

from ..rule import Finding, Rule, finding
from ..stack import StackView, sorted_by_name


def exporter_placement_problems(values: Mapping[str, Any]) -> list[str]:
    """Why a GPU exporter's values would not run on (only) GPU pool nodes; empty when they do."""
    problems = []
    tolerations = values.get("tolerations") or []
    if not any(
        t.get("key") == names.GPU_TAINT["key"]
        and t.get("effect") in (None, "", names.GPU_TAINT["effect"])
        and (t.get("operator") == "Exists" or t.get("value") == names.GPU_TAINT["value"])
        for t in tolerations
    ):
        problems.append(f"does not tolerate the GPU taint {names.GPU_TAINT['key']}:{names.GPU_TAINT['effect']}")
    terms = (
        ((values.get("affinity") or {}).get("nodeAffinity") or {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
        .get("nodeSelectorTerms", [])
    )
    if not terms or not all(
        any(e.get("key") == names.SHARING_LABEL and e.get("operator") == "Exists" for e in term["matchExpressions"])
        for term in terms
    ):
        problems.append(f"does not require the GPU pool label {names.SHARING_LABEL} (nodeAffinity Exists)")
    return problems


def check_exporter_placement(view: StackView, _config: None) -> Iterator[Finding]:
    for release in sorted_by_name(view.releases(names.DCGM_CHART)):
        values = release.get("values") or {}
        for problem in exporter_placement_problems(values):
            if "tolerate" in problem:
                key, consequence = "tolerations", "it never reaches Karpenter's tainted GPU nodes"
                fix = f"add {{key: {names.GPU_TAINT['key']}, operator: Exists, effect: {names.GPU_TAINT['effect']}}}"
            else:
                key, consequence = "affinity", "it also runs on nodes without GPUs, which have no GPU for it to read"
                fix = f"require the node label {names.SHARING_LABEL} (operator Exists) in every nodeSelectorTerm"
            yield finding(release, f"values.{key}", values.get(key), f"the GPU exporter {problem}: {consequence}", fix)


RULE = Rule(
    name="gpu-exporter-on-gpu-nodes",
    order=26,
    description=f"{names.DCGM_CHART} tolerates the GPU taint and requires a GPU pool label.",
    why="Without the toleration it never runs on Karpenter's tainted GPU nodes; without the affinity it runs "
    "(and fails) on every system node.",
    remediation=f"Keep the exporter values gpushare renders (toleration + nodeAffinity on {names.SHARING_LABEL}).",
    enforcement="mandatory",
    severity="medium",
    check=check_exporter_placement,
)
