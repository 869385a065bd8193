"""What the NVIDIA device plugin release in a stack will do: where it runs and what each node registers."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import yaml

from gpushare import names
from gpushare.catalog import CatalogError, load_catalog

from .kube import Pool
from .placement import nvidia_placement
from .stack import Resource, StackView

SHARED_SUFFIX = ".shared"  # renameByDefault: `<name>.shared` (api/config/v1 replicas.go DefaultSharedRename)


def is_timeslice_pool(pool: Pool) -> bool:
    return pool.labels.get(names.SHARING_LABEL) == names.SHARING_TIMESLICE


@dataclass(frozen=True)
class NvidiaPlugin:
    resource: Resource
    values: dict[str, Any]

    @classmethod
    def of(cls, view: StackView) -> NvidiaPlugin | None:
        """One model per view, so its parsed configs are shared by every rule and pool."""
        return view.memo("nvidia-plugin", lambda: cls._read(view))

    @classmethod
    def _read(cls, view: StackView) -> NvidiaPlugin | None:
        release = view.release(names.NVIDIA_PLUGIN_CHART)
        if release is None:
            return None
        values = release.get("values")
        return cls(release, values if isinstance(values, dict) else {})

    def runs_on(self, labels: dict[str, str]) -> bool:
        """Its rendered DaemonSet's node selector and required affinity admit these labels (chart defaults merged
        as Helm does, see placement.py)."""
        return nvidia_placement(self.resource).blocker(labels, ()) is None

    @cached_property
    def configs(self) -> dict[str, Any]:
        """values.config.map parsed: config name -> its document (a string the plugin could not parse stays)."""
        section = self.values.get("config")
        documents = section.get("map") if isinstance(section, dict) else None
        parsed: dict[str, Any] = {}
        for name, text in (documents or {}).items() if isinstance(documents, dict) else ():
            try:
                parsed[str(name)] = yaml.load(str(text), Loader=yaml.CSafeLoader)
            except yaml.YAMLError:
                parsed[str(name)] = str(text)
        return parsed

    @property
    def default_config(self) -> str | None:
        section = self.values.get("config")
        default = section.get("default") if isinstance(section, dict) else None
        return str(default) if default else None

    def config_name(self, labels: dict[str, str]) -> str | None:
        """The config the chart's config-manager gives a node: its label, else the default, else the only one."""
        if names.NVIDIA_PLUGIN_CONFIG_LABEL in labels:
            return labels[names.NVIDIA_PLUGIN_CONFIG_LABEL]
        if self.default_config:
            return self.default_config
        return next(iter(self.configs)) if len(self.configs) == 1 else None

    def time_slicing(self, config_name: str | None) -> tuple[str, int] | None:
        """(resource registered, replicas per GPU) when the config time-slices nvidia.com/gpu, else None."""
        document = self.configs.get(config_name) if config_name else None
        sharing = document.get("sharing") if isinstance(document, dict) else None
        slicing = sharing.get("timeSlicing") if isinstance(sharing, dict) else None
        if not isinstance(slicing, dict):
            return None
        entries = slicing.get("resources")
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or entry.get("name") != names.GPU:
                continue
            replicas = entry.get("replicas")
            if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas > 0:
                default_name = names.GPU + SHARED_SUFFIX if slicing.get("renameByDefault") is True else names.GPU
                return str(entry.get("rename") or default_name), replicas
        return None

    def registers(self, labels: dict[str, str], instance_type: str) -> dict[str, int] | None:
        """What a node with these labels registers (None: not in the gpushare catalog)."""
        try:
            gpus = load_catalog().instance_type(instance_type).gpu_count
        except CatalogError:
            return None
        sliced = self.time_slicing(self.config_name(labels))
        if sliced is None:
            return {names.GPU: gpus}
        resource, replicas = sliced
        return {resource: gpus * replicas}

    def pool_slicing(self, pool: Pool) -> tuple[str, int] | None:
        """(resource, replicas per GPU) on a time-sliced pool's nodes; None elsewhere or when unknown."""
        return self.time_slicing(self.config_name(pool.labels)) if is_timeslice_pool(pool) else None

    def resource_names(self) -> set[str]:
        """Every resource name some config of the release registers."""
        found = {names.GPU}
        for name in self.configs:
            sliced = self.time_slicing(name)
            if sliced is not None:
                found.add(sliced[0])
        return found
