"""Rules 5, 6, 8 and 9: chart versions, feature gates, chart value keys and images agree with each other."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field, field_validator

from gpushare import compat, names
from gpushare.config import KarpenterConfig

from .hami import Hami
from .overlays import hami_pools
from .rule import Finding, Rule, RuleConfig, finding
from .stack import EC2_NODE_CLASS, NODE_OVERLAY, UNKNOWN, Resource, StackView, containers, sorted_by_name


def _version(text: object) -> tuple[int, int, int] | None:
    try:
        return compat.parse_version(str(text))
    except ValueError:
        return None


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def check_overlay_gate(view: StackView, _config: None) -> Iterator[Finding]:
    overlays = sorted(view.of_type(NODE_OVERLAY), key=lambda r: r.object_name)
    if not overlays:
        return
    karpenter = view.release(names.KARPENTER_CHART)
    if karpenter is None:
        yield Finding(
            overlays[0],
            f"{overlays[0].label}: the stack declares {len(overlays)} NodeOverlays but no `{names.KARPENTER_CHART}` "
            "Helm release to read them. Fix: deploy Karpenter 1.7.0 or newer with the NodeOverlay gate on.",
        )
        return
    version = _version(karpenter.get("version"))
    if version is None or version < compat.KARPENTER_MIN_OVERLAY_VERSION:
        yield finding(
            karpenter,
            "version",
            karpenter.get("version"),
            f"NodeOverlay exists from Karpenter {_dotted(compat.KARPENTER_MIN_OVERLAY_VERSION)}; older controllers "
            f"ignore the {len(overlays)} overlays and cannot see HAMi's resources",
            f"pin chart {_dotted(compat.KARPENTER_MIN_OVERLAY_VERSION)} or newer "
            f"(gpushare defaults to {KarpenterConfig().chart_version})",
        )
    gate = karpenter.get("values", "settings", "featureGates", "nodeOverlay")
    if gate is not True:
        yield finding(
            karpenter,
            "values.settings.featureGates.nodeOverlay",
            gate,
            f"with the gate off Karpenter silently ignores all {len(overlays)} NodeOverlays, cannot see HAMi's "
            "resources and answers 'no instance type has enough resources'",
            "set values.settings.featureGates.nodeOverlay: true",
        )


class KarpenterVersionConfig(RuleConfig):
    minimum_version: str = Field(
        default="1.13.0",
        alias="minimumVersion",
        description="Karpenter chart version below which overlays work but known fixes are missing.",
    )

    @field_validator("minimum_version")
    @classmethod
    def _parses(cls, value: str) -> str:
        compat.parse_version(value)
        return value


def check_karpenter_version(view: StackView, config: KarpenterVersionConfig) -> Iterator[Finding]:
    karpenter = view.release(names.KARPENTER_CHART)
    if karpenter is None or not view.of_type(NODE_OVERLAY):
        return
    version = _version(karpenter.get("version"))
    if version is not None and version < compat.parse_version(config.minimum_version):
        yield finding(
            karpenter,
            "version",
            karpenter.get("version"),
            f"below {config.minimum_version}: 1.9.0 fixed overlay capacity weight precedence and 1.13.0 stopped one "
            "broken NodePool from blocking all provisioning",
            f"upgrade the karpenter and karpenter-crd charts to {config.minimum_version} or newer",
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
        yield Finding(
            first,
            f"{first.label}: {len(advertising)} overlays advertise {names.GPU_MEMORY}/{names.GPU_CORES} but no "
            f"DaemonSet runs {compat.MOCK_IMAGE_REPOSITORY}: no node ever registers them, so NodeClaims stay "
            "ResourceNotRegistered and never scale down. Fix: deploy the mock device plugin (gpushare's "
            "MockDevicePlugin component).",
        )
        return
    hami = Hami.of(view)
    if hami is None:
        yield Finding(
            first,
            f"{first.label}: overlays advertise HAMi resources but the stack has no `{names.HAMI_CHART}` release whose "
            "device ConfigMap the mock plugin reads. Fix: deploy the HAMi chart.",
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
    clusters = view.eks_clusters()
    cluster_version = clusters[0].get("version") if clusters else None
    if not tag or tag is UNKNOWN or cluster_version in (None, UNKNOWN):
        return
    parsed = _version(tag)
    if parsed is None or f"{parsed[0]}.{parsed[1]}" != str(cluster_version):
        yield finding(
            hami.resource,
            "values.scheduler.kubeScheduler.image.tag",
            tag,
            f"the cluster runs Kubernetes {cluster_version} and HAMi's kube-scheduler must match its minor version",
            f"set it to v{cluster_version}.0 (or a later v{cluster_version} patch)",
        )


def check_al2023(view: StackView, _config: None) -> Iterator[Finding]:
    shared = hami_pools(view)
    classes = {pool.node_class for pool in shared}
    for pool in shared:
        if not view.objects(EC2_NODE_CLASS, str(pool.node_class)):
            yield finding(
                pool.resource,
                "spec.template.spec.nodeClassRef.name",
                pool.node_class,
                "no EC2NodeClass of that name in the stack, so its AMI cannot be checked",
                "declare the EC2NodeClass in the same stack",
            )
    for node_class in sorted_by_name(r for name in classes for r in view.objects(EC2_NODE_CLASS, str(name))):
        terms = node_class.get("spec", "amiSelectorTerms") or []
        aliases = [(i, str(t["alias"])) for i, t in enumerate(terms) if isinstance(t, dict) and t.get("alias")]
        for index, alias in aliases:
            if not alias.lower().startswith("al2023@"):
                yield finding(
                    node_class,
                    f"spec.amiSelectorTerms[{index}].alias",
                    alias,
                    "HAMi pools need AL2023 NVIDIA images; Bottlerocket's NVIDIA variant runs its own NVIDIA device "
                    "plugin, which would register nvidia.com/gpu next to HAMi's on the same node",
                    "use alias al2023@<version> (Karpenter picks the NVIDIA variant for GPU types)",
                )
        family = node_class.get("spec", "amiFamily")
        if not aliases and family != "AL2023":
            yield finding(
                node_class,
                "spec.amiFamily",
                family,
                "AMIs chosen by id, name or tags must be AL2023 NVIDIA images on HAMi pools",
                "use amiSelectorTerms [{alias: al2023@<version>}] or amiFamily AL2023 with its NVIDIA AMIs",
            )


RULES = (
    Rule(
        name="karpenter-node-overlay-enabled",
        description="When the stack declares NodeOverlays, Karpenter is 1.7.0 or newer with "
        "settings.featureGates.nodeOverlay on.",
        why="With the gate off (the default) or an older controller, overlays are ignored silently and Karpenter "
        "cannot see HAMi's resources.",
        remediation="Pin the karpenter chart to 1.7.0 or newer and set settings.featureGates.nodeOverlay: true.",
        enforcement="mandatory",
        severity="critical",
        check=check_overlay_gate,
    ),
    Rule(
        name="karpenter-version-recommended",
        description="Karpenter is at least the recommended version for NodeOverlay (1.13.0 by default).",
        why="1.9.0 fixed overlay weight precedence for capacity; 1.13.0 stopped one broken NodePool from "
        "blocking all provisioning.",
        remediation="Upgrade the karpenter and karpenter-crd charts together.",
        enforcement="advisory",
        severity="low",
        check=check_karpenter_version,
        config=KarpenterVersionConfig,
    ),
    Rule(
        name="mock-device-plugin-matches-hami",
        description="Overlays advertising gpumem/gpucores come with a mock device plugin DaemonSet that mounts the "
        "HAMi release's device ConfigMap and whose image can parse that HAMi version's config.",
        why="Without the mock plugin no node registers gpumem/gpucores: NodeClaims stay ResourceNotRegistered "
        "and never scale down.",
        remediation="Deploy the mock plugin in the HAMi namespace, mount the RELEASE-scheduler-device ConfigMap, "
        "and pair mock 1.0.1 with HAMi chart 2.7.x-2.8.x.",
        enforcement="mandatory",
        severity="critical",
        check=check_mock_plugin,
    ),
    Rule(
        name="hami-values-match-chart-version",
        description="HAMi values use the key names of the pinned chart version, and a set kube-scheduler tag "
        "matches the cluster's minor version.",
        why="A key of another chart version (nvidianodeSelector, kubeScheduler.imageTag) is ignored without a "
        "word; a kube-scheduler of another minor fails against the API server.",
        remediation="Use devicePlugin.nvidiaNodeSelector from 2.8.0 (nvidianodeSelector before) and "
        "scheduler.kubeScheduler.image.tag vMAJOR.MINOR.PATCH of the cluster minor.",
        enforcement="mandatory",
        severity="high",
        check=check_hami_values,
    ),
    Rule(
        name="hami-pools-use-al2023",
        description="The EC2NodeClass of every HAMi pool selects AL2023 (NVIDIA) images, not Bottlerocket.",
        why="Bottlerocket NVIDIA ships its own NVIDIA device plugin; two device plugins on one node fight over "
        "nvidia.com/gpu.",
        remediation="Use amiSelectorTerms [{alias: al2023@VERSION}] on the node class of HAMi pools.",
        enforcement="mandatory",
        severity="high",
        check=check_al2023,
    ),
)
