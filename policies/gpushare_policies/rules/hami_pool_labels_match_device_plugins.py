"""HAMi pools carry the labels the device plugins select and the tolerations their taints need."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..hami import Hami, hami_pools
from ..kube import selector_unmet, tolerates
from ..rule import Finding, Rule, finding, finding_about
from ..stack import StackView

HAMI_LABEL, HAMI_VALUE = names.HAMI_NODE_LABEL


def _taint(taint: dict) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"


def check_labels(view: StackView, _config: None) -> Iterator[Finding]:
    hami = Hami.of(view)
    mocks = view.mock_daemonsets()
    served = hami_pools(view)
    if hami is not None and served:
        shown = ", ".join(pool.name for pool in served)
        if not hami.device_plugin_enabled:
            yield finding_about(
                hami.resource,
                f"values turn off HAMi's device plugin (devicePlugin.enabled false or dra.enabled true), so the nodes "
                f"of pools {shown} never register {names.GPU} vGPUs",
                "set values.devicePlugin.enabled: true and leave dra off",
            )
        if not hami.node_selector:
            yield finding(
                hami.resource,
                f"values.devicePlugin.{hami.selector_key}",
                None,
                "without a node selector HAMi's device plugin runs on every node, also where the NVIDIA device plugin "
                f"registers {names.GPU}, and two plugins fight over it",
                f'select HAMi\'s nodes: {{{names.HAMI_NODE_LABEL[0]}: "{names.HAMI_NODE_LABEL[1]}"}}',
            )
    for pool in served:
        if hami is None:
            yield finding_about(
                pool.resource,
                f"shares GPUs with HAMi but the stack has no `{names.HAMI_CHART}` Helm release, "
                "so nothing registers vGPUs on its nodes",
                "deploy the HAMi chart (gpushare's Hami component)",
            )
        else:
            for key, value in hami.node_selector.items():
                if pool.labels.get(key) != value:
                    yield finding(
                        pool.resource,
                        f'spec.template.metadata.labels["{key}"]',
                        pool.labels.get(key),
                        f'HAMi chart {hami.version} runs its device plugin only on nodes labelled {key}: "{value}" '
                        f"(values.devicePlugin.{hami.selector_key}), so these nodes never register {names.GPU} vGPUs "
                        "and GPU pods stay Pending",
                        f'add {key}: "{value}" to the pool template labels',
                    )
            for index, taint in enumerate(pool.taints):
                if not tolerates(hami.tolerations, taint):
                    yield finding(
                        pool.resource,
                        f"spec.template.spec taint [{index}]",
                        _taint(taint),
                        f"the HAMi device plugin (Release {hami.resource.object_name} "
                        "values.devicePlugin.tolerations) does not tolerate it, so it never starts on these nodes",
                        f"add {{key: {taint.get('key')}, operator: Exists, effect: {taint.get('effect')}}} "
                        "to values.devicePlugin.tolerations",
                    )
        for mock in mocks:
            pod_spec = mock.get("spec", "template", "spec") or {}
            for key, current, required in selector_unmet(pod_spec, pool.labels):
                yield finding(
                    pool.resource,
                    key,
                    current,
                    f"{mock.label} requires {required}, so the mock plugin never registers "
                    f"{names.GPU_MEMORY} there and NodeClaims stay ResourceNotRegistered",
                    "label the pool template so the mock DaemonSet's node selection matches",
                )
            for index, taint in enumerate(pool.taints):
                if not tolerates(pod_spec.get("tolerations") or [], taint):
                    yield finding(
                        pool.resource,
                        f"spec.template.spec taint [{index}]",
                        _taint(taint),
                        f"{mock.label} does not tolerate it, so the mock plugin never starts on these nodes",
                        f"add a toleration for {taint.get('key')} to the DaemonSet's pod template",
                    )


RULE = Rule(
    name="hami-pool-labels-match-device-plugins",
    order=1,
    description="Every HAMi NodePool's template labels and taints let both the HAMi device plugin and the "
    "mock device plugin run on its nodes.",
    why="Without the selector label or a toleration the plugins never start: nodes register no vGPUs and "
    "GPU pods stay Pending while Karpenter keeps the nodes.",
    remediation=f'Add the HAMi node-selector label ({HAMI_LABEL}: "{HAMI_VALUE}"; key devicePlugin.nvidiaNodeSelector '
    "from chart 2.8.0, nvidianodeSelector before) to the pool template; tolerate every pool taint in "
    "devicePlugin.tolerations and in the mock DaemonSet.",
    enforcement="mandatory",
    severity="critical",
    check=check_labels,
)
