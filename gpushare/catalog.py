"""Typed GPU catalog: instance types and GPU models read from catalog.yaml, validated on load.

Every renderer and policy takes its figures from here, so a wrong number is fixed in one data file.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gpushare.errors import UserError, first_error, key_path
from gpushare.files import SAFE_LOADER
from gpushare.wording import Wording

CATALOG_PATH = Path(__file__).with_name("catalog.yaml")


class CatalogError(UserError):
    """The catalog data is inconsistent; the message names the entry and field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class GpuModel(_Model):
    """One GPU model. NVML memory is what HAMi registers; the EC2 figure is only what Karpenter labels."""

    name: str = Field(min_length=1)
    # The value karpenter-provider-aws puts in karpenter.k8s.aws/instance-gpu-name (lower-cased EC2 GPU name).
    karpenter_gpu_name: str = Field(alias="karpenterGpuName", pattern=r"^[a-z0-9-]+$")
    nvml_memory_mib: int = Field(alias="nvmlMemoryMib", gt=0)
    ec2_memory_mib: int = Field(alias="ec2MemoryMib", gt=0)
    nvml_source: str = Field(alias="nvmlSource")
    ec2_source: str = Field(alias="ec2Source")


class InstanceType(_Model):
    """One EC2 instance type with its GPUs and on-demand price."""

    name: str = Field(pattern=r"^[a-z0-9]+\.[a-z0-9]+$")
    vcpu: int = Field(gt=0)
    memory_mib: int = Field(alias="memoryMib", gt=0)
    gpu_model: str | None = Field(alias="gpuModel", default=None)
    gpu_count: int = Field(alias="gpuCount", ge=0)
    on_demand_usd_per_hour: float = Field(alias="onDemandUsdPerHour", gt=0)
    source: str

    @model_validator(mode="after")
    def _gpu_count_needs_model(self) -> InstanceType:
        if self.gpu_count > 0 and self.gpu_model is None:
            raise ValueError(f"gpuCount is {self.gpu_count} but gpuModel is missing")
        if self.gpu_count == 0 and self.gpu_model is not None:
            raise ValueError(f"gpuModel is {self.gpu_model!r} but gpuCount is 0")
        return self

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]


class PriceSet(_Model):
    """Where and when the prices were read: prices differ by region and change over time."""

    region: str
    capacity_type: Literal["on-demand"] = Field(alias="capacityType")
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    source: str


class ServicePrice(_Model):
    """One always-on price: `usd` per unit and `per` hour or month."""

    usd: float = Field(gt=0)
    per: Literal["hour", "month"]
    source: str


class ServicePrices(_Model):
    """What the stack bills while it exists, GPU nodes or not; prices differ by region and change over time."""

    region: str
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    hours_per_month: int = Field(alias="hoursPerMonth", gt=0)
    eks_cluster_standard: ServicePrice = Field(alias="eksClusterStandard")
    eks_cluster_extended: ServicePrice = Field(alias="eksClusterExtended")
    nat_gateway: ServicePrice = Field(alias="natGateway")
    public_ipv4_address: ServicePrice = Field(alias="publicIpv4Address")
    kms_key: ServicePrice = Field(alias="kmsKey")
    ebs_volume_gib: dict[str, ServicePrice] = Field(alias="ebsVolumeGib")

    def per_hour(self, price: ServicePrice) -> float:
        return price.usd if price.per == "hour" else price.usd / self.hours_per_month

    def cited(self) -> list[tuple[str, str]]:
        """(where, source id) of every price."""
        named = {
            "eksClusterStandard": self.eks_cluster_standard,
            "eksClusterExtended": self.eks_cluster_extended,
            "natGateway": self.nat_gateway,
            "publicIpv4Address": self.public_ipv4_address,
            "kmsKey": self.kms_key,
            **{f"ebsVolumeGib.{kind}": price for kind, price in self.ebs_volume_gib.items()},
        }
        return [(f"servicePrices.{where}", price.source) for where, price in named.items()]


class SystemInstanceType(_Model):
    """A non-GPU type the system node group may run, with its on-demand price (the source of `prices`)."""

    name: str = Field(pattern=r"^[a-z0-9]+\.[a-z0-9]+$")
    vcpu: int = Field(gt=0)
    on_demand_usd_per_hour: float = Field(alias="onDemandUsdPerHour", gt=0)


