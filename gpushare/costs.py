"""What a planned stack costs and what EC2 quotas it needs: the always-on parts (read from the plan's resources, so
the figure follows what is actually created), each pool at its NodePool limit, and the vCPUs per EC2 quota the
pools' limits can reach. Prices come from the catalog (sourced and dated); `make plan` prints these figures and
writes them to summary.json, `make diff` compares them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpushare import names
from gpushare.capacity import (
    NodeShape,
    PoolPlan,
    headroom_fits,
    headroom_nodes,
    most_within,
    pool_plans,
    stack_headroom,
)
from gpushare.catalog import Catalog, load_catalog

if TYPE_CHECKING:
    from gpushare.config import StackConfig

# Prices are compared and summed in micro-dollars: the knapsack over a pool's limit counts in whole units.
MICRO = 1_000_000
VCPU = "vcpu"
PRICE = "micro-usd"
SPOT = "spot"
ON_DEMAND = "on-demand"

CLUSTER_TYPE = "eks:index:Cluster"
NODE_GROUP_TYPE = "eks:index:ManagedNodeGroup"
LAUNCH_TEMPLATE_TYPE = "aws:ec2/launchTemplate:LaunchTemplate"
NAT_GATEWAY_TYPE = "aws:ec2/natGateway:NatGateway"
ELASTIC_IP_TYPE = "aws:ec2/eip:Eip"
KMS_KEY_TYPE = "aws:kms/key:Key"
HELM_TYPE = "kubernetes:helm.sh/v3:Release"


@dataclass(frozen=True)
class CostPart:
    """One always-on line: `count` units of `unit` at `usd_per_hour_each`; None when the catalog has no price."""

    name: str
    count: float
    unit: str
    usd_per_hour_each: float | None

    @property
    def usd_per_hour(self) -> float | None:
        return None if self.usd_per_hour_each is None else self.count * self.usd_per_hour_each


@dataclass(frozen=True)
class PoolCost:
    """The most one pool bills per hour with its NodePool limit reached: the dearest whole nodes the limit admits
    (Karpenter picks cheaper ones when pods let it). `spot_priced_on_demand`: the pool may buy spot, priced here at
    the on-demand figure (the catalog holds no spot prices), so spot nodes cost less than this."""

    pool: str
    capacity_types: tuple[str, ...]
    max_gpus: int
    usd_per_hour_at_limit: float
    spot_priced_on_demand: bool

    @property
    def pricing_note(self) -> str:
        if not self.spot_priced_on_demand:
            return "on-demand price"
        if ON_DEMAND in self.capacity_types:
            return "on-demand price; spot nodes cost less"
        return "on-demand price, spot is cheaper (spot-only pool)"


@dataclass(frozen=True)
class QuotaNeed:
    """The vCPUs one EC2 quota must allow for the pools' limits (and the system nodes at maxSize) to be reachable."""

    name: str
    code: str
    capacity_type: str
    vcpus: int
    pools: tuple[str, ...]


