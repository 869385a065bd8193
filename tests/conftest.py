"""Shared fixtures: the shipped catalog and fresh copies of the shipped stack configs (dev, prod, existing)."""

from __future__ import annotations

import copy
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from gpushare.catalog import Catalog, load_catalog
from gpushare.config import StackConfig
from gpushare.files import read_yaml
from gpushare.loader import load_stack_config

ROOT = Path(__file__).resolve().parent.parent
# The day tests judge EKS support windows for, fixed so no test depends on the clock: the shipped stacks' 1.36 is
# in standard support then, and more than 90 days from its end.
PLAN_DATE = date(2026, 11, 26)
SHIPPED_STACKS = ("dev", "prod", "existing")
_RAW = {stack: read_yaml(ROOT / f"Pulumi.{stack}.yaml")["config"] for stack in SHIPPED_STACKS}


def raw_stack(stack: str) -> dict[str, Any]:
    """A deep copy a test may break freely."""
    return copy.deepcopy(_RAW[stack])


@pytest.fixture
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture
def dev_raw() -> dict[str, Any]:
    return raw_stack("dev")


@pytest.fixture
def prod_raw() -> dict[str, Any]:
    return raw_stack("prod")


@pytest.fixture
def dev() -> StackConfig:
    return load_stack_config(raw_stack("dev"), today=PLAN_DATE)


@pytest.fixture
def prod() -> StackConfig:
    return load_stack_config(raw_stack("prod"), today=PLAN_DATE)


def run_plan(config_path: Path, out: Path, day: date = PLAN_DATE):
    """Run `python -m tools.plan` as `make plan` does, for `day`, in a fresh interpreter (one Pulumi runtime each)."""
    import subprocess
    import sys

    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.plan",
            "--config",
            str(config_path),
            "--out",
            str(out),
            "--date",
            day.isoformat(),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="session")
def plans(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """The offline plans of the shipped stacks, built once per session."""
    import json

    out = tmp_path_factory.mktemp("plans")
    result = {}
    for stack in SHIPPED_STACKS:
        completed = run_plan(ROOT / f"Pulumi.{stack}.yaml", out)
        assert completed.returncode == 0, completed.stderr
        result[stack] = json.loads((out / stack / "plan.json").read_text())
        result[stack]["_folder"] = out / stack
        result[stack]["_stdout"] = completed.stdout
    return result
