"""The cost and quota figures: always-on parts counted from the plan's resources, each pool at its limit against a
brute force over whole nodes, the EC2 quota each purchase option counts on, all against the shipped catalog."""

from __future__ import annotations

import copy
import itertools
import re
from typing import Any

import pytest
import yaml

from gpushare import names
from gpushare.capacity import headroom_fits, headroom_nodes, pool_plans, stack_headroom
from gpushare.catalog import CATALOG_PATH, CatalogError, load_catalog, parse_catalog
from gpushare.costs import (
    ELASTIC_IP_TYPE,
    KMS_KEY_TYPE,
    NAT_GATEWAY_TYPE,
    NODE_GROUP_TYPE,
    always_on_parts,
    headroom_part,
    pool_costs,
    quota_needs,
    stack_cost,
)
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, raw_stack

CATALOG = load_catalog()
PRICES = CATALOG.service_prices


def _part(parts, prefix):
    return next(p for p in parts if p.name.startswith(prefix))


def _count(resources: list[dict[str, Any]], kind: str) -> int:
    return sum(r["type"] == kind for r in resources)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_always_on_parts_count_what_the_plan_creates(plans, stack):
    resources = plans[stack]["resources"]
    parts = always_on_parts(resources)
    for kind, prefix, price in (
        (NAT_GATEWAY_TYPE, "NAT gateways", PRICES.nat_gateway),
        (ELASTIC_IP_TYPE, "public IPv4", PRICES.public_ipv4_address),
        (KMS_KEY_TYPE, "KMS keys", PRICES.kms_key),
    ):
        part = _part(parts, prefix)
        assert part.count == _count(resources, kind) > 0
        assert part.usd_per_hour_each == PRICES.per_hour(price)
    config = load_stack_config(raw_stack(stack), today=PLAN_DATE)
    group = config.cluster.system_node_group
    nodes = _part(parts, "system nodes")
    first = CATALOG.system_instance_type(group.instance_types[0])
    assert first is not None
    assert (nodes.count, nodes.usd_per_hour_each) == (group.desired_size, first.on_demand_usd_per_hour)
    assert _part(parts, "system node root volumes").count == group.desired_size * group.disk_size_gib
    assert _part(parts, "EKS control plane").usd_per_hour == PRICES.eks_cluster_standard.usd


def test_prometheus_volume_is_always_on_only_with_monitoring(plans):
    prod = load_stack_config(raw_stack("prod"), today=PLAN_DATE)
    volume = _part(always_on_parts(plans["prod"]["resources"]), "Prometheus volume")
    assert volume.count == int(prod.monitoring.storage_size.removesuffix("Gi"))
    assert volume.unit == f"GiB {prod.monitoring.storage_class}"
    assert not any(p.name == "Prometheus volume" for p in always_on_parts(plans["dev"]["resources"]))


def _with_inputs(resources, kind, change):
    edited = copy.deepcopy(resources)
    for resource in edited:
        if resource["type"] == kind:
            change(resource["inputs"])
    return edited


def test_extended_support_bills_the_extended_price(plans):
    extended = _with_inputs(
        plans["dev"]["resources"], "eks:index:Cluster", lambda i: i.update(upgradePolicy={"supportType": "EXTENDED"})
    )
    part = _part(always_on_parts(extended), "EKS control plane")
    assert part.name == "EKS control plane (extended support)"
    assert part.usd_per_hour == PRICES.eks_cluster_extended.usd > PRICES.eks_cluster_standard.usd


def test_a_system_type_without_a_price_is_named_not_counted(plans, dev):
    unknown = _with_inputs(plans["dev"]["resources"], NODE_GROUP_TYPE, lambda i: i.update(instanceTypes=["x9.huge"]))
    cost = stack_cost(dev, unknown)
    assert [p.name for p in cost.unpriced] == ["system nodes (gpushare-dev-system)"]
    priced = stack_cost(dev, plans["dev"]["resources"])
    assert cost.always_on_usd_per_hour == pytest.approx(
        priced.always_on_usd_per_hour - _part(priced.always_on, "system nodes").usd_per_hour
    )


