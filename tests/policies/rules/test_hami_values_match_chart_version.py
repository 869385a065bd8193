"""Changes that break `hami-values-match-chart-version`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from gpushare import pins
from tests.policies.rules.breaking import (
    caught,
    release,
    set_at,
    set_device_config,
)

RULE = "hami-values-match-chart-version"

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "selector key of 2.7": (
        "hami-values-match-chart-version",
        lambda r: set_at(release(r, "hami"), ["values", "devicePlugin", "nvidianodeSelector"], {"gpu": "on"}),
        ["Release hami: values.devicePlugin.nvidianodeSelector is", "rename it to devicePlugin.nvidiaNodeSelector"],
    ),
    "imageTag of 2.6": (
        "hami-values-match-chart-version",
        lambda r: set_at(release(r, "hami"), ["values", "scheduler", "kubeScheduler", "imageTag"], "v1.34.0"),
        ["values.scheduler.kubeScheduler.imageTag", "renamed in 2.7.0"],
    ),
    "scheduler minor mismatch": (
        "hami-values-match-chart-version",
        lambda r: set_at(release(r, "hami"), ["values", "scheduler", "kubeScheduler", "image", "tag"], "v1.33.2"),
        ['image.tag is "v1.33.2"', "Kubernetes 1.36", f"set it to {pins.kube_scheduler_tag('1.36')}"],
    ),
    "scheduler patch older than the pin": (
        "hami-values-match-chart-version",
        lambda r: set_at(release(r, "hami"), ["values", "scheduler", "kubeScheduler", "image", "tag"], "v1.36.0"),
        ['image.tag is "v1.36.0": an older 1.36 patch', f"set it to {pins.kube_scheduler_tag('1.36')}"],
    ),
    "scheduler tag without its v": (
        "hami-values-match-chart-version",
        lambda r: set_at(
            release(r, "hami"),
            ["values", "scheduler", "kubeScheduler", "image", "tag"],
            pins.kube_scheduler_tag("1.36").removeprefix("v"),
        ),
        ["vMAJOR.MINOR.PATCH tag of that minor"],
    ),
    "device config content on a chart that ignores it": (
        RULE,
        lambda r: set_at(release(r, "hami"), ["version"], "2.9.0"),
        ["Release hami: values.device-config.content is set, but chart 2.9.0 ignores it", "memoryFactor 1"],
    ),
    "device config content that is not YAML": (
        RULE,
        lambda r: set_at(release(r, "hami"), ["values", "device-config", "content"], "nvidia: ["),
        ["Release hami: values.device-config.content is not YAML"],
    ),
    "device config content without nvidia": (
        RULE,
        lambda r: set_at(release(r, "hami"), ["values", "device-config", "content"], "vnpus: {}"),
        ["holds no `nvidia:` mapping, so HAMi would manage no NVIDIA GPU"],
    ),
    "device config content without deviceSplitCount": (
        RULE,
        lambda r: set_device_config(r, "deviceSplitCount", None),
        ["values.device-config.content nvidia.deviceSplitCount not set", "HAMi's device plugin dereferences it"],
    ),
    "device config content without defaultGPUNum": (
        RULE,
        lambda r: set_device_config(r, "defaultGPUNum", None),
        ["nvidia.defaultGPUNum not set", "a container asking only gpumem or gpucores gets no vGPU"],
    ),
    "a profile value the content overrides": (
        RULE,
        lambda r: set_at(release(r, "hami"), ["values", "devicePlugin", "deviceSplitCount"], 5),
        ["values.devicePlugin.deviceSplitCount is 5", "with values.device-config.content set it is ignored"],
    ),
    "content naming another memory resource than the values": (
        RULE,
        lambda r: set_device_config(r, "resourceMemoryName", "nvidia.com/memory"),
        [
            'values.device-config.content nvidia.resourceMemoryName is "nvidia.com/memory"',
            "values.resourceMem is nvidia.com/gpumem",
        ],
    ),
    "unknown hami chart": (
        "hami-values-match-chart-version",
        lambda r: set_at(release(r, "hami"), ["version"], "2.6.1"),
        ['Release hami: version is "2.6.1"', "pin one of 2.7.0"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
