"""Karpenter is at least the version with the NodeOverlay fixes gpushare relies on."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field, field_validator

from gpushare import compat, names

from ..karpenter import running_karpenter
from ..rule import Finding, Rule, RuleConfig, finding
from ..stack import NODE_OVERLAY, StackView, version_of

RECOMMENDED = "1.13.0"


class KarpenterVersionConfig(RuleConfig):
    minimum_version: str = Field(
        default=RECOMMENDED,
        alias="minimumVersion",
        description="Karpenter chart version below which overlays work but known fixes are missing.",
    )

    @field_validator("minimum_version")
    @classmethod
    def _parses(cls, value: str) -> str:
        compat.parse_version(value)
        return value


def check_karpenter_version(view: StackView, config: KarpenterVersionConfig) -> Iterator[Finding]:
    karpenter = running_karpenter(view)
    if karpenter is None or not view.of_type(NODE_OVERLAY):
        return
    version = version_of(karpenter.version)
    if version is not None and version < compat.parse_version(config.minimum_version):
        yield finding(
            karpenter.resource,
            karpenter.version_key,
            karpenter.version,
            f"below {config.minimum_version}: 1.9.0 fixed overlay capacity weight precedence and 1.13.0 stopped one "
            "broken NodePool from blocking all provisioning",
            karpenter.upgrade(config.minimum_version),
        )


RULE = Rule(
    name="karpenter-version-recommended",
    order=7,
    description=f"Karpenter is at least the recommended version for NodeOverlay ({RECOMMENDED} by default).",
    why="1.9.0 fixed overlay weight precedence for capacity; 1.13.0 stopped one broken NodePool from "
    "blocking all provisioning.",
    remediation=f"Upgrade the {names.KARPENTER_CHART} and {names.KARPENTER_CRD_CHART} charts together.",
    enforcement="advisory",
    severity="low",
    check=check_karpenter_version,
    config=KarpenterVersionConfig,
)
