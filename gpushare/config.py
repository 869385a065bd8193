"""Typed stack configuration: every `gpushare:*` key as a model with its field validators.

A schema only, below the domain layer: checks that need the catalog or pool capacities (cross-key rules) live
in `gpushare/loader.py`, which also reads the raw stack config into a StackConfig.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from gpushare import compat, images, names, pins
from gpushare.hami import SharingProfile

PROJECT = "gpushare"
DNS_LABEL = r"^[a-z]([-a-z0-9]{0,30}[a-z0-9])?$"
DURATION = r"^([0-9]+(s|m|h))+$"
SchedulerPolicy = Literal["binpack", "spread"]
Priority = Literal["critical", "standard", "batch"]
# Karpenter v1 NodePool CRD (karpenter.sh_nodepools.yaml, spec.disruption.budgets): our own patterns for the
# rules it states. Budget nodes: a count or a percentage up to 100%. Duration: hours and/or minutes only (cron
# has no seconds), with the `0s` Go's Duration.String() appends. Schedule: a cron macro or five fields.
BUDGET_NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$"
BUDGET_DURATION = r"^(([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?$"
BUDGET_SCHEDULE = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|\S+( +\S+){4})$"


def _upstream_registry(value: str) -> str:
    if value not in images.UPSTREAM_REGISTRIES:
        allowed = ", ".join(images.UPSTREAM_REGISTRIES)
        raise ValueError(f"{value!r} is not a registry the stack pulls images from; allowed: {allowed}")
    return value


def _mirror_prefix(value: str) -> str:
    if not re.fullmatch(images.MIRROR_PATTERN, value):
        raise ValueError(
            f"{value!r} is not a registry host[/path] in lower case, without scheme or trailing slash; allowed: "
            "e.g. 123456789012.dkr.ecr.us-west-2.amazonaws.com/docker-hub"
        )
    return value


UpstreamRegistry = Annotated[str, AfterValidator(_upstream_registry)]
MirrorPrefix = Annotated[str, AfterValidator(_mirror_prefix)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class NetworkConfig(_Model):
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
    private_subnet_ids: tuple[str, ...] = Field(
        default=(),
        alias="privateSubnetIds",
        description="With vpcId: node subnets in at least two zones, tagged karpenter.sh/discovery: <cluster name>",
    )
    public_subnet_ids: tuple[str, ...] = Field(
        default=(), alias="publicSubnetIds", description="With vpcId: optional public subnets for load balancers"
    )

    @field_validator("vpc_cidr")
    @classmethod
    def _cidr(cls, value: str | None) -> str | None:
        if value is not None:
            network = ipaddress.ip_network(value, strict=True)
            if network.version != 4 or not 16 <= network.prefixlen <= 20:
                raise ValueError(f"{value!r} must be an IPv4 CIDR from /16 to /20")
        return value

    @field_validator("private_subnet_ids", "public_subnet_ids")
    @classmethod
    def _subnets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for subnet in value:
            if not subnet.startswith("subnet-"):
                raise ValueError(f"{subnet!r} is not a subnet id (subnet-...)")
        if len(set(value)) != len(value):
            raise ValueError("lists a subnet twice")
        return value

    @model_validator(mode="after")
    def _one_mode(self) -> NetworkConfig:
        if self.vpc_id is None:
            if self.private_subnet_ids or self.public_subnet_ids:
                raise ValueError("privateSubnetIds/publicSubnetIds need vpcId (an existing VPC)")
        else:
            if self.vpc_cidr is not None or self.availability_zones is not None:
                raise ValueError("vpcCidr/availabilityZones create a VPC; drop them when vpcId is set")
            if len(self.private_subnet_ids) < 2:
                raise ValueError("an existing VPC needs privateSubnetIds in at least two availability zones")
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


class SystemNodeGroupConfig(_Model):
    """On-demand, non-GPU nodes for Karpenter, HAMi's scheduler and CoreDNS."""

    instance_types: tuple[str, ...] = Field(
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

    @field_validator("instance_types")
    @classmethod
    def _types(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not name or "." not in name:
                raise ValueError(f"{name!r} is not an EC2 instance type like m7i.large")
        return value

    @model_validator(mode="after")
    def _sizes(self) -> SystemNodeGroupConfig:
        if not self.min_size <= self.desired_size <= self.max_size:
            raise ValueError(
                f"need minSize <= desiredSize <= maxSize, got {self.min_size}/{self.desired_size}/{self.max_size}"
            )
        return self


class EndpointConfig(_Model):
    """Who reaches the Kubernetes API. A public endpoint must name the CIDRs allowed to reach it; a private
    one admits, on 443 of the cluster security group, the CIDRs and security groups listed here."""

    public_access: bool = Field(default=True, alias="publicAccess", description="Public Kubernetes API endpoint")
    private_access: bool = Field(default=True, alias="privateAccess", description="Private endpoint inside the VPC")
    public_access_cidrs: tuple[str, ...] = Field(
        default=(),
        alias="publicAccessCidrs",
        description="Who may reach the public endpoint; required when publicAccess (0.0.0.0/0 only on purpose)",
    )
    private_access_cidrs: tuple[str, ...] = Field(
        default=(),
        alias="privateAccessCidrs",
        description="CIDRs (VPN, peered VPC, CI runners) let in on 443 of the cluster security group to reach "
        "the private endpoint; with publicAccess false this or privateAccessSecurityGroupIds is required",
    )
    private_access_security_group_ids: tuple[str, ...] = Field(
        default=(),
        alias="privateAccessSecurityGroupIds",
        description="Security groups (bastion, CI runner) let in on 443 to reach the private endpoint",
    )

    @field_validator("private_access_security_group_ids")
    @classmethod
    def _groups(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for group in value:
            if not re.fullmatch(r"sg-[0-9a-f]{8,17}", group):
                raise ValueError(f"{group!r} is not a security group id like sg-0123456789abcdef0")
        return value

    @field_validator("public_access_cidrs", "private_access_cidrs")
    @classmethod
    def _cidrs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for cidr in value:
            try:
                ipaddress.ip_network(cidr, strict=True)
            except ValueError:
                raise ValueError(f"{cidr!r} is not a CIDR like 203.0.113.0/24") from None
        return value

    @model_validator(mode="after")
    def _consistent(self) -> EndpointConfig:
        if not (self.public_access or self.private_access):
            raise ValueError("publicAccess and privateAccess are both false: nothing could reach the API")
        if self.public_access and not self.public_access_cidrs:
            raise ValueError("publicAccess is true: list publicAccessCidrs (0.0.0.0/0 only on purpose)")
        if not self.public_access and self.public_access_cidrs:
            raise ValueError("publicAccessCidrs is set but publicAccess is false")
        private_allowed = self.private_access_cidrs or self.private_access_security_group_ids
        if not self.private_access and private_allowed:
            raise ValueError("privateAccessCidrs/privateAccessSecurityGroupIds are set but privateAccess is false")
        if not self.public_access and not private_allowed:
            raise ValueError(
                "publicAccess is false and nobody may reach the private endpoint (the cluster security group "
                "admits only itself, so pulumi up could not install anything): list privateAccessCidrs or "
                "privateAccessSecurityGroupIds"
            )
        return self


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
ARN_PRINCIPAL = r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[\w+=,.@/-]+$"


class ClusterConfig(_Model):
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
    endpoint: EndpointConfig = Field(description="Kubernetes API endpoint access")
    tags: dict[str, str] = Field(default={}, description="Tags on every AWS resource and on GPU instances")
    admin_principal_arns: tuple[str, ...] = Field(
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
    def _principals(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for arn in value:
            if not re.fullmatch(ARN_PRINCIPAL, arn):
                raise ValueError(f"{arn!r} is not an IAM role or user ARN like arn:aws:iam::123456789012:role/ci")
        if len(set(value)) != len(value):
            raise ValueError("lists a principal twice")
        return value

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            allowed = ", ".join(map(str, LOG_RETENTION_DAYS))
            raise ValueError(f"{value} is not a CloudWatch Logs retention; allowed: {allowed}")
        return value


class KarpenterConfig(_Model):
    """Karpenter, which launches the GPU nodes."""

    chart_version: str = Field(
        default=pins.chart_version(names.KARPENTER_CHART),
        alias="chartVersion",
        description="Karpenter and karpenter-crd chart version; 1.7.0 or newer (NodeOverlay)",
    )
    ami_version: str = Field(
        default="latest",
        alias="amiVersion",
        pattern=r"^(latest|v[0-9]{8})$",
        description="AL2023 AMI alias version, e.g. v20260903; latest drifts GPU nodes on every AMI release: pin it",
    )

    @field_validator("chart_version")
    @classmethod
    def _overlay_capable(cls, value: str) -> str:
        if compat.parse_version(value) < compat.KARPENTER_MIN_OVERLAY_VERSION:
            raise ValueError(f"{value} has no NodeOverlay; allowed: 1.7.0 or newer")
        return value

    @property
    def ami_alias(self) -> str:
        return f"al2023@{self.ami_version}"


class SchedulerPolicyConfig(_Model):
    """HAMi's scheduling policy: which node, then which GPU on it."""

    node: SchedulerPolicy = Field(default="binpack", description="How HAMi picks a node")
    gpu: SchedulerPolicy = Field(default="spread", description="How HAMi picks a GPU on the node")


class HamiConfig(_Model):
    """HAMi, which slices the GPUs of shared pools, and its mock device plugin."""

    chart_version: str = Field(
        default=pins.chart_version(names.HAMI_CHART),
        alias="chartVersion",
        description="HAMi chart; its value keys follow the version (2.7.x nvidianodeSelector, 2.8+ nvidiaNodeSelector)",
    )
    mock_device_plugin_image: str = Field(
        default=pins.image(compat.MOCK_IMAGE_REPOSITORY),
        alias="mockDevicePluginImage",
        description="Mock device plugin image; must parse the device config of chartVersion",
    )
    profile: SharingProfile = Field(default=SharingProfile(), description="How each GPU is sliced")
    scheduler_policy: SchedulerPolicyConfig = Field(
        default=SchedulerPolicyConfig(), alias="schedulerPolicy", description="HAMi's default scheduling policy"
    )

    @field_validator("chart_version")
    @classmethod
    def _known_chart(cls, value: str) -> str:
        if value not in compat.HAMI_CHART_VERSIONS:
            raise ValueError(
                f"{value!r} is not a HAMi chart this stack knows; allowed: {', '.join(compat.HAMI_CHART_VERSIONS)}"
            )
        return value

    @field_validator("mock_device_plugin_image")
    @classmethod
    def _known_mock(cls, value: str) -> str:
        tag = compat.mock_image_tag(value)
        if tag not in compat.MOCK_COMPATIBLE_HAMI:
            allowed = ", ".join(f"{compat.MOCK_IMAGE_REPOSITORY}:{t}" for t in compat.MOCK_COMPATIBLE_HAMI)
            raise ValueError(f"{value!r} has no known HAMi compatibility; allowed: {allowed}")
        return value

    @model_validator(mode="after")
    def _compatible(self) -> HamiConfig:
        tag = compat.mock_image_tag(self.mock_device_plugin_image)
        if self.chart_version not in compat.MOCK_COMPATIBLE_HAMI[tag]:
            raise ValueError(
                f"chartVersion {self.chart_version} writes a device config mock {tag} cannot parse; "
                f"allowed with mock {tag}: {', '.join(compat.MOCK_COMPATIBLE_HAMI[tag])}"
            )
        if self.profile.memory_factor != 1:
            raise ValueError(
                f"profile.memoryFactor {self.profile.memory_factor}: HAMi chart {self.chart_version} hard-codes "
                "memoryFactor: 1 in its device ConfigMap, so no other value would reach HAMi; allowed: 1"
            )
        return self


class NvidiaDevicePluginConfig(_Model):
    """The official NVIDIA device plugin, used only on exclusive (whole-GPU) pools."""

    chart_version: str = Field(
        default=pins.chart_version(names.NVIDIA_PLUGIN_CHART),
        alias="chartVersion",
        pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$",
        description="NVIDIA device plugin chart for exclusive pools",
    )


class DisruptionBudgetConfig(_Model):
    """At most `nodes` of the pool's nodes disrupted at once, while the window `schedule`+`duration` is open."""

    nodes: str = Field(
        pattern=BUDGET_NODES, description="How many nodes may be disrupted at once: a count (0 blocks) or `10%`"
    )
    schedule: str | None = Field(
        default=None,
        pattern=BUDGET_SCHEDULE,
        description="Cron schedule (UTC, five fields or @daily...) opening the window; needs `duration`",
    )
    duration: str | None = Field(
        default=None, pattern=BUDGET_DURATION, description="How long the window stays open (`8h`, `90m`, `1h30m`)"
    )
    reasons: tuple[Literal["Underutilized", "Empty", "Drifted"], ...] = Field(
        default=(), max_length=3, description="Disruption reasons the budget limits; all when empty"
    )

    @field_validator("nodes", mode="before")
    @classmethod
    def _count_as_text(cls, value: Any) -> Any:
        """YAML reads `nodes: 0` as an int; the NodePool field is a string."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("reasons")
    @classmethod
    def _unique_reasons(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError(f"lists a reason twice ({', '.join(value)})")
        return value

    @model_validator(mode="after")
    def _window(self) -> DisruptionBudgetConfig:
        if (self.schedule is None) != (self.duration is None):
            raise ValueError("schedule and duration must be set together (Karpenter refuses one without the other)")
        return self


class DisruptionConfig(_Model):
    """When Karpenter may remove the pool's nodes (NodePool spec.disruption and expireAfter)."""

    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = Field(
        default="WhenEmpty",
        alias="consolidationPolicy",
        description="WhenEmptyOrUnderutilized also moves running GPU pods",
    )
    consolidate_after: str = Field(
        default="10m",
        alias="consolidateAfter",
        pattern=DURATION,
        description="How long a node stays empty before it goes",
    )
    expire_after: str = Field(
        default="720h",
        alias="expireAfter",
        pattern=r"^(Never|([0-9]+(s|m|h))+)$",
        description="Node lifetime, or Never",
    )
    termination_grace_period: str = Field(
        default="1h",
        alias="terminationGracePeriod",
        pattern=DURATION,
        description="How long a draining node waits for its pods (and their PodDisruptionBudgets) before "
        "Karpenter terminates it; pulumi destroy waits this plus 15m for the NodePool",
    )
    budgets: tuple[DisruptionBudgetConfig, ...] = Field(
        default=(),
        max_length=50,
        description="NodePool disruption budgets (Karpenter's default when empty: 10% of nodes at a time)",
    )


class PoolConfig(_Model):
    """One GPU pool: a Karpenter NodePool over catalog instance types."""

    name: str = Field(pattern=DNS_LABEL, description="Pool and NodePool name")
    instance_types: tuple[str, ...] = Field(
        alias="instanceTypes", min_length=1, description="Catalog instance types the pool may launch"
    )
    capacity_types: tuple[Literal["on-demand", "spot"], ...] = Field(
        default=("on-demand",), alias="capacityTypes", min_length=1, description="Purchase options Karpenter may use"
    )
    max_gpus: int = Field(
        alias="maxGpus",
        ge=1,
        le=10_000,
        description="How far the pool may grow, in physical GPUs (at least the largest type's GPU count)",
    )
    sharing: Literal["hami", "exclusive", "timeslice"] = Field(
        default="hami",
        description="hami: memory- and core-isolated vGPUs; exclusive: whole GPUs; timeslice: each GPU shared by "
        "`replicas` pods without isolation (NVIDIA device plugin time-slicing, resource nvidia.com/gpu.shared)",
    )
    replicas: int | None = Field(
        default=None,
        ge=2,
        le=64,
        description="timeslice pools only (required there): pods that share one GPU",
    )
    disruption: DisruptionConfig = Field(default=DisruptionConfig(), description="Node disruption")

    @model_validator(mode="after")
    def _replicas_for_timeslice(self) -> PoolConfig:
        if self.sharing == names.SHARING_TIMESLICE and self.replicas is None:
            raise ValueError("sharing timeslice needs replicas (pods per GPU, 2 to 64)")
        if self.sharing != names.SHARING_TIMESLICE and self.replicas is not None:
            raise ValueError(f"replicas is only for sharing timeslice, not {self.sharing}")
        return self

    @field_validator("instance_types", "capacity_types")
    @classmethod
    def _no_repeats(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        repeated = sorted({v for v in value if value.count(v) > 1})
        if repeated:
            raise ValueError(f"lists {', '.join(repeated)} more than once")
        return value


class QuotaConfig(_Model):
    """Hard caps on what the team's pods may request in total."""

    gpus: int = Field(
        ge=0, description="requests.nvidia.com/gpu: vGPUs on shared pools plus whole GPUs on exclusive ones"
    )
    gpu_memory_mib: int = Field(
        default=0,
        alias="gpuMemoryMib",
        ge=0,
        description="requests.nvidia.com/gpumem and HAMi's limits.nvidia.com/gpumem, in MiB; at least 1 on HAMi pools",
    )
    gpu_cores: int = Field(
        default=0,
        alias="gpuCores",
        ge=0,
        description="requests.nvidia.com/gpucores and HAMi's limits.nvidia.com/gpucores, percent of a GPU summed; at "
        "least 1 on HAMi pools",
    )
    shared_gpus: int = Field(
        default=0,
        alias="sharedGpus",
        ge=0,
        description="requests.nvidia.com/gpu.shared: time-sliced GPU replicas on timeslice pools",
    )


class TeamConfig(_Model):
    """One team: a namespace with GPU quotas on the pools it may use."""

    name: str = Field(pattern=DNS_LABEL, description="Team and namespace name (not kube-*, not default)")
    pools: tuple[str, ...] = Field(min_length=1, description="Pools the team may use; every pool needs a team")
    quota: QuotaConfig = Field(description="The namespace's ResourceQuota on GPUs")
    namespace_access_role_arn: str | None = Field(
        default=None,
        alias="namespaceAccessRoleArn",
        pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]+$",
        description="IAM role that gets AmazonEKSEditPolicy scoped to the team namespace",
    )
    scheduler_policy: SchedulerPolicyConfig | None = Field(
        default=None,
        alias="schedulerPolicy",
        description="HAMi node/GPU policy admission copies onto the team's GPU pods (needs Kubernetes 1.36)",
    )
    priority: Priority = Field(
        default="standard",
        description="PriorityClass admission gives the team's GPU pods: critical preempts standard preempts batch on "
        "exclusive and time-sliced pools, never on HAMi pools (give critical teams their own HAMi pool)",
    )
    spot_only: bool = Field(
        default=False,
        alias="spotOnly",
        description="batch teams: admission pins the team's GPU pods to spot capacity (every pool must offer spot)",
    )

    @field_validator("pools")
    @classmethod
    def _pools_once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """A pool listed twice would count twice toward what the team's quota may ask."""
        repeated = sorted({pool for pool in value if value.count(pool) > 1})
        if repeated:
            raise ValueError(f"lists {', '.join(repeated)} more than once")
        return value

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.startswith("kube-") or value == "default":
            raise ValueError(f"{value!r} is a reserved namespace name")
        return value


class ExistingPrometheusConfig(_Model):
    """A Prometheus the user already runs: the stack only adds scrape objects, rules and the dashboard."""

    url: str = Field(
        pattern=r"^https?://[^\s/]+(:[0-9]+)?(/\S*)?$",
        description="HTTP address of its query API, as the WebUI reaches it (http://<service>.<namespace>.svc:9090)",
    )
    labels: dict[str, str] = Field(
        default={},
        description="Labels its serviceMonitorSelector/ruleSelector match, added to every object the stack creates",
    )


class AlertThresholdsConfig(_Model):
    """When the GPU alerts fire; minutes are how long a condition must hold first."""

    node_claim_not_initialized_minutes: int = Field(
        default=15,
        alias="nodeClaimNotInitializedMinutes",
        ge=1,
        le=1440,
        description="A GPU NodeClaim still not Initialized after this long (ResourceNotRegistered)",
    )
    pod_pending_minutes: int = Field(
        default=15, alias="podPendingMinutes", ge=1, le=1440, description="A pod requesting GPUs Pending this long"
    )
    node_idle_minutes: int = Field(
        default=60, alias="nodeIdleMinutes", ge=5, le=10080, description="A GPU node idle (no vGPU allocated) this long"
    )
    node_idle_utilization_percent: int = Field(
        default=5,
        alias="nodeIdleUtilizationPercent",
        ge=1,
        le=100,
        description="Below this average GPU utilization a node counts as idle (at least 1: utilization is never below "
        "0, so 0 could never fire)",
    )
    quota_use_percent: int = Field(
        default=90,
        alias="quotaUsePercent",
        ge=1,
        le=99,
        description="A team's GPU ResourceQuota used above this share of its hard limit (at most 99: admission keeps "
        "use within the limit, so above 100 could never fire)",
    )
    component_down_minutes: int = Field(
        default=5,
        alias="componentDownMinutes",
        ge=1,
        le=120,
        description="HAMi scheduler or device-plugin monitor unreachable this long",
    )


class MonitoringConfig(_Model):
    """Prometheus, scraping, GPU alerts, a Grafana dashboard and HAMi-WebUI; off unless enabled."""

    enabled: bool = Field(default=False, description="Deploy monitoring (on in prod)")
    retention: str = Field(
        default="15d",
        pattern=r"^[0-9]+(h|d|w)$",
        description="How long the stack's own Prometheus keeps samples (prometheusSpec.retention)",
    )
    storage_size: str = Field(
        default="50Gi",
        alias="storageSize",
        pattern=r"^[1-9][0-9]*Gi$",
        description="Persistent volume of the stack's own Prometheus",
    )
    storage_class: str = Field(
        default="gp2",
        alias="storageClass",
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="StorageClass of that volume (the stack installs the EBS CSI driver it needs)",
    )
    existing_prometheus: ExistingPrometheusConfig | None = Field(
        default=None,
        alias="existingPrometheus",
        description="Use this Prometheus instead of deploying kube-prometheus-stack",
    )
    alerts: AlertThresholdsConfig = Field(default=AlertThresholdsConfig(), description="Alert thresholds")


class StackConfig(_Model):
    """The whole stack: cluster, controllers, GPU pools and the teams that share them."""

    region: str = Field(pattern=r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", description="AWS region of the stack")
    cluster: ClusterConfig = Field(description="The EKS cluster")
    karpenter: KarpenterConfig = Field(default=KarpenterConfig(), description="Karpenter")
    hami: HamiConfig = Field(default=HamiConfig(), description="HAMi")
    nvidia_device_plugin: NvidiaDevicePluginConfig = Field(
        default=NvidiaDevicePluginConfig(), alias="nvidiaDevicePlugin", description="NVIDIA device plugin"
    )
    pools: tuple[PoolConfig, ...] = Field(min_length=1, description="GPU pools")
    teams: tuple[TeamConfig, ...] = Field(min_length=1, description="Teams sharing the pools")
    monitoring: MonitoringConfig = Field(default=MonitoringConfig(), description="Monitoring")
    registry_mirrors: dict[UpstreamRegistry, MirrorPrefix] = Field(
        default={},
        alias="registryMirrors",
        description="Upstream registry (docker.io, ghcr.io, nvcr.io, public.ecr.aws, quay.io, registry.k8s.io) -> "
        "mirror prefix every image of that registry is pulled through, e.g. an ECR pull-through cache "
        "<account>.dkr.ecr.<region>.amazonaws.com/docker-hub",
    )

    def pool(self, name: str) -> PoolConfig:
        return next(p for p in self.pools if p.name == name)


# The `gpushare:*` keys a stack file may set: every StackConfig field but the region (which is `aws:region`).
CONFIG_KEYS = tuple(field.alias or name for name, field in StackConfig.model_fields.items() if name != "region")
