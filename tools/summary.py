"""What a plan builds and what it costs, as `make plan` prints it after the pool table and writes it to
build/<stack>/summary.json: resources by kind, the teams' quotas, the always-on cost with its parts, each pool at its
limit, the total at the limits, and the vCPUs each EC2 quota must allow. The figures come from gpushare/costs.py;
this module only arranges them.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from typing import Any

from gpushare import names
from gpushare.capacity import team_quota
from gpushare.catalog import load_catalog
from gpushare.config import StackConfig
from gpushare.costs import HELM_TYPE, CostPart, quota_needs, stack_cost
from gpushare.quota import QUOTA

SUMMARY_FILE = "summary.json"


def _usd(value: float) -> float:
    """Rounded so the same plan writes the same file."""
    return round(value, 4)


def resource_kinds(resources: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Cloud ("aws", "kubernetes") -> kind -> how many the plan declares. AWS kinds are `module Kind`
    (`ec2 NatGateway`; pulumi-eks' own resources under `eks`), Kubernetes kinds `apiVersion Kind`; component and
    provider resources (no cloud object of their own) are left out."""
    counts: dict[str, Counter[str]] = {"aws": Counter(), "kubernetes": Counter()}
    for resource in resources:
        package, module, kind = resource["type"].split(":", 2)
        if package in ("aws", "eks"):
            counts["aws"][f"{module.split('/')[0] if package == 'aws' else 'eks'} {kind}"] += 1
        elif package == "kubernetes":
            counts["kubernetes"][f"{module} {kind}"] += 1
    return {cloud: dict(sorted(kinds.items())) for cloud, kinds in counts.items()}


def _gib(mib: int) -> str:
    return f"{mib / 1024:.2f}".rstrip("0").rstrip(".") + " GiB"


def team_rows(config: StackConfig) -> list[dict[str, Any]]:
    """Each team's pools, tier and quota, in the units users think in beside those the ResourceQuota states; a key
    the team left out shows what the one quota model derives for it (capacity.team_quota), marked as left out."""
    factor = config.hami.profile.memory_factor
    rows = []
    for team in config.teams:
        quota = team_quota(config, team)
        memory_mib = quota[names.GPU_MEMORY] * factor
        stated = team.quota.model_dump()
        rows.append(
            {
                "name": team.name,
                "pools": list(team.pools),
                "priority": team.priority,
                "quota": {
                    "gpus": quota[names.GPU],
                    "gpuMemoryMib": memory_mib,
                    "gpuMemoryGib": round(memory_mib / 1024, 2),
                    "gpuCores": quota[names.GPU_CORES],
                    "gpuCoresAsGpus": quota[names.GPU_CORES] / 100,
                    "sharedGpus": quota[names.GPU_SHARED],
                    "leftOut": [r.key for r in QUOTA if stated[r.key] is None],
                },
            }
        )
    return rows


def _part(part: CostPart, hours_per_month: int) -> dict[str, Any]:
    each = part.usd_per_hour_each
    total = part.usd_per_hour
    return {
        "name": part.name,
        "count": part.count,
        "unit": part.unit,
        "usdPerHourEach": None if each is None else _usd(each),
        "usdPerHour": None if total is None else _usd(total),
        "usdPerMonth": None if total is None else _usd(total * hours_per_month),
    }


def stack_summary(config: StackConfig, plan: dict[str, Any]) -> dict[str, Any]:
    """The figures of summary.json (and of the printed summary)."""
    catalog = load_catalog()
    cost = stack_cost(config, plan["resources"], catalog)
    hours = cost.hours_per_month
    by_name = {pool.name: pool for pool in config.pools}
    gpu_prices = catalog.prices
    service = catalog.service_prices
    helm = sorted(r["inputs"]["name"] for r in plan["resources"] if r["type"] == HELM_TYPE)
    return {
        "stack": plan["stack"],
        "region": config.region,
        "prices": {
            "gpuInstances": {"region": gpu_prices.region, "date": gpu_prices.date, "capacityType": "on-demand"},
            "services": {"region": service.region, "date": service.date},
            "hoursPerMonth": hours,
        },
        "resources": {**resource_kinds(plan["resources"]), "helmReleases": helm},
        "teams": team_rows(config),
        "alwaysOn": {
            "parts": [_part(p, hours) for p in cost.always_on],
            "headroom": None if cost.headroom is None else _part(cost.headroom, hours),
            "unpriced": [p.name for p in cost.unpriced],
            "usdPerHour": _usd(cost.always_on_usd_per_hour),
            "usdPerMonth": _usd(cost.per_month(cost.always_on_usd_per_hour)),
        },
        "pools": [
            {
                "name": p.pool,
                "sharing": by_name[p.pool].sharing,
                "capacityTypes": list(p.capacity_types),
                "maxGpus": p.max_gpus,
                "usdPerHourAtLimit": _usd(p.usd_per_hour_at_limit),
                "usdPerMonthAtLimit": _usd(cost.per_month(p.usd_per_hour_at_limit)),
                "pricing": p.pricing_note,
            }
            for p in cost.pools
        ],
        "atLimits": {
            "usdPerHour": _usd(cost.at_limits_usd_per_hour),
            "usdPerMonth": _usd(cost.per_month(cost.at_limits_usd_per_hour)),
        },
        "vcpuQuotas": [
            {
                "name": q.name,
                "code": q.code,
                "capacityType": q.capacity_type,
                "vcpus": q.vcpus,
                "countedFor": list(q.pools),
            }
            for q in quota_needs(config, plan["resources"], catalog)
        ],
    }


