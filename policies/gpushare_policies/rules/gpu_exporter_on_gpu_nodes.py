"""The GPU exporter runs on GPU pool nodes, and only there."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from gpushare import names

from ..kube import pools, requirement_matches, tolerates
from ..rule import Finding, Rule, finding
from ..stack import StackView, sorted_by_name

# Nodes the exporter must reach when no stack says which: one per sharing mode; and the system nodes it must not.
SHARING_NODES: Final = tuple(
    {names.SHARING_LABEL: mode} for mode in (names.SHARING_HAMI, names.SHARING_EXCLUSIVE, names.SHARING_TIMESLICE)
)
SYSTEM_NODE: Final = {names.SYSTEM_ROLE_LABEL: names.SYSTEM_ROLE}


def _admits(values: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """nodeSelector and required node affinity (OR over terms, AND within one) both hold for these labels."""
    selector = values.get("nodeSelector")
    if isinstance(selector, Mapping) and any(labels.get(str(k)) != str(v) for k, v in selector.items()):
        return False
    affinity = values.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if node_affinity else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list) or not terms:
        return True
    return any(
        all(requirement_matches(e, labels) for e in term.get("matchExpressions") or [])
        for term in terms
        if isinstance(term, Mapping)
    )


def exporter_placement_problems(
    values: Mapping[str, Any], gpu_nodes: Sequence[tuple[str, Mapping[str, str]]] | None = None
) -> list[str]:
    """Why a GPU exporter's values would not run on (only) GPU pool nodes; empty when they do. Placement is
    evaluated on node labels (the pools' own when `gpu_nodes` names them), so any spelling of the same set passes."""
    problems = []
    tolerations = values.get("tolerations")
    listed = [t for t in tolerations if isinstance(t, Mapping)] if isinstance(tolerations, list) else []
    if not tolerates(listed, names.GPU_TAINT):
        problems.append(f"does not tolerate the GPU taint {names.GPU_TAINT['key']}:{names.GPU_TAINT['effect']}")
    nodes = gpu_nodes if gpu_nodes is not None else [(n[names.SHARING_LABEL], n) for n in SHARING_NODES]
    missed = [name for name, labels in nodes if not _admits(values, labels)]
    if missed:
        problems.append(f"does not run on the nodes of {', '.join(missed)}")
    if _admits(values, SYSTEM_NODE):
        problems.append(f"does not require the GPU pool label {names.SHARING_LABEL} (nodeAffinity Exists)")
    return problems


def check_exporter_placement(view: StackView, _config: None) -> Iterator[Finding]:
    gpu_nodes = [
        (f"pool {pool.name}", pool.node_labels(instance_type))
        for pool in pools(view)
        if names.SHARING_LABEL in pool.labels
        for instance_type in (pool.instance_types or ())[:1]
    ]
    for release in sorted_by_name(view.releases(names.DCGM_CHART)):
        values = release.get("values") or {}
        for problem in exporter_placement_problems(values, gpu_nodes):
            if "tolerate" in problem:
                key, consequence = "tolerations", "it never reaches Karpenter's tainted GPU nodes"
                fix = f"add {{key: {names.GPU_TAINT['key']}, operator: Exists, effect: {names.GPU_TAINT['effect']}}}"
            elif "does not run on" in problem:
                key, consequence = "affinity", "those GPUs go unwatched"
                fix = "let values.nodeSelector and values.affinity admit every GPU pool's node labels"
            else:
                key, consequence = "affinity", "it also runs on nodes without GPUs, which have no GPU for it to read"
                fix = f"require the node label {names.SHARING_LABEL} (operator Exists) in every nodeSelectorTerm"
            yield finding(release, f"values.{key}", values.get(key), f"the GPU exporter {problem}: {consequence}", fix)


RULE = Rule(
    name="gpu-exporter-on-gpu-nodes",
    order=26,
    description=f"{names.DCGM_CHART} tolerates the GPU taint, and its nodeSelector and node affinity (evaluated on "
    "node labels) admit every GPU pool's nodes and no system node.",
    why="Without the toleration it never runs on Karpenter's tainted GPU nodes; without the affinity it runs "
    "(and fails) on every system node.",
    remediation=f"Keep the exporter values gpushare renders (toleration + nodeAffinity on {names.SHARING_LABEL}).",
    enforcement="mandatory",
    severity="medium",
    check=check_exporter_placement,
)
