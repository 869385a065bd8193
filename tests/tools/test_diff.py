"""`make diff`: what a change to a stack file changes in the rendered stack and its cost, and its bad input."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import PLAN_DATE, ROOT, raw_stack
from tools.diff import changed_fields, cost_changes, object_changes


def run_diff(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.diff", *map(str, args), "--date", PLAN_DATE.isoformat()],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def _stack_file(folder: Path, name: str, raw) -> Path:
    path = folder / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": raw}))
    return path


def test_changed_fields_name_each_leaf_that_differs():
    before = {"spec": {"limits": {"nvidia.com/gpu": "80"}, "taints": [{"key": "a"}], "keep": 1}}
    after = {"spec": {"limits": {"nvidia.com/gpu": "120"}, "taints": [{"key": "b"}], "new": True, "keep": 1}}
    assert [(path, str(b), str(a)) for path, b, a in changed_fields(before, after)] == [
        ("spec.limits.nvidia.com/gpu", "80", "120"),
        ("spec.new", "(none)", "True"),
        ("spec.taints[0].key", "a", "b"),
    ]
    assert changed_fields(before, copy.deepcopy(before)) == []


def test_a_plan_against_itself_changes_nothing(plans):
    plan = {k: v for k, v in plans["dev"].items() if not k.startswith("_")}
    assert object_changes(plan, copy.deepcopy(plan)) == ["objects: 0 added, 0 removed, 0 changed"]


def test_a_stack_file_change_shows_its_objects_fields_and_cost(plans, tmp_path):
    """A grown pool, a new pool with a team on it and a pool removed, against the last plan of the stack."""
    out = plans["dev"]["_folder"].parent
    raw = raw_stack("dev")
    raw["gpushare:pools"][0]["maxGpus"] = 12
    raw["gpushare:pools"].append(
        {"name": "l4-shared", "instanceTypes": ["g6.xlarge"], "capacityTypes": ["spot"], "maxGpus": 2}
    )
    raw["gpushare:teams"].append(
        {"name": "newcomers", "pools": ["l4-shared"], "quota": {"gpus": 20, "gpuMemoryMib": 46068, "gpuCores": 200}}
    )
    completed = run_diff("--a", _stack_file(tmp_path, "dev", raw), "--out", out)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0] == f"diff: B {out / 'dev'} (before) -> A {tmp_path / 'Pulumi.dev.yaml'} (after)"
    assert "+ karpenter.sh/v1 NodePool l4-shared" in lines
    assert "+ v1 Namespace newcomers" in lines
    assert "~ karpenter.sh/v1 NodePool g5-shared" in lines
    assert '    spec.limits.nvidia.com/gpu: "80" -> "120"' in lines
    assert any(line.startswith("  pool g5-shared at its limit: ") and "(+" in line for line in lines)
    assert any(line.startswith("  pool l4-shared at its limit: (none) -> ") for line in lines)
    assert any(line.startswith("  EC2 quota All G and VT Spot Instance Requests (L-3819A6DF): 0 -> ") for line in lines)


def test_removed_objects_and_cost_against_another_stack_file(tmp_path):
    raw = raw_stack("dev")
    smaller = copy.deepcopy(raw)
    smaller["gpushare:pools"] = [p for p in smaller["gpushare:pools"] if p["name"] != "g6-timeslice"]
    smaller["gpushare:teams"][0]["pools"].remove("g6-timeslice")
    smaller["gpushare:teams"][0]["quota"]["sharedGpus"] = 0
    completed = run_diff("--a", _stack_file(tmp_path, "small", smaller), "--b", _stack_file(tmp_path, "dev", raw))
    assert completed.returncode == 0, completed.stderr
    assert "- karpenter.sh/v1 NodePool g6-timeslice" in completed.stdout.splitlines()
    assert "  pool g6-timeslice at its limit: " in completed.stdout and " -> (none) USD/month" in completed.stdout


def test_cost_changes_say_no_change_for_equal_figures(plans):
    figures = yaml.safe_load((plans["dev"]["_folder"] / "summary.json").read_text())
    assert cost_changes(figures, copy.deepcopy(figures)) == ["cost (USD per month, on-demand prices):", "  no change"]


def test_bad_input_exits_2_one_line_per_problem(tmp_path):
    broken = raw_stack("dev")
    broken["gpushare:pools"][0]["maxGpus"] = 0
    missing = run_diff("--a", _stack_file(tmp_path, "dev", broken), "--out", tmp_path / "nowhere")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    lines = missing.stderr.splitlines()
    assert all(line.startswith("error: A: ") or line.startswith("error: B: ") for line in lines)
    assert any(line.startswith("error: A: gpushare:pools[0].maxGpus") for line in lines)
    assert lines[-1].startswith(f"error: B: {tmp_path / 'nowhere' / 'dev' / 'plan.json'} does not exist")
    assert missing.stdout == ""
