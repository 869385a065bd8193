"""`make check` as a user meets it: exit 0 clean, 1 on a mandatory violation, 2 on a file it cannot use."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.policies.helpers import find


def run_check(*args):
    return subprocess.run(
        [sys.executable, "-m", "tools.check", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def write_plan(tmp_path, plan, change=None, name="plan.json"):
    plan = copy.deepcopy({k: v for k, v in plan.items() if not k.startswith("_")})
    if change:
        change(plan["resources"])
    path = tmp_path / name
    path.write_text(json.dumps(plan))
    return path


def test_clean_plans_exit_0(plans, tmp_path):
    for stack in ("dev", "prod"):
        completed = run_check("--plan", plans[stack]["_folder"] / "plan.json")
        assert completed.returncode == 0, completed.stdout
        assert "0 mandatory" in completed.stdout


def _set_gpumem(resources):
    find(resources, "NodeOverlay", "g5-shared-g5-xlarge")["spec"]["capacity"]["nvidia.com/gpumem"] = "24000"


def _drop_gpu_label(resources):
    del find(resources, "NodePool", "g5-shared")["spec"]["template"]["metadata"]["labels"]["gpu"]


def _cpu_limit(resources):
    find(resources, "NodePool", "g5-shared")["spec"]["limits"]["cpu"] = "10"


def _gate_off(resources):
    find(resources, "Release", "karpenter")["values"]["settings"]["featureGates"]["nodeOverlay"] = False


SEEDS = {
    "overlay gpumem 24000 on g5.xlarge": (
        _set_gpumem,
        'NodeOverlay g5-shared-g5-xlarge: spec.capacity["nvidia.com/gpumem"] is "24000": a g5.xlarge node in pool '
        "g5-shared registers 23028",
    ),
    "pool without gpu: on": (
        _drop_gpu_label,
        'HAMi\'s device plugin never lands on the HAMi pools g5-shared (the nodes carry no label gpu: "on")',
    ),
    "cpu: 10 limit on g5.4xlarge pool": (
        _cpu_limit,
        'NodePool g5-shared: spec.limits["cpu"] is "10": one g5.4xlarge node counts 16 vCPU',
    ),
    "gate off": (_gate_off, "Release karpenter: values.settings.featureGates.nodeOverlay is false"),
}


@pytest.mark.parametrize("seed", list(SEEDS))
def test_seed_mistakes_fail_with_an_actionable_message(plans, tmp_path, seed):
    change, expected = SEEDS[seed]
    completed = run_check("--plan", write_plan(tmp_path, plans["dev"], change))
    assert completed.returncode == 1
    assert expected in completed.stdout and "Fix:" in completed.stdout
    assert "[mandatory]" in completed.stdout


def test_make_check_wraps_the_command(plans, tmp_path):
    plan = write_plan(tmp_path, plans["dev"], _gate_off)
    completed = subprocess.run(
        ["make", "--no-print-directory", "check", f"PLAN={plan}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 2  # make reports the command's exit 1 as its own 2
    assert "featureGates.nodeOverlay is false" in completed.stdout
    usage = subprocess.run(["make", "--no-print-directory", "check"], cwd=ROOT, capture_output=True, text=True)
    assert usage.returncode == 2 and "usage: make check PLAN=" in usage.stderr


def test_explicit_policy_config_applies(plans, tmp_path):
    config = tmp_path / "levels.json"
    # The explicit file replaces policies/config/dev.json, so it repeats the dev endpoint exception.
    levels = {"karpenter-node-overlay-enabled": "advisory", "eks-public-endpoint-restricted": "advisory"}
    config.write_text(json.dumps(levels))
    completed = run_check("--plan", write_plan(tmp_path, plans["dev"], _gate_off), "--policy-config", config)
    assert completed.returncode == 0 and "[advisory] karpenter-node-overlay-enabled" in completed.stdout
    config.write_text(json.dumps({"karpenter-node-overlay-enabled": "advisory"}))
    stricter = run_check("--plan", write_plan(tmp_path, plans["dev"], _gate_off), "--policy-config", config)
    assert stricter.returncode == 1 and "[mandatory] eks-public-endpoint-restricted" in stricter.stdout


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", "not valid JSON (Expecting property name enclosed in double quotes, line 1)"),
        ("[]", "not a plan file: (top level): takes a map with the keys stack, resources (got [])"),
        ('{"stack": "dev"}', "not a plan file: resources: is required"),
        ('{"stack": "dev", "resources": [{"type": "x"}]}', "not a plan file: resources[0].urn: is required"),
        (
            '{"stack": "dev", "resources": [{"urn": "u", "type": "t", "inputs": []}]}',
            "resources[0].inputs: takes a map of keys to values (got [])",
        ),
        ("\xff\xfe", "not valid JSON (not UTF-8 text)"),
    ],
)
def test_malformed_plan_exits_2_without_traceback(tmp_path, content, fragment):
    path = tmp_path / "plan.json"
    path.write_bytes(content.encode("latin-1"))
    completed = run_check("--plan", path)
    assert completed.returncode == 2
    assert completed.stderr.startswith(f"error: {path}: ") and fragment in completed.stderr, completed.stderr
    assert completed.stderr.count("\n") == 1 and "Traceback" not in completed.stderr
    assert completed.stdout == ""


def test_missing_plan_and_bad_policy_config_exit_2(plans, tmp_path):
    missing = run_check("--plan", tmp_path / "nope.json")
    assert missing.returncode == 2 and "cannot read (No such file or directory)" in missing.stderr
    config = tmp_path / "levels.json"
    config.write_text('{"hami-overlay-coverage": "loud"}')
    bad = run_check("--plan", plans["dev"]["_folder"] / "plan.json", "--policy-config", config)
    assert bad.returncode == 2 and "hami-overlay-coverage.enforcementLevel: 'loud' is not a level" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_an_alert_over_a_metric_nobody_exports_fails_make_check(plans, tmp_path):
    """`make check` judges alert expressions with the metric catalogue, as `make rules-test` does with promtool."""

    def rename_metric(resources):
        rules = find(resources, "PrometheusRule", "gpushare-gpu")["spec"]["groups"][0]["rules"]
        rules[0]["expr"] = rules[0]["expr"].replace("operator_nodeclaim_", "karpenter_nodeclaim_")

    completed = run_check("--plan", write_plan(tmp_path, plans["prod"], rename_metric))
    assert completed.returncode == 1, completed.stdout
    assert "reads metric karpenter_nodeclaim_status_condition_current_status_seconds" in completed.stdout
