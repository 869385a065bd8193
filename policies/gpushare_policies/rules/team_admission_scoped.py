"""Every team admission policy is bound, and both policy and binding select only the team's namespace."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.render.tenancy_checks import admission_scope_problems

from ..admission import problem_findings
from ..rule import Finding, Rule
from ..stack import StackView


def check_scope(view: StackView, _config: None) -> Iterator[Finding]:
    yield from problem_findings(
        view,
        admission_scope_problems,
        f"bind each team policy and select the team's namespace by {names.NAMESPACE_NAME_LABEL} in both the "
        "policy and its binding (gpushare renders them so)",
    )


RULE = Rule(
    name="team-admission-scoped",
    order=22,
    description="Every team admission policy has a binding, and both select only the team's namespace.",
    why="An unbound policy does nothing; one matching other namespaces changes or refuses other teams' pods.",
    remediation=f"Bind each policy and select the team namespace by {names.NAMESPACE_NAME_LABEL}.",
    enforcement="mandatory",
    severity="high",
    check=check_scope,
)
