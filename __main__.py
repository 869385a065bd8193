"""gpushare Pulumi program: read the typed stack config, render it, and hand each component what it declares.

Every renderer call is on this page, so what a component gets is read here; components only declare.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pulumi
import pulumi_aws as aws
from pulumi.runtime.config import CONFIG, get_config_env, get_config_secret_keys_env, is_config_secret

from components.capacity import GpuCapacity, GpuCapacityArgs, PoolObjects
from components.cluster import Cluster, ClusterArgs
from components.existing import ExistingCluster, ExistingClusterArgs
from components.hami import ChartArgs, Hami, MockDevicePlugin, MockDevicePluginArgs, NvidiaDevicePlugin
from components.headroom import PoolHeadroom, WarmHeadroom, WarmHeadroomArgs
from components.karpenter import Karpenter, KarpenterArgs
from components.monitoring import Monitoring, MonitoringArgs
from components.network import Network, NetworkArgs
from components.tenancy import TeamAccessArgs, TeamObjects, Tenancy, TenancyArgs
from gpushare import names
from gpushare.capacity import pool_plans
from gpushare.charts import choose_charts, folder_archives
from gpushare.checks.ineffective import ineffective_keys
from gpushare.errors import UserError
from gpushare.existing import needed_gates, stated_cluster
from gpushare.loader import load_stack_config
from gpushare.render import iam
from gpushare.render.hami import mock_device_plugin_objects
from gpushare.render.headroom import headroom_objects
from gpushare.render.karpenter import ec2_node_class, node_overlays, node_pool, node_pool_delete_timeout
from gpushare.render.monitoring import monitoring_objects, monitoring_releases
from gpushare.render.releases import helm_releases, located
from gpushare.render.tenancy import priority_classes, team_objects

# The day EKS support windows are judged for: today for `pulumi up`; an offline run passes the day it plans for as
# OFFLINE_TODAY (tools/offline.py).
today = globals().get("OFFLINE_TODAY") or datetime.now(UTC).date()
# The whole config the engine passes, every key judged as the offline plan judges the stack file: a key nobody
# reads is refused here too, and a `gpushare:` value set with --secret (the engine decrypts it) as offline.
raw_config = {**get_config_env(), **CONFIG.get()}
secret_keys = {key for key in raw_config if is_config_secret(key)} | set(get_config_secret_keys_env())
try:
    config = load_stack_config(raw_config, today=today, secret_keys=secret_keys)
except UserError as error:
    raise pulumi.RunError(str(error)) from None
for line in ineffective_keys(config):
    pulumi.log.warn(line)

# Where each chart comes from: the public repositories, or gpushare:charts (a folder of archives, or a mirror).
source = config.chart_source
chart_choice = choose_charts(config, folder_archives(Path(source.folder)) if source and source.folder else None)
for line in chart_choice.deviations:
    pulumi.log.warn(line)
releases = {release.name: release for release in located(helm_releases(config), chart_choice.locations)}
cluster_name = config.cluster.name
if config.existing_cluster is None:
    # The partition (aws, aws-cn, aws-us-gov) and account, looked up once: no ARN spells a partition.
    partition = aws.get_partition_output().partition
    account_id = aws.get_caller_identity_output().account_id
    # Components that own AWS resources are named after the cluster: their children's names (and so the URNs of
    # deployed AWS resources) are `<cluster>-...`, as they were before components named them.
    network = Network(cluster_name, NetworkArgs(cluster_name, config.cluster.network, config.cluster.tags))
    # The stack's own Prometheus keeps its samples on an EBS volume.
    volume_driver = names.KUBE_PROMETHEUS_STACK_CHART in config.charts()
    cluster = Cluster(
        cluster_name,
        ClusterArgs(
            config.cluster,
            network.vpc_id,
            network.private_subnet_ids,
            network.public_subnet_ids,
            partition,
            volume_driver,
        ),
    )
    karpenter = Karpenter(
        f"{cluster_name}-karpenter",
        KarpenterArgs(
            cluster,
            cluster_name,
            config.region,
            config.cluster.tags,
            releases[names.KARPENTER_CRD_RELEASE],
            releases[names.KARPENTER_RELEASE],
            ec2_node_class(config),
            partition,
            account_id,
        ),
    )
    provider = cluster.provider
    system_nodes: list[pulumi.Resource] = [cluster.system_nodes]
    karpenter_releases: list[pulumi.Resource] = list(karpenter.releases)
    karpenter_objects = [*karpenter.releases, karpenter.node_class]
    # The EBS CSI driver the Prometheus volume claim needs until destroy deletes it.
    volume_driver_addon = [cluster.volume_driver] if cluster.volume_driver is not None else []
    # Each team's access role may edit its own namespace only (the access scope), through this managed policy.
    team_access = partition.apply(lambda p: iam.eks_access_policy_arn(p, iam.TEAM_ACCESS_POLICY))
    access = TeamAccessArgs(cluster.eks_cluster, cluster_name, config.cluster.tags, team_access)
else:
    # An existing cluster and its Karpenter: no AWS resource, and every object through its one provider.
    running = config.existing_cluster
    existing = ExistingCluster(
        "existing-cluster",
        ExistingClusterArgs(
            running.kubeconfig,
            running.context,
            running.karpenter.namespace,
            running.karpenter.deployment,
            stated_cluster(config),
            needed_gates(config),
            ec2_node_class(config),
        ),
    )
    provider = existing.provider
    system_nodes, karpenter_releases, volume_driver_addon, access = [], [], [], None
    karpenter_objects = [existing.node_class]
hami = Hami("hami", ChartArgs(releases[names.HAMI_RELEASE], provider, system_nodes))
mock = MockDevicePlugin(
    "mock-device-plugin", MockDevicePluginArgs(mock_device_plugin_objects(config), provider, hami.release)
)
plugins: dict[str, list[pulumi.Resource]] = {names.SHARING_HAMI: [hami.release, mock.daemonset]}
if names.NVIDIA_PLUGIN_RELEASE in releases:
    nvidia = NvidiaDevicePlugin(
        "nvidia-device-plugin", ChartArgs(releases[names.NVIDIA_PLUGIN_RELEASE], provider, system_nodes)
    )
    plugins[names.SHARING_EXCLUSIVE] = plugins[names.SHARING_TIMESLICE] = [nvidia.release]
pools = [
    PoolObjects(
        pool.name, pool.sharing, node_pool(config, pool), node_overlays(config, pool), node_pool_delete_timeout(pool)
    )
    for pool in config.pools
]
capacity = GpuCapacity("gpu-capacity", GpuCapacityArgs(pools, provider, karpenter_objects, plugins))
teams = [TeamObjects(team.name, team_objects(config, team), team.namespace_access_role_arn) for team in config.teams]
tenancy = Tenancy(cluster_name, TenancyArgs(priority_classes(), teams, provider, access))
buffers = [
    PoolHeadroom(team.name, pool, template, buffer)
    for index, team in enumerate(config.teams)
    for pool, template, buffer in headroom_objects(config, index)
]
if buffers:
    WarmHeadroom(
        "warm-headroom",
        WarmHeadroomArgs(buffers, provider, tenancy.namespaces, karpenter_releases, capacity.node_pools),
    )
if config.monitoring.enabled:
    # The scraped releases, and the EBS CSI driver add-on when the stack created the cluster.
    after = [*system_nodes, hami.release, *karpenter_releases, *volume_driver_addon]
    monitoring = located(monitoring_releases(config), chart_choice.locations)
    Monitoring("monitoring", MonitoringArgs(monitoring, monitoring_objects(config), provider, after))

pulumi.export("clusterName", config.cluster.name)
if config.existing_cluster is None:
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export("karpenterQueueName", karpenter.queue.name)
    pulumi.export("karpenterNodeRoleArn", karpenter.node_role.arn)
    pulumi.export("karpenterControllerRoleArn", karpenter.controller_role.arn)
pulumi.export(
    "pools",
    {
        plan.name: {
            "sharing": plan.sharing,
            "instanceTypes": [node.instance_type for node in plan.nodes],
            "vgpusPerNode": {c.instance_type: c.vgpus for c in plan.capacities},
            # maxGpus counts physical GPUs; the NodePool limit counts its resource (vGPUs, replicas or GPUs).
            "maxGpus": plan.max_gpus,
            "nodePoolLimit": {plan.limit_resource: plan.node_pool_limit},
        }
        for plan in pool_plans(config).values()
    },
)
