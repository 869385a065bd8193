"""The pack's shape: pinned policy list and metadata, Pulumi wrappers, policy config, docs and packaging."""

from __future__ import annotations

import re

import pytest
import yaml
from pulumi_policy import EnforcementLevel, PolicyResource, PolicyResourceOptions, StackValidationPolicy
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

from policies.gpushare_policies.pulumi_pack import policies
from policies.gpushare_policies.registry import RULES, PolicyConfig, PolicyConfigError, evaluate
from policies.gpushare_policies.stack import EKS_COMPONENT, UNKNOWN, from_engine
from tests.conftest import PLAN_DATE, ROOT
from tools.docs import policy_table

EXPECTED = [
    ("device-plugins-per-pool", "mandatory"),
    ("hami-overlay-coverage", "mandatory"),
    ("hami-overlay-capacity-matches", "mandatory"),
    ("node-overlay-no-conflicts", "mandatory"),
    ("nodepool-limits-admit-nodes", "mandatory"),
    ("karpenter-node-overlay-enabled", "mandatory"),
    ("karpenter-version-recommended", "advisory"),
    ("mock-device-plugin-matches-hami", "mandatory"),
    ("hami-values-match-chart-version", "mandatory"),
    ("hami-pools-use-al2023", "mandatory"),
    ("karpenter-objects-depend-on-releases", "mandatory"),
    ("node-security-baseline", "mandatory"),
    ("eks-public-endpoint-restricted", "mandatory"),
    ("team-namespace-gpu-quota", "mandatory"),
    ("team-quota-within-pool-limits", "mandatory"),
    ("quota-keys-enforced", "mandatory"),
    ("hami-resource-names-consistent", "mandatory"),
    ("hami-webhook-scope", "mandatory"),
    ("karpenter-pieces-consistent", "mandatory"),
    ("node-overlay-selects-own-pool", "mandatory"),
    ("timeslice-overlays-match", "mandatory"),
    ("team-admission-scoped", "mandatory"),
    ("team-scheduler-policy-applied", "mandatory"),
    ("monitoring-webui-reads-hami-metrics", "mandatory"),
    ("image-provenance", "mandatory"),
    ("service-monitors-find-their-targets", "mandatory"),
    ("nodepool-crd-valid", "mandatory"),
    ("node-overlay-crd-valid", "mandatory"),
    ("ec2nodeclass-crd-valid", "mandatory"),
    ("team-per-gpu-limit-enforced", "mandatory"),
    ("hami-pool-one-gpu-count", "advisory"),
    ("rbac-least-privilege", "mandatory"),
    ("eks-access-least-privilege", "mandatory"),
    ("karpenter-iam-scoped", "mandatory"),
    ("interruption-queue-principals", "mandatory"),
    ("hami-webhook-fails-open", "mandatory"),
    ("priority-classes-not-global-default", "mandatory"),
    ("team-namespace-isolation", "mandatory"),
    ("eks-standard-support-ending", "advisory"),
    ("hami-pool-one-priority-tier", "advisory"),
    ("capacity-buffer-gate-enabled", "mandatory"),
    ("capacity-buffer-selects-team-pool", "mandatory"),
    ("capacity-buffer-fits-hami-gpus", "mandatory"),
    ("capacity-buffer-within-limits", "mandatory"),
    ("capacity-buffer-beside-quotas", "advisory"),
    ("nvidia-timeslice-config-valid", "mandatory"),
    ("team-quota-admits-its-pools", "mandatory"),
    ("gpu-pools-tainted", "mandatory"),
    ("monitoring-alerts-see-metrics", "mandatory"),
    ("monitoring-alerts-can-fire", "mandatory"),
    ("prometheus-selects-stack-objects", "mandatory"),
    ("monitoring-uis-not-exposed", "mandatory"),
    ("monitoring-storage-class-exists", "mandatory"),
    ("monitoring-skips-eks-control-plane", "mandatory"),
    ("priority-tiers-keep-their-promise", "mandatory"),
    ("monitoring-volumes-go-with-the-stack", "mandatory"),
    ("alertmanager-secrets-and-routes", "mandatory"),
    ("iam-least-privilege", "mandatory"),
    ("features-within-held-versions", "mandatory"),
    ("monitoring-alerts-match-their-series", "mandatory"),
    ("gpu-pools-bounded", "mandatory"),
]


def test_policy_list_is_pinned():
    assert [(rule.name, rule.enforcement) for rule in RULES] == EXPECTED


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_every_policy_is_documented(rule):
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", rule.name)
    for text in (rule.description, rule.why, rule.remediation):
        assert len(text) > 30 and text.endswith("."), text
    assert rule.severity in ("low", "medium", "high", "critical")
    for name, schema in rule.config_schema().items():
        assert schema.get("description") and "default" in schema, name


def test_pulumi_policies_carry_the_metadata():
    built = policies()
    assert all(isinstance(p, StackValidationPolicy) for p in built)
    assert [(p.name, p.enforcement_level) for p in built] == [(n, EnforcementLevel(level)) for n, level in EXPECTED]
    by_name = {p.name: p for p in built}
    for rule in RULES:
        policy = by_name[rule.name]
        assert (policy.description, policy.remediation_steps, policy.severity.value) == (
            rule.description,
            rule.remediation,
            rule.severity,
        )
    schema = by_name["nodepool-limits-admit-nodes"].config_schema
    assert schema.properties["minNodes"]["type"] == "integer" and schema.properties["minNodes"]["default"] == 1


