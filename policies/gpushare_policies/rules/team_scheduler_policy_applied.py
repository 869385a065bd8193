"""Every scheduler policy a team namespace records is applied to its GPU pods."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare.render.tenancy_checks import scheduler_policy_problems

from ..admission import problem_findings
from ..rule import Finding, Rule
from ..stack import StackView


def check_scheduler_policy(view: StackView, _config: None) -> Iterator[Finding]:
    yield from problem_findings(
        view,
        scheduler_policy_problems,
        "keep the team's MutatingAdmissionPolicy that copies its schedulerPolicy onto GPU pods (Kubernetes 1.36+)",
    )


RULE = Rule(
    name="team-scheduler-policy-applied",
    order=23,
    description="A team namespace's recorded scheduler policy is set on its GPU pods by a MutatingAdmissionPolicy.",
    why="HAMi reads binpack/spread only from pod annotations; recorded but not applied, the team's choice "
    "is silently ignored.",
    remediation="Keep the scheduler-policy MutatingAdmissionPolicy gpushare renders for the team.",
    enforcement="mandatory",
    severity="medium",
    check=check_scheduler_policy,
)
