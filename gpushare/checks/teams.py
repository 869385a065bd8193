"""Cross-key checks of the teams: pools that exist and are used, and what each team's keys need of its pools and
cluster (the quota in quotas.py, the admission policies in admission.py)."""

from __future__ import annotations

import difflib

from gpushare.checks.admission import check_admission
from gpushare.checks.monitoring import check_alert_waits
from gpushare.checks.quotas import check_quota_admits_pools, check_quota_within_supply
from gpushare.config import PROJECT, StackConfig, TeamConfig
from gpushare.errors import ConfigError, Problems


def check_teams(config: StackConfig, pools_valid: bool, cluster_valid: bool, version_known: bool) -> list[ConfigError]:
    """Every team names known pools (and within what they supply), every pool has a team. A pool no team lists
    because a team misspelled its name is the misspelling's consequence: one line, on the team's key."""
    problems = Problems()
    pool_names = [p.name for p in config.pools]
    used: set[str] = set()
    for i, team in enumerate(config.teams):
        unknown = []
        for j, pool_name in enumerate(team.pools):
            if pool_name in pool_names:
                continue
            meant = difflib.get_close_matches(pool_name, pool_names, n=1, cutoff=0.75)
            used.update(meant)
            hint = f"did you mean {meant[0]}? " if meant else ""
            unknown.append(
                ConfigError(
                    f"{PROJECT}:teams[{i}].pools[{j}]",
                    f"unknown pool {pool_name!r}; {hint}allowed: {', '.join(pool_names)}",
                )
            )
        problems.errors.extend(unknown)
        used.update(team.pools)
        if pools_valid and not unknown:
            problems.check(_check_scheduler_policy_applies, config, i, team)
            problems.check(check_quota_within_supply, config, i, team)
            problems.check(check_quota_admits_pools, config, i, team)
            if cluster_valid:
                problems.check(check_admission, config, i, team, version_known)
    problems.check(check_alert_waits, config)
    for i, pool in enumerate(config.pools):
        if pool.name not in used:
            problems.errors.append(
                ConfigError(f"{PROJECT}:pools[{i}].name", f"no team lists pool {pool.name!r}: it could never be used")
            )
    return problems.errors


def _check_scheduler_policy_applies(config: StackConfig, index: int, team: TeamConfig) -> None:
    """HAMi alone reads the scheduler policy annotations: on a team without a HAMi pool they change nothing."""
    if team.scheduler_policy is not None and not config.uses_hami(team):
        raise ConfigError(
            f"{PROJECT}:teams[{index}].schedulerPolicy",
            f"is set but none of the team's pools ({', '.join(team.pools)}) has sharing hami: only HAMi reads the "
            "policy, and none of the team's pods goes through HAMi; allowed: drop schedulerPolicy, or give the team "
            "a HAMi pool",
        )
