"""Every pool has exactly one device plugin that runs on it: the NVIDIA plugin on exclusive and time-sliced pools
and never on HAMi ones; time-sliced pools advertise what its time-slicing config registers."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from .hami import Hami, is_hami_pool
from .kube import effective_capacity, overlays_for, pools, quantity
from .nvidia import NvidiaPlugin, is_timeslice_pool
from .rule import Finding, Rule, finding
from .stack import StackView


def _shown(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "none"


def check_placement(view: StackView, _config: None) -> Iterator[Finding]:
    nvidia = NvidiaPlugin.of(view)
    hami = Hami.of(view)
    for pool in pools(view):
        if is_hami_pool(view, pool):
            if nvidia is not None and nvidia.runs_on(pool.labels):
                yield finding(
                    pool.resource,
                    "spec.template.metadata.labels",
                    _shown(pool.labels),
                    f"the {names.NVIDIA_PLUGIN_CHART} release's nodeSelector and node affinity admit these HAMi nodes, "
                    f"so two device plugins register {names.GPU} on one node and the kubelet keeps whichever came last",
                    f"keep {names.NVIDIA_PLUGIN_NODE_LABEL[0]} and {names.NVIDIA_GPU_PRESENT_LABEL[0]} off HAMi pools "
                    "(gpushare sets them only on exclusive and timeslice pools)",
                )
            continue
        if nvidia is None:
            yield Finding(
                pool.resource,
                f"{pool.resource.label}: takes whole or time-sliced GPUs but the stack has no "
                f"`{names.NVIDIA_PLUGIN_CHART}` Helm release, so its nodes register no GPU, never initialize and "
                "bill until they expire. Fix: deploy the NVIDIA device plugin chart (gpushare does for exclusive and "
                "timeslice pools).",
            )
            continue
        if not nvidia.runs_on(pool.labels):
            yield finding(
                pool.resource,
                "spec.template.metadata.labels",
                _shown(pool.labels),
                f"the {names.NVIDIA_PLUGIN_CHART} release (values nodeSelector {_shown(nvidia.node_selector)} and its "
                "required node affinity) never runs on these nodes, so they register no GPU and never initialize",
                f'label the pool {names.NVIDIA_PLUGIN_NODE_LABEL[0]}: "{names.NVIDIA_PLUGIN_NODE_LABEL[1]}" and '
                f'{names.NVIDIA_GPU_PRESENT_LABEL[0]}: "{names.NVIDIA_GPU_PRESENT_LABEL[1]}"',
            )
        if hami is not None and all(pool.labels.get(k) == v for k, v in hami.node_selector.items()):
            yield finding(
                pool.resource,
                "spec.template.metadata.labels",
                _shown(pool.labels),
                f"HAMi's device plugin also runs on nodes with {_shown(hami.node_selector)}, so two plugins "
                f"register {names.GPU} on one node",
                f"drop {', '.join(hami.node_selector)} from this pool's labels",
            )
        for index, taint in enumerate(pool.taints):
            if not nvidia.tolerates(taint):
                yield finding(
                    pool.resource,
                    f"spec.template.spec.taints[{index}]",
                    f"{taint.get('key')}:{taint.get('effect')}",
                    f"the {names.NVIDIA_PLUGIN_CHART} release's values.tolerations do not tolerate it, so the plugin "
                    "never starts on these nodes",
                    f"add {{key: {taint.get('key')}, operator: Exists, effect: {taint.get('effect')}}} to "
                    "values.tolerations",
                )


def check_timeslice(view: StackView, _config: None) -> Iterator[Finding]:
    nvidia = NvidiaPlugin.of(view)
    if nvidia is None:
        return  # nvidia-device-plugin-placement reports it
    for pool in pools(view):
        if not is_timeslice_pool(pool):
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
                f"does not time-slice {names.GPU} (configs in values.config.map: {known}), so they register whole "
                "GPUs and pods asking for time-sliced replicas never fit",
                "name a config with sharing.timeSlicing (gpushare renders timeslice-<replicas>)",
            )
            continue
        resource, replicas = sliced
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
                yield Finding(
                    pool.resource,
                    f"{pool.resource.label}: instance type {instance_type} has no NodeOverlay setting {resource}: "
                    f"Karpenter cannot see the {expected} replicas a node registers and answers 'no instance type has "
                    f"enough resources'. Fix: add a NodeOverlay with requirements {names.NODEPOOL_LABEL} In "
                    f"[{pool.name}] and {names.INSTANCE_TYPE_LABEL} In [{instance_type}] setting "
                    f'{resource}: "{expected}".',
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


RULES = (
    Rule(
        name="nvidia-device-plugin-placement",
        description="The NVIDIA device plugin (nodeSelector and the chart's node affinity) runs on every exclusive and "
        "time-sliced pool, tolerates their taints, and runs on no HAMi pool; HAMi's plugin stays off its pools.",
        why="A pool no plugin runs on registers no GPU: its nodes never initialize and bill until they expire. Two "
        "plugins on one node fight over nvidia.com/gpu.",
        remediation="Label exclusive and timeslice pools gpushare.io/device-plugin=nvidia and "
        "nvidia.com/gpu.present=true (gpushare does), never HAMi pools.",
        enforcement="mandatory",
        severity="critical",
        check=check_placement,
    ),
    Rule(
        name="timeslice-overlays-match",
        description="Each time-sliced pool's nodes get a time-slicing config of the NVIDIA plugin, its overlays "
        "advertise GPUs x replicas of the renamed resource, and its limit counts that resource.",
        why="An overlay that differs from what time-slicing registers makes Karpenter launch nodes pods do not fit, "
        "or skip types they would.",
        remediation="Set sharing: timeslice and replicas on the pool; gpushare renders the config, label, overlays "
        "and limit together.",
        enforcement="mandatory",
        severity="critical",
        check=check_timeslice,
    ),
)
