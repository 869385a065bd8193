"""The schema of gpushare:teams: each team's pools, quota, priority and warm headroom."""

from __future__ import annotations

from pydantic import Field, create_model, field_validator, model_validator

from gpushare import names
from gpushare.config.base import DNS_LABEL, ConfigModel, Priority, unique_items
from gpushare.config.controllers import SchedulerPolicyConfig
from gpushare.errors import raise_at
from gpushare.quota import QUOTA

# One field per row of the quota table (capacity.QUOTA), so a quota resource is added in one place.
QuotaConfig = create_model(
    "QuotaConfig",
    __base__=ConfigModel,
    __doc__="Hard caps on what the team's pods may request in total; a key left out caps nothing of its own (the "
    "team's pools bound it).",
    **{
        resource.key: (
            (int, Field(ge=0, description=resource.meaning))
            if resource.required
            else (int | None, Field(default=None, ge=0, description=resource.meaning))
        )
        for resource in QUOTA
    },
)


# What a team namespace's LimitRange gives a container that states no CPU or memory request (render/tenancy.py): a
# warm pod of the team's headroom asks the same unless its shape says otherwise.
CONTAINER_DEFAULT_CPU = "250m"
CONTAINER_DEFAULT_MEMORY = "512Mi"


class HeadroomShapeConfig(ConfigModel):
    """One warm pod as the team's real pod asks for it, per container: vGPUs sized in GPU memory and cores on HAMi
    pools, whole GPUs on exclusive pools, one replica on time-sliced pools; CPU and memory on every pool."""

    gpus: int = Field(
        default=1,
        ge=1,
        le=16,
        description="nvidia.com/gpu per pod: vGPUs on HAMi pools (each on a GPU of its own), whole GPUs on exclusive "
        "pools; nvidia.com/gpu.shared replicas on time-sliced pools (1 there)",
    )
    gpu_memory_mib: int | None = Field(
        default=None,
        alias="gpuMemoryMib",
        ge=1,
        description="HAMi pools: nvidia.com/gpumem per vGPU, in MiB; unset, each vGPU takes a whole GPU (HAMi's "
        "webhook then adds nvidia.com/gpucores: 100, and so does the template)",
    )
    gpu_cores: int | None = Field(
        default=None,
        alias="gpuCores",
        ge=1,
        le=100,
        description="HAMi pools: nvidia.com/gpucores per vGPU, percent of one GPU; below 100 only with gpuMemoryMib",
    )
    cpu: str = Field(
        default=CONTAINER_DEFAULT_CPU,
        pattern=r"^([1-9][0-9]*m|[1-9][0-9]*(\.[0-9]{1,3})?|0\.[0-9]{0,2}[1-9])$",
        description="CPU request per pod, e.g. `500m` or `2` (default: what the team's LimitRange gives a container)",
    )
    memory: str = Field(
        default=CONTAINER_DEFAULT_MEMORY,
        pattern=r"^[1-9][0-9]*(Mi|Gi)$",
        description="Memory request per pod, e.g. `8Gi` (default: what the team's LimitRange gives a container)",
    )

    @model_validator(mode="after")
    def _memory_karpenter_can_see(self) -> HeadroomShapeConfig:
        if self.gpu_cores is not None and self.gpu_cores < 100 and self.gpu_memory_mib is None:
            raise_at(
                [
                    (
                        ("gpuCores",),
                        f"{self.gpu_cores} without gpuMemoryMib: HAMi gives such a vGPU a whole GPU's memory, which "
                        "Karpenter cannot see, so it would count more warm pods per node than HAMi places; allowed: "
                        "gpuMemoryMib with it, or gpuCores 100",
                    )
                ]
            )
        return self


class HeadroomOverrideConfig(ConfigModel):
    """What one pool keeps warm instead of the team's headroom: each key set here replaces the team's."""

    pods: int | None = Field(default=None, ge=1, le=1000, description="Warm pods on this pool")
    quota_percent: int | None = Field(
        default=None, alias="quotaPercent", ge=1, le=100, description="Warm pods on this pool, as a share of the quota"
    )
    shape: HeadroomShapeConfig | None = Field(default=None, description="The warm pod on this pool")

    @model_validator(mode="after")
    def _one_size(self) -> HeadroomOverrideConfig:
        if self.pods is not None and self.quota_percent is not None:
            raise_at([(("quotaPercent",), f"{self.quota_percent} and pods {self.pods} both set; allowed: one of them")])
        return self


class HeadroomConfig(ConfigModel):
    """Warm GPU capacity for the team (a Karpenter CapacityBuffer per pool, alpha gate CapacityBuffer): Karpenter keeps
    Ready nodes with room for this many pods of this shape on top of what the team runs, and refills the room as real
    pods take it. Nothing charges the team's quota for it; the nodes bill while they wait."""

    pods: int | None = Field(default=None, ge=1, le=1000, description="Warm pods of the shape; or quotaPercent")
    quota_percent: int | None = Field(
        default=None,
        alias="quotaPercent",
        ge=1,
        le=100,
        description="Warm pods as a share of the team's quota: as many pods of the shape as this percent of each quota "
        "key the shape asks holds (rounded down, at least one); or pods",
    )
    shape: HeadroomShapeConfig = Field(description="The warm pod, as the team's real pods ask")
    pools: tuple[str, ...] = Field(
        default=(),
        description="The team's pools that keep the headroom, one CapacityBuffer each (default: the team's only pool; "
        "required when it has several)",
    )
    per_pool: dict[str, HeadroomOverrideConfig] = Field(
        default={},
        alias="perPool",
        description="Pool name -> pods, quotaPercent or shape replacing the team's for that pool (one of `pools`)",
    )

    _pools_once = field_validator("pools")(unique_items)

    @model_validator(mode="after")
    def _one_size(self) -> HeadroomConfig:
        if (self.pods is None) == (self.quota_percent is None):
            given = "both" if self.pods is not None else "neither"
            raise_at([(("pods",), f"{given} of pods and quotaPercent set; allowed: exactly one of them")])
        return self


class TeamConfig(ConfigModel):
    """One team: a namespace with GPU quotas on the pools it may use."""

    name: str = Field(
        pattern=DNS_LABEL,
        description="Team and namespace name (not kube-*, default, nor a namespace of the stack's controllers)",
    )
    pools: tuple[str, ...] = Field(min_length=1, description="Pools the team may use; every pool needs a team")
    quota: QuotaConfig = Field(description="The namespace's ResourceQuota on GPUs")
    namespace_access_role_arn: str | None = Field(
        default=None,
        alias="namespaceAccessRoleArn",
        pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]+$",
        description="IAM role that gets AmazonEKSEditPolicy scoped to the team namespace; one team per role, and "
        "not an admin principal (EKS gives a principal one access entry)",
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
    headroom: HeadroomConfig | None = Field(
        default=None,
        description="Warm GPU capacity Karpenter keeps ready for the team's pods (docs/headroom.md)",
    )

    # A pool listed twice would count twice toward what the team's quota may ask.
    _pools_once = field_validator("pools")(unique_items)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.startswith("kube-") or value in names.STACK_NAMESPACES:
            raise ValueError(
                f"{value!r} is a namespace Kubernetes or the stack's own controllers use, where the team's quota, "
                f"LimitRange and admission policies would apply to them; allowed: any other name (not kube-*, "
                f"not {', '.join(n for n in names.STACK_NAMESPACES if not n.startswith('kube-'))})"
            )
        return value
