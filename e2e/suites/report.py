"""The e2e report: a terminal table, build/e2e/report.json and build/e2e/report.md."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from e2e.cluster.build import GENERATED_MODULES, TOOLS, UPSTREAM_SOURCES
from e2e.suites.base import WAITED_ON, Result
from gpushare import pins

DEVIATIONS = (
    "NodePools point at a KWOKNodeClass instead of the EC2NodeClass (the kwok provider launches only for its own "
    "node class); the EC2NodeClass itself is applied and validated in the objects scenarios.",
    "Nodes are KWOK fakes: the node agent registers extended resources as 0 on a new node, as a kubelet does before "
    "device plugins report, then KWOK plays the kubelet's status and pods; a pod KWOK leaves bound but unplayed for "
    "15 s (its race with a node it has just learned, otherwise resolved only by its resync minutes later) gets an "
    "annotation touched so KWOK plays it, as a kubelet would have started it (or, being deleted, stopped it).",
    "HAMi's device plugin needs NVML and stays a stand-in: rig-gpu-node (e2e/cluster/tools/hami/gpunode, on HAMi's own "
    "packages) writes hami.io/node-nvidia-register with HAMi's encoder from the catalog's NVML memory and the "
    "release's device config, registers nvidia.com/gpu (GPUs x split) through a kubelet stand-in that speaks the "
    "device-plugin gRPC API (Registration, ListAndWatch, Allocate) in a private mount namespace per node, and on "
    "Allocate does HAMi's bookkeeping (devices to allocate, bind phase, node lock released). The real mock device "
    "plugin registers gpumem, gpucores and gpumem-percentage through the same kubelet stand-in.",
    "The NVIDIA device plugin (exclusive and time-sliced pools) is a stand-in that derives what the node registers "
    "from its release's values (the Go module proxy refuses its module).",
    "Instance types come from the catalog (vCPU, memory, GPUs, on-demand prices, GPU labels) in kwok's format, in "
    "three rig zones; kwok does not apply overlays to the launched node as the AWS provider does.",
    "consolidateAfter is shortened to 15s so consolidation is observable within a run, and every scheduled "
    "disruption budget is moved to a daily window starting 12 h after the rig starts (at most 11 h long), so no "
    "scenario depends on the hour or weekday; disruption-budget sets windows over and away from now on purpose.",
    "Prometheus runs without the Prometheus operator: the stack's Karpenter and HAMi-scheduler ServiceMonitors "
    "become static scrapes (HAMi's through the Service port the monitor names, with its honorLabels, job = the "
    "Service name; Karpenter's with the namespace label a ServiceMonitor target carries), and the stack's "
    "PrometheusRule groups are loaded as a rules file, rendered with monitoring on and "
    "nodeClaimNotInitializedMinutes: 1, podPendingMinutes: 1 and componentDownMinutes: 1 so those alerts can fire "
    "within a run.",
    "Scenarios run four at a time, each on copies of the dev teams it needs and their pools (e2e/cluster/tenants.py), "
    "rendered by the real program into the plan the rig applies; the examples run on copies too (their namespace "
    "and pool renamed). A pool's copy is named <tenant><n>: kwok names a node up to 61 characters beyond its pool's "
    "name, and HAMi labels each pod it places with its node's name, which a label value allows only up to 63 "
    "(EC2 node names are about 45).",
    "Both kube-schedulers retry refused pods sooner: podInitialBackoffSeconds 1 and podMaxBackoffSeconds 2 "
    "(production 1 and 10) and --pod-max-in-unschedulable-pods-duration=15s (production 5m).",
)


def _hami_processes(source: str, certificate: str) -> str:
    """The deviation line saying how HAMi's processes start: from `source`, the rig's certificate `certificate`."""
    return (
        f"HAMi's scheduler and its kube-scheduler run as processes started from {source}: the scheduler Deployment's "
        "containers' command lines and literal env, the ConfigMaps they mount, its Service's ports and the "
        "MutatingWebhookConfiguration. They get the rig's kubeconfig, the kube-scheduler its own port, and the "
        "webhook reaches the extender by URL on loopback where the chart names its Service (certificate made by the "
        f"rig; {certificate})."
    )


# How the stack is installed: by `pulumi up` (make e2e's scenarios) or by the rig's applier (make chaos).
ENGINE_INSTALLED = (
    "The scenarios' stack (the dev stack with a tenant per scenario) is installed by `pulumi up` with the real "
    "Pulumi CLI, Python language host and pulumi-kubernetes provider, in the existing-cluster mode (the rig's "
    "Karpenter the existing one, recorded as Deployment kube-system/karpenter of no replicas; the charts' pods on a "
    "KWOK system node), the rig's NodePool and NodeOverlay deviations made by the engine program's transforms; "
    "objects a scenario wants absent are deleted again before Karpenter starts; the state is saved once at the end "
    "(PULUMI_SKIP_CHECKPOINTS), not after every step. The rig runs Karpenter itself.",
    _hami_processes(
        "the objects the provider's Helm created",
        "the chart's cert-gen Job, which KWOK completes without running, makes it in a cluster",
    ),
)
APPLIER_INSTALLED = (
    "The stack's objects are server-side applied by the rig (not `pulumi up`, which make e2e's scenarios use); Helm "
    "releases (Karpenter, HAMi, NVIDIA device plugin, monitoring) are not installed: the rig runs Karpenter and HAMi "
    "itself, and objects of the monitoring.coreos.com group are skipped (their CRDs come from a chart).",
    _hami_processes(
        "what Helm renders (helm template) from the HAMi chart archive in GPUSHARE_CHART_ARCHIVES with the stack's "
        "release values",
        "the chart's cert-gen Job does not run",
    ),
)


UPSTREAM_MODULES = (
    "k8s.io/kubernetes",
    "go.etcd.io/etcd/server/v3",
    "sigs.k8s.io/karpenter",
    "sigs.k8s.io/kwok",
    "github.com/aws/karpenter-provider-aws",
    "github.com/prometheus/prometheus",
    "helm.sh/helm/v3",
    "github.com/Project-HAMi/HAMi",
    "github.com/HAMi/mock-device-plugin",
    "github.com/pulumi/pulumi/pkg/v3",
    "github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3",
    "github.com/pulumi/pulumi-kubernetes/provider/v4",
)


def versions() -> dict[str, str]:
    """Each upstream module the rig builds, at the version its go.mod requires (a module required as a commit's
    pseudo-version, because it has no /v2 path or tag of its own, by the release tag or commit of it). Direct
    requirements only: the provider's module requires pulumi pkg/v3 indirectly at another version than the CLI."""
    text = "\n".join(go_mod.read_text() for go_mod in sorted(TOOLS.glob("*/go.mod")))
    tags = {(source.module, source.version): source.tag for source in (*UPSTREAM_SOURCES, *GENERATED_MODULES)}
    found = {}
    for module in UPSTREAM_MODULES:
        match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)$", text, re.M)
        if match:
            found[module] = tags.get((module, match.group(1)), match.group(1))
    return found


