"""The rig's Prometheus: the stack's GPU alert rules over Karpenter's and HAMi's real metrics.

The rules and the scrape of HAMi come from the offline plan of a copy of the running stack file with monitoring on
and one-minute NodeClaim, pending-pod and component-down alert thresholds (the smallest the config accepts), so those
alerts can fire within a run; everything else in them is what the stack deploys.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster.errors import RigError
from e2e.cluster.hami_installed import HamiInstalled
from e2e.cluster.rig import KARPENTER_METRICS_PORT, PROMETHEUS_PORT
from e2e.cluster.stack import Plan, variant_plan
from gpushare import names

NOT_INITIALIZED_ALERT = "GpuNodeClaimNotInitialized"


def monitored(running: Plan, work: Path) -> Plan:
    """The running stack planned with its own monitoring on and one-minute NodeClaim, pending-pod and component-down
    thresholds."""

    def one_minute(config: dict[str, Any]) -> None:
        monitoring = config.setdefault("gpushare:monitoring", {})
        monitoring.pop("existingPrometheus", None)
        monitoring["enabled"] = True
        monitoring.setdefault("alerts", {}).update(
            nodeClaimNotInitializedMinutes=1, podPendingMinutes=1, componentDownMinutes=1
        )

    return variant_plan(running.stack, f"{running.stack}-monitored", work, one_minute, running)


def rules_from_the_stack(plan: Plan) -> dict[str, Any]:
    [rule] = plan.of_kind("PrometheusRule")
    return {"groups": rule["spec"]["groups"]}


def hami_scrape(plan: Plan, hami: HamiInstalled) -> dict[str, Any]:
    """A static scrape of HAMi's scheduler as the stack's ServiceMonitor reaches it: the Service port it names,
    mapped to the container port the chart's Service targets, its path, and the Service's name as `job` (what
    the Prometheus operator sets, and what the stack's HAMi alerts select)."""
    [monitor] = [m for m in plan.of_kind("ServiceMonitor") if m["metadata"]["name"] == "hami-scheduler"]
    [endpoint] = monitor["spec"]["endpoints"]
    return {
        "job_name": hami.service_name,
        "metrics_path": endpoint.get("path", "/metrics"),
        "honor_labels": bool(endpoint.get("honorLabels", False)),
        "static_configs": [{"targets": [f"127.0.0.1:{hami.service_target_port(endpoint['port'])}"]}],
    }


def write_config(work: Path, hami: HamiInstalled, running: Plan) -> Path:
    plan = monitored(running, work)
    rules = work / "rules.yaml"
    rules.write_text(yaml.safe_dump(rules_from_the_stack(plan)))
    config = work / "prometheus.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "5s", "evaluation_interval": "5s"},
                "rule_files": [str(rules)],
                "scrape_configs": [
                    {
                        "job_name": "karpenter",
                        # The target labels a ServiceMonitor gives it: the pod metrics' own `namespace` then
                        # arrives as `exported_namespace`, as the stack's alerts expect.
                        "static_configs": [
                            {
                                "targets": [f"127.0.0.1:{KARPENTER_METRICS_PORT}"],
                                "labels": {"namespace": names.KARPENTER_NAMESPACE},
                            }
                        ],
                    },
                    hami_scrape(plan, hami),
                ],
            }
        )
    )
    return config


def _get(path: str) -> Any:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PROMETHEUS_PORT}{path}", timeout=10) as response:
            return json.loads(response.read())["data"]
    except OSError as error:
        raise RigError(f"Prometheus unreachable: {error}") from None


def active_alerts() -> list[dict[str, Any]]:
    """Every pending and firing alert of the stack's rules."""
    return _get("/api/v1/alerts")["alerts"]


def alerts(name: str) -> list[dict[str, Any]]:
    """Pending and firing alerts of that name."""
    return [alert for alert in active_alerts() if alert["labels"].get("alertname") == name]


def scraping(job: str) -> bool:
    """Prometheus is up and has scraped `job` successfully at least once."""
    try:
        result = query(f'up{{job="{job}"}}')
    except RigError:
        return False
    return bool(result) and result[0]["value"][1] == "1"


def scraping_karpenter() -> bool:
    return scraping("karpenter")


def query(expression: str) -> list[dict[str, Any]]:
    """An instant query's result vector."""
    return _get(f"/api/v1/query?query={urllib.parse.quote(expression)}")["result"]


def allowed_disruptions(nodepool: str) -> list[str]:
    """Karpenter's `karpenter_nodepools_allowed_disruptions` for the pool, one value per reason (empty when the
    series is not there yet)."""
    query = urllib.parse.quote(f'karpenter_nodepools_allowed_disruptions{{nodepool="{nodepool}"}}')
    result = _get(f"/api/v1/query?query={query}")["result"]
    return sorted(f"{series['metric'].get('reason', '')}={series['value'][1]}" for series in result)
