"""Every config of the NVIDIA device plugin release loads in the pinned plugin as written, and a time-sliced pool's
config registers the renamed resource the stack counts."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..kube import pools
from ..nvidia import MIN_REPLICAS, NvidiaPlugin, is_timeslice_pool
from ..rule import Finding, Rule, finding
from ..stack import StackView


def check_timeslice_config(view: StackView, _config: None) -> Iterator[Finding]:
    nvidia = NvidiaPlugin.of(view)
    if nvidia is None:
        return  # device-plugins-per-pool reports it when a pool needs the plugin
    for config_name in sorted(nvidia.configs):
        for key, value, problem in nvidia.config_problems(config_name):
            yield finding(
                nvidia.resource,
                f'values.config.map["{config_name}"]{" " + key if key else ""}',
                value,
                f"{problem} on the nodes given config {config_name}",
                f"write it as the plugin's v1 config (time-slicing: resources [{{name: {names.GPU}, replicas: >= "
                f"{MIN_REPLICAS}}}], renameByDefault: true, no rename; gpushare renders timeslice-<replicas> so)",
            )
    for pool in pools(view):
        if not is_timeslice_pool(pool):
            continue
        config_name = nvidia.config_name(pool.labels)
        sliced = nvidia.time_slicing(config_name)
        if config_name is None or sliced is None or sliced[0] == names.GPU_SHARED:
            continue  # no time-slicing config at all: timeslice-overlays-match names the pool's label
        slicing = nvidia.configs[config_name]["sharing"]["timeSlicing"]
        yield finding(
            nvidia.resource,
            f'values.config.map["{config_name}"] sharing.timeSlicing.renameByDefault',
            slicing.get("renameByDefault"),
            f"pool {pool.name}'s nodes then register their replicas as {sliced[0]}, not {names.GPU_SHARED}, which "
            "the pool's overlays and limit, the team quotas and per-GPU policies count: pods asking for replicas "
            "never fit and whole-GPU pods land on shared GPUs",
            "set renameByDefault: true in that config (gpushare renders it so)",
        )


RULE = Rule(
    name="nvidia-timeslice-config-valid",
    order=61,
    description="Every config in the NVIDIA device plugin's values.config.map loads in the pinned plugin as written "
    f"(version v1, time-slicing resources named, replicas >= {MIN_REPLICAS}, no ignored rename), and a time-sliced "
    f"pool's config registers {names.GPU_SHARED} (renameByDefault: true).",
    why="The plugin refuses such a config and registers no GPU on the nodes given it; without renameByDefault the "
    f"replicas are registered as {names.GPU}, so the time-sliced pool's overlays, limit and quotas count a "
    "resource no node has.",
    remediation="Keep the time-slicing config gpushare renders for each replica count (timeslice-<replicas>).",
    enforcement="mandatory",
    severity="critical",
    check=check_timeslice_config,
)
