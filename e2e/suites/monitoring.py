"""The stack's GPU alerts as the scenarios watch them in the rig's Prometheus."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from e2e.cluster import prometheus
from e2e.cluster.workloads import Context
from e2e.suites.base import settle

# The rig renders the NodeClaim alert with nodeClaimNotInitializedMinutes: 1; rules are evaluated every 5 s.
ALERT_THRESHOLD_S = 60
ALERT_MARGIN_S = 15
UNPLACED_ALERT = "HamiPodUnplaced"
# The labels by which the stack's alerts name what they are about (a namespace, a pod, a NodeClaim's `name`, a
# node); an alert with none of them is about the whole stack (a component down).
SUBJECT_LABELS = ("namespace", "pod", "name", "node")


def hold_past_alert_threshold(ctx: Context, claims: list[dict[str, Any]]) -> int:
    """Hold until the oldest claim is older than the rig's one-minute alert threshold plus two evaluations."""
    created = min(
        datetime.fromisoformat(claim["metadata"]["creationTimestamp"].replace("Z", "+00:00")) for claim in claims
    )
    settle(ctx, max(0.0, ALERT_THRESHOLD_S + ALERT_MARGIN_S - (datetime.now(UTC) - created).total_seconds()))
    return int((datetime.now(UTC) - created).total_seconds())


def active_alerts_about(subjects: set[str]) -> list[str]:
    """The stack's active alerts (pending or firing, `Name{label=value}` and state) that are about one of `subjects`
    (namespaces, pods, NodeClaims, nodes) or about the whole stack: what concurrent scenarios' own alerts are not."""
    found = set()
    for alert in prometheus.active_alerts():
        labels = alert["labels"]
        named = {key: labels[key] for key in SUBJECT_LABELS if key in labels}
        if not named or subjects & set(named.values()):
            described = ", ".join(f"{key}={value}" for key, value in sorted(named.items()))
            found.add(f"{labels.get('alertname', '')}{{{described}}} {alert.get('state', '')}")
    return sorted(found)


def unplaced_alerts() -> set[str]:
    """Pods the stack's HamiPodUnplaced alert fires for (`namespace/name`)."""
    return {
        f"{a['labels'].get('namespace')}/{a['labels'].get('name')}"
        for a in prometheus.alerts(UNPLACED_ALERT)
        if a.get("state") == "firing"
    }
