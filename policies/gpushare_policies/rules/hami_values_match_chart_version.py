"""HAMi values use the key names of the pinned chart version; a device config content holds what HAMi needs; the
kube-scheduler matches the cluster's minor."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import compat, pins

from ..hami import Hami
from ..rule import Finding, Rule, finding, finding_about
from ..stack import UNKNOWN, StackView, version_of

CONTENT = "values.device-config.content"
# The devicePlugin keys chart 2.10.0's template writes into the device config, which a content replaces.
PROFILE_KEYS = ("deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling")


def check_hami_values(view: StackView, _config: None) -> Iterator[Finding]:
    hami = Hami.of(view)
    if hami is None:
        return
    if not hami.known_version:
        yield finding(
            hami.resource,
            "version",
            hami.version,
            "not a HAMi chart whose value keys gpushare knows",
            f"pin one of {', '.join(compat.HAMI_CHART_VERSIONS)}",
        )
        return
    wrong = compat.hami_wrong_node_selector_key(hami.version)
    if wrong in hami.device_plugin:
        yield finding(
            hami.resource,
            f"values.devicePlugin.{wrong}",
            hami.device_plugin[wrong],
            f"chart {hami.version} reads devicePlugin.{hami.selector_key} and silently ignores this key",
            f"rename it to devicePlugin.{hami.selector_key}",
        )
    yield from _check_device_config(hami)
    kube_scheduler = (hami.values.get("scheduler") or {}).get("kubeScheduler") or {}
    if "imageTag" in kube_scheduler:
        yield finding(
            hami.resource,
            "values.scheduler.kubeScheduler.imageTag",
            kube_scheduler["imageTag"],
            f"chart {hami.version} reads scheduler.kubeScheduler.image.tag (renamed in 2.7.0) and ignores this key",
            "move the tag to scheduler.kubeScheduler.image.tag",
        )
    tag = (kube_scheduler.get("image") or {}).get("tag")
    held = view.kubernetes_version()
    cluster_version = held[0] if held is not None else None
    if not tag or tag is UNKNOWN or cluster_version in (None, UNKNOWN):
        return
    minor = str(cluster_version)
    pinned = pins.kube_scheduler_tag(minor) if minor in pins.kubernetes_minors() else None
    fix = f"set it to {pinned}, the patch gpushare pins for {minor}" if pinned else f"set it to a v{minor} patch"
    parsed = version_of(tag)
    if parsed is None or f"{parsed[0]}.{parsed[1]}" != minor or not str(tag).startswith("v"):
        yield finding(
            hami.resource,
            "values.scheduler.kubeScheduler.image.tag",
            tag,
            f"the cluster runs Kubernetes {minor} and HAMi's kube-scheduler must be a vMAJOR.MINOR.PATCH tag of that "
            "minor",
            fix,
        )
    elif pinned is not None and parsed < compat.parse_version(pinned):
        yield finding(
            hami.resource,
            "values.scheduler.kubeScheduler.image.tag",
            tag,
            f"an older {minor} patch than the {pinned} gpushare pins: HAMi's kube-scheduler misses the fixes since",
            fix,
        )


def _check_device_config(hami: Hami) -> Iterator[Finding]:
    """`device-config.content` replaces the chart's whole device config (templates/scheduler/device-configmap.yaml
    2.10.0): it must hold every key HAMi cannot do without, and it leaves the devicePlugin profile values unread."""
    section = hami.values.get("device-config")
    given = section.get("content") if isinstance(section, dict) else None
    if not compat.hami_config_content(hami.version, hami.values):
        if given:
            yield finding_about(
                hami.resource,
                f"{CONTENT} is set, but chart {hami.version} ignores it (read from 2.10.0): HAMi keeps the "
                "template's device config, memoryFactor 1",
                "pin HAMi chart 2.10.0 or newer",
            )
        return
    nvidia = hami.device_config
    if isinstance(nvidia, str):
        yield finding_about(hami.resource, nvidia, "write HAMi's whole device config there")
        return
    for key, why in compat.HAMI_CONTENT_REQUIRED.items():
        if nvidia.get(key) is None:
            yield finding(
                hami.resource,
                f"{CONTENT} nvidia.{key}",
                None,
                f"the content replaces the chart's whole device config, so without it {why}",
                "set it (gpushare renders every key the chart's template writes)",
            )
    for key in PROFILE_KEYS:
        if key in hami.device_plugin:
            yield finding(
                hami.resource,
                f"values.devicePlugin.{key}",
                hami.device_plugin[key],
                f"chart {hami.version} writes it only into the device config it builds itself; with {CONTENT} set "
                "it is ignored",
                f"set nvidia.{key} in {CONTENT} and drop this key",
            )
    for config_key, (values_key, default) in compat.HAMI_CONFIG_FROM_VALUES.items():
        named = nvidia.get(config_key)
        if "." in values_key or named is None:
            continue
        want = hami.values.get(values_key) or default
        if named != want:
            yield finding(
                hami.resource,
                f"{CONTENT} nvidia.{config_key}",
                named,
                f"values.{values_key} is {want}, which the chart gives kube-scheduler as HAMi's managed resource: "
                "the two would name different resources",
                "name the resource the same in both",
            )


RULE = Rule(
    name="hami-values-match-chart-version",
    order=9,
    description="HAMi values use the key names of the pinned chart version; a device-config.content (2.10.0+) holds "
    "every key HAMi needs, names the resources the values name, and leaves no devicePlugin profile key unread; a set "
    "kube-scheduler tag is a vMAJOR.MINOR.PATCH of the cluster's minor, not older than the patch gpushare pins for it.",
    why="A key of another chart version (nvidianodeSelector, kubeScheduler.imageTag, device-config.content before "
    "2.10) or a profile key the content overrides is ignored without a word; a content without deviceSplitCount "
    "crashes HAMi's device plugin; a kube-scheduler of another minor fails against the API server, and an old patch "
    "lacks its fixes.",
    remediation="Use devicePlugin.nvidiaNodeSelector from 2.8.0 (nvidianodeSelector before), the device config "
    "gpushare renders into device-config.content, and scheduler.kubeScheduler.image.tag at the cluster minor's patch "
    "pinned in gpushare/pins.yaml.",
    enforcement="mandatory",
    severity="high",
    check=check_hami_values,
)
