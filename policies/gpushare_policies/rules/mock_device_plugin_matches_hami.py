"""Overlays advertising HAMi's resources come with a mock device plugin that reads the HAMi release's config."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import compat, names

from ..hami import Hami
from ..rule import Finding, Rule, finding, finding_about
from ..stack import MOCK_BINARY, MOCK_CONFIG_FLAG, NODE_OVERLAY, Resource, StackView, containers


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
            "device ConfigMap the mock plugin reads",
            "deploy the HAMi chart",
        )
        return
    if (hami.values.get("dra") or {}).get("enabled") is True:
        yield finding(
            hami.resource,
            "values.dra.enabled",
            True,
            "with DRA on the chart creates no device ConfigMap for the mock plugin to read",
            "set values.dra.enabled: false",
        )
    for mock in mocks:
        yield from _check_mock(mock, hami)


def _check_mock(mock: Resource, hami: Hami) -> Iterator[Finding]:
    namespace = mock.get("metadata", "namespace") or "default"
    if namespace != hami.namespace:
        yield finding(
            mock,
            "metadata.namespace",
            namespace,
            f"the HAMi release creates its device ConfigMap in {hami.namespace} and a pod can only mount "
            "ConfigMaps of its own namespace",
            f"deploy the DaemonSet in {hami.namespace}",
        )
    pod_spec = mock.get("spec", "template", "spec") or {}
    volumes = {
        v.get("name")
        for v in pod_spec.get("volumes") or []
        if (v.get("configMap") or {}).get("name") == hami.device_configmap
    }
    mounted = any(m.get("name") in volumes for c in containers(mock) for m in c.get("volumeMounts") or [])
    if not mounted:
        config_maps = [str(v["configMap"].get("name")) for v in pod_spec.get("volumes") or [] if v.get("configMap")]
        yield finding(
            mock,
            "spec.template.spec.volumes[].configMap.name",
            ", ".join(sorted(config_maps)) or None,
            f"the mock plugin must read Release {hami.resource.object_name}'s device config "
            f"(ConfigMap {hami.device_configmap}) to register what HAMi's scheduler expects",
            f"mount ConfigMap {hami.device_configmap} key {names.HAMI_DEVICE_CONFIG_KEY} into the container",
        )
    for container in containers(mock):
        image = str(container.get("image"))
        tag = compat.mock_image_tag(image)
        compatible = compat.MOCK_COMPATIBLE_HAMI.get(tag)
        if compatible is None:
            known = ", ".join(f"{compat.MOCK_IMAGE_REPOSITORY}:{t}" for t in compat.MOCK_COMPATIBLE_HAMI)
            yield finding(
                mock,
                "spec.template.spec.containers[].image",
                image,
                "gpushare knows no HAMi compatibility for this tag",
                f"use {known}",
            )
        elif hami.version not in compatible:
            yield finding(
                mock,
                "spec.template.spec.containers[].image",
                image,
                f"mock {tag} cannot parse the device config HAMi chart {hami.version} writes "
                "(2.9.0 made vnpus an object; mock PR #18)",
                f"pin HAMi chart {compatible[0]} to {compatible[-1]}",
            )


RULE = Rule(
    name="mock-device-plugin-matches-hami",
    order=8,
    description="Overlays advertising gpumem/gpucores come with a mock device plugin DaemonSet that mounts the "
    "HAMi release's device ConfigMap and whose image can parse that HAMi version's config.",
    why="Without the mock plugin no node registers gpumem/gpucores: NodeClaims stay ResourceNotRegistered "
    "and never scale down.",
    remediation="Deploy the mock plugin in the HAMi namespace, mount the RELEASE-scheduler-device ConfigMap, "
    "and pair mock 1.0.1 with HAMi chart 2.7.x-2.8.x.",
    enforcement="mandatory",
    severity="critical",
    check=check_mock_plugin,
)
