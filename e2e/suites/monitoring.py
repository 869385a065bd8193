"""The stack's GPU alerts as the scenarios watch them in the rig's Prometheus."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from e2e.cluster import prometheus

# The rig renders the NodeClaim alert with nodeClaimNotInitializedMinutes: 1; rules are evaluated every 5 s.
ALERT_THRESHOLD_S = 60


ALERT_MARGIN_S = 15


def hold_past_alert_threshold(claims: list[dict[str, Any]]) -> int:
    """Sleep until the oldest claim is older than the rig's one-minute alert threshold plus two evaluations."""
    created = min(
        datetime.fromisoformat(claim["metadata"]["creationTimestamp"].replace("Z", "+00:00")) for claim in claims
    )
    remaining = ALERT_THRESHOLD_S + ALERT_MARGIN_S - (datetime.now(UTC) - created).total_seconds()
    time.sleep(max(0.0, remaining))
    return int((datetime.now(UTC) - created).total_seconds())


UNPLACED_ALERT = "HamiPodUnplaced"


def unplaced_alerts() -> set[str]:
    """Pods the stack's HamiPodUnplaced alert fires for (`namespace/name`)."""
    return {
        f"{a['labels'].get('namespace')}/{a['labels'].get('name')}"
        for a in prometheus.alerts(UNPLACED_ALERT)
        if a.get("state") == "firing"
    }
