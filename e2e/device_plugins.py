"""Stand-in for the HAMi device plugin, the mock device plugin and the NVIDIA device plugin on the rig's fake
GPU nodes.

What a node registers is derived the way those plugins derive it, from the HAMi release's values and the
GPU's NVML memory, never from the stack's NodeOverlays (they are what is being tested):
- HAMi device plugin 2.8 (pkg/device/nvidia register path): per physical GPU one entry of the node
  annotation `hami.io/node-nvidia-register` (JSON from 2.8.0) with `count = deviceSplitCount`,
  `devmem = int(NVML MiB x deviceMemoryScaling)`, `devcore = int(100 x deviceCoreScaling)`, and node
  capacity `<resourceName> = GPUs x deviceSplitCount`.
- Mock device plugin 1.0.1 (nvidia/device.go GetResource): from that annotation, `<resourceMem> =
  sum(devmem) / memoryFactor`, `<resourceCores> = sum(devcore)`, `<resourceMemPercentage> = 100 x GPUs`.
  Chart 2.8.3 writes `memoryFactor: 1` into the device ConfigMap whatever the values say.
- NVIDIA device plugin 0.20 with its chart's config-manager: a node runs the plugin when the release's
  nodeSelector holds for it, gets the config its `nvidia.com/device-plugin.config` label names (else
  `config.default`), and registers `nvidia.com/gpu = GPUs`, or with `sharing.timeSlicing` GPUs x replicas
  under the resource's `rename`, or `<name>.shared` when `renameByDefault` (api/config/v1 replicas.go).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from gpushare.compat import NVIDIA_CHART_DEFAULT_NODE_SELECTOR_TERMS

REGISTER_ANNOTATION = "hami.io/node-nvidia-register"
NVIDIA_CONFIG_LABEL = "nvidia.com/device-plugin.config"  # the chart's config-manager NODE_LABEL
CHART_MEMORY_FACTOR = 1


@dataclass(frozen=True)
class HamiDeviceConfig:
    """The parts of the HAMi release's values the two plugins read."""

    resource_name: str
    resource_mem: str
    resource_cores: str
    resource_mem_percentage: str
    split_count: int
    memory_scaling: float
    core_scaling: float

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> HamiDeviceConfig:
        """Chart defaults (charts/hami/values.yaml 2.8.3) where the release leaves a key unset."""
        plugin = values.get("devicePlugin", {})
        return cls(
            resource_name=values.get("resourceName", "nvidia.com/gpu"),
            resource_mem=values.get("resourceMem", "nvidia.com/gpumem"),
            resource_cores=values.get("resourceCores", "nvidia.com/gpucores"),
            resource_mem_percentage=values.get("resourceMemPercentage", "nvidia.com/gpumem-percentage"),
            split_count=int(plugin.get("deviceSplitCount", 10)),
            memory_scaling=float(plugin.get("deviceMemoryScaling", 1)),
            core_scaling=float(plugin.get("deviceCoreScaling", 1)),
        )

    @property
    def resource_names(self) -> tuple[str, ...]:
        return (self.resource_name, self.resource_mem, self.resource_cores, self.resource_mem_percentage)


@dataclass(frozen=True)
class Registration:
    """Node annotation and extended resources one GPU node ends up with."""

    annotations: dict[str, str]
    resources: dict[str, int]


def register(config: HamiDeviceConfig, node_name: str, gpus: int, nvml_mib: int, gpu_type: str) -> Registration:
    devices = [
        {
            "id": f"GPU-{node_name}-{index}",
            "index": index,
            "count": config.split_count,
            "devmem": int(nvml_mib * config.memory_scaling),
            "devcore": int(100 * config.core_scaling),
            "type": gpu_type,
            "numa": 0,
            "mode": "hami-core",
            "health": True,
        }
        for index in range(gpus)
    ]
    resources = {
        config.resource_name: gpus * config.split_count,
        config.resource_mem: sum(device["devmem"] for device in devices) // CHART_MEMORY_FACTOR,
        config.resource_cores: sum(device["devcore"] for device in devices),
        config.resource_mem_percentage: 100 * gpus,
    }
    return Registration({REGISTER_ANNOTATION: json.dumps(devices, separators=(",", ":"))}, resources)


@dataclass(frozen=True)
class NvidiaPluginConfig:
    """The parts of the NVIDIA device plugin release's values that decide where it runs and what it registers."""

    node_selector: dict[str, str]
    configs: dict[str, dict[str, Any]]
    default: str

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> NvidiaPluginConfig:
        config = values.get("config") or {}
        return cls(
            node_selector={str(k): str(v) for k, v in (values.get("nodeSelector") or {}).items()},
            configs={name: yaml.safe_load(text) for name, text in (config.get("map") or {}).items()},
            default=str(config.get("default") or ""),
        )

    def runs_on(self, labels: dict[str, str]) -> bool:
        """The values' nodeSelector and the chart's default node affinity (one `In` term must hold) admit it."""
        if any(labels.get(key) != value for key, value in self.node_selector.items()):
            return False
        return any(
            all(labels.get(e["key"]) in e["values"] for e in term) for term in NVIDIA_CHART_DEFAULT_NODE_SELECTOR_TERMS
        )

    def register(self, labels: dict[str, str], gpus: int) -> dict[str, int]:
        """Extended resources a node with these labels and `gpus` GPUs ends up with."""
        document = self.configs.get(labels.get(NVIDIA_CONFIG_LABEL, self.default)) or {}
        slicing = (document.get("sharing") or {}).get("timeSlicing") or {}
        for resource in slicing.get("resources") or []:
            if resource["name"] == "nvidia.com/gpu":
                default_name = "nvidia.com/gpu.shared" if slicing.get("renameByDefault") else "nvidia.com/gpu"
                return {resource.get("rename") or default_name: gpus * int(resource["replicas"])}
        return {"nvidia.com/gpu": gpus}
