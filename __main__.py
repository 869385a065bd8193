"""gpushare Pulumi program: read the typed stack config, then wire one component per concern."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
from pulumi.runtime.config import CONFIG, get_config_env

from components.capacity import GpuCapacity
from components.cluster import Cluster
from components.hami import Hami, MockDevicePlugin, NvidiaDevicePlugin
from components.karpenter import Karpenter
from components.monitoring import Monitoring, MonitoringArgs
from components.network import Network
from components.tenancy import Tenancy
from gpushare import names
from gpushare.capacity import pool_plans
from gpushare.config import load_stack_config
from gpushare.errors import UserError
from gpushare.render.monitoring import monitoring_objects, monitoring_releases
from gpushare.render.stack import helm_releases

try:
    config = load_stack_config({**get_config_env(), **CONFIG.get()})
except UserError as error:
    raise pulumi.RunError(str(error)) from None

releases = {release.name: release for release in helm_releases(config)}
# The partition (aws, aws-cn, aws-us-gov) and account, looked up once: no ARN spells a partition.
partition = aws.get_partition_output().partition
account_id = aws.get_caller_identity_output().account_id
network = Network("network", config)
# The stack's own Prometheus keeps its samples on an EBS volume.
volume_driver = config.monitoring.enabled and config.monitoring.existing_prometheus is None
cluster = Cluster(
    "cluster",
    config,
    network.vpc_id,
    network.private_subnet_ids,
    network.public_subnet_ids,
    partition,
    volume_driver,
)
karpenter = Karpenter(
    "karpenter",
    config,
    cluster,
    releases[names.KARPENTER_CRD_RELEASE],
    releases[names.KARPENTER_RELEASE],
    partition,
    account_id,
)
hami = Hami("hami", releases[names.HAMI_RELEASE], cluster)
mock = MockDevicePlugin("mock-device-plugin", config, cluster, hami)
plugins: dict[str, list[pulumi.Resource]] = {names.SHARING_HAMI: [hami.release, mock.daemonset]}
if names.NVIDIA_PLUGIN_RELEASE in releases:
    nvidia = NvidiaDevicePlugin("nvidia-device-plugin", releases[names.NVIDIA_PLUGIN_RELEASE], cluster)
    plugins[names.SHARING_EXCLUSIVE] = plugins[names.SHARING_TIMESLICE] = [nvidia.release]
GpuCapacity("gpu-capacity", config, cluster, [*karpenter.releases, karpenter.node_class], plugins)
Tenancy("tenancy", config, cluster, partition)
if config.monitoring.enabled:
    scraped = [cluster.system_nodes, hami.release, *karpenter.releases]
    args = MonitoringArgs(monitoring_releases(config), monitoring_objects(config), cluster.provider, scraped)
    Monitoring("monitoring", args)

pulumi.export("clusterName", config.cluster.name)
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
            "gpuLimit": plan.gpu_limit,
        }
        for plan in pool_plans(config).values()
    },
)
