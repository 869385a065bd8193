"""The schema of gpushare:pools: each GPU pool, its sharing mode and how Karpenter disrupts its nodes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from gpushare import karpenter_api, names, versions
from gpushare.config.base import DNS_LABEL, ConfigModel, ConsolidationPolicy, budget_schedule, unique_items
from gpushare.errors import raise_at


class DisruptionBudgetConfig(ConfigModel):
    """At most `nodes` of the pool's nodes disrupted at once, while the window `schedule`+`duration` is open."""

    nodes: str = Field(
        pattern=karpenter_api.BUDGET_NODES_PATTERN,
        description="How many nodes may be disrupted at once: a count (0 blocks) or `10%`",
    )
    schedule: Annotated[str, AfterValidator(budget_schedule)] | None = Field(
        default=None,
        description="Cron schedule opening the window, parsed as Karpenter does (robfig/cron: five fields "
        "minute hour day-of-month month day-of-week in UTC, names like mon-fri and jan, Sunday 0; or @daily, "
        "@weekly...); needs `duration`",
    )
    duration: str | None = Field(
        default=None,
        pattern=karpenter_api.BUDGET_DURATION_PATTERN,
        description="How long the window stays open (`8h`, `90m`, `1h30m`)",
    )
    reasons: tuple[Literal["Underutilized", "Empty", "Drifted"], ...] = Field(
        default=(), max_length=3, description="Disruption reasons the budget limits; all when empty"
    )

    @field_validator("nodes", mode="before")
    @classmethod
    def _count_as_text(cls, value: Any) -> Any:
        """YAML reads `nodes: 0` as an int; the NodePool field is a string."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    _unique_reasons = field_validator("reasons")(unique_items)

    @model_validator(mode="after")
    def _window(self) -> DisruptionBudgetConfig:
        if (self.schedule is None) != (self.duration is None):
            missing = "duration" if self.duration is None else "schedule"
            raise_at(
                [
                    (
                        (missing,),
                        f"is required with {'schedule' if missing == 'duration' else 'duration'} (the NodePool "
                        "CRD refuses one without the other)",
                    )
                ]
            )
        return self


class DisruptionConfig(ConfigModel):
    """When Karpenter may remove the pool's nodes (NodePool spec.disruption and expireAfter)."""

    consolidation_policy: ConsolidationPolicy = Field(
        default="WhenEmpty",
        alias="consolidationPolicy",
        description="WhenEmptyOrUnderutilized also moves running GPU pods; Balanced moves them only when the "
        f"saving outweighs the disruption (Karpenter {versions.feature('balanced-consolidation').minimum} or newer)",
    )
    consolidate_after: str = Field(
        default="10m",
        alias="consolidateAfter",
        pattern=karpenter_api.DURATION_OR_NEVER_PATTERN,
        description="How long a node stays empty (or underutilized) before it goes, e.g. `10m`, `1h30m`; Never "
        "turns consolidation off",
    )
    expire_after: str = Field(
        default="720h",
        alias="expireAfter",
        pattern=karpenter_api.DURATION_OR_NEVER_PATTERN,
        description="Node lifetime, or Never",
    )
    termination_grace_period: str = Field(
        default="1h",
        alias="terminationGracePeriod",
        pattern=karpenter_api.DURATION_PATTERN,
        description="How long a draining node waits for its pods (and their PodDisruptionBudgets) before "
        "Karpenter terminates it; pulumi destroy waits this plus 15m for the NodePool",
    )
    budgets: tuple[DisruptionBudgetConfig, ...] = Field(
        default=(),
        max_length=50,
        description="NodePool disruption budgets (Karpenter's default when empty: 10% of nodes at a time)",
    )

    @model_validator(mode="after")
    def _policy_needs_consolidation(self) -> DisruptionConfig:
        """consolidateAfter Never turns consolidation off (Karpenter skips every candidate: disruption/
        consolidation.go ShouldDisrupt), so a policy written beside it does nothing."""
        if self.consolidate_after == "Never" and "consolidation_policy" in self.model_fields_set:
            raise_at(
                [
                    (
                        ("consolidationPolicy",),
                        f"{self.consolidation_policy!r} has no effect: consolidateAfter Never turns consolidation "
                        "off; allowed: drop consolidationPolicy, or a duration for consolidateAfter",
                    )
                ]
            )
        return self


class PoolConfig(ConfigModel):
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
        "`replicas` pods without isolation (NVIDIA device plugin time-slicing, resource nvidia.com/gpu.shared; "
        f"plugin chart {versions.feature('time-slicing').minimum} or newer)",
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
            raise_at([(("replicas",), "is required with sharing timeslice (pods per GPU, 2 to 64)")])
        if self.sharing != names.SHARING_TIMESLICE and self.replicas is not None:
            raise_at([(("replicas",), f"{self.replicas}: only for sharing timeslice, not {self.sharing}")])
        return self

    _no_repeats = field_validator("instance_types", "capacity_types")(unique_items)