def _brute_force_at_limit(plan, catalog) -> float:
    """The dearest multiset of whole nodes whose limit units stay within the NodePool limit."""
    units = [(n.resources[plan.limit_resource], catalog.instance_type(n.instance_type)) for n in plan.nodes]
    ranges = [range(plan.node_pool_limit // size + 1) for size, _ in units]
    best = 0.0
    for counts in itertools.product(*ranges):
        if sum(c * size for c, (size, _) in zip(counts, units, strict=True)) <= plan.node_pool_limit:
            best = max(best, sum(c * t.on_demand_usd_per_hour for c, (_, t) in zip(counts, units, strict=True)))
    return best


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_each_pool_at_its_limit_is_the_dearest_set_of_whole_nodes(stack):
    config = load_stack_config(raw_stack(stack), today=PLAN_DATE)
    plans = pool_plans(config)
    for cost in pool_costs(config):
        assert cost.usd_per_hour_at_limit == pytest.approx(_brute_force_at_limit(plans[cost.pool], CATALOG), abs=1e-6)
        assert cost.max_gpus == plans[cost.pool].max_gpus


def test_a_pool_costs_more_at_a_higher_limit():
    costs = []
    for max_gpus in (4, 8, 12):
        raw = raw_stack("dev")
        raw["gpushare:pools"][0]["maxGpus"] = max_gpus
        costs.append(pool_costs(load_stack_config(raw, today=PLAN_DATE))[0].usd_per_hour_at_limit)
    assert costs == sorted(costs) and len(set(costs)) == 3


@pytest.mark.parametrize(
    ("capacity_types", "note"),
    [
        (["on-demand"], "on-demand price"),
        (["spot", "on-demand"], "on-demand price; spot nodes cost less"),
        (["spot"], "on-demand price, spot is cheaper (spot-only pool)"),
    ],
)
def test_a_pool_that_may_buy_spot_says_its_price_is_on_demand(capacity_types, note):
    raw = raw_stack("dev")
    raw["gpushare:pools"][0]["capacityTypes"] = capacity_types
    cost = pool_costs(load_stack_config(raw, today=PLAN_DATE))[0]
    assert cost.pricing_note == note
    assert cost.spot_priced_on_demand == ("spot" in capacity_types)


def test_totals_are_the_sum_of_their_parts(plans, prod):
    cost = stack_cost(prod, plans["prod"]["resources"])
    base = sum(p.usd_per_hour for p in cost.always_on)
    assert cost.headroom is not None and cost.headroom.usd_per_hour > 0
    assert cost.always_on_usd_per_hour == pytest.approx(base + cost.headroom.usd_per_hour)
    # The headroom's nodes are inside the pools' limits: the total at the limits does not count them twice.
    assert cost.at_limits_usd_per_hour == pytest.approx(base + sum(p.usd_per_hour_at_limit for p in cost.pools))
    assert cost.per_month(1.0) == PRICES.hours_per_month
    assert headroom_part(load_stack_config(raw_stack("dev"), today=PLAN_DATE)) is None


def _quota_stack(pools: list[dict[str, Any]]):
    raw = raw_stack("dev")
    raw["gpushare:pools"] = pools
    raw["gpushare:teams"] = [{"name": "a", "pools": [p["name"] for p in pools], "quota": {"gpus": 1}}]
    return load_stack_config(raw, today=PLAN_DATE)


def test_two_g5_12xlarge_need_their_vcpus_on_the_g_quota_of_each_purchase_option(plans):
    """The issue's example: a pool of g5.12xlarge limited to two nodes, buying spot or on-demand."""
    itype = CATALOG.instance_type("g5.12xlarge")
    config = _quota_stack(
        [
            {
                "name": "big",
                "instanceTypes": [itype.name],
                "capacityTypes": ["spot", "on-demand"],
                "maxGpus": 2 * itype.gpu_count,
                "sharing": "exclusive",
            }
        ]
    )
    needs = {q.code: q for q in quota_needs(config, [])}
    on_demand, spot = (CATALOG.vcpu_quotas_of(itype.name, kind)[0] for kind in ("on-demand", "spot"))
    assert needs[on_demand.code].vcpus == needs[spot.code].vcpus == 2 * itype.vcpu
    assert set(needs) == {on_demand.code, spot.code}


def test_p_types_count_on_the_p_quota_and_system_nodes_on_the_standard_one(plans, dev):
    config = _quota_stack(
        [{"name": "train", "instanceTypes": ["p4d.24xlarge", "g6e.12xlarge"], "maxGpus": 8, "sharing": "exclusive"}]
    )
    p4d = CATALOG.instance_type("p4d.24xlarge")
    needs = {q.name: q.vcpus for q in quota_needs(config, [])}
    assert needs["Running On-Demand P instances"] == p4d.vcpu  # one p4d fills the 8-GPU limit
    assert needs["Running On-Demand G and VT instances"] == 2 * CATALOG.instance_type("g6e.12xlarge").vcpu
    group = dev.cluster.system_node_group
    standard = {q.name: q for q in quota_needs(dev, plans["dev"]["resources"])}
    system = standard["Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"]
    widest = max(CATALOG.system_instance_type(t).vcpu for t in group.instance_types)
    assert system.vcpus == group.max_size * widest


def test_every_catalog_type_counts_on_exactly_one_quota_per_purchase_option():
    for kind in ("on-demand", "spot"):
        for itype in CATALOG.instance_types:
            assert len(CATALOG.vcpu_quotas_of(itype.name, kind)) == 1, (itype.name, kind)
    for system in CATALOG.system_instance_types:
        assert [q.code for q in CATALOG.vcpu_quotas_of(system.name, "on-demand")] == ["L-1216C47A"]


def test_every_service_price_is_sourced_and_a_missing_source_is_refused():
    data = yaml.safe_load(CATALOG_PATH.read_text())
    for where, source in CATALOG.service_prices.cited():
        assert source in CATALOG.sources, where
    data["servicePrices"]["natGateway"]["source"] = "a-blog"
    with pytest.raises(CatalogError, match=re.escape("servicePrices.natGateway: unknown source 'a-blog'")):
        parse_catalog(data)


def test_hami_pool_vcpus_follow_the_vgpu_limit_not_maxgpus():
    """A HAMi pool's limit counts vGPUs (maxGpus x deviceSplitCount): the quota figure divides them back into whole
    one-GPU nodes, the widest of which fill maxGpus."""
    config = _quota_stack([{"name": "shared", "instanceTypes": ["g4dn.xlarge", "g4dn.2xlarge"], "maxGpus": 4}])
    plan = pool_plans(config)["shared"]
    assert plan.limit_resource == names.GPU
    assert plan.node_pool_limit == plan.max_gpus * config.hami.profile.device_split_count
    widest = max(CATALOG.instance_type(n.instance_type).vcpu for n in plan.nodes)
    assert [q.vcpus for q in quota_needs(config, [])] == [plan.max_gpus * widest]


def test_the_headroom_part_is_the_cheapest_cover_of_every_teams_warm_pods(prod):
    covers = [headroom_nodes(headroom_fits(prod, h), h.pods) for h in stack_headroom(prod)]
    part = headroom_part(prod)
    assert part is not None and all(cover is not None for cover in covers)
    assert part.count == sum(sum(cover[1].values()) for cover in covers if cover)
    assert part.usd_per_hour == pytest.approx(sum(cover[0] for cover in covers if cover))
