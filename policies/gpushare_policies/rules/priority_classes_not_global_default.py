"""No PriorityClass the stack creates is the cluster's global default.

A globalDefault class gives its value to every pod created without a priorityClassName, in every namespace
(the Priority admission plugin): a gpushare tier as default would raise every other workload to a team's tier, or
(batch) set preemptionPolicy Never on pods that never asked for it. Team pods get their tier by admission.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..rule import Finding, Rule, finding
from ..stack import StackView, sorted_by_name

PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"


def check_global_default(view: StackView, _config: None) -> Iterator[Finding]:
    for priority_class in sorted_by_name(view.of_type(PRIORITY_CLASS)):
        if priority_class.get("globalDefault") is True:
            yield finding(
                priority_class,
                "globalDefault",
                True,
                f"every pod of the cluster created without a priorityClassName gets priority "
                f"{priority_class.get('value')}, not only the teams' GPU pods",
                "set it to false: team GPU pods get their tier from the team's priority admission policy",
            )


RULE = Rule(
    name="priority-classes-not-global-default",
    order=38,
    description="No PriorityClass of the stack has globalDefault: true.",
    why="A global default gives a team tier's priority (and preemption policy) to every pod in the cluster without "
    "a class of its own.",
    remediation="Keep globalDefault false on gpushare's tiers; teams get them by admission.",
    enforcement="mandatory",
    severity="high",
    check=check_global_default,
)
