"""HAMi sharing profile and what a node of a given instance type will really register under it.

The figures follow HAMi's device plugin, which registers per GPU
`devmem = int(NVML MiB x deviceMemoryScaling)` and `devcore = int(100 x deviceCoreScaling)` and
`count = deviceSplitCount` (HAMi register.go); the mock device plugin sums them over the GPUs and divides
memory by `memoryFactor` (mock-device-plugin v1.0.1, nvidia/device.go GetResource).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from gpushare import names
from gpushare.catalog import Catalog, InstanceType
from gpushare.compat import MOCK_MAX_UNITS_PER_RESOURCE
from gpushare.errors import UserError


class CapacityError(UserError):
    """An instance type whose node cannot register what the overlay would promise."""


class SharingProfile(BaseModel):
    """How HAMi slices each physical GPU and counts its memory (the `nvidia:` section of HAMi's device config)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    device_split_count: int = Field(
        default=10, alias="deviceSplitCount", ge=1, le=100, description="vGPUs per physical GPU"
    )
    device_memory_scaling: float = Field(
        default=1.0,
        alias="deviceMemoryScaling",
        gt=0,
        le=1,
        description="Share of GPU memory HAMi hands out (oversubscription is refused)",
    )
    device_core_scaling: float = Field(
        default=1.0, alias="deviceCoreScaling", gt=0, le=1, description="Share of GPU cores HAMi hands out"
    )
    memory_factor: int = Field(
        default=1,
        alias="memoryFactor",
        ge=1,
        le=1024,
        description="MiB per unit of nvidia.com/gpumem: nodes register GPU memory, pods request it and quotas, "
        "overlays and admission bounds count it in units of this many MiB. Raise it when a HAMi pool's type would "
        "register more than the mock device plugin can advertise (make plan names the smallest factor that fits)",
    )


@dataclass(frozen=True)
class NodeCapacity:
    """What one node registers: the values a NodeOverlay must advertise, never more."""

    instance_type: str
    gpus: int
    vgpus: int
    gpu_memory: int
    gpu_cores: int
    gpu_memory_percentage: int
    vgpu_max_memory_mib: int
    memory_factor: int

    @property
    def gpu_memory_mib(self) -> int:
        """Total registered memory in MiB (gpu_memory is in units of memory_factor MiB)."""
        return self.gpu_memory * self.memory_factor

    def resources(self) -> dict[str, int]:
        """Resource name -> registered amount, in the order the overlay lists them."""
        return {
            names.GPU: self.vgpus,
            names.GPU_MEMORY: self.gpu_memory,
            names.GPU_CORES: self.gpu_cores,
            names.GPU_MEMORY_PERCENTAGE: self.gpu_memory_percentage,
        }


def smallest_memory_factor(catalog: Catalog, itype: InstanceType, profile: SharingProfile) -> int:
    """The least memoryFactor under which a node of `itype` registers no more GPU memory units than the mock
    device plugin can advertise."""
    devmem = int(catalog.gpu_model_of(itype).nvml_memory_mib * profile.device_memory_scaling)
    return devmem * itype.gpu_count // (MOCK_MAX_UNITS_PER_RESOURCE + 1) + 1


def node_capacity(catalog: Catalog, itype: InstanceType, profile: SharingProfile) -> NodeCapacity:
    """The resources a node of `itype` registers under `profile`; refuses what the mock cannot advertise, naming
    the memoryFactor that would fit."""
    if itype.gpu_count == 0:
        raise CapacityError(f"{itype.name} has no GPU; HAMi has nothing to share")
    model = catalog.gpu_model_of(itype)
    devmem = int(model.nvml_memory_mib * profile.device_memory_scaling)
    devcore = int(100 * profile.device_core_scaling)
    capacity = NodeCapacity(
        instance_type=itype.name,
        gpus=itype.gpu_count,
        vgpus=itype.gpu_count * profile.device_split_count,
        gpu_memory=devmem * itype.gpu_count // profile.memory_factor,
        gpu_cores=devcore * itype.gpu_count,
        gpu_memory_percentage=100 * itype.gpu_count,
        vgpu_max_memory_mib=devmem,
        memory_factor=profile.memory_factor,
    )
    for resource, units in capacity.resources().items():
        if units > MOCK_MAX_UNITS_PER_RESOURCE:
            fits = (
                f"; memoryFactor {smallest_memory_factor(catalog, itype, profile)} or more brings it under"
                if resource == names.GPU_MEMORY
                else ""
            )
            raise CapacityError(
                f"{itype.name}: {resource} would be {units} units per node at memoryFactor "
                f"{profile.memory_factor}, above the mock device plugin's ceiling of "
                f"{MOCK_MAX_UNITS_PER_RESOURCE} (the kubelet would register 0){fits}"
            )
    return capacity
