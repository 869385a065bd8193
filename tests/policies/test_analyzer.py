"""The pack as the Pulumi CLI runs it: `python policies` prints a port and answers the analyzer gRPC calls.

The test sends a plan's resources the way the engine sends a stack to AnalyzeStack (properties as a protobuf
Struct, so every number arrives as a double) and expects exactly the violations `make check` reports.
"""

from __future__ import annotations

import copy
import subprocess
import sys

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from policies.gpushare_policies.registry import PACK_NAME, RULES, PolicyConfig, evaluate
from policies.gpushare_policies.stack import from_plan
from tests.conftest import PLAN_DATE, ROOT
from tests.policies.helpers import find

LEVEL_NAMES = {analyzer_pb2.ADVISORY: "advisory", analyzer_pb2.MANDATORY: "mandatory"}


@pytest.fixture(scope="module")
def analyzer(tmp_path_factory):
    """The pack started from another directory, as the CLI starts it: `python <pack dir>`."""
    process = subprocess.Popen(
        [sys.executable, "-u", str(ROOT / "policies")],
        cwd=tmp_path_factory.mktemp("cwd"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = process.stdout.readline().strip()
        assert port.isdigit(), process.stderr.read() if process.poll() is not None else port
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


def _struct(value):
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def _configure(stub, config: PolicyConfig):
    """What the CLI sends: every policy's level and properties."""
    request = analyzer_pb2.ConfigureAnalyzerRequest(
        policyConfig={
            rule.name: analyzer_pb2.PolicyConfig(
                enforcementLevel=analyzer_pb2.EnforcementLevel.Value(config.levels[rule.name].upper()),
                properties=_struct(dict(config.properties.get(rule.name, {}))),
            )
            for rule in RULES
        }
    )
    stub.Configure(request)


def _analyze_stack(stub, resources):
    request = analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(
                type=r["type"],
                urn=r["urn"],
                name=r["name"],
                properties=_struct(r["inputs"]),
                parent=r.get("parent") or "",
                dependencies=r.get("dependencies") or [],
            )
            for r in resources
        ]
    )
    descriptions = {rule.name: rule.description for rule in RULES}
    return sorted(
        (
            d.policyName,
            LEVEL_NAMES[d.enforcementLevel],
            d.urn or None,
            d.message.removeprefix(descriptions[d.policyName] + "\n"),
        )
        for d in stub.AnalyzeStack(request).diagnostics
    )


def _expected(resources, config):
    return sorted((v.policy, v.level, v.urn, v.message) for v in evaluate(from_plan(resources, PLAN_DATE), config))


def test_analyzer_info_lists_every_policy(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == PACK_NAME and info.supportsConfig
    assert [p.name for p in info.policies] == [rule.name for rule in RULES]
    for policy, rule in zip(info.policies, RULES, strict=True):
        assert policy.description == rule.description and policy.remediation_steps == rule.remediation
        assert policy.policy_type == analyzer_pb2.POLICY_TYPE_STACK
        assert LEVEL_NAMES[policy.enforcementLevel] == rule.enforcement
    limits = next(p for p in info.policies if p.name == "nodepool-limits-admit-nodes")
    assert "minNodes" in limits.configSchema.properties


def test_same_violations_as_make_check(analyzer, plans):
    config = PolicyConfig.load(ROOT / "policies" / "config" / "dev.json")
    resources = copy.deepcopy(plans["dev"]["resources"])
    find(resources, "NodeOverlay", "g5-shared-g5-xlarge")["spec"]["capacity"]["nvidia.com/gpumem"] = "24000"
    find(resources, "NodePool", "g5-shared")["spec"]["limits"]["cpu"] = "10"
    find(resources, "Release", "karpenter")["values"]["settings"]["featureGates"]["nodeOverlay"] = False
    _configure(analyzer, config)
    answered = _analyze_stack(analyzer, resources)
    expected = _expected(resources, config)
    assert answered == expected
    assert {policy for policy, *_ in answered} >= {
        "hami-overlay-capacity-matches",
        "nodepool-limits-admit-nodes",
        "karpenter-node-overlay-enabled",
        "eks-public-endpoint-restricted",
    }


def test_policy_config_reaches_the_pack(analyzer, plans):
    config = PolicyConfig.parse({"nodepool-limits-admit-nodes": {"minNodes": 5}, "all": "advisory"})
    _configure(analyzer, config)
    answered = _analyze_stack(analyzer, plans["dev"]["resources"])
    assert answered == _expected(plans["dev"]["resources"], config)
    assert {(p, level) for p, level, *_ in answered} == {
        ("nodepool-limits-admit-nodes", "advisory"),
        ("eks-public-endpoint-restricted", "advisory"),
        ("hami-pool-one-priority-tier", "advisory"),
    }
