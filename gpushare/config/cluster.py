"""The schema of gpushare:cluster: the network, system nodes, API endpoint, access and tags of a new cluster."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator, model_validator

from gpushare import karpenter_api
from gpushare.config.base import (
    Cidr,
    ConfigModel,
    InstanceTypeName,
    PrincipalArn,
    SecurityGroupId,
    SubnetId,
    principal_key,
    unique_items,
)
from gpushare.errors import raise_at, repeats


class NetworkConfig(ConfigModel):
    """Create a VPC (default) or use an existing one: set vpcId and privateSubnetIds for the latter."""

    vpc_cidr: str | None = Field(
        default=None,
        alias="vpcCidr",
        description="Range of a new VPC, IPv4 /16 to /20 (default 10.0.0.0/16): node and NAT subnets are cut from it",
    )
    availability_zones: int | None = Field(
        default=None,
        alias="availabilityZones",
        ge=2,
        le=3,
        description="Zones of a new VPC (default 2), one NAT gateway each",
    )
    vpc_id: str | None = Field(
        default=None,
        alias="vpcId",
        pattern=r"^vpc-[0-9a-f]{8,17}$",
        description="Use this existing VPC instead of creating one",
    )
    private_subnet_ids: tuple[SubnetId, ...] = Field(
        default=(),
        alias="privateSubnetIds",
        description="With vpcId: node subnets in at least two zones, tagged karpenter.sh/discovery: <cluster name>",
    )
    public_subnet_ids: tuple[SubnetId, ...] = Field(
        default=(), alias="publicSubnetIds", description="With vpcId: optional public subnets for load balancers"
    )

    @field_validator("vpc_cidr")
    @classmethod
    def _cidr(cls, value: str | None) -> str | None:
        if value is not None:
            allowed = "allowed: an IPv4 CIDR from /16 to /20 with host bits zero, e.g. 10.0.0.0/16"
            try:
                network = ipaddress.ip_network(value, strict=True)
            except ValueError:
                raise ValueError(f"{value!r} is not a CIDR; {allowed}") from None
            if network.version != 4 or not 16 <= network.prefixlen <= 20:
                raise ValueError(f"{value!r}: {allowed}")
        return value

    _unique_subnets = field_validator("private_subnet_ids", "public_subnet_ids")(unique_items)

    @model_validator(mode="after")
    def _one_mode(self) -> NetworkConfig:
        problems: list[tuple[tuple[int | str, ...], str]] = []
        if self.vpc_id is None:
            for key, subnets in (
                ("privateSubnetIds", self.private_subnet_ids),
                ("publicSubnetIds", self.public_subnet_ids),
            ):
                if subnets:
                    problems.append(((key,), f"{list(subnets)} needs vpcId (subnets of an existing VPC)"))
        else:
            for key, value in (("vpcCidr", self.vpc_cidr), ("availabilityZones", self.availability_zones)):
                if value is not None:
                    problems.append(((key,), f"{value!r} creates a VPC; drop it when vpcId is set"))
            if len(self.private_subnet_ids) < 2:
                problems.append(
                    (
                        ("privateSubnetIds",),
                        f"{list(self.private_subnet_ids)}: an existing VPC needs node subnets in at least two "
                        "availability zones",
                    )
                )
        raise_at(problems)
        return self

    @property
    def creates_vpc(self) -> bool:
        return self.vpc_id is None

    @property
    def cidr(self) -> str:
        return self.vpc_cidr or "10.0.0.0/16"

    @property
    def zone_count(self) -> int:
        return self.availability_zones or 2


class SystemNodeGroupConfig(ConfigModel):
    """On-demand, non-GPU nodes for Karpenter, HAMi's scheduler and CoreDNS."""

    instance_types: tuple[InstanceTypeName, ...] = Field(
        default=("m7i.large",), alias="instanceTypes", min_length=1, description="On-demand, non-GPU system node types"
    )
    min_size: int = Field(
        default=2,
        alias="minSize",
        ge=2,
        description="Fewest system nodes (Karpenter runs 2 replicas on distinct nodes)",
    )
    desired_size: int = Field(
        default=2, alias="desiredSize", ge=2, description="System nodes at creation (minSize to maxSize)"
    )
    max_size: int = Field(default=4, alias="maxSize", ge=2, le=50, description="Most system nodes")
    disk_size_gib: int = Field(default=50, alias="diskSizeGib", ge=20, le=1000, description="System node root volume")

    _unique_types = field_validator("instance_types")(unique_items)

    @model_validator(mode="after")
    def _sizes(self) -> SystemNodeGroupConfig:
        if not self.min_size <= self.desired_size <= self.max_size:
            raise_at(
                [
                    (
                        ("desiredSize",),
                        f"{self.desired_size}: need minSize <= desiredSize <= maxSize, got "
                        f"{self.min_size}/{self.desired_size}/{self.max_size}",
                    )
                ]
            )
        return self


