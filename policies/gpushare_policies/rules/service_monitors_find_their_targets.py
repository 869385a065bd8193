"""The HAMi and Karpenter ServiceMonitors look in the namespaces their releases run in."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpushare import names

from ..rule import Finding, Rule, finding
from ..stack import StackView, sorted_by_name

SERVICE_MONITOR = f"kubernetes:{names.MONITORING_API}:ServiceMonitor"


def service_monitor_namespace_problems(obj: Mapping[str, Any], expected: Mapping[str, str]) -> list[str]:
    """A ServiceMonitor for a known target (by name) must select the namespace that target runs in."""
    name = obj["metadata"]["name"]
    if name not in expected:
        return []
    selected = obj["spec"].get("namespaceSelector", {}).get("matchNames", [])
    if selected != [expected[name]]:
        return [f"ServiceMonitor {name} selects namespaces {selected}, but its target runs in {expected[name]}"]
    return []


def check_service_monitor_namespaces(view: StackView, _config: None) -> Iterator[Finding]:
    hami, karpenter = view.release(names.HAMI_CHART), view.release(names.KARPENTER_CHART)
    expected = {
        **(
            {"hami-scheduler": str(hami.get("namespace")), "hami-device-plugin": str(hami.get("namespace"))}
            if hami
            else {}
        ),
        **({"karpenter": str(karpenter.get("namespace"))} if karpenter else {}),
    }
    for monitor in sorted_by_name(view.of_type(SERVICE_MONITOR)):
        obj = {"metadata": {"name": monitor.object_name}, "spec": monitor.get("spec") or {}}
        for problem in service_monitor_namespace_problems(obj, expected):
            yield finding(
                monitor,
                "spec.namespaceSelector.matchNames",
                monitor.get("spec", "namespaceSelector", "matchNames"),
                f"{problem}; Prometheus finds no target and the HAMi/Karpenter alerts can never fire",
                f"select [{expected[monitor.object_name]}]",
            )


RULE = Rule(
    name="service-monitors-find-their-targets",
    order=27,
    description="The HAMi and Karpenter ServiceMonitors select the namespaces their releases run in.",
    why="A ServiceMonitor looking in the wrong namespace scrapes nothing, so HamiSchedulerDown and the "
    "NodeClaim alerts never fire.",
    remediation="Select the namespace of the HAMi or Karpenter release.",
    enforcement="mandatory",
    severity="medium",
    check=check_service_monitor_namespaces,
)
