"""Cluster: EKS with API access entries, KMS secrets encryption, control-plane logs (a managed log group with
a retention), Pod Identity, private-endpoint ingress, and a managed on-demand system node group for
Karpenter, HAMi's scheduler and CoreDNS."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from gpushare.aws_names import control_plane_log_group, ebs_csi_role_name, system_node_role_name
from gpushare.config import ClusterConfig
from gpushare.eks import EBS_CSI_DRIVER_ADDON
from gpushare.render import iam

CONTROL_PLANE_LOGS = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
# The EKS add-on's controller service account (aws-ebs-csi-driver add-on docs, Pod Identity setup).
EBS_CSI_SERVICE_ACCOUNT = "ebs-csi-controller-sa"


@dataclass(frozen=True)
class ClusterArgs:
    """`cluster.name` is the physical EKS name; `volume_driver` installs the EBS CSI driver, which any
    PersistentVolume (Prometheus's) needs; `partition` is the one the program looked up."""

    cluster: ClusterConfig
    vpc_id: pulumi.Input[str]
    private_subnet_ids: pulumi.Input[list[str]]
    public_subnet_ids: pulumi.Input[list[str]]
    partition: pulumi.Output[str]
    volume_driver: bool


class Cluster(pulumi.ComponentResource):
    """Exposes the Kubernetes provider every Kubernetes resource of the stack must use."""

    eks_cluster: eks.Cluster
    system_nodes: eks.ManagedNodeGroup
    pod_identity_agent: aws.eks.Addon
    # The EBS CSI driver add-on when `volume_driver`: whatever keeps a volume claim depends on it, so destroy
    # deletes the claim (and its EBS volume) while the driver still runs.
    volume_driver: aws.eks.Addon | None
    provider: k8s.Provider
    kubeconfig: pulumi.Output[str]

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:index:Cluster", name, None, opts)
        cluster = args.cluster
        partition = args.partition
        child = pulumi.ResourceOptions(parent=self)
        key = aws.kms.Key(
            f"{name}-secrets",
            description=f"EKS secrets encryption for {cluster.name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=cluster.tags,
            opts=child,
        )
        system_role = aws.iam.Role(
            f"{name}-system-node",
            name=system_node_role_name(cluster.name),
            assume_role_policy=json.dumps(iam.service_trust_policy("ec2.amazonaws.com")),
            tags=cluster.tags,
            opts=child,
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{name}-system-node-{policy}",
                role=system_role.name,
                policy_arn=partition.apply(lambda p, policy=policy: iam.managed_policy_arn(p, policy)),
                opts=child,
            )
            for policy in iam.SYSTEM_NODE_POLICIES
        ]
        # EKS writes to this group when it exists: created first, it gets a retention and goes on destroy.
        log_group = aws.cloudwatch.LogGroup(
            f"{name}-control-plane",
            name=control_plane_log_group(cluster.name),
            retention_in_days=cluster.log_retention_days,
            tags=cluster.tags,
            opts=child,
        )
        admins = {
            f"admin-{index}": eks.AccessEntryArgs(
                principal_arn=arn,
                access_policies={
                    "cluster-admin": eks.AccessPolicyAssociationArgs(
                        policy_arn=partition.apply(lambda p: iam.eks_access_policy_arn(p, CLUSTER_ADMIN_POLICY)),
                        access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                    )
                },
            )
            for index, arn in enumerate(cluster.admin_principal_arns)
        }
        self.eks_cluster = eks.Cluster(
            name,
            name=cluster.name,
            version=cluster.kubernetes_version,
            vpc_id=args.vpc_id,
            private_subnet_ids=args.private_subnet_ids,
            public_subnet_ids=args.public_subnet_ids,
            node_associate_public_ip_address=False,
            authentication_mode=eks.AuthenticationMode.API,
            skip_default_node_group=True,
            # One security group for every node: the one EKS creates, which system nodes use as well.
            skip_default_security_groups=True,
            instance_roles=[system_role],
            enabled_cluster_log_types=CONTROL_PLANE_LOGS,
            encryption_config_key_arn=key.arn,
            endpoint_public_access=cluster.endpoint.public_access,
            endpoint_private_access=cluster.endpoint.private_access,
            public_access_cidrs=list(cluster.endpoint.public_access_cidrs) or None,
            create_oidc_provider=False,
            upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(support_type=cluster.support_type),
            access_entries=admins or None,
            tags=cluster.tags,
            cluster_tags={**cluster.tags, "karpenter.sh/discovery": cluster.name},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*attachments, log_group]),
        )
        # The cluster security group admits only itself: whoever runs the next `pulumi up` (or kubectl)
        # against the private endpoint must be let in on 443.
        endpoint = cluster.endpoint
        sources = [
            *(("cidr", i, {"cidr_ipv4": cidr}) for i, cidr in enumerate(endpoint.private_access_cidrs)),
            *(
                ("sg", i, {"referenced_security_group_id": group})
                for i, group in enumerate(endpoint.private_access_security_group_ids)
            ),
        ]
        for kind, index, source in sources:
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-api-{kind}-{index}",
                security_group_id=self.eks_cluster.cluster_security_group_id,
                ip_protocol="tcp",
                from_port=443,
                to_port=443,
                description="Kubernetes API (private endpoint)",
                tags=cluster.tags,
                opts=child,
                **source,
            )
        # Karpenter's EC2NodeClass selects node security groups by this discovery tag.
        aws.ec2.Tag(
            f"{name}-node-sg-discovery",
            resource_id=self.eks_cluster.cluster_security_group_id,
            key="karpenter.sh/discovery",
            value=cluster.name,
            opts=child,
        )
        group = cluster.system_node_group
        # IMDSv2 with hop limit 1: pods (one network hop further) cannot read the node role's credentials;
        # the controllers get theirs through Pod Identity. The root volume moves here with it (EKS refuses a
        # node group diskSize together with a launch template).
        system_template = aws.ec2.LaunchTemplate(
            f"{name}-system",
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name="/dev/xvda",
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=group.disk_size_gib, volume_type="gp3", encrypted="true"
                    ),
                )
            ],
            tags=cluster.tags,
            opts=child,
        )
        self.system_nodes = eks.ManagedNodeGroup(
            f"{name}-system",
            cluster=self.eks_cluster,
            node_role=system_role,
            subnet_ids=args.private_subnet_ids,
            capacity_type="ON_DEMAND",
            instance_types=list(group.instance_types),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=system_template.id, version=system_template.latest_version.apply(str)
            ),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=group.min_size, desired_size=group.desired_size, max_size=group.max_size
            ),
            labels={"gpushare.io/role": "system"},
            tags=cluster.tags,
            opts=child,
        )
        self.pod_identity_agent = aws.eks.Addon(
            f"{name}-pod-identity-agent",
            cluster_name=cluster.name,
            addon_name="eks-pod-identity-agent",
            tags=cluster.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.system_nodes]),
        )
        self.volume_driver = self._ebs_csi_driver(name, cluster, partition) if args.volume_driver else None
        self.kubeconfig = pulumi.Output.secret(self.eks_cluster.kubeconfig_json)
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.eks_cluster]),
        )
        self.register_outputs({"clusterName": cluster.name, "kubeconfig": self.kubeconfig})

    def _ebs_csi_driver(self, name: str, cluster: ClusterConfig, partition: pulumi.Output[str]) -> aws.eks.Addon:
        """Since Kubernetes 1.23 EBS volumes (even the gp2 class) are provisioned only by the EBS CSI driver,
        which EKS does not install: without it a PersistentVolumeClaim stays Pending forever."""
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-ebs-csi",
            name=ebs_csi_role_name(cluster.name),
            assume_role_policy=json.dumps(iam.POD_IDENTITY_TRUST_POLICY),
            tags=cluster.tags,
            opts=child,
        )
        attachment = aws.iam.RolePolicyAttachment(
            f"{name}-ebs-csi",
            role=role.name,
            policy_arn=partition.apply(lambda p: iam.managed_policy_arn(p, iam.EBS_CSI_DRIVER_POLICY)),
            opts=child,
        )
        return aws.eks.Addon(
            f"{name}-ebs-csi-driver",
            cluster_name=cluster.name,
            addon_name=EBS_CSI_DRIVER_ADDON,
            pod_identity_associations=[
                aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=EBS_CSI_SERVICE_ACCOUNT)
            ],
            tags=cluster.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.pod_identity_agent, attachment]),
        )