def _resources_of(resources: Iterable[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [r for r in resources if r["type"] == kind]


def _resource_name(resource: Mapping[str, Any]) -> str:
    return str(resource["urn"]).rsplit("::", 1)[-1]


def _prometheus_volume(release: Mapping[str, Any]) -> tuple[int, str] | None:
    """(GiB, StorageClass) of the Prometheus volume a kube-prometheus-stack release claims, else None."""
    values = release["inputs"].get("values", {})
    spec = values.get("prometheus", {}).get("prometheusSpec", {}).get("storageSpec", {})
    claim = spec.get("volumeClaimTemplate", {}).get("spec", {})
    size = claim.get("resources", {}).get("requests", {}).get("storage")
    if not isinstance(size, str) or not size.endswith("Gi"):
        return None
    return int(size[:-2]), str(claim.get("storageClassName", "gp2"))


def always_on_parts(resources: Sequence[Mapping[str, Any]], catalog: Catalog | None = None) -> list[CostPart]:
    """What the planned resources bill by the hour while the stack exists, with no GPU node running: the EKS control
    plane (standard or extended support, from its upgrade policy), the system nodes (desiredSize of the managed node
    group, priced as its first listed type: EKS launches on-demand nodes of a group in the order listed) with their
    root volumes, NAT gateways, their public IPv4 addresses, KMS keys and the Prometheus volume. Per-GB and
    per-request charges (NAT data, logs, SQS, EventBridge) depend on use and are not counted."""
    catalog = catalog or load_catalog()
    prices = catalog.service_prices
    parts = []
    for cluster in _resources_of(resources, CLUSTER_TYPE):
        support = cluster["inputs"].get("upgradePolicy", {}).get("supportType", "STANDARD")
        price = prices.eks_cluster_extended if support == "EXTENDED" else prices.eks_cluster_standard
        parts.append(CostPart(f"EKS control plane ({support.lower()} support)", 1, "cluster", prices.per_hour(price)))
    templates = {_resource_name(t): t for t in _resources_of(resources, LAUNCH_TEMPLATE_TYPE)}
    for group in _resources_of(resources, NODE_GROUP_TYPE):
        inputs = group["inputs"]
        nodes = int(inputs.get("scalingConfig", {}).get("desiredSize", 0))
        first = inputs["instanceTypes"][0]
        priced = catalog.system_instance_type(first)
        parts.append(
            CostPart(
                f"system nodes ({_resource_name(group)})",
                nodes,
                f"{first} node",
                priced.on_demand_usd_per_hour if priced else None,
            )
        )
        template = templates.get(_resource_name(group))
        for mapping in template["inputs"].get("blockDeviceMappings", []) if template else []:
            ebs = mapping.get("ebs", {})
            kind = str(ebs.get("volumeType", "gp3"))
            volume_price = prices.ebs_volume_gib.get(kind)
            parts.append(
                CostPart(
                    "system node root volumes",
                    nodes * int(ebs.get("volumeSize", 0)),
                    f"GiB {kind}",
                    prices.per_hour(volume_price) if volume_price else None,
                )
            )
    for kind, name, unit, price in (
        (NAT_GATEWAY_TYPE, "NAT gateways", "gateway", prices.nat_gateway),
        (ELASTIC_IP_TYPE, "public IPv4 addresses (Elastic IPs)", "address", prices.public_ipv4_address),
        (KMS_KEY_TYPE, "KMS keys", "key", prices.kms_key),
    ):
        count = len(_resources_of(resources, kind))
        if count:
            parts.append(CostPart(name, count, unit, prices.per_hour(price)))
    for release in _resources_of(resources, HELM_TYPE):
        volume = (
            _prometheus_volume(release) if release["inputs"].get("chart") == names.KUBE_PROMETHEUS_STACK_CHART else None
        )
        if volume is not None:
            size, storage_class = volume
            volume_price = prices.ebs_volume_gib.get(storage_class)
            parts.append(
                CostPart(
                    "Prometheus volume",
                    size,
                    f"GiB {storage_class}",
                    prices.per_hour(volume_price) if volume_price else None,
                )
            )
    return parts


def headroom_part(config: StackConfig) -> CostPart | None:
    """The warm headroom's nodes (CapacityBuffers keep them running), at on-demand prices; None without headroom."""
    total = 0.0
    nodes = 0
    for headroom in stack_headroom(config):
        cover = headroom_nodes(headroom_fits(config, headroom), headroom.pods)
        if cover is not None:
            total += cover[0]
            nodes += sum(cover[1].values())
    if not nodes:
        return None
    return CostPart("warm headroom nodes (within the pools' limits)", nodes, "GPU node", total / nodes)


def _priced_shapes(plan: PoolPlan, catalog: Catalog, types: Iterable[str] | None = None) -> list[NodeShape]:
    """The pool's node shapes with their on-demand price (micro-USD) and vCPUs, for a knapsack over the limit."""
    wanted = set(types) if types is not None else None
    shapes = []
    for node in plan.nodes:
        if wanted is not None and node.instance_type not in wanted:
            continue
        itype = catalog.instance_type(node.instance_type)
        extra = {PRICE: round(itype.on_demand_usd_per_hour * MICRO), VCPU: itype.vcpu}
        shapes.append(NodeShape(node.instance_type, {**node.resources, **extra}))
    return shapes


def pool_costs(config: StackConfig, catalog: Catalog | None = None) -> list[PoolCost]:
    """Each pool at its NodePool limit, in config order."""
    catalog = catalog or load_catalog()
    plans = pool_plans(config)
    costs = []
    for pool in config.pools:
        plan = plans[pool.name]
        micro = most_within(_priced_shapes(plan, catalog), plan.node_pool_limit, PRICE, plan.limit_resource)
        costs.append(
            PoolCost(pool.name, tuple(pool.capacity_types), pool.max_gpus, micro / MICRO, SPOT in pool.capacity_types)
        )
    return costs


def quota_needs(
    config: StackConfig, resources: Sequence[Mapping[str, Any]], catalog: Catalog | None = None
) -> list[QuotaNeed]:
    """Per EC2 vCPU quota, the most vCPUs the stack's instances can hold on it: for each pool that may buy that way,
    the most vCPUs whole nodes of the quota's families reach within the pool's limit (a pool with spot and on-demand
    may fill its whole limit either way, so it counts on both), plus the system node groups at maxSize (on-demand,
    largest listed type). Quotas nothing in the stack counts on are left out."""
    catalog = catalog or load_catalog()
    plans = pool_plans(config)
    needs = []
    for quota in catalog.vcpu_quotas:
        vcpus = 0
        users = []
        for pool in config.pools:
            if quota.capacity_type not in pool.capacity_types:
                continue
            types = [t for t in pool.instance_types if quota in catalog.vcpu_quotas_of(t, quota.capacity_type)]
            if not types:
                continue
            plan = plans[pool.name]
            vcpus += most_within(_priced_shapes(plan, catalog, types), plan.node_pool_limit, VCPU, plan.limit_resource)
            users.append(pool.name)
        for group in _resources_of(resources, NODE_GROUP_TYPE):
            inputs = group["inputs"]
            if inputs.get("capacityType", "ON_DEMAND") != "ON_DEMAND" or quota.capacity_type != ON_DEMAND:
                continue
            counted = [
                system.vcpu
                for t in inputs["instanceTypes"]
                if (system := catalog.system_instance_type(t)) and quota in catalog.vcpu_quotas_of(t, ON_DEMAND)
            ]
            if counted:
                vcpus += int(inputs.get("scalingConfig", {}).get("maxSize", 0)) * max(counted)
                users.append(f"system nodes ({_resource_name(group)})")
        if users:
            needs.append(QuotaNeed(quota.name, quota.code, quota.capacity_type, vcpus, tuple(users)))
    return needs


@dataclass(frozen=True)
class StackCost:
    """The stack's cost figures: always-on (per hour and per month) and at every pool's limit."""

    always_on: tuple[CostPart, ...]
    headroom: CostPart | None
    pools: tuple[PoolCost, ...]
    hours_per_month: int

    @property
    def unpriced(self) -> list[CostPart]:
        return [part for part in self.always_on if part.usd_per_hour is None]

    @property
    def always_on_usd_per_hour(self) -> float:
        """Every priced always-on part, the warm headroom's nodes included."""
        base = sum(p.usd_per_hour or 0.0 for p in self.always_on)
        return base + (self.headroom.usd_per_hour or 0.0 if self.headroom is not None else 0.0)

    @property
    def at_limits_usd_per_hour(self) -> float:
        """The always-on parts without the headroom (its nodes are inside the pools' limits) plus every pool at its
        limit: the most the stack can bill per hour."""
        base = sum(p.usd_per_hour or 0.0 for p in self.always_on)
        return base + sum(p.usd_per_hour_at_limit for p in self.pools)

    def per_month(self, usd_per_hour: float) -> float:
        return usd_per_hour * self.hours_per_month


def stack_cost(
    config: StackConfig, resources: Sequence[Mapping[str, Any]], catalog: Catalog | None = None
) -> StackCost:
    catalog = catalog or load_catalog()
    return StackCost(
        tuple(always_on_parts(resources, catalog)),
        headroom_part(config),
        tuple(pool_costs(config, catalog)),
        catalog.service_prices.hours_per_month,
    )
