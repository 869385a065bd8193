"""Shared fixtures: the shipped catalog and fresh copies of the dev and prod stack config."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpushare.catalog import Catalog, load_catalog
from gpushare.config import StackConfig, load_stack_config

ROOT = Path(__file__).resolve().parent.parent
_RAW = {stack: yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"] for stack in ("dev", "prod")}


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
    return load_stack_config(raw_stack("dev"))


@pytest.fixture
def prod() -> StackConfig:
    return load_stack_config(raw_stack("prod"))
