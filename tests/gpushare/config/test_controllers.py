"""gpushare/config/controllers.py: bad gpushare:karpenter and hami values, each refused on one line naming the key."""

from __future__ import annotations

import pytest

from tests.gpushare.mutations import OWN_REGISTRY, assert_one_line_names_the_key, set_key

BAD_CONTROLLERS = [
    (
        "old karpenter",
        set_key("gpushare:karpenter.chartVersion", "1.6.2"),
        "gpushare:karpenter.chartVersion: 1.6.2 has no NodeOverlay; allowed: 1.7.0 or newer",
    ),
    (
        "hami held back below 2.10",
        set_key("gpushare:hami.chartVersion", "2.8.3"),
        "gpushare:hami.chartVersion: '2.8.3' is older than 2.10.0: HAMi before 2.10 leaks team quota charges on every "
        "re-filter, cannot set memoryFactor and exports metric names the alerts and HAMi-WebUI do not read; allowed: "
        "2.10.0",
    ),
    (
        "unknown hami chart",
        set_key("gpushare:hami.chartVersion", "3.0.0"),
        "gpushare:hami.chartVersion: '3.0.0' is not a HAMi chart this stack knows",
    ),
    (
        "memoryFactor of 0",
        set_key("gpushare:hami.profile.memoryFactor", 0),
        "gpushare:hami.profile.memoryFactor: 0 is too small; allowed: at least 1",
    ),
    (
        "memoryFactor above a GiB",
        set_key("gpushare:hami.profile.memoryFactor", 2048),
        "gpushare:hami.profile.memoryFactor: 2048 is too large; allowed: at most 1024",
    ),
    (
        "untagged mock image",
        set_key("gpushare:hami.mockDevicePluginImage", "projecthami/mock-device-plugin"),
        "gpushare:hami.mockDevicePluginImage: 'projecthami/mock-device-plugin' has no known HAMi compatibility",
    ),
    (
        "bad scheduler policy",
        set_key("gpushare:hami.schedulerPolicy.node", "random"),
        "gpushare:hami.schedulerPolicy.node: 'random' is not one of the choices; allowed: binpack, spread",
    ),
    (
        "ami alias not pinned form",
        set_key("gpushare:karpenter.amiVersion", "2026.09"),
        "gpushare:karpenter.amiVersion: '2026.09' is not latest or an EKS AMI release like v20260903",
    ),
    (
        "mock image from a personal namespace",
        set_key("gpushare:hami.mockDevicePluginImage", "docker.io/someone/mock-device-plugin:1.0.1"),
        "gpushare:hami.mockDevicePluginImage: docker.io/someone/mock-device-plugin is not where its project "
        "publishes it (a personal namespace, a fork or a third-party copy); allowed: "
        "docker.io/projecthami/mock-device-plugin",
    ),
    (
        "mock image copied to a path of the user's own, registry not declared trusted",
        set_key("gpushare:hami.mockDevicePluginImage", f"{OWN_REGISTRY}/gpu/mock-device-plugin:1.0.1"),
        f"gpushare:hami.mockDevicePluginImage: {OWN_REGISTRY}/gpu/mock-device-plugin is not where its project "
        "publishes it (a path that mirrors none of its upstream homes, in no registry declared trusted)",
    ),
    (
        "v-prefixed Karpenter chart",
        set_key("gpushare:karpenter.chartVersion", "v1.15.1"),
        "gpushare:karpenter.chartVersion: 'v1.15.1': Karpenter's OCI charts are tagged without a leading v; "
        "write 1.15.1",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_CONTROLLERS], ids=[c[0] for c in BAD_CONTROLLERS])
def test_bad_controllers_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)
