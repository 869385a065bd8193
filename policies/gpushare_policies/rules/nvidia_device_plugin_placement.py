"""Every pool has exactly one device plugin that runs on it: the NVIDIA plugin on exclusive and time-sliced pools
and never on HAMi ones."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.catalog import load_catalog

from ..hami import Hami, is_hami_pool
from ..kube import Pool, pools
from ..nvidia import NvidiaPlugin
from ..rule import Finding, Rule, finding, finding_about
from ..stack import StackView

NODE_LABEL, NODE_VALUE = names.NVIDIA_PLUGIN_NODE_LABEL
PRESENT_LABEL, PRESENT_VALUE = names.NVIDIA_GPU_PRESENT_LABEL


def _shown(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "none"


def _takes_nvidia_gpus(pool: Pool) -> bool:
    """Labelled exclusive or time-sliced, or launching GPU types of the catalog."""
    if pool.labels.get(names.SHARING_LABEL) in (names.SHARING_EXCLUSIVE, names.SHARING_TIMESLICE):
        return True
    catalog = load_catalog()
    return any(
        t in catalog.instance_type_names and catalog.instance_type(t).gpu_count > 0 for t in pool.instance_types or ()
    )


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
        if not _takes_nvidia_gpus(pool):
            continue  # e.g. a CPU NodePool the user added: no device plugin to find
        if nvidia is None:
            yield finding_about(
                pool.resource,
                f"takes whole or time-sliced GPUs but the stack has no `{names.NVIDIA_PLUGIN_CHART}` Helm release, "
                "so its nodes register no GPU, never initialize and bill until they expire",
                "deploy the NVIDIA device plugin chart (gpushare does for exclusive and timeslice pools)",
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
        hami_selects = hami is not None and hami.device_plugin_enabled and bool(hami.node_selector)
        if hami_selects and all(pool.labels.get(k) == v for k, v in hami.node_selector.items()):
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


RULE = Rule(
    name="nvidia-device-plugin-placement",
    order=20,
    description="The NVIDIA device plugin (nodeSelector and the chart's node affinity) runs on every exclusive and "
    "time-sliced pool, tolerates their taints, and runs on no HAMi pool; HAMi's plugin stays off its pools.",
    why="A pool no plugin runs on registers no GPU: its nodes never initialize and bill until they expire. Two "
    f"plugins on one node fight over {names.GPU}.",
    remediation=f"Label exclusive and timeslice pools {NODE_LABEL}={NODE_VALUE} and "
    f"{PRESENT_LABEL}={PRESENT_VALUE} (gpushare does), never HAMi pools.",
    enforcement="mandatory",
    severity="critical",
    check=check_placement,
)
