"""The schema of gpushare:karpenter, gpushare:hami and gpushare:nvidiaDevicePlugin: the controllers the stack
installs."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator, model_validator

from gpushare import compat, images, karpenter_api, names, pins, versions
from gpushare.config.base import ConfigModel, SchedulerPolicy, trusted_from_context
from gpushare.errors import raise_at
from gpushare.hami import SharingProfile


def karpenter_release(value: str) -> str:
    """A Karpenter release that has NodeOverlay, written as its charts are tagged."""
    problem = karpenter_api.chart_tag_problem(value)
    if problem is not None:
        raise ValueError(f"{value!r}: {problem}")
    if compat.parse_version(value) < compat.KARPENTER_MIN_OVERLAY_VERSION:
        raise ValueError(f"{value} has no NodeOverlay; allowed: {versions.feature('node-overlay').minimum} or newer")
    return value


class KarpenterConfig(ConfigModel):
    """Karpenter, which launches the GPU nodes."""

    chart_version: str = Field(
        default=pins.chart_version(names.KARPENTER_CHART),
        alias="chartVersion",
        description=f"Karpenter and karpenter-crd chart version; {versions.feature('node-overlay').minimum} or newer "
        "(NodeOverlay), and at least what the cluster's Kubernetes minor needs (docs/configuration.md)",
    )
    ami_version: str = Field(
        default="latest",
        alias="amiVersion",
        pattern=r"^(latest|v[0-9]{8})$",
        description="AL2023 AMI alias version, e.g. v20260903; latest drifts GPU nodes on every AMI release: pin it",
    )

    _overlay_capable = field_validator("chart_version")(karpenter_release)

    @property
    def ami_alias(self) -> str:
        return f"al2023@{self.ami_version}"


class SchedulerPolicyConfig(ConfigModel):
    """HAMi's scheduling policy: which node, then which GPU on it."""

    node: SchedulerPolicy = Field(default="binpack", description="How HAMi picks a node")
    gpu: SchedulerPolicy = Field(default="spread", description="How HAMi picks a GPU on the node")


class HamiConfig(ConfigModel):
    """HAMi, which slices the GPUs of shared pools, and its mock device plugin."""

    chart_version: str = Field(
        default=pins.chart_version(names.HAMI_CHART),
        alias="chartVersion",
        description="HAMi chart, 2.10.0 or newer: older ones leak team quota charges, cannot set memoryFactor and "
        "export the metric names the alerts and HAMi-WebUI no longer read",
    )
    mock_device_plugin_image: str = Field(
        default=pins.image(compat.MOCK_IMAGE_REPOSITORY),
        alias="mockDevicePluginImage",
        description="Mock device plugin image; it reads a device config the stack renders from the HAMi values and "
        "must decode the node annotations of chartVersion",
    )
    profile: SharingProfile = Field(default=SharingProfile(), description="How each GPU is sliced")
    scheduler_policy: SchedulerPolicyConfig = Field(
        default=SchedulerPolicyConfig(), alias="schedulerPolicy", description="HAMi's default scheduling policy"
    )

    @field_validator("chart_version")
    @classmethod
    def _supported_chart(cls, value: str) -> str:
        supported = [v for v in compat.HAMI_CHART_VERSIONS if compat.hami_at_least(v, compat.HAMI_MIN_VERSION)]
        if value not in supported:
            why = (
                "is not a HAMi chart this stack knows"
                if value not in compat.HAMI_CHART_VERSIONS
                else "is older than 2.10.0: HAMi before 2.10 leaks team quota charges on every re-filter, cannot set "
                "memoryFactor and exports metric names the alerts and HAMi-WebUI do not read"
            )
            raise ValueError(f"{value!r} {why}; allowed: {', '.join(supported)}")
        return value

    @field_validator("mock_device_plugin_image")
    @classmethod
    def _known_mock(cls, value: str, info: ValidationInfo) -> str:
        problem = images.provenance_problem(value, trusted_from_context(info))
        if problem is not None:
            raise ValueError(problem)
        tag = compat.mock_image_tag(value)
        if tag not in compat.MOCK_READS_HAMI_NODES:
            allowed = ", ".join(f"{compat.MOCK_IMAGE_REPOSITORY}:{t}" for t in compat.MOCK_READS_HAMI_NODES)
            raise ValueError(f"{value!r} has no known HAMi compatibility; allowed: {allowed}")
        return value

    @model_validator(mode="after")
    def _compatible(self) -> HamiConfig:
        tag = compat.mock_image_tag(self.mock_device_plugin_image)
        if self.chart_version not in compat.MOCK_READS_HAMI_NODES[tag]:
            raise_at(
                [
                    (
                        ("chartVersion",),
                        f"{self.chart_version} writes node annotations mock {tag} cannot decode; allowed with mock "
                        f"{tag}: {', '.join(compat.MOCK_READS_HAMI_NODES[tag])}",
                    )
                ]
            )
        return self


class NvidiaDevicePluginConfig(ConfigModel):
    """The official NVIDIA device plugin, used only on exclusive (whole-GPU) pools."""

    chart_version: str = Field(
        default=pins.chart_version(names.NVIDIA_PLUGIN_CHART),
        alias="chartVersion",
        pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$",
        description="NVIDIA device plugin chart for exclusive pools",
    )
