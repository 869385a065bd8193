"""Changes that break `node-security-baseline`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import (
    caught,
    cluster,
    delete_at,
    node_class,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "imdsv1": (
        "node-security-baseline",
        lambda r: set_at(node_class(r), ["spec", "metadataOptions", "httpTokens"], "optional"),
        ['EC2NodeClass gpu: spec.metadataOptions.httpTokens is "optional"', "required"],
    ),
    "hop limit 2": (
        "node-security-baseline",
        lambda r: set_at(node_class(r), ["spec", "metadataOptions", "httpPutResponseHopLimit"], 2),
        ["httpPutResponseHopLimit is 2", "set it to 1"],
    ),
    "unencrypted volume": (
        "node-security-baseline",
        lambda r: set_at(node_class(r), ["spec", "blockDeviceMappings", 0, "ebs", "encrypted"], False),
        ["spec.blockDeviceMappings[0].ebs.encrypted is false"],
    ),
    "public ip unset": (
        "node-security-baseline",
        lambda r: delete_at(node_class(r), ["spec", "associatePublicIPAddress"]),
        ["spec.associatePublicIPAddress not set"],
    ),
    "secrets unencrypted": (
        "node-security-baseline",
        lambda r: delete_at(cluster(r), ["encryptionConfigKeyArn"]),
        ["eks:index:Cluster gpushare-dev: encryptionConfigKeyArn not set"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
