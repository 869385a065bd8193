"""The rig's Prometheus: the stack's GPU alert rules over Karpenter's real metrics.

The rules come from the offline plan of a copy of the prod stack file whose NodeClaim alert threshold is one
minute (the smallest the config accepts), so the alert can fire within a run; everything else in them is
what the stack deploys.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from e2e.errors import RigError
from e2e.rig import KARPENTER_METRICS_PORT, PROMETHEUS_PORT
from e2e.stack import ROOT, load_plan, write_plan

RIG_STACK = "rig"
NOT_INITIALIZED_ALERT = "GpuNodeClaimNotInitialized"


def rules_from_the_stack(work: Path) -> dict[str, Any]:
    """The prod stack's PrometheusRule groups, planned with a one-minute NodeClaim threshold."""
    stack_file = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
    monitoring = stack_file["config"].setdefault("gpushare:monitoring", {})
    monitoring.setdefault("alerts", {})["nodeClaimNotInitializedMinutes"] = 1
    copy = work / f"Pulumi.{RIG_STACK}.yaml"
    copy.write_text(yaml.safe_dump(stack_file))
    plan = load_plan(RIG_STACK, write_plan(RIG_STACK, work / "plans", copy))
    [rule] = plan.of_kind("PrometheusRule")
    return {"groups": rule["spec"]["groups"]}


def write_config(work: Path) -> Path:
    rules = work / "rules.yaml"
    rules.write_text(yaml.safe_dump(rules_from_the_stack(work)))
    config = work / "prometheus.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "5s", "evaluation_interval": "5s"},
                "rule_files": [str(rules)],
                "scrape_configs": [
                    {"job_name": "karpenter", "static_configs": [{"targets": [f"127.0.0.1:{KARPENTER_METRICS_PORT}"]}]}
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


def alerts(name: str) -> list[dict[str, Any]]:
    """Pending and firing alerts of that name."""
    return [alert for alert in _get("/api/v1/alerts")["alerts"] if alert["labels"].get("alertname") == name]


def scraping_karpenter() -> bool:
    """Prometheus is up and has scraped Karpenter successfully at least once."""
    try:
        result = _get("/api/v1/query?query=up%7Bjob%3D%22karpenter%22%7D")["result"]
    except RigError:
        return False
    return bool(result) and result[0]["value"][1] == "1"


def allowed_disruptions(nodepool: str) -> list[str]:
    """Karpenter's `karpenter_nodepools_allowed_disruptions` for the pool, one value per reason (empty when the
    series is not there yet)."""
    query = urllib.parse.quote(f'karpenter_nodepools_allowed_disruptions{{nodepool="{nodepool}"}}')
    result = _get(f"/api/v1/query?query={query}")["result"]
    return sorted(f"{series['metric'].get('reason', '')}={series['value'][1]}" for series in result)
