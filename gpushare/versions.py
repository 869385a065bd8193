"""The oldest version of each component that has a feature the stack renders, read from
gpushare/minimum-versions.yaml: config validation, the policy pack and the docs' table all read this one table.

A fact module, below compat.py (which takes its version thresholds from here).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpushare.errors import UserError, first_error, key_path
from gpushare.files import read_yaml
from gpushare.wording import Wording

MINIMUM_VERSIONS_PATH = Path(__file__).with_name("minimum-versions.yaml")
Component = Literal["karpenter", "hami", "nvidia-device-plugin", "kubernetes"]
# How messages and the docs name each component's version.
COMPONENT_NAMES: Final = {
    "karpenter": "Karpenter",
    "hami": "HAMi chart",
    "nvidia-device-plugin": "NVIDIA device plugin chart",
    "kubernetes": "Kubernetes",
}


def parse_version(text: str) -> tuple[int, int, int]:
    """`1.14.1` or `v1.14.1` -> (1, 14, 1); ValueError for anything else."""
    parts = text.removeprefix("v").split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"{text!r} is not a version like 1.14.1")
    major, minor, patch = (int(p) for p in parts)
    return major, minor, patch


def parse_minor(text: str) -> tuple[int, int]:
    """A Kubernetes minor `1.36` (or a version `v1.36.6`) -> (1, 36); ValueError for anything else."""
    parts = text.removeprefix("v").split(".")
    if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        raise ValueError(f"{text!r} is not a Kubernetes version like 1.36")
    return int(parts[0]), int(parts[1])


def _parsed(component: str, text: str) -> tuple[int, ...]:
    return parse_minor(text) if component == "kubernetes" else parse_version(text)


class MinimumVersionsError(UserError):
    """The table is inconsistent; the message names the entry and field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Feature(_Model):
    component: Component
    minimum: str
    what: str
    breaks: str  # what an older version does with it
    keys: tuple[str, ...]  # the stack config keys that render it
    source: str

    @model_validator(mode="after")
    def _version(self) -> Feature:
        _parsed(self.component, self.minimum)
        return self


class MinimumVersions(_Model):
    features: dict[str, Feature]
    karpenter_for_kubernetes: dict[str, str] = Field(alias="karpenterForKubernetes")

    @field_validator("karpenter_for_kubernetes")
    @classmethod
    def _versions(cls, value: dict[str, str]) -> dict[str, str]:
        for minor, karpenter in value.items():
            parse_minor(minor)
            parse_version(karpenter)
        return value


@cache
def table() -> MinimumVersions:
    try:
        return MinimumVersions.model_validate(read_yaml(MINIMUM_VERSIONS_PATH))
    except ValidationError as error:
        raise MinimumVersionsError(
            str(
                first_error(error, lambda loc: key_path(str(MINIMUM_VERSIONS_PATH.name), loc), Wording(MinimumVersions))
            )
        ) from None


def feature(name: str) -> Feature:
    return table().features[name]


def minimum(name: str) -> tuple[int, ...]:
    """The oldest version with feature `name`: (major, minor) for Kubernetes, (major, minor, patch) otherwise."""
    entry = feature(name)
    return _parsed(entry.component, entry.minimum)


def too_old(name: str, version: str, held_by: str, instead: str = "") -> str | None:
    """Why `version` (the value of `held_by`, e.g. gpushare:karpenter.chartVersion) lacks feature `name`, with what
    is allowed (`instead`: the other way out); None when it has it, or when the version does not parse (other
    checks name that)."""
    entry = feature(name)
    try:
        held = _parsed(entry.component, version)
    except ValueError:
        return None
    if held >= minimum(name):
        return None
    component = COMPONENT_NAMES[entry.component]
    other = f", or {instead}" if instead else ""
    return (
        f"{entry.what} needs {component} {entry.minimum} or newer, but {held_by} is {version}: {entry.breaks}; "
        f"allowed: {held_by} {entry.minimum} or newer{other}"
    )


def karpenter_for_kubernetes(minor: str) -> str | None:
    """The oldest Karpenter that runs with Kubernetes `minor` (its compatibility matrix), None when not listed."""
    return table().karpenter_for_kubernetes.get(minor)
