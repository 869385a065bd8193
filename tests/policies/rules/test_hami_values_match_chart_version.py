"""Changes that break `hami-values-match-chart-version`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from gpushare import pins
from tests.policies.rules.breaking import (
    caught,
    release,
    set_at,
)

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
    "unknown hami chart": (
        "hami-values-match-chart-version",
        lambda r: set_at(release(r, "hami"), ["version"], "2.6.1"),
        ['Release hami: version is "2.6.1"', "pin one of 2.7.0"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
