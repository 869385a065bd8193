"""Only EventBridge and SQS may send to Karpenter's interruption queue.

Upstream's CloudFormation reference (KarpenterInterruptionQueuePolicy) allows sqs:SendMessage to the services
events.amazonaws.com and sqs.amazonaws.com only. Karpenter acts on every message in the queue (it cordons,
drains and terminates the instance a message names), so anyone else who may send can have nodes drained.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..aws import QUEUE_POLICY, statements
from ..rule import Finding, Rule, finding
from ..stack import StackView, sorted_by_name

SENDERS = ("events.amazonaws.com", "sqs.amazonaws.com")


def _principals(principal: Any) -> list[str]:
    """Every principal a statement names, `*` for anyone, services as their names."""
    if principal is None:
        return []
    if principal == "*":
        return ["*"]
    if not isinstance(principal, dict):
        return [str(principal)]
    found: list[str] = []
    for kind, value in principal.items():
        values = value if isinstance(value, list) else [value]
        found += [str(v) if kind == "Service" else f"{kind}:{v}" for v in values]
    return found


def check_queue(view: StackView, _config: None) -> Iterator[Finding]:
    for policy in sorted_by_name(view.of_type(QUEUE_POLICY)):
        for statement in statements(policy):
            if statement.effect != "Allow":
                continue
            others = [p for p in _principals(statement.principal) if p not in SENDERS]
            if "NotPrincipal" in statement.inverted:
                others.append("NotPrincipal (everyone it does not list)")
            if others:
                yield finding(
                    policy,
                    f"policy {statement.shown}.Principal",
                    ", ".join(others),
                    "Karpenter drains and terminates the instance every interruption message names: any other "
                    "sender can have GPU nodes drained",
                    f"allow only the services {' and '.join(SENDERS)}",
                )


RULE = Rule(
    name="interruption-queue-principals",
    order=36,
    description=f"The interruption queue's policy allows only {' and '.join(SENDERS)} (Allow statements).",
    why="Karpenter acts on every message in the queue: another sender can have nodes cordoned, drained and terminated.",
    remediation="Keep gpushare's queue policy (gpushare/render/iam.py interruption_queue_policy).",
    enforcement="mandatory",
    severity="high",
    check=check_queue,
)
