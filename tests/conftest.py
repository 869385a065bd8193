"""Shared fixtures: the shipped catalog and fresh copies of the shipped stack configs (dev, prod, existing)."""

from __future__ import annotations

import copy
import fcntl
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from gpushare.catalog import Catalog, load_catalog
from gpushare.compat import has_mutating_admission_policy
from gpushare.config import StackConfig
from gpushare.eks import FIXED_PLAN_DAY
from gpushare.loader import load_stack_config
from gpushare.paths import PROJECT_ROOT
from gpushare.stackfile import read_stack_file

# The tests' names for the project root and the fixed day the offline plans judge EKS support windows for (so no
# test depends on the clock); both defined in production code.
ROOT = PROJECT_ROOT
PLAN_DATE = FIXED_PLAN_DAY
SHIPPED_STACKS = ("dev", "prod", "existing")
_RAW = {stack: read_stack_file(ROOT / f"Pulumi.{stack}.yaml") for stack in SHIPPED_STACKS}


def raw_stack(stack: str) -> dict[str, Any]:
    """A deep copy a test may break freely."""
    return copy.deepcopy(_RAW[stack])


def on_minor(raw: dict[str, Any], minor: str) -> dict[str, Any]:
    """`raw` on Kubernetes `minor`; before 1.36 without the shipped stacks' team keys that only a
    MutatingAdmissionPolicy applies (schedulerPolicy, a priority other than standard), which the config refuses."""
    raw["gpushare:cluster"]["kubernetesVersion"] = minor
    if not has_mutating_admission_policy(minor):
        for team in raw["gpushare:teams"]:
            team.pop("schedulerPolicy", None)
            team["priority"] = "standard"
    return raw


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


def _plan_command(config_path: Path, out: Path, day: date) -> list[str]:
    """`make plan` of `config_path` for `day`, in a fresh interpreter (one Pulumi runtime each)."""
    return [
        sys.executable,
        "-m",
        "tools.plan",
        "--config",
        str(config_path),
        "--out",
        str(out),
        "--date",
        day.isoformat(),
    ]


def run_plan(config_path: Path, out: Path, day: date = PLAN_DATE) -> subprocess.CompletedProcess[str]:
    """Run `python -m tools.plan` as `make plan` does, for `day`, in a fresh interpreter (one Pulumi runtime each)."""
    return subprocess.run(
        _plan_command(config_path, out, day),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that reads the shipped plans runs the whole program: `make unit` leaves it out (-m "not plan")."""
    for item in items:
        if "plans" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.plan)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if need be) until the block ends."""
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _build_plans(out: Path) -> None:
    """The shipped stacks' plans into `out`, both at once, each with its stdout beside it; `done` written last."""
    running = {
        stack: subprocess.Popen(
            _plan_command(ROOT / f"Pulumi.{stack}.yaml", out, PLAN_DATE),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for stack in SHIPPED_STACKS
    }
    for stack, process in running.items():
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, f"make plan of {stack}: {stderr}"
        (out / f"{stack}.stdout").write_text(stdout)
    (out / "done").write_text("")


@pytest.fixture(scope="session")
def plans(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[str, dict[str, Any]]:
    """The shipped stacks' offline plans, built once per run: under xdist, the first worker to ask builds them into the
    folder all workers of the run share (the parent of each one's own), the others wait and read them."""
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    out = shared / "plans"
    with _locked(shared / "plans.lock"):
        if not (out / "done").exists():
            out.mkdir(exist_ok=True)
            _build_plans(out)
    result = {}
    for stack in SHIPPED_STACKS:
        result[stack] = json.loads((out / stack / "plan.json").read_text())
        result[stack]["_folder"] = out / stack
        result[stack]["_stdout"] = (out / f"{stack}.stdout").read_text()
    return result
