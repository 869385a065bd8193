"""gpushare/checks/ineffective.py: keys without effect are warned about, one line each; keys with one are not."""

from __future__ import annotations

import pytest

from gpushare.checks.ineffective import ineffective_keys
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, raw_stack


def _warnings(change) -> list[str]:
    raw = raw_stack("dev")
    change(raw)
    return ineffective_keys(load_stack_config(raw, today=PLAN_DATE))


def test_the_shipped_stacks_set_no_key_without_effect(dev, prod):
    assert ineffective_keys(dev) == [] and ineffective_keys(prod) == []


def _exclusive_only(raw):
    raw["gpushare:pools"] = [
        {"name": "training", "instanceTypes": ["g6e.12xlarge"], "maxGpus": 8, "sharing": "exclusive"}
    ]
    raw["gpushare:teams"] = [{"name": "ml-research", "pools": ["training"], "quota": {"gpus": 8}}]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda raw: raw.update({"gpushare:monitoring": {"retention": "30d", "alerts": {"podPendingMinutes": 5}}}),
            [
                "gpushare:monitoring.retention: has no effect while gpushare:monitoring.enabled is false",
                "gpushare:monitoring.alerts: has no effect while gpushare:monitoring.enabled is false",
            ],
        ),
        (
            _exclusive_only,
            [
                "gpushare:hami.profile: has no effect: no pool has sharing hami",
                "gpushare:hami.schedulerPolicy: has no effect: no pool has sharing hami",
            ],
        ),
        (
            lambda raw: (
                raw.update({"gpushare:nvidiaDevicePlugin": {"chartVersion": "0.20.1"}}),
                raw["gpushare:pools"].pop(2),
                raw["gpushare:teams"][0]["pools"].remove("g6-timeslice"),
                raw["gpushare:teams"][0]["quota"].pop("sharedGpus"),
            ),
            ["gpushare:nvidiaDevicePlugin: has no effect: every pool has sharing hami"],
        ),
        (
            lambda raw: raw.update({"gpushare:registryMirrors": {"quay.io": "mirror.example.com/quay"}}),
            ["gpushare:registryMirrors.quay.io: has no effect: no image this stack deploys comes from quay.io"],
        ),
        (
            lambda raw: raw["gpushare:pools"][0].update(
                {"disruption": {"budgets": [{"nodes": "0", "reasons": ["Underutilized"]}]}}
            ),
            [
                "gpushare:pools[0].disruption.budgets[0].reasons: ['Underutilized'] has no effect: a pool with "
                "consolidationPolicy WhenEmpty and consolidateAfter 10m never disrupts a node for those reasons"
            ],
        ),
        (
            lambda raw: raw["gpushare:pools"][0].update(
                {"disruption": {"consolidateAfter": "Never", "budgets": [{"nodes": "0", "reasons": ["Empty"]}]}}
            ),
            ["gpushare:pools[0].disruption.budgets[0].reasons: ['Empty'] has no effect"],
        ),
        (
            lambda raw: (
                raw["gpushare:pools"][0].update({"capacityTypes": ["spot"]}),
                raw["gpushare:teams"].append(
                    {
                        "name": "batch",
                        "pools": ["g5-shared"],
                        "priority": "batch",
                        "spotOnly": True,
                        "quota": {"gpus": 10, "gpuMemoryMib": 23028, "gpuCores": 100},
                    }
                ),
            ),
            ["gpushare:teams[2].spotOnly: has no effect: every pool of the team (g5-shared) offers spot capacity only"],
        ),
    ],
    ids=[
        "monitoring tuning while off",
        "HAMi tuning without HAMi pools",
        "NVIDIA plugin without its pools",
        "mirror of a registry nothing pulls from",
        "budget for a reason WhenEmpty never has",
        "budget for consolidation that Never turns off",
        "spot-only on spot-only pools",
    ],
)
def test_harmless_keys_without_effect_are_warned_about(change, expected):
    found = _warnings(change)
    assert len(found) == len(expected), found
    assert all(line.startswith(start) for line, start in zip(found, expected, strict=True)), found


@pytest.mark.parametrize(
    "change",
    [
        lambda raw: raw["gpushare:pools"][1]["disruption"]["budgets"].append(
            {"nodes": "1", "reasons": ["Underutilized"]}
        ),
        lambda raw: raw["gpushare:pools"][0].update(
            {"disruption": {"budgets": [{"nodes": "0", "reasons": ["Drifted"]}]}}
        ),
        lambda raw: raw.update({"gpushare:registryMirrors": {"nvcr.io": "mirror.example.com/nvcr"}}),
    ],
    ids=["Underutilized on WhenEmptyOrUnderutilized", "Drifted on WhenEmpty", "mirror of the NVIDIA plugin's registry"],
)
def test_keys_with_an_effect_draw_no_warning(change):
    assert _warnings(change) == []
