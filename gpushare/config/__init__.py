"""Typed stack configuration: every `gpushare:*` key as a model with its field validators, one module per section
(cluster, controllers, pools, teams, monitoring, existing; the whole stack in stack.py, shared parts in base.py).

A schema only, below the domain layer: checks that need the catalog or pool capacities (cross-key rules) live
in `gpushare/checks/`, which `gpushare/loader.py` runs after reading the raw stack config into a StackConfig.
"""

from gpushare.config.base import PROJECT, ConsolidationPolicy, Priority, principal_key, trusted_registries_context
from gpushare.config.cluster import ClusterConfig, NetworkConfig
from gpushare.config.existing import (
    ExistingClusterConfig,
    ExistingKarpenterConfig,
    SecurityGroupSelectorTermConfig,
    SubnetSelectorTermConfig,
)
from gpushare.config.monitoring import AlertReceiverConfig, MonitoringConfig
from gpushare.config.pools import PoolConfig
from gpushare.config.stack import CONFIG_KEYS, PATTERN_RULES, StackConfig
from gpushare.config.teams import (
    CONTAINER_DEFAULT_CPU,
    CONTAINER_DEFAULT_MEMORY,
    HeadroomConfig,
    HeadroomShapeConfig,
    TeamConfig,
)

__all__ = [
    "CONFIG_KEYS",
    "CONTAINER_DEFAULT_CPU",
    "CONTAINER_DEFAULT_MEMORY",
    "PATTERN_RULES",
    "PROJECT",
    "AlertReceiverConfig",
    "ClusterConfig",
    "ConsolidationPolicy",
    "ExistingClusterConfig",
    "ExistingKarpenterConfig",
    "HeadroomConfig",
    "HeadroomShapeConfig",
    "MonitoringConfig",
    "NetworkConfig",
    "PoolConfig",
    "Priority",
    "SecurityGroupSelectorTermConfig",
    "StackConfig",
    "SubnetSelectorTermConfig",
    "TeamConfig",
    "principal_key",
    "trusted_registries_context",
]
