"""Changes that break `hami-webhook-scope`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import broken, find, messages
from tests.policies.rules.breaking import (
    caught,
    release,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "shared-pool team skips HAMi's webhook": (
        "hami-webhook-scope",
        lambda r: set_at(find(r, "Namespace", "inference"), ["metadata", "labels", "hami.io/webhook"], "ignore"),
        ['Namespace inference: metadata.labels["hami.io/webhook"] is "ignore"', "bypass hami-scheduler"],
    ),
    "shared-pool team in the webhook's whitelist": (
        "hami-webhook-scope",
        lambda r: set_at(
            release(r, "hami")["values"]["scheduler"], ["admissionWebhook", "whitelistNamespaces"], ["inference"]
        ),
        [
            "Release hami: values.scheduler.admissionWebhook.whitelistNamespaces is ['inference']",
            "team inference uses HAMi pools",
            "remove inference from the list",
        ],
    ),
    "2.10 namespaceSelector that leaves a HAMi team out": (
        "hami-webhook-scope",
        lambda r: set_at(
            release(r, "hami")["values"]["scheduler"],
            ["admissionWebhook", "namespaceSelector"],
            {"matchLabels": {"gpushare.io/team": "ml-research"}},
        ),
        [
            "Release hami: values.scheduler.admissionWebhook.namespaceSelector is",
            "team inference uses HAMi pools, but the webhook's namespaceSelector does not select its namespace",
        ],
    ),
    "webhook off with HAMi teams": (
        "hami-webhook-scope",
        lambda r: set_at(release(r, "hami")["values"]["scheduler"], ["admissionWebhook", "enabled"], False),
        ["Release hami: values.scheduler.admissionWebhook.enabled is false", "HAMi places none of them"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def _exclusive_only_team(r):
    namespace = find(r, "Namespace", "ml-research")
    namespace["metadata"]["annotations"]["gpushare.io/pools"] = "training"
    namespace["metadata"]["labels"]["hami.io/webhook"] = "ignore"


# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
    "2.10 webhook without its namespaceSelector": (
        "hami-webhook-scope",
        lambda r: (
            _exclusive_only_team(r),
            set_at(release(r, "hami")["values"]["scheduler"], ["admissionWebhook", "manageNamespaceSelector"], False),
        ),
        [
            "Release hami: values.scheduler.admissionWebhook.manageNamespaceSelector is false",
            "team ml-research (exclusive pools only, labelled hami.io/webhook=ignore) to hami-scheduler",
        ],
    ),
    "exclusive-only team without the webhook label": (
        "hami-webhook-scope",
        lambda r: set_at(
            find(r, "Namespace", "ml-research"), ["metadata", "annotations", "gpushare.io/pools"], "training"
        ),
        [
            'Namespace ml-research: metadata.labels["hami.io/webhook"] not set',
            "label the namespace hami.io/webhook=ignore",
        ],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_monitoring_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])


def test_a_selector_the_teams_pass_and_older_charts_ignoring_it_are_fine(plans):
    """A namespaceSelector selecting every HAMi team passes; chart 2.8.3 has neither key, so neither applies."""
    selector = {"matchExpressions": [{"key": "gpushare.io/team", "operator": "Exists"}]}
    webhook = ["admissionWebhook", "namespaceSelector"]
    valid = broken(plans["prod"], lambda r: set_at(release(r, "hami")["values"]["scheduler"], webhook, selector))
    assert messages(valid, "hami-webhook-scope") == []

    def held_back(r):
        _exclusive_only_team(r)
        release(r, "hami")["version"] = "2.8.3"
        scheduler = release(r, "hami")["values"]["scheduler"]
        set_at(scheduler, ["admissionWebhook", "manageNamespaceSelector"], False)
        set_at(scheduler, webhook, {"matchLabels": {"nobody": "x"}})

    assert messages(broken(plans["prod"], held_back), "hami-webhook-scope") == []