class VcpuQuota(_Model):
    """One of EC2's vCPU-based service quotas: running instances of these families, bought this way, count on it.
    `families` are the letters before a family's generation digit (g4dn -> g, vt1 -> vt)."""

    name: str
    code: str = Field(pattern=r"^L-[0-9A-F]{8}$")
    capacity_type: Literal["on-demand", "spot"] = Field(alias="capacityType")
    families: tuple[str, ...] = Field(min_length=1)


class Catalog(_Model):
    """The whole catalog; lookups by name raise CatalogError rather than KeyError."""

    sources: dict[str, str]
    prices: PriceSet
    service_prices: ServicePrices = Field(alias="servicePrices")
    system_instance_types: tuple[SystemInstanceType, ...] = Field(alias="systemInstanceTypes")
    vcpu_quotas: tuple[VcpuQuota, ...] = Field(alias="vcpuQuotas")
    vcpu_quotas_source: str = Field(alias="vcpuQuotasSource")
    gpu_models: tuple[GpuModel, ...] = Field(alias="gpuModels")
    instance_types: tuple[InstanceType, ...] = Field(alias="instanceTypes")

    @model_validator(mode="after")
    def _consistent(self) -> Catalog:
        _unique("gpuModels", [m.name for m in self.gpu_models])
        _unique("instanceTypes", [t.name for t in self.instance_types])
        model_names = {m.name for m in self.gpu_models}
        _unique("systemInstanceTypes", [t.name for t in self.system_instance_types])
        cited = [("prices.source", self.prices.source), ("vcpuQuotasSource", self.vcpu_quotas_source)]
        cited += self.service_prices.cited()
        for i, model in enumerate(self.gpu_models):
            cited += [(f"gpuModels[{i}].nvmlSource", model.nvml_source)]
            cited += [(f"gpuModels[{i}].ec2Source", model.ec2_source)]
        for i, itype in enumerate(self.instance_types):
            cited.append((f"instanceTypes[{i}].source", itype.source))
            if itype.gpu_model is not None and itype.gpu_model not in model_names:
                raise ValueError(
                    f"instanceTypes[{i}] ({itype.name}).gpuModel: unknown GPU model {itype.gpu_model!r}; "
                    f"known: {', '.join(sorted(model_names))}"
                )
        for where, source in cited:
            if source not in self.sources:
                raise ValueError(f"{where}: unknown source {source!r}; known: {', '.join(sorted(self.sources))}")
        return self

    def instance_type(self, name: str) -> InstanceType:
        for itype in self.instance_types:
            if itype.name == name:
                return itype
        raise CatalogError(f"instance type {name!r} is not in the catalog")

    def gpu_model_of(self, itype: InstanceType) -> GpuModel:
        for model in self.gpu_models:
            if model.name == itype.gpu_model:
                return model
        raise CatalogError(f"instance type {itype.name!r} has no GPU model")

    def system_instance_type(self, name: str) -> SystemInstanceType | None:
        """The priced system node type, or None when the catalog has no price for it."""
        return next((t for t in self.system_instance_types if t.name == name), None)

    def vcpu_quotas_of(self, instance_type: str, capacity_type: str) -> list[VcpuQuota]:
        """The quotas a running instance of this type and purchase option counts on (none for classes not listed)."""
        match = re.match(r"[a-z]+", instance_type)
        letters = match.group(0) if match else ""
        return [q for q in self.vcpu_quotas if q.capacity_type == capacity_type and letters in q.families]

    @property
    def instance_type_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.instance_types)


def _unique(field: str, names: list[str]) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise ValueError(f"{field}[{i}].name: duplicate {name!r}")
        seen.add(name)


def parse_catalog(data: object) -> Catalog:
    """Validate raw catalog data; the error names the entry and field."""
    try:
        return Catalog.model_validate(data)
    except ValidationError as error:
        raise CatalogError(
            f"catalog.yaml: {first_error(error, lambda loc: key_path('', loc), Wording(Catalog))}"
        ) from None


@cache
def load_catalog(path: Path = CATALOG_PATH) -> Catalog:
    """The catalog that ships with the project (cached: it is read by config, renderers and policies)."""
    return parse_catalog(yaml.load(path.read_text(), Loader=SAFE_LOADER))
