"""Overlays advertising HAMi's resources come with a mock device plugin that reads a device config it can parse,
naming HAMi's resources and memoryFactor as the HAMi release's own device config does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from gpushare import compat, names
from gpushare.files import SAFE_LOADER

from ..hami import Hami
from ..rule import Finding, Rule, finding, finding_about
from ..stack import CONFIG_MAP, MOCK_BINARY, MOCK_CONFIG_FLAG, NODE_OVERLAY, Resource, StackView, containers

OWN_CONFIG_FIX = (
    f"mount ConfigMap {names.MOCK_DEVICE_CONFIG} (key {names.HAMI_DEVICE_CONFIG_KEY}), which gpushare renders beside "
    "the mock from the HAMi values with only the `nvidia:` keys it reads"
)


def check_mock_plugin(view: StackView, _config: None) -> Iterator[Finding]:
    advertising = sorted(
        (
            o
            for o in view.of_type(NODE_OVERLAY)
            if {names.GPU_MEMORY, names.GPU_CORES} & set(o.get("spec", "capacity") or {})
        ),
        key=lambda r: r.object_name,
    )
    if not advertising:
        return
    first = advertising[0]
    mocks = view.mock_daemonsets()
    if not mocks:
        yield finding_about(
            first,
            f"{len(advertising)} overlays advertise {names.GPU_MEMORY}/{names.GPU_CORES} but no DaemonSet is the "
            f"mock device plugin (its image {compat.MOCK_IMAGE_REPOSITORY} or a copy running {MOCK_BINARY} "
            f"{MOCK_CONFIG_FLAG}): no node ever registers them, so NodeClaims stay ResourceNotRegistered and never "
            "scale down",
            "deploy the mock device plugin (gpushare's MockDevicePlugin component)",
        )
        return
    hami = Hami.of(view)
    if hami is None:
        yield finding_about(
            first,
            f"overlays advertise HAMi resources but the stack has no `{names.HAMI_CHART}` release whose "
            "resource names and memoryFactor the mock plugin must follow",
            "deploy the HAMi chart",
        )
        return
    for mock in mocks:
        yield from _check_image(mock, hami)
        yield from _check_config(view, mock, hami)


def _check_image(mock: Resource, hami: Hami) -> Iterator[Finding]:
    for container in containers(mock):
        image = str(container.get("image"))
        tag = compat.mock_image_tag(image)
        decodes = compat.MOCK_READS_HAMI_NODES.get(tag)
        if decodes is None:
            known = ", ".join(f"{compat.MOCK_IMAGE_REPOSITORY}:{t}" for t in compat.MOCK_READS_HAMI_NODES)
            yield finding(
                mock,
                "spec.template.spec.containers[].image",
                image,
                "gpushare knows no HAMi compatibility for this tag",
                f"use {known}",
            )
        elif hami.version not in decodes:
            yield finding(
                mock,
                "spec.template.spec.containers[].image",
                image,
                f"mock {tag} cannot decode the node annotations HAMi chart {hami.version} writes",
                f"pin HAMi chart {decodes[0]} to {decodes[-1]}",
            )


def _mounted_config_maps(mock: Resource) -> list[str]:
    """Names of the ConfigMaps whose volumes a container of the mock mounts."""
    pod_spec = mock.get("spec", "template", "spec") or {}
    by_volume = {
        v.get("name"): str(v["configMap"].get("name"))
        for v in pod_spec.get("volumes") or []
        if isinstance(v, dict) and isinstance(v.get("configMap"), dict)
    }
    mounted = {m.get("name") for c in containers(mock) for m in c.get("volumeMounts") or [] if isinstance(m, dict)}
    return sorted({name for volume, name in by_volume.items() if volume in mounted})


def _check_config(view: StackView, mock: Resource, hami: Hami) -> Iterator[Finding]:
    namespace = str(mock.get("metadata", "namespace") or "default")
    key = "spec.template.spec.volumes[].configMap.name"
    mounted = _mounted_config_maps(mock)
    if not mounted:
        yield finding(mock, key, None, "the mock plugin reads no device config and exits", OWN_CONFIG_FIX)
    for name in mounted:
        own = [c for c in view.objects(CONFIG_MAP, name) if (c.get("metadata", "namespace") or "default") == namespace]
        if own:
            yield from _check_own_config(own[0], hami)
        elif name == hami.device_configmap:
            yield from _check_hami_config(mock, namespace, hami)
        else:
            yield finding(
                mock,
                key,
                name,
                f"no ConfigMap of that name is in the stack (namespace {namespace}) nor is it Release "
                f"{hami.resource.object_name}'s device ConfigMap {hami.device_configmap}: the mock's pods never start",
                OWN_CONFIG_FIX,
            )


def _check_hami_config(mock: Resource, namespace: str, hami: Hami) -> Iterator[Finding]:
    """The mock mounts the HAMi release's own device ConfigMap: only a release of the mock's namespace whose config
    the mock parses will do (HAMi 2.7-2.8 with mock 1.0.1)."""
    key = "spec.template.spec.volumes[].configMap.name"
    if namespace != hami.namespace:
        yield finding(
            mock,
            "metadata.namespace",
            namespace,
            f"the HAMi release creates ConfigMap {hami.device_configmap} in {hami.namespace} and a pod can only mount "
            "ConfigMaps of its own namespace",
            f"deploy the DaemonSet in {hami.namespace}, or {OWN_CONFIG_FIX}",
        )
    if hami.dra_enabled:
        yield finding(
            hami.resource,
            "values.dra.enabled",
            True,
            f"with DRA on chart {hami.version} creates no device ConfigMap for the mock plugin to read",
            "set values.dra.enabled: false",
        )
    for container in containers(mock):
        tag = compat.mock_image_tag(str(container.get("image")))
        parses = compat.MOCK_PARSES_HAMI_CONFIG.get(tag, ())
        if tag in compat.MOCK_READS_HAMI_NODES and hami.version not in parses:
            yield finding(
                mock,
                key,
                hami.device_configmap,
                f"that is HAMi chart {hami.version}'s own device config, whose `vnpus:` is an object (since 2.9.0); "
                f"mock {tag} parses a list and exits, so no node registers {names.GPU_MEMORY} (mock PR #18, "
                "unreleased)",
                OWN_CONFIG_FIX,
            )


def _check_own_config(config_map: Resource, hami: Hami) -> Iterator[Finding]:
    """A ConfigMap of the stack's own: one the mock parses, naming HAMi's resources and memoryFactor as HAMi does."""
    text = config_map.get("data", names.HAMI_DEVICE_CONFIG_KEY)
    key = f'data["{names.HAMI_DEVICE_CONFIG_KEY}"]'
    if not isinstance(text, str):
        yield finding(
            config_map,
            key,
            None,
            f"the mock reads its device config from key {names.HAMI_DEVICE_CONFIG_KEY} and finds none",
            f"put the device config under {names.HAMI_DEVICE_CONFIG_KEY}",
        )
        return
    try:
        document: Any = yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as error:
        yield finding(config_map, key, text, f"not YAML ({str(error).splitlines()[0]})", "write the device config")
        return
    if not isinstance(document, dict) or not isinstance(document.get("nvidia"), dict):
        yield finding(config_map, key, text, "holds no `nvidia:` mapping", "write the device config")
        return
    if "vnpus" in document and not isinstance(document["vnpus"], list):
        yield finding(
            config_map,
            f"{key} vnpus",
            "an object",
            "mock 1.0.1 parses `vnpus` as a list and exits on HAMi >= 2.9's object",
            "keep only the `nvidia:` section",
        )
    if not hami.known_version or isinstance(hami.device_config, str):
        return  # hami-values-match-chart-version says why HAMi's own config cannot be read
    expected = compat.mock_device_config(hami.version, hami.values)["nvidia"]
    found = document["nvidia"]
    for name, want in expected.items():
        got = compat.effective_memory_factor(found.get(name)) if name == "memoryFactor" else found.get(name)
        if got != want:
            yield finding(
                config_map,
                f"{key} nvidia.{name}",
                found.get(name),
                f"Release {hami.resource.object_name}'s device config says {want}: the mock would register "
                + ("GPU memory in other units than HAMi schedules" if name == "memoryFactor" else "a resource HAMi")
                + (" and quotas count" if name == "memoryFactor" else " does not schedule, or under another name"),
                f"set it to {want} (gpushare renders this ConfigMap from the HAMi values)",
            )


RULE = Rule(
    name="mock-device-plugin-matches-hami",
    order=8,
    description="Overlays advertising gpumem/gpucores come with a mock device plugin DaemonSet whose image decodes "
    "the HAMi version's node annotations and which mounts a device config it can parse, naming HAMi's resources and "
    "memoryFactor as the HAMi release's device config does.",
    why="Without the mock plugin, or with one that exits on its config, no node registers gpumem/gpucores: "
    "NodeClaims stay ResourceNotRegistered and never scale down; one with other names or another memoryFactor "
    "registers what HAMi does not schedule.",
    remediation=f"Deploy the mock plugin with the ConfigMap {names.MOCK_DEVICE_CONFIG} gpushare renders from the HAMi "
    "values (mock 1.0.1 cannot parse HAMi >= 2.9's own device ConfigMap).",
    enforcement="mandatory",
    severity="critical",
    check=check_mock_plugin,
)
