"""Stand-in for the NVIDIA device plugin on the rig's fake GPU nodes of exclusive and time-sliced pools (the Go
module proxy refuses its module; HAMi's nodes run rig-gpu-node and the real mock device plugin instead).

What a node registers is derived the way the plugin derives it, from its release's values, never from the
stack's NodeOverlays (they are what is being tested). NVIDIA device plugin 0.20 with its chart's config-manager:
a node runs the plugin when the release's nodeSelector holds for it, gets the config its
`nvidia.com/device-plugin.config` label names (else `config.default`), and registers `nvidia.com/gpu = GPUs`,
or with `sharing.timeSlicing` GPUs x replicas under the resource's `rename`, or `<name>.shared` when
`renameByDefault` (api/config/v1 replicas.go).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from gpushare.compat import NVIDIA_CHART_DEFAULT_NODE_SELECTOR_TERMS

NVIDIA_CONFIG_LABEL = "nvidia.com/device-plugin.config"  # the chart's config-manager NODE_LABEL


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