def karpenter_deviation(found: dict[str, str]) -> str:
    """The rig's Karpenter beside the stack's: the core it runs and the provider release whose CRDs it applies,
    against the chart the stack pins (read from the go.mod files and pins.yaml, so the line cannot go stale)."""
    return (
        f"Karpenter core runs at {found['sigs.k8s.io/karpenter']} beside the CRDs of karpenter-provider-aws "
        f"{found['github.com/aws/karpenter-provider-aws']}, the stack's chart {pins.chart_version('karpenter')}: "
        "that release builds on core v1.15.1, whose zip the Go module proxy refuses (v1.15.0 is the newest it "
        "serves; e2e/cluster/tools/karpenter/go.mod)."
    )


def _document(results: list[Result], elapsed_s: float, startup_s: float, deviations: tuple[str, ...]) -> dict[str, Any]:
    found = versions()
    return {
        "passed": all(result.passed for result in results),
        "seconds": round(elapsed_s, 1),
        "startup_seconds": round(startup_s, 1),
        "versions": found,
        "deviations": [*deviations, karpenter_deviation(found)],
        "scenarios": [
            {
                "name": r.name,
                "passed": r.passed,
                "summary": r.summary,
                "seconds": r.seconds,
                "waited": r.waited,
                "figures": r.figures,
                "notes": r.notes,
            }
            for r in results
        ],
    }


def _time(seconds: float, waited: dict[str, float]) -> str:
    """`212 s (karpenter 120, hami 30, settle 45)`: a scenario's wall time and where its waits went."""
    parts = ", ".join(f"{on} {waited[on]:.0f}" for on in WAITED_ON if waited.get(on))
    return f"{seconds:.0f} s" + (f" ({parts})" if parts else "")


def table(results: list[Result], elapsed_s: float, where: str = "build/e2e/report.md") -> str:
    width = max((len(r.name) for r in results), default=8)
    lines = [f"{'scenario':<{width}}  result  time  summary", f"{'-' * width}  ------  ----  -------"]
    lines += [
        f"{r.name:<{width}}  {'PASS' if r.passed else 'FAIL':<6}  {r.seconds:>4.0f}  {r.summary}" for r in results
    ]
    passed = sum(r.passed for r in results)
    lines.append(f"{passed}/{len(results)} scenarios passed in {elapsed_s:.0f} s; report: {where}")
    return "\n".join(lines)


def markdown(document: dict[str, Any]) -> str:
    lines = ["# gpushare offline cluster report", ""]
    lines.append(
        f"{len(document['scenarios'])} scenarios in {document['seconds']:.0f} s, the cluster's start "
        f"{document['startup_seconds']:.0f} s of it; waits by what they waited on (a scenario's waits overlap those "
        "of the scenarios running beside it)."
    )
    lines += ["", "| scenario | result | time | summary |", "|---|---|---|---|"]
    lines += [
        f"| {s['name']} | {'PASS' if s['passed'] else 'FAIL'} | {_time(s['seconds'], s['waited'])} | {s['summary']} |"
        for s in document["scenarios"]
    ]
    lines += ["", "## Versions", ""]
    lines += [f"- {module} {version}" for module, version in document["versions"].items()]
    lines += ["", "## Deviations from AWS", ""]
    lines += [f"- {deviation}" for deviation in document["deviations"]]
    lines += ["", "## Figures", ""]
    for scenario in document["scenarios"]:
        lines.append(f"- {scenario['name']}: `{json.dumps(scenario['figures'], sort_keys=True)}`")
        lines += [f"  - note: {note}" for note in scenario["notes"]]
    return "\n".join(lines) + "\n"


def write(
    directory: Path,
    results: list[Result],
    elapsed_s: float,
    startup_s: float,
    deviations: tuple[str, ...] = DEVIATIONS,
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    document = _document(results, elapsed_s, startup_s, deviations)
    (directory / "report.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    (directory / "report.md").write_text(markdown(document))
