"""Monitoring rules: the WebUI reads the metrics HAMi exports, no monitoring image floats, the GPU exporter
runs on GPU pool nodes only, and ServiceMonitors look where HAMi and Karpenter run.

Each check calls the same function gpushare's renderer is tested with (gpushare/render/monitoring.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.render import monitoring

from .rule import Finding, Rule, finding
from .stack import StackView, sorted_by_name

SERVICE_MONITOR = f"kubernetes:{names.MONITORING_API}:ServiceMonitor"
MONITORING_CHARTS = (monitoring.KPS_CHART, monitoring.DCGM_CHART, monitoring.WEBUI_CHART)


def check_webui_matches_hami(view: StackView, _config: None) -> Iterator[Finding]:
    webui, hami = view.release(monitoring.WEBUI_CHART), view.release(names.HAMI_CHART)
    if webui is None or hami is None:
        return
    webui_version, hami_version = str(webui.get("version")), str(hami.get("version"))
    if not monitoring.webui_compatible(hami_version, webui_version):
        pairs = ", ".join(
            f"{version} with HAMi {'.'.join(map(str, low))} to below {'.'.join(map(str, high))}"
            for version, (low, high) in monitoring.WEBUI_HAMI_RANGES.items()
        )
        yield finding(
            webui,
            "version",
            webui_version,
            f"HAMi-WebUI {webui_version} does not read the metric names HAMi chart {hami_version} exports "
            "(HAMi 2.9 renamed them), so its pages stay empty",
            f"pin a WebUI chart that pairs with HAMi {hami_version} ({pairs})",
        )


def check_images_pinned(view: StackView, _config: None) -> Iterator[Finding]:
    for chart in MONITORING_CHARTS:
        for release in sorted_by_name(view.releases(chart)):
            for path in monitoring.unpinned_images(chart, release.get("values") or {}):
                yield finding(
                    release,
                    f"values.{path}",
                    release.get("values", *path.split(".")),
                    "the image tag floats (or the chart's default does), so every restart may run other code",
                    f"set values.{path}.tag to a fixed version or a digest",
                )


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
        for problem in monitoring.service_monitor_namespace_problems(obj, expected):
            yield finding(
                monitor,
                "spec.namespaceSelector.matchNames",
                monitor.get("spec", "namespaceSelector", "matchNames"),
                f"{problem}; Prometheus finds no target and the HAMi/Karpenter alerts can never fire",
                f"select [{expected[monitor.object_name]}]",
            )


RULES = (
    Rule(
        name="monitoring-webui-reads-hami-metrics",
        description="The HAMi-WebUI chart pairs with the HAMi chart's metric names (WebUI <= 1.1.0: HAMi 2.4-2.8).",
        why="HAMi 2.9 renamed its metrics; a WebUI of the other schema shows empty pages.",
        remediation="Pin the WebUI chart that pairs with the pinned HAMi chart.",
        enforcement="mandatory",
        severity="medium",
        check=check_webui_matches_hami,
    ),
    Rule(
        name="monitoring-images-pinned",
        description="Monitoring releases pin every image tag (digests allowed); no `main`/`latest`.",
        why="A floating tag changes what runs on every restart; the WebUI chart defaults to `main`.",
        remediation="Set a fixed tag (or digest) for each image of kube-prometheus-stack, dcgm-exporter, hami-webui.",
        enforcement="mandatory",
        severity="medium",
        check=check_images_pinned,
    ),
    Rule(
        name="gpu-exporter-on-gpu-nodes",
        description="dcgm-exporter tolerates the GPU taint and requires a GPU pool label.",
        why="Without the toleration it never runs on Karpenter's tainted GPU nodes; without the affinity it runs "
        "(and fails) on every system node.",
        remediation="Keep the exporter values gpushare renders (toleration + nodeAffinity on gpushare.io/sharing).",
        enforcement="mandatory",
        severity="medium",
        check=check_exporter_placement,
    ),
    Rule(
        name="service-monitors-find-their-targets",
        description="The HAMi and Karpenter ServiceMonitors select the namespaces their releases run in.",
        why="A ServiceMonitor looking in the wrong namespace scrapes nothing, so HamiSchedulerDown and the "
        "NodeClaim alerts never fire.",
        remediation="Select the namespace of the HAMi or Karpenter release.",
        enforcement="mandatory",
        severity="medium",
        check=check_service_monitor_namespaces,
    ),
)
