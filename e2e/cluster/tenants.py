"""Copies of the stack's teams and pools, one set per concurrent scenario, rendered by the real program.

Scenarios that run at the same time on one cluster must not see each other's pods, quotas, NodePools or
NodeClaims. Each gets a tenant: copies of the teams it needs (`<team>-<tenant>`) and of every pool those teams list,
added to the stack file before it is planned. The copies are the stack's own objects under other names (the program
renders their quotas, admission policies, overlays and limits exactly as for the originals), so a scenario proves on
its tenant what holds for the stack.

A copied pool is named `<tenant><n>`, five characters at most: Karpenter names a NodeClaim `<nodepool>-<5 random>`
and its kwok provider a node `kwok-<nodeclaim>-<two random words>-<n>-<10 random>-<uint32>`, up to 61 characters
beyond the pool's name, and HAMi 2.10 labels every pod it places with its node's name (hami.io/vgpu-node,
pkg/util/util.go PatchPodAnnotations), which a label value allows only up to 63 characters: a longer node name fails
every placement on that node. EC2 node names (`ip-10-0-1-23.<region>.compute.internal`) never come near it.
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

    @property
    def extra_pool(self) -> str:
        """The name of a pool a scenario adds to its tenant (a variant of the stack)."""
        return f"{self.name}x"

    def owns(self, pool: str) -> bool:
        """Whether the NodePool named so is this tenant's."""
        return pool in self.pools.values() or pool == self.extra_pool


# The stack's own teams and pools, as the examples and the simulator use them.
STACK = Tenant("", {}, {})


def renamed(name: str, tenant: str) -> str:
    return f"{name}-{tenant}"


def with_tenants(
    document: dict[str, Any],
    wanted: Mapping[str, Sequence[str]],
    team_keys: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> tuple[dict[str, Any], list[Tenant]]:
    """The stack file with, per tenant, copies of the teams it names (with the keys `team_keys[tenant][team]` set on
    the copy) and of the pools they list; and the tenants. Every original stays, so the stack itself still runs
    beside them."""
    out = copy.deepcopy(document)
    config = out["config"]
    teams = {team["name"]: team for team in config["gpushare:teams"]}
    pools = {pool["name"]: pool for pool in config["gpushare:pools"]}
    tenants = []
    for tenant, team_names in wanted.items():
        listed = sorted({pool for team in team_names for pool in teams[team]["pools"]})
        made = Tenant(
            tenant,
            {team: renamed(team, tenant) for team in team_names},
            {pool: f"{tenant}{index}" for index, pool in enumerate(listed)},
        )
        taken = sorted({*made.teams.values(), *made.pools.values(), made.extra_pool} & {*teams, *pools})
        if taken:
            raise ValueError(f"tenant {tenant}: {', '.join(taken)} already named in the stack")
        for pool in listed:
            config["gpushare:pools"].append({**copy.deepcopy(pools[pool]), "name": made.pool(pool)})
        for team in team_names:
            copied = copy.deepcopy(teams[team])
            copied["name"] = made.team(team)
            copied["pools"] = [made.pool(pool) for pool in teams[team]["pools"]]
            # One IAM principal may enter the cluster once: the copy gets no namespace role.
            copied.pop("namespaceAccessRoleArn", None)
            copied |= copy.deepcopy(dict((team_keys or {}).get(tenant, {}).get(team, {})))
            config["gpushare:teams"].append(copied)
        tenants.append(made)
    return out, tenants
