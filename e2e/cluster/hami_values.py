"""What the stack's HAMi release values say HAMi manages: its resource names and the device config's sharing profile.

The stack writes both itself (gpushare.render.hami: the resource names and `device-config.content`), so reading them
needs neither the chart nor its defaults: the scenarios' pods, the invariant checker and the simulator's packing bound
take them from here. What the chart renders from these values (the scheduler's flags, its configuration and webhook) is
read from Helm's own output (e2e.cluster.helm, e2e.cluster.hami_installed).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import yaml

from e2e.cluster.errors import RigError

# The release values the stack always sets, the names of what HAMi manages.
RESOURCE_KEYS = ("resourceName", "resourceMem", "resourceCores", "resourceMemPercentage")


@dataclass(frozen=True)
class HamiValues:
    """The HAMi release's values as the stack rendered them."""

    values: dict[str, Any]

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> HamiValues:
        """RigError naming what is missing when the values lack a key the stack always writes."""
        missing = [key for key in (*RESOURCE_KEYS, "schedulerName") if not values.get(key)]
        if not (values.get("device-config") or {}).get("content"):
            missing.append("device-config.content")
        if missing:
            raise RigError(f"the HAMi release values lack {', '.join(missing)}, which the stack always renders")
        return cls(values)

    @property
    def scheduler_name(self) -> str:
        return str(self.values["schedulerName"])

    @property
    def resource_name(self) -> str:
        return str(self.values["resourceName"])

    @property
    def resource_mem(self) -> str:
        return str(self.values["resourceMem"])

    @property
    def resource_cores(self) -> str:
        return str(self.values["resourceCores"])

    @property
    def resource_mem_percentage(self) -> str:
        return str(self.values["resourceMemPercentage"])

    @property
    def resource_names(self) -> tuple[str, ...]:
        """The NVIDIA resources HAMi manages (what a kubelet registers 0 of until the device plugins report)."""
        return (self.resource_name, self.resource_mem, self.resource_cores, self.resource_mem_percentage)

    def device_config(self) -> dict[str, Any]:
        """`device-config.content`, which the chart writes whole into HAMi's device ConfigMap."""
        return dict(yaml.safe_load(self.values["device-config"]["content"]))

    @cached_property
    def _nvidia(self) -> dict[str, Any]:
        """Parsed once: the quota and packing checks read the profile per pod."""
        return dict(self.device_config()["nvidia"])

    @property
    def split_count(self) -> int:
        return int(self._nvidia["deviceSplitCount"])

    @property
    def memory_scaling(self) -> float:
        return float(self._nvidia["deviceMemoryScaling"])

    @property
    def core_scaling(self) -> float:
        return float(self._nvidia["deviceCoreScaling"])

    @property
    def memory_factor(self) -> int:
        return int(self._nvidia.get("memoryFactor", 1))
