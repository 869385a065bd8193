"""Helm releases: the NVIDIA plugin only where a pool needs it."""

from __future__ import annotations

from gpushare.loader import load_stack_config
from gpushare.render.releases import helm_releases
from tests.conftest import PLAN_DATE


def test_nvidia_plugin_release_only_with_exclusive_or_time_sliced_pools(dev_raw, prod):
    dev_raw["gpushare:pools"].pop()
    dev_raw["gpushare:teams"][0]["pools"].pop()
    del dev_raw["gpushare:teams"][0]["quota"]["sharedGpus"]
    assert "nvidia-device-plugin" not in [r.name for r in helm_releases(load_stack_config(dev_raw, today=PLAN_DATE))]
    plugin = next(r for r in helm_releases(prod) if r.name == "nvidia-device-plugin")
    assert plugin.values["nodeSelector"] == {"gpushare.io/device-plugin": "nvidia"}
    assert "config" not in plugin.values, "without time-sliced pools every node takes whole GPUs"