def test_documented_policy_table_is_current():
    readme = (ROOT / "docs" / "policies.md").read_text()
    assert policy_table() in readme, "regenerate with `make docs`: docs/policies.md is stale"
    assert "not on main yet" not in readme


def test_pack_requirements_pin_what_the_project_pins():
    def pins(path):
        lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
        return dict(line.lower().split("==") for line in lines if line)

    project, pack = pins(ROOT / "requirements.txt"), pins(ROOT / "policies" / "requirements.txt")
    assert {"pulumi", "pulumi-policy", "pydantic", "pyyaml"} <= pack.keys()
    assert {name: project[name] for name in pack} == pack


def test_pulumi_policy_yaml_names_the_python_runtime():
    document = yaml.safe_load((ROOT / "policies" / "PulumiPolicy.yaml").read_text())
    assert document["runtime"] == {"name": "python", "options": {"virtualenv": "venv"}}
    assert (ROOT / "policies" / "__main__.py").read_text().count("PolicyPack(") == 1


def test_shipped_policy_configs_parse():
    for path in sorted((ROOT / "policies" / "config").glob("*.json")):
        PolicyConfig.load(path)
    dev = PolicyConfig.load(ROOT / "policies" / "config" / "dev.json")
    assert dev.levels["eks-public-endpoint-restricted"] == "advisory"


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ([], "expected a JSON object"),
        ({"no-such-policy": "advisory"}, "no-such-policy: no such policy"),
        ({"all": "loud"}, "all: 'loud' is not a level"),
        ({"hami-overlay-coverage": "sometimes"}, "hami-overlay-coverage.enforcementLevel: 'sometimes'"),
        ({"hami-overlay-coverage": {"threshold": 2}}, "hami-overlay-coverage: takes no properties (got threshold)"),
        (
            {"nodepool-limits-admit-nodes": {"minNodes": 0}},
            "nodepool-limits-admit-nodes.minNodes: 0 is too small; allowed: at least 1",
        ),
        ({"nodepool-limits-admit-nodes": {"minNode": 2}}, "minNode: unknown key; did you mean minNodes?"),
        ({"karpenter-version-recommended": {"minimumVersion": "soon"}}, "minimumVersion: 'soon' is not a version"),
    ],
)
def test_bad_policy_config_names_the_key(document, fragment):
    with pytest.raises(PolicyConfigError, match=re.escape(fragment)):
        PolicyConfig.parse(document, "cfg.json")


def test_levels_from_config(plans):
    from policies.gpushare_policies.stack import from_plan

    view = from_plan(plans["dev"]["resources"], PLAN_DATE)
    assert {v.level for v in evaluate(view, PolicyConfig.parse({"all": "advisory"}))} == {"advisory"}
    # dev's two advisories (its open endpoint, its critical and batch teams on one HAMi pool) are all it has
    quiet = {"eks-public-endpoint-restricted": "disabled", "hami-pool-one-priority-tier": "disabled"}
    assert evaluate(view, PolicyConfig.parse(quiet)) == []


def _engine_resource(type_, props, urn="urn:x"):
    options = PolicyResourceOptions(False, [], False, [], None, [], None)
    return PolicyResource(type_, unknown_checking_proxy(props), urn, "gpushare-dev", options, None, None, [], {})


def test_unknown_preview_values_are_skipped_not_reported():
    cluster = _engine_resource(
        EKS_COMPONENT,
        {"encryptionConfigKeyArn": UNKNOWN_STRING_VALUE, "endpointPublicAccess": False, "version": "1.36"},
    )
    view = from_engine([cluster], UnknownValueError, PLAN_DATE)
    assert view.resources[0].props["encryptionConfigKeyArn"] is UNKNOWN
    assert evaluate(view) == []
    missing = _engine_resource(EKS_COMPONENT, {"endpointPublicAccess": False})
    known_but_missing = from_engine([missing], UnknownValueError, PLAN_DATE)
    assert [v.policy for v in evaluate(known_but_missing)] == ["node-security-baseline"]


def test_pull_request_workflow_runs_tests_plans_and_policy_preview():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as true
    jobs = workflow["jobs"]
    runs = {job: " ".join(step.get("run", "") for step in body["steps"]) for job, body in jobs.items()}
    assert "make test" in runs["test"]
    assert jobs["plan"]["strategy"]["matrix"]["stack"] == ["dev", "prod"] and "make plan STACK=" in runs["plan"]
    assert jobs["preview"]["strategy"]["matrix"]["stack"] == ["dev", "prod"]
    assert "pulumi preview --stack ${{ matrix.stack }} --policy-pack policies" in runs["preview"]
    # The pack's virtualenv must exist before the preview, which otherwise waits forever (docs/engine.md).
    assert runs["preview"].index("policies/venv") < runs["preview"].index("--policy-pack policies")
