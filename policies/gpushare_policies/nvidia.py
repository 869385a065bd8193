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
CONFIG_VERSION = "v1"  # api/config/v1 config.go: an empty version means v1, any other is "unknown version"
MIN_REPLICAS = 2  # api/config/v1 replicas.go ReplicatedResource.UnmarshalJSON: "number of replicas must be >= 2"


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
                # v0.20 main.go calls DisableResourceNamingInConfig: `rename` is ignored, renameByDefault decides.
                return names.GPU + SHARED_SUFFIX if slicing.get("renameByDefault") is True else names.GPU, replicas
        return None

    def config_problems(self, config_name: str) -> list[tuple[str, Any, str]]:
        """(key in the config document, its value, what the plugin does with it) for every field of a config in
        values.config.map that the pinned plugin refuses or ignores (api/config/v1 at v0.20: config.go,
        replicas.go); [] for a config it loads as written."""
        document = self.configs.get(config_name)
        if not isinstance(document, dict):
            return [
                ("", document, "not a YAML mapping: the plugin cannot parse it, does not start and registers no GPU")
            ]
        problems: list[tuple[str, Any, str]] = []
        version = document.get("version")
        if version not in (None, "", CONFIG_VERSION):
            problems.append(
                (
                    "version",
                    version,
                    f"unknown version: the plugin knows only {CONFIG_VERSION}, does not start and registers no GPU",
                )
            )
        sharing = document.get("sharing")
        slicing = sharing.get("timeSlicing") if isinstance(sharing, dict) else None
        if slicing is None:
            return problems
        key = "sharing.timeSlicing"
        if not isinstance(slicing, dict):
            return [
                *problems,
                (key, slicing, "not a mapping: the plugin cannot parse it, does not start and registers no GPU"),
            ]
        by_default = slicing.get("renameByDefault")
        if by_default is not None and not isinstance(by_default, bool):
            problems.append(
                (f"{key}.renameByDefault", by_default, "not a boolean: the plugin does not start and registers no GPU")
            )
        resources = slicing.get("resources")
        if not isinstance(resources, list) or not resources:
            return [
                *problems,
                (
                    f"{key}.resources",
                    resources,
                    "no resources specified: the plugin does not start and registers no GPU",
                ),
            ]
        for index, entry in enumerate(resources):
            where = f"{key}.resources[{index}]"
            if not isinstance(entry, dict) or not entry.get("name"):
                problems.append(
                    (
                        f"{where}.name",
                        None,
                        "no resource name specified: the plugin does not start and registers no GPU",
                    )
                )
                continue
            replicas = entry.get("replicas")
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < MIN_REPLICAS:
                problems.append(
                    (
                        f"{where}.replicas",
                        replicas,
                        f"the plugin refuses it (number of replicas must be >= {MIN_REPLICAS}), does not start and "
                        "registers no GPU",
                    )
                )
            rename, shared = entry.get("rename"), str(entry["name"]) + SHARED_SUFFIX
            if rename and rename != (shared if by_default is True else ""):
                problems.append(
                    (
                        f"{where}.rename",
                        rename,
                        f"the plugin ignores it (renaming is disabled): it registers "
                        f"{shared if by_default is True else entry['name']}, as renameByDefault decides",
                    )
                )
        return problems

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
