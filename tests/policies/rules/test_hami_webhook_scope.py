"""Changes that break `hami-webhook-scope`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find
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
    "webhook off with HAMi teams": (
        "hami-webhook-scope",
        lambda r: set_at(release(r, "hami")["values"]["scheduler"], ["admissionWebhook", "enabled"], False),
        ["Release hami: values.scheduler.admissionWebhook.enabled is false", "HAMi places none of them"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
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
