"""EKS support windows: what must hold of the shipped data, and what config accepts on a given day (never the
clock's): a minor past standard support only with extended support, never past extended support, and none EKS
does not offer yet."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from gpushare import eks, pins
from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, on_minor, raw_stack

SUPPORT = eks.load_eks_support()
KEY = "gpushare:cluster.kubernetesVersion"


def _minor_number(minor: str) -> int:
    return int(minor.split(".")[1])


def test_every_offered_minor_has_a_kube_scheduler_patch_and_no_other_has():
    assert set(SUPPORT.versions) == set(pins.kubernetes_minors())


def test_windows_follow_the_eks_calendar():
    """Standard support ends in release order; extended support runs 12 months more, to the day."""
    minors = sorted(SUPPORT.versions, key=_minor_number)
    ends = [SUPPORT.versions[m].end_of_standard_support for m in minors]
    assert ends == sorted(ends) and len(set(ends)) == len(ends)
    for minor in minors:
        window = SUPPORT.versions[minor]
        standard, extended = window.end_of_standard_support, window.end_of_extended_support
        assert (extended.year, extended.month, extended.day) == (standard.year + 1, standard.month, standard.day)


def test_upcoming_minors_are_newer_than_every_offered_one():
    newest = max(map(_minor_number, SUPPORT.versions))
    assert SUPPORT.upcoming and all(_minor_number(minor) > newest for minor in SUPPORT.upcoming)


def _stack(minor: str, support_type: str | None = None) -> dict:
    raw = on_minor(raw_stack("dev"), minor)
    if support_type is not None:
        raw["gpushare:cluster"]["supportType"] = support_type
    return raw


def _refusal(raw: dict, today: date) -> str:
    with pytest.raises(ConfigError) as raised:
        load_stack_config(raw, today=today)
    lines = str(raised.value).splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{KEY}: ")
    return lines[0]


@pytest.mark.parametrize("minor", list(SUPPORT.versions))
def test_standard_support_until_the_day_before_its_end(minor):
    end = SUPPORT.versions[minor].end_of_standard_support
    assert load_stack_config(_stack(minor), today=end - timedelta(days=1)).cluster.kubernetes_version == minor
    message = _refusal(_stack(minor), end)
    assert f"{minor} is past EKS standard support (ended {end})" in message
    assert "gpushare:cluster.supportType EXTENDED" in message and "$0.60 instead of $0.10" in message


@pytest.mark.parametrize("minor", list(SUPPORT.versions))
def test_extended_support_is_an_explicit_choice_and_ends_too(minor):
    window = SUPPORT.versions[minor]
    config = load_stack_config(_stack(minor, "EXTENDED"), today=window.end_of_standard_support)
    assert config.cluster.support_type == "EXTENDED"
    last_day = window.end_of_extended_support - timedelta(days=1)
    assert load_stack_config(_stack(minor, "EXTENDED"), today=last_day).cluster.kubernetes_version == minor
    message = _refusal(_stack(minor, "EXTENDED"), window.end_of_extended_support)
    assert f"past EKS extended support (ended {window.end_of_extended_support}" in message


def test_a_minor_eks_does_not_offer_yet_is_refused_naming_what_it_will_need():
    message = _refusal(_stack("1.37"), PLAN_DATE)
    assert "1.37 is not offered by EKS yet" in message and "Karpenter 1.15.x" in message
    assert f"allowed: {', '.join(SUPPORT.versions)}" in message


def test_a_minor_gpushare_does_not_support_is_refused_with_the_allowed_ones():
    message = _refusal(_stack("1.33", "EXTENDED"), PLAN_DATE)
    assert f"1.33 is not a Kubernetes minor gpushare supports on EKS; allowed: {', '.join(SUPPORT.versions)}" in message


def test_once_eks_offers_a_minor_that_needs_karpenter_1_15_only_that_karpenter_passes():
    """1.37 moved from upcoming to offered, as the data file says to do: its Karpenter minors still bind."""
    needs = SUPPORT.upcoming["1.37"].karpenter_minors
    window = eks.SupportWindow(
        end_of_standard_support=date(2028, 1, 1), end_of_extended_support=date(2029, 1, 1), karpenter_minors=needs
    )
    offered = eks.EksSupport(versions={**SUPPORT.versions, "1.37": window})
    assert eks.support_problem("1.37", PLAN_DATE, False, "1.15.1", offered) is None
    refused = eks.support_problem("1.37", PLAN_DATE, False, "1.14.1", offered)
    assert refused is not None and "needs Karpenter 1.15.x" in refused and "chartVersion is 1.14.1" in refused


def test_warning_window_starts_ninety_days_ahead():
    end = SUPPORT.versions["1.36"].end_of_standard_support
    assert eks.standard_support_ends_within("1.36", end - eks.WARN_AHEAD - timedelta(days=1), SUPPORT) is None
    assert eks.standard_support_ends_within("1.36", end - eks.WARN_AHEAD, SUPPORT) == end
    assert eks.standard_support_ends_within("1.36", end + timedelta(days=30), SUPPORT) == end


def test_inconsistent_data_is_refused_naming_the_entry(tmp_path):
    bad = tmp_path / "eks-support.yaml"
    bad.write_text(
        'versions:\n  "1.36":\n    endOfStandardSupport: "2027-08-02"\n    endOfExtendedSupport: "2027-08-01"\n'
    )
    with pytest.raises(eks.EksSupportError, match=r"eks-support.yaml: versions.1.36: .*must come after"):
        eks.load_eks_support(bad)
