"""Time-sliced pools get a time-slicing config of the NVIDIA plugin and advertise what it registers."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..kube import effective_capacity, overlay_for, overlays_for, pools, quantity
from ..nvidia import NvidiaPlugin, is_timeslice_pool
from ..rule import Finding, Rule, finding, finding_about
from ..stack import StackView


def check_timeslice(view: StackView, _config: None) -> Iterator[Finding]:
    nvidia = NvidiaPlugin.of(view)
    if nvidia is None:
        return  # device-plugins-per-pool reports it
    for pool in pools(view):
        if not is_timeslice_pool(pool):
            sliced_anyway = (
                nvidia.time_slicing(nvidia.config_name(pool.labels)) if nvidia.runs_on(pool.labels) else None
            )
            if pool.labels.get(names.SHARING_LABEL) == names.SHARING_EXCLUSIVE and sliced_anyway is not None:
                yield finding(
                    pool.resource,
                    f'spec.template.metadata.labels["{names.NVIDIA_PLUGIN_CONFIG_LABEL}"]',
                    pool.labels.get(names.NVIDIA_PLUGIN_CONFIG_LABEL),
                    f"the {names.NVIDIA_PLUGIN_CHART} release gives this exclusive pool's nodes config "
                    f"{nvidia.config_name(pool.labels)}, which time-slices {names.GPU} into {sliced_anyway[0]}, so "
                    "pods asking whole GPUs never fit",
                    f"give exclusive pools a config without sharing (gpushare: config.default "
                    f"{names.NVIDIA_DEFAULT_CONFIG}, no label)",
                )
            continue
        config_name = nvidia.config_name(pool.labels)
        sliced = nvidia.time_slicing(config_name)
        if sliced is None:
            known = ", ".join(sorted(nvidia.configs)) or "none"
            yield finding(
                pool.resource,
                f'spec.template.metadata.labels["{names.NVIDIA_PLUGIN_CONFIG_LABEL}"]',
                pool.labels.get(names.NVIDIA_PLUGIN_CONFIG_LABEL),
                f"the {names.NVIDIA_PLUGIN_CHART} release gives these nodes config {config_name or 'none'}, which "
                f"does not time-slice {names.GPU} (configs in values.config.map: {known}; a name missing there leaves "
                "the plugin without a config), so they register no time-sliced replicas and pods asking for them never "
                "fit",
                "name a config with sharing.timeSlicing (gpushare renders timeslice-<replicas>)",
            )
            continue
        resource, replicas = sliced
        if resource != names.GPU_SHARED or nvidia.config_problems(str(config_name)):
            continue  # the config itself is at fault: nvidia-timeslice-config-valid names it
        limit = pool.limits.get(resource)
        if limit is None:
            yield finding(
                pool.resource,
                f'spec.limits["{resource}"]',
                None,
                f"a time-sliced pool's growth is counted in what its nodes register ({resource}, {replicas} per GPU); "
                "without that limit it can grow without bound",
                f"limit {resource} to maxGpus x {replicas}",
            )
        for instance_type in pool.instance_types or ():
            registered = nvidia.registers(pool.labels, instance_type)
            if registered is None:
                continue
            capacity = effective_capacity(overlays_for(view, pool, instance_type))
            expected = registered[resource]
            if resource not in capacity:
                yield finding_about(
                    pool.resource,
                    f"instance type {instance_type} has no NodeOverlay setting {resource}: Karpenter cannot see the "
                    f"{expected} replicas a node registers and answers 'no instance type has enough resources'",
                    f'add {overlay_for(pool, instance_type)} setting {resource}: "{expected}"',
                )
                continue
            value, overlay = capacity[resource]
            if quantity(value) != expected:
                yield finding(
                    overlay,
                    f'spec.capacity["{resource}"]',
                    value,
                    f"a {instance_type} node in pool {pool.name} registers {expected} ({replicas} replicas per GPU, "
                    f"config {config_name}); any other figure makes Karpenter plan for capacity the node does not have",
                    f'set it to "{expected}"',
                )
            gpus = capacity.get(names.GPU)
            if resource != names.GPU and (gpus is None or quantity(gpus[0]) != 0):
                yield finding(
                    gpus[1] if gpus else overlay,
                    f'spec.capacity["{names.GPU}"]',
                    gpus[0] if gpus else None,
                    f"time-slicing renames {names.GPU} to {resource}, so a {instance_type} node registers none; unless "
                    "an overlay says 0, Karpenter counts the type's own GPUs and launches these nodes for pods asking "
                    "whole GPUs, which never fit",
                    f'set {names.GPU}: "0" in the overlay',
                )


RULE = Rule(
    name="timeslice-overlays-match",
    order=21,
    description="Each time-sliced pool's nodes get a time-slicing config of the NVIDIA plugin, its overlays "
    f"advertise GPUs x replicas of the renamed resource and 0 {names.GPU}, and its limit counts that resource; no "
    "exclusive pool gets a time-slicing config.",
    why="An overlay that differs from what time-slicing registers makes Karpenter launch nodes pods do not fit, "
    "or skip types they would.",
    remediation=f"Set sharing: {names.SHARING_TIMESLICE} and replicas on the pool; gpushare renders the config, "
    "label, overlays and limit together.",
    enforcement="mandatory",
    severity="critical",
    check=check_timeslice,
)
