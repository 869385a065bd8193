"""The pins file: every version in it is found by a Renovate manager, and so is every Go module file of the rig."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from gpushare import names, pins
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, ROOT, raw_stack

RENOVATE = json.loads((ROOT / "renovate.json").read_text())
PINS_FILE = pins.PINS_PATH.relative_to(ROOT).as_posix()


def _file_patterns(manager: dict) -> list[re.Pattern[str]]:
    """Renovate's `/regex/` file patterns (the only form this config uses)."""
    return [re.compile(pattern.strip("/")) for pattern in manager["managerFilePatterns"]]


def _python_regex(js: str) -> re.Pattern[str]:
    """Renovate's named groups `(?<name>` as Python spells them."""
    return re.compile(js.replace("(?<", "(?P<"))


def _matched_lines(path: str) -> set[int]:
    """Lines of `path` whose version some custom manager captures as currentValue."""
    text = (ROOT / path).read_text()
    lines = set()
    for manager in RENOVATE["customManagers"]:
        if not any(p.search(path) for p in _file_patterns(manager)):
            continue
        for match_string in manager["matchStrings"]:
            for match in _python_regex(match_string).finditer(text):
                lines.add(text.count("\n", 0, match.start("currentValue")) + 1)
                assert match.groupdict().get("depName") or "depNameTemplate" in manager, match_string
                assert match.groupdict().get("datasource") or "datasourceTemplate" in manager
    return lines


def test_every_pin_is_found_by_a_renovate_manager():
    text = (ROOT / PINS_FILE).read_text().splitlines()
    data = pins._pins()
    schedulers = data["kubernetes"]["kube-scheduler"]
    versions = [entry["version"] for entry in data["charts"].values()] + [
        *data["images"].values(),
        *schedulers.values(),
    ]
    pinned = {i + 1 for i, line in enumerate(text) if any(line.endswith(f'"{v}"') for v in versions)}
    assert len(pinned) == len(data["charts"]) + len(data["images"]) + len(schedulers)
    assert pinned == _matched_lines(PINS_FILE)


def _go_modules() -> list[str]:
    """Every go.mod of the checkout, outside hidden folders, virtualenvs and build output."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d not in ("build", "venv")]
        if "go.mod" in files:
            found.append((Path(folder) / "go.mod").relative_to(ROOT).as_posix())
    return sorted(found)


def test_every_go_module_of_the_rig_and_tools_is_found_by_the_gomod_manager():
    assert "gomod" in RENOVATE["enabledManagers"] and "custom.regex" in RENOVATE["enabledManagers"]
    modules = _go_modules()
    assert any(module.startswith("e2e/cluster/tools/") for module in modules)
    for module in modules:
        assert any(p.search(module) for p in _file_patterns(RENOVATE["gomod"])), module


def test_config_defaults_and_renderers_take_their_versions_from_the_pins():
    config = load_stack_config(raw_stack("prod"), today=PLAN_DATE)
    assert config.karpenter.chart_version == pins.chart_version(names.KARPENTER_CHART)
    assert config.hami.chart_version == pins.chart_version(names.HAMI_CHART)
    assert config.nvidia_device_plugin.chart_version == pins.chart_version(names.NVIDIA_PLUGIN_CHART)
    assert config.hami.mock_device_plugin_image == pins.image("docker.io/projecthami/mock-device-plugin")


def test_renovate_never_moves_a_kube_scheduler_to_another_minor():
    rules = [r for r in RENOVATE["packageRules"] if "registry.k8s.io/kube-scheduler" in r.get("matchDepNames", [])]
    assert [(set(r["matchUpdateTypes"]), r["enabled"]) for r in rules] == [({"major", "minor"}, False)]


def _rules_naming(package: str) -> list[dict]:
    return [r for r in RENOVATE["packageRules"] if package in r.get("matchPackageNames", [])]


def test_renovate_holds_the_mock_with_its_reason():
    """Mock 1.0.1 reads a ConfigMap of the stack's own: no mock release may be proposed until one parses HAMi's."""
    for package in ("docker.io/projecthami/mock-device-plugin", "github.com/HAMi/mock-device-plugin"):
        [rule] = _rules_naming(package)
        assert rule["enabled"] is False
        assert (
            "mock PR #18" in rule["description"]
            and "keeps working until a mock release parses" in (rule["description"])
        )
    gomod = (ROOT / "e2e" / "cluster" / "tools" / "mock" / "go.mod").read_text()
    assert "github.com/HAMi/mock-device-plugin " in gomod


def test_renovate_proposes_hami_with_its_module_and_asks_for_make_e2e():
    [chart] = _rules_naming(names.HAMI_CHART)
    assert chart is _rules_naming("github.com/Project-HAMi/HAMi")[0] and chart.get("enabled", True)
    assert chart["groupName"] and "make e2e" in chart["description"] and "make e2e" in chart["prBodyNotes"][0]
    [webui] = _rules_naming(names.WEBUI_CHART)
    assert webui.get("enabled", True) and "WEBUI_HAMI_RANGES" in webui["description"]
    # Every HAMi-family pin is covered by one of these rules.
    pinned = [*pins._pins()["charts"], *pins._pins()["images"]]
    family = {name for name in pinned if "hami" in name.lower() or "mock-device-plugin" in name}
    assert all(_rules_naming(name) for name in family)
    assert "github.com/Project-HAMi/HAMi " in (ROOT / "e2e" / "cluster" / "tools" / "hami" / "go.mod").read_text()
