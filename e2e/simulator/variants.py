"""The variants of a day (each a `Variant` of e2e.simulator.demand): copies of the stack with pool or team keys
changed, run against the same demand for a side-by-side comparison with the stack itself (`BASELINE`). A variant is
refused when it cannot show anything on the day (it changes pools or teams no group uses, or sets values the stack
already has), takes a group's pool away from its team, or leaves a group no node that holds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from e2e.cluster.stack import Plan, variant_plan
from e2e.simulator.demand import PodRequests, Variant
from e2e.simulator.group_checks import group_problems, named_entries, stack_config
from gpushare.config import StackConfig

BASELINE = "stack"  # the stack itself in a comparison: no variant takes the name


def _leaves(change: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Each key a change sets (a map merges key by key, so its leaves are what it sets)."""
    found = []
    for key, value in change.items():
        if isinstance(value, dict) and value:
            found += _leaves(value, (*path, key))
        else:
            found.append(((*path, key), value))
    return found


def _effective(model: BaseModel | None, path: tuple[str, ...]) -> Any:
    """The value a config key has once the program read it (defaults filled in), or None."""
    value: Any = model.model_dump(by_alias=True, mode="json") if model is not None else None
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def variant_problems(
    stack: str,
    config: dict[str, Any],
    where: str,
    variant: Variant,
    groups: list[tuple[str, PodRequests]],
) -> list[tuple[str, str]]:
    """A variant that cannot show anything on this day (it changes pools or teams no group uses, or sets values
    the stack already has), or that the trace's own groups could not run in."""
    problems: list[tuple[str, str]] = []
    used_pools = sorted({group.pool for _, group in groups})
    used_teams = sorted({group.team for _, group in groups})
    before = stack_config(config)
    changed_raw = variant_config(config, variant)
    after = stack_config(changed_raw)
    for kind, used, named_before, named_after in (
        ("pools", used_pools, _by_name(before, "pools"), _by_name(after, "pools")),
        ("teams", used_teams, _by_name(before, "teams"), _by_name(after, "teams")),
    ):
        known = named_entries(config, f"gpushare:{kind}")
        for name, change in getattr(variant, kind).items():
            key = f"{where}.{kind}.{name}"
            if name not in known:
                problems.append((key, f"not a {kind[:-1]} of {stack}; allowed: " + ", ".join(sorted(known))))
                continue
            if name not in used:
                problems.append(
                    (
                        key,
                        f"no group of this trace runs {'on pool' if kind == 'pools' else 'in team'} {name}, so the "
                        f"change cannot show; the groups use: {', '.join(used)}",
                    )
                )
                continue
            if before is None or after is None:
                continue  # the program's own check of the variant's config names what is wrong
            for path, value in _leaves(change):
                was = _effective(named_before.get(name), path)
                now = _effective(named_after.get(name), path)
                if was == now:
                    shown = (
                        "removes a key the stack does not set" if value is None else f"{value!r} is what the stack has"
                    )
                    problems.append(
                        (f"{key}.{'.'.join(path)}", f"{shown} already: the variant would run the stack again there")
                    )
    team_pools = {name: entry.get("pools", []) for name, entry in named_entries(changed_raw, "gpushare:teams").items()}
    taken: dict[tuple[str, str], list[str]] = {}
    for group_where, group in groups:
        if group.team in variant.teams and group.pool not in team_pools.get(group.team, [group.pool]):
            taken.setdefault((group.team, group.pool), []).append(f"{group_where} ({group.name})")
    for (team_name, pool), users in taken.items():
        problems.append(
            (
                f"{where}.teams.{team_name}.pools",
                f"takes pool {pool} away from team {team_name}, which {', '.join(users)} runs on: the team's "
                "isolation policy would refuse every pod of it; keep the pool in the list",
            )
        )
    if after is None:
        return problems
    label = f"in variant {variant.name}: "
    teams = {team.name: team for team in after.teams}
    still = [(w, g) for w, g in groups if g.team in teams and g.pool in teams[g.team].pools]
    on_stack = set(group_problems(stack, config, still))
    problems += [
        (key, label + problem)
        for key, problem in group_problems(stack, changed_raw, still)
        if (key, problem) not in on_stack
    ]
    return problems


def _by_name(config: StackConfig | None, kind: str) -> dict[str, BaseModel]:
    return {entry.name: entry for entry in getattr(config, kind)} if config is not None else {}


def merged(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """`base` with `change` applied: maps merge key by key, `None` removes a key, anything else replaces."""
    result = dict(base)
    for key, value in change.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result


def variant_config(config: dict[str, Any], variant: Variant) -> dict[str, Any]:
    """The stack's `config` map with the variant's pool and team changes applied."""
    changed = dict(config)
    for key, changes in (("gpushare:pools", variant.pools), ("gpushare:teams", variant.teams)):
        changed[key] = [merged(entry, changes.get(entry["name"], {})) for entry in config.get(key, [])]
    return changed


def trace_variant_plan(stack: str, variant: Variant, work: Path) -> Plan:
    """The offline plan of a trace's variant: Pulumi.<stack>.yaml with the variant's pool and team keys changed."""
    return variant_plan(stack, variant.name, work, lambda config: config.update(variant_config(config, variant)))