class EndpointConfig(ConfigModel):
    """Who reaches the Kubernetes API. A public endpoint must name the CIDRs allowed to reach it; a private
    one admits, on 443 of the cluster security group, the CIDRs and security groups listed here."""

    public_access: bool = Field(default=True, alias="publicAccess", description="Public Kubernetes API endpoint")
    private_access: bool = Field(default=True, alias="privateAccess", description="Private endpoint inside the VPC")
    public_access_cidrs: tuple[Cidr, ...] = Field(
        default=(),
        alias="publicAccessCidrs",
        description="Who may reach the public endpoint; required when publicAccess (0.0.0.0/0 only on purpose)",
    )
    private_access_cidrs: tuple[Cidr, ...] = Field(
        default=(),
        alias="privateAccessCidrs",
        description="CIDRs (VPN, peered VPC, CI runners) let in on 443 of the cluster security group to reach "
        "the private endpoint; with publicAccess false this or privateAccessSecurityGroupIds is required",
    )
    private_access_security_group_ids: tuple[SecurityGroupId, ...] = Field(
        default=(),
        alias="privateAccessSecurityGroupIds",
        description="Security groups (bastion, CI runner) let in on 443 to reach the private endpoint",
    )

    _unique_lists = field_validator("public_access_cidrs", "private_access_cidrs", "private_access_security_group_ids")(
        unique_items
    )

    @model_validator(mode="after")
    def _consistent(self) -> EndpointConfig:
        problems: list[tuple[tuple[int | str, ...], str]] = []
        if not (self.public_access or self.private_access):
            problems.append((("privateAccess",), "false and publicAccess false: nothing could reach the API"))
        if self.public_access and not self.public_access_cidrs:
            problems.append(
                (("publicAccessCidrs",), "is required when publicAccess is true (0.0.0.0/0 only on purpose)")
            )
        if not self.public_access and self.public_access_cidrs:
            problems.append(
                (("publicAccessCidrs",), f"{list(self.public_access_cidrs)} is set but publicAccess is false")
            )
        if not self.private_access:
            for key, value in (
                ("privateAccessCidrs", self.private_access_cidrs),
                ("privateAccessSecurityGroupIds", self.private_access_security_group_ids),
            ):
                if value:
                    problems.append(((key,), f"{list(value)} is set but privateAccess is false"))
        private_allowed = self.private_access_cidrs or self.private_access_security_group_ids
        if self.private_access and not self.public_access and not private_allowed:
            problems.append(
                (
                    ("privateAccessCidrs",),
                    "publicAccess is false and nobody may reach the private endpoint (the cluster security group "
                    "admits only itself, so pulumi up could not install anything): list privateAccessCidrs or "
                    "privateAccessSecurityGroupIds",
                )
            )
        raise_at(problems)
        return self

    @property
    def public_to_everyone(self) -> bool:
        """Whether the public endpoint admits every address (a /0 among its CIDRs)."""
        return any(ipaddress.ip_network(cidr).prefixlen == 0 for cidr in self.public_access_cidrs)


