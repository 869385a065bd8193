"""Copies of the stack's teams and pools, one set per concurrent scenario, rendered by the real program.

Scenarios that run at the same time on one cluster must not see each other's pods, quotas, NodePools or
NodeClaims. Each gets a tenant: copies of the teams it needs and of every pool those teams list, renamed
`<name>-<tenant>`, added to the stack file before it is planned. The copies are the stack's own objects under
other names (the program renders their quotas, admission policies, overlays and limits exactly as for the
originals), so a scenario proves on its tenant what holds for the stack.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tenant:
    """What one scenario owns: its name and the names of its copies of the stack's teams and pools."""

    name: str
    teams: Mapping[str, str]
    pools: Mapping[str, str]

    def team(self, original: str) -> str:
        return self.teams[original]

    def pool(self, original: str) -> str:
        return self.pools[original]

    def owns(self, name: str) -> bool:
        """Whether a team or pool named so is this tenant's (a pool a scenario adds to its tenant is named
        `<name>-<tenant>` too)."""
        return name.endswith(f"-{self.name}")


# The stack's own teams and pools, as the examples and the simulator use them.
STACK = Tenant("", {}, {})


def renamed(name: str, tenant: str) -> str:
    return f"{name}-{tenant}"


def with_tenants(document: dict[str, Any], wanted: Mapping[str, Sequence[str]]) -> tuple[dict[str, Any], list[Tenant]]:
    """The stack file with, per tenant, copies of the teams it names and of the pools they list; and the tenants.
    Every original stays, so the stack itself still runs beside them."""
    out = copy.deepcopy(document)
    config = out["config"]
    teams = {team["name"]: team for team in config["gpushare:teams"]}
    pools = {pool["name"]: pool for pool in config["gpushare:pools"]}
    tenants = []
    clash = sorted(
        f"{name} ends like tenant {tenant}"
        for tenant in wanted
        for name in {*teams, *pools}
        if name.endswith(f"-{tenant}")
    )
    if clash:
        raise ValueError("; ".join(clash))
    for tenant, team_names in wanted.items():
        listed = sorted({pool for team in team_names for pool in teams[team]["pools"]})
        pool_names = {pool: renamed(pool, tenant) for pool in listed}
        for pool in listed:
            config["gpushare:pools"].append({**copy.deepcopy(pools[pool]), "name": pool_names[pool]})
        for team in team_names:
            copied = copy.deepcopy(teams[team])
            copied["name"] = renamed(team, tenant)
            copied["pools"] = [pool_names[pool] for pool in teams[team]["pools"]]
            # One IAM principal may enter the cluster once: the copy gets no namespace role.
            copied.pop("namespaceAccessRoleArn", None)
            config["gpushare:teams"].append(copied)
        tenants.append(Tenant(tenant, {team: renamed(team, tenant) for team in team_names}, pool_names))
    return out, tenants
