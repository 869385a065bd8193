"""Cross-key checks of the cluster: which cluster mode holds (a new cluster, or an existing one with what only a new
cluster uses refused and the gates its Karpenter needs), EKS access entries, the API endpoint and system nodes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gpushare import existing
from gpushare.aws_names import node_role_name, system_node_role_name
from gpushare.catalog import Catalog
from gpushare.checks.versions import KARPENTER_VERSION_KEY, KUBERNETES_VERSION_KEY
from gpushare.config import PROJECT, ExistingKarpenterConfig, StackConfig, principal_key
from gpushare.errors import ConfigError

# Keys of the new-cluster mode, each with what it would have done: refused beside gpushare:existingCluster.
NEW_CLUSTER_KEYS = {
    "network": "creates or picks the VPC of a new cluster",
    "system_node_group": "sizes the system node group of a new cluster",
    "endpoint": "sets the API endpoint of a new cluster",
    "admin_principal_arns": "creates EKS access entries for cluster admins",
    "log_retention_days": "sets the control-plane log group of a new cluster",
    "support_type": "sets the EKS upgrade policy of a new cluster",
}
EXISTING_KEY = f"{PROJECT}:existingCluster"


def check_cluster_mode(config: StackConfig, ready: Callable[..., bool], existing: bool) -> list[ConfigError]:
    """A new cluster needs its endpoint; beside an existing one, what only a new cluster (or an AWS resource the
    stack would create) uses is refused, and its Kubernetes minor must be stated (its gates: check_existing_gates)."""
    if not existing:
        if ready("cluster") and config.cluster.endpoint is None:
            return [ConfigError(f"{PROJECT}:cluster.endpoint", "is required (who may reach the new cluster's API)")]
        return []
    instead = f"drop it: with {EXISTING_KEY} the stack creates no AWS resource and the cluster is not its own"
    errors = []
    if ready("cluster"):
        errors += [
            ConfigError(
                f"{PROJECT}:cluster.{key}",
                f"is set with {EXISTING_KEY}, but it {NEW_CLUSTER_KEYS[field]}; allowed: {instead}",
            )
            for field, key in _given_keys(config.cluster, NEW_CLUSTER_KEYS)
        ]
        if "kubernetes_version" not in config.cluster.model_fields_set:
            errors.append(
                ConfigError(
                    KUBERNETES_VERSION_KEY,
                    f"is required with {EXISTING_KEY}: the minor of the cluster's control plane, which the admission "
                    "policies and HAMi's kube-scheduler follow",
                )
            )
    if ready("karpenter") and "chart_version" in config.karpenter.model_fields_set:
        errors.append(
            ConfigError(
                KARPENTER_VERSION_KEY,
                f"is set with {EXISTING_KEY}, where the stack installs no Karpenter; allowed: drop it and state the "
                f"running one's version at {EXISTING_KEY}.karpenter.version",
            )
        )
    if ready("teams"):
        errors += [
            ConfigError(
                f"{PROJECT}:teams[{i}].namespaceAccessRoleArn",
                f"is set with {EXISTING_KEY}, where the stack creates no EKS access entry; allowed: drop it and give "
                f"the role access yourself (docs/existing-cluster.md: an access entry with AmazonEKSEditPolicy "
                f"scoped to namespace {team.name})",
            )
            for i, team in enumerate(config.teams)
            if team.namespace_access_role_arn is not None
        ]
    return errors


def _given_keys(model: Any, fields: Mapping[str, str]) -> list[tuple[str, str]]:
    """(field, key as written) of each of `fields` the stack file sets on `model`."""
    declared = type(model).model_fields
    return [(name, declared[name].alias or name) for name in fields if name in model.model_fields_set]


def check_existing_gates(config: StackConfig, running: ExistingKarpenterConfig) -> list[ConfigError]:
    """The existing Karpenter reads the stack's NodeOverlays and CapacityBuffers only with their gates on: the gates
    the stack file states must be those the stack needs (`pulumi up` then checks the running Deployment)."""
    stated = running.feature_gates.model_dump(by_alias=True)
    return [
        ConfigError(
            f"{EXISTING_KEY}.karpenter.featureGates.{key}",
            f"false, but {why}, which Karpenter ignores with the {gate} gate off; allowed: turn the gate on in that "
            f"Karpenter (settings.featureGates.{key}: true) and state {key}: true"
            + (", or no headroom" if gate == existing.CAPACITY_BUFFER_GATE else ""),
        )
        for gate, why in existing.needed_gates(config).items()
        if not stated[key := existing.CHART_KEYS[gate]]
    ]


def check_principals_once(config: StackConfig) -> list[ConfigError]:
    """EKS gives a principal one access entry: a role listed as admin and as a team's role, by two teams, or one of
    the node roles the stack creates (and enters itself) fails `pulumi up` midway, and would hand one holder's
    access to the other."""
    keys = [f"{PROJECT}:cluster.adminPrincipalArns[{i}]" for i in range(len(config.cluster.admin_principal_arns))]
    arns = list(config.cluster.admin_principal_arns)
    for i, team in enumerate(config.teams):
        if team.namespace_access_role_arn is not None:
            keys.append(f"{PROJECT}:teams[{i}].namespaceAccessRoleArn")
            arns.append(team.namespace_access_role_arn)
    node_roles = {
        principal_key(f"role/{name}"): name
        for name in (node_role_name(config.cluster.name), system_node_role_name(config.cluster.name))
    }
    first: dict[str, str] = {}
    errors = []
    for key, arn in zip(keys, arns, strict=True):
        role = principal_key(arn).rpartition(":")[2]
        seen = first.setdefault(principal_key(arn), key)
        if role in node_roles:
            message = f"the stack creates role {node_roles[role]} and gives it a node access entry"
        elif seen != key and not key.startswith(f"{PROJECT}:cluster."):  # repeats among admins: config/cluster.py
            message = f"already {seen}"
        else:
            continue
        errors.append(
            ConfigError(
                key,
                f"{arn!r}: {message}; EKS gives a principal one access entry; allowed: a role of its own per team, "
                "none of them an admin principal or a role the stack creates",
            )
        )
    return errors


def check_nodes_reach_the_endpoint(config: StackConfig) -> list[ConfigError]:
    """Nodes run in private subnets. Without the private endpoint they reach the API through the public one, from
    the NAT gateways' addresses: the stack allocates those at deploy time, so no CIDR list written before can name
    them, and nodes the endpoint shuts out never join (every GPU node launched would fail to register)."""
    endpoint = config.cluster.endpoint
    if endpoint is None or endpoint.private_access or not endpoint.public_access or endpoint.public_to_everyone:
        return []
    if not config.cluster.network.creates_vpc:
        return []  # an existing VPC's NAT addresses are known to its owner, who lists them
    return [
        ConfigError(
            f"{PROJECT}:cluster.endpoint.publicAccessCidrs",
            f"{list(endpoint.public_access_cidrs)} with privateAccess false shuts out the nodes: they reach the public "
            "endpoint from the NAT gateways' addresses, which the stack allocates at deploy time; allowed: "
            "privateAccess true (nodes use the private endpoint), or publicAccessCidrs 0.0.0.0/0",
        )
    ]


def check_system_nodes_without_gpus(config: StackConfig, catalog: Catalog) -> list[ConfigError]:
    """System nodes run the controllers on-demand all the time: a GPU type there is paid for and never shared."""
    return [
        ConfigError(
            f"{PROJECT}:cluster.systemNodeGroup.instanceTypes[{j}]",
            f"{type_name!r} is a GPU type: system nodes run the controllers on-demand all the time; allowed: a "
            "non-GPU type like m7i.large",
        )
        for j, type_name in enumerate(config.cluster.system_node_group.instance_types)
        if type_name in catalog.instance_type_names
    ]