# CloudWatch Logs accepts only these retention periods (PutRetentionPolicy retentionInDays).
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)


class ClusterConfig(ConfigModel):
    """The EKS cluster, its network and its system nodes."""

    name: str = Field(
        pattern=r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$",
        description="EKS cluster name; prefixes IAM roles and the queue",
    )
    kubernetes_version: str = Field(
        default="1.36",
        alias="kubernetesVersion",
        pattern=r"^1\.[0-9]{2}$",
        description="EKS minor version, refused past its end of standard support (gpushare/eks-support.yaml) "
        "unless supportType is EXTENDED; HAMi's kube-scheduler runs its patch pinned in gpushare/pins.yaml",
    )
    network: NetworkConfig = Field(default=NetworkConfig(), description="VPC the cluster runs in")
    system_node_group: SystemNodeGroupConfig = Field(
        default=SystemNodeGroupConfig(), alias="systemNodeGroup", description="Nodes for the controllers"
    )
    endpoint: EndpointConfig | None = Field(
        default=None,
        description="Kubernetes API endpoint access; required unless existingCluster (whose endpoint is its own)",
    )
    tags: dict[str, str] = Field(
        default={},
        description="Tags on every AWS resource and on GPU instances (not aws:*, nor the tags Karpenter sets itself)",
    )
    admin_principal_arns: tuple[PrincipalArn, ...] = Field(
        default=(),
        alias="adminPrincipalArns",
        description="IAM roles/users made cluster admins (access entry + AmazonEKSClusterAdminPolicy); list the "
        "CI role that runs the next pulumi up",
    )
    log_retention_days: int = Field(
        default=90,
        alias="logRetentionDays",
        description="Retention of the control-plane log group /aws/eks/<name>/cluster, which the stack creates "
        "before the cluster and deletes with it",
    )
    support_type: Literal["STANDARD", "EXTENDED"] = Field(
        default="STANDARD",
        alias="supportType",
        description="EKS upgrade policy at the end of standard support: STANDARD lets EKS upgrade the control plane, "
        "EXTENDED keeps the version (billed $0.60 instead of $0.10 per cluster-hour); required for a version past "
        "standard support",
    )

    @field_validator("admin_principal_arns")
    @classmethod
    def _principals_once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """One access entry per principal: EKS refuses a second (IAM names ignore case)."""
        raise_at(repeats([principal_key(arn) for arn in value], "principal "))
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        """Every tag must be one AWS accepts on all the stack's resources and the EC2NodeClass CRD accepts."""
        raise_at([((key,), problem) for key, tag in value.items() if (problem := _tag_problem(key, tag))])
        return value

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            allowed = ", ".join(map(str, LOG_RETENTION_DAYS))
            raise ValueError(f"{value} is not a CloudWatch Logs retention; allowed: {allowed}")
        return value


# What AWS accepts as a tag on every service the stack tags (IAM, EKS, EC2, SQS, KMS, CloudWatch Logs):
# letters, digits, spaces and _ . : / = + - @; keys up to 128 characters, values up to 256.
_TAG_SYMBOLS = frozenset("_.:/=+-@")


def _tag_problem(key: str, value: str) -> str | None:
    """Why AWS or Karpenter refuses the tag `key: value`, or None (the key is in the line's path already)."""
    if key.lower().startswith("aws:"):
        return "the aws: prefix is reserved for AWS; allowed: any other key"
    if not 1 <= len(key) <= 128 or len(value) > 256:
        return f"{value!r}: AWS allows keys of 1 to 128 characters and values of up to 256"
    if any(not (char.isalnum() or char == " " or char in _TAG_SYMBOLS) for char in key + value):
        return f"{value!r}: allowed in keys and values: letters, digits, spaces and _ . : / = + - @"
    problem = karpenter_api.node_class_tag_problem(key, value)
    return None if problem is None else f"{value!r}: {problem} (GPU nodes carry these tags)"