def table(rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns, a rule under the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return lines


def _money(value: float | None) -> str:
    return "no price" if value is None else f"{value:,.2f}"


def summary_lines(data: dict[str, Any]) -> list[str]:
    """The printed form of stack_summary's figures."""
    lines = ["", "resources by kind (what the plan declares; components and providers left out):"]
    for cloud in ("aws", "kubernetes"):
        kinds = data["resources"][cloud]
        listed = f"{cloud} ({sum(kinds.values())}): " + ", ".join(f"{n} {k}" for k, n in kinds.items())
        lines.append(textwrap.fill(listed, 118, initial_indent="  ", subsequent_indent="    "))
    lines.append(f"  helm releases: {', '.join(data['resources']['helmReleases'])}")

    rows: list[tuple[str, ...]] = [("team", "priority", "pools", "gpus", "gpumem", "gpucores", "shared GPUs")]
    for team in data["teams"]:
        quota = team["quota"]
        rows.append(
            (
                team["name"],
                team["priority"],
                ", ".join(team["pools"]),
                str(quota["gpus"]),
                f"{quota['gpuMemoryMib']} MiB ({_gib(quota['gpuMemoryMib'])})",
                f"{quota['gpuCores']}% ({quota['gpuCoresAsGpus']:g} GPUs)",
                str(quota["sharedGpus"]),
            )
        )
    lines += ["", "teams (ResourceQuota caps; gpus = vGPUs on HAMi pools plus whole GPUs on exclusive ones):"]
    lines += table(rows)
    left_out = [
        f"{team['name']}: {', '.join(team['quota']['leftOut'])}" for team in data["teams"] if team["quota"]["leftOut"]
    ]
    if left_out:
        lines.append("  left out, so the most the team's pools can ever register: " + "; ".join(left_out))

    always = data["alwaysOn"]
    rows = [("always on", "count", "USD/h each", "USD/h", "USD/month")]
    parts = always["parts"] + ([always["headroom"]] if always["headroom"] else [])
    for part in parts:
        each = part["usdPerHourEach"]
        rows.append(
            (
                part["name"],
                f"{part['count']:g} {part['unit']}",
                "no price" if each is None else f"{each:.4f}",
                _money(part["usdPerHour"]),
                _money(part["usdPerMonth"]),
            )
        )
    rows.append(("total always on", "", "", _money(always["usdPerHour"]), _money(always["usdPerMonth"])))
    prices = data["prices"]
    lines += [
        "",
        f"always-on cost (no GPU node running, but those kept for headroom; {prices['hoursPerMonth']} h a month):",
    ]
    lines += table(rows)
    if always["unpriced"]:
        lines.append(f"  not in the total (no catalog price): {', '.join(always['unpriced'])}")
    lines.append("  not counted (billed by use): NAT data per GB, CloudWatch logs, SQS and EventBridge requests")

    rows = [("pool", "capacity", "maxGpus", "USD/h at limit", "USD/month", "priced at")]
    for pool in data["pools"]:
        rows.append(
            (
                pool["name"],
                "+".join(pool["capacityTypes"]),
                str(pool["maxGpus"]),
                _money(pool["usdPerHourAtLimit"]),
                _money(pool["usdPerMonthAtLimit"]),
                pool["pricing"],
            )
        )
    at_limits = data["atLimits"]
    rows.append(("total at the limits", "", "", _money(at_limits["usdPerHour"]), _money(at_limits["usdPerMonth"]), ""))
    lines += ["", "each pool at its limit (the dearest whole nodes its NodePool limit admits), and the stack's most:"]
    lines += table(rows)
    gpu, service = prices["gpuInstances"], prices["services"]
    lines.append(
        f"  prices: GPU nodes {gpu['region']} on-demand {gpu['date']}, services {service['region']} {service['date']} "
        f"(gpushare/catalog.yaml cites each); the stack runs in {data['region']}"
        + ("" if data["region"] == gpu["region"] else ", where prices differ")
    )

    rows = [("EC2 vCPU quota", "code", "purchase", "vCPUs needed", "for")]
    for quota in data["vcpuQuotas"]:
        rows.append(
            (quota["name"], quota["code"], quota["capacityType"], str(quota["vcpus"]), ", ".join(quota["countedFor"]))
        )
    lines += [
        "",
        f"EC2 service quotas the limits can reach (Service Quotas, ec2, {data['region']}; docs/deploying.md):",
    ]
    lines += table(rows)
    return lines
