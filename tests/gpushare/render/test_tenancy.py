"""Team objects: namespaces, quotas, scheduler policy, priority and spot mutations, the per-GPU request limit,
and the pack's checks on them."""

from __future__ import annotations

import pytest

from gpushare import names
from gpushare.capacity import per_gpu_limits, pool_container_limits, pool_plans
from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from gpushare.render import tenancy
from policies.gpushare_policies.rules.team_admission_scoped import scope_problems
from policies.gpushare_policies.rules.team_scheduler_policy_applied import unapplied_policies
from tests.conftest import PLAN_DATE, on_minor
from tests.policies.helpers import view_of


def _by_name(objects):
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


def _team_objects(config):
    return [o for team in config.teams for o in tenancy.team_objects(config, team)]


def admission_scope_problems(objects):
    """The pack's scope check over rendered objects, as `<Kind> <name>: <problem>` lines."""
    return [f"{resource.label}: {problem}" for resource, problem in scope_problems(view_of(objects))]


def scheduler_policy_problems(objects):
    """The pack's scheduler-policy check over rendered objects, as `<Kind> <name>: <problem>` lines."""
    return [f"{resource.label}: {problem}" for resource, problem in unapplied_policies(view_of(objects))]


def per_gpu_limit_problems(config, objects):
    """Every team with a HAMi pool has its per-GPU limit policy, bound, refusing exactly above one GPU."""
    problems = []
    present = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    for team in config.teams:
        for wanted in tenancy.per_gpu_limit_policy(config, team):
            found = present.get((wanted["kind"], wanted["metadata"]["name"]))
            if found is None:
                problems.append(f"team {team.name}: no {wanted['kind']} {wanted['metadata']['name']}")
            elif found["spec"] != wanted["spec"]:
                problems.append(
                    f"{wanted['kind']} {wanted['metadata']['name']}: differs from the per-GPU limits of pools "
                    f"{', '.join(team.pools)}"
                )
    return problems


def test_scheduler_policy_is_copied_only_onto_hami_pods_without_their_own(dev):
    team = dev.teams[1]
    objects = _by_name(tenancy.team_objects(dev, team))
    for purpose, key, value in (
        ("node-scheduler-policy", "hami.io/node-scheduler-policy", "spread"),
        ("gpu-scheduler-policy", "hami.io/gpu-scheduler-policy", "binpack"),
    ):
        policy = objects[("MutatingAdmissionPolicy", f"gpushare-inference-{purpose}")]["spec"]
        assert policy["failurePolicy"] == "Ignore"
        conditions = {c["name"]: c["expression"] for c in policy["matchConditions"]}
        assert f"!('{key}' in object.metadata.annotations)" in conditions["no-own-policy"]
        assert all(f"'{r}'" in conditions["asks-hami"] for r in tenancy.HAMI_RESOURCES)
        [mutation] = policy["mutations"]
        assert mutation["patchType"] == "ApplyConfiguration"
        assert f"annotations: {{'{key}': '{value}'}}" in mutation["applyConfiguration"]["expression"]
    assert ("MutatingAdmissionPolicy", "gpushare-ml-research-node-scheduler-policy") not in _by_name(
        tenancy.team_objects(dev, dev.teams[0])
    )


def test_hami_pods_the_default_scheduler_would_get_go_to_hamis_scheduler_whatever_its_webhook(dev, dev_raw):
    """HAMi's webhook fails open: the API server itself routes a HAMi team's vGPU pods, so a pod created while
    HAMi's scheduler is down waits for it instead of being bound without a GPU (e2e hami-scheduler-killed)."""
    for team in dev.teams:
        policy = _by_name(tenancy.team_objects(dev, team))[
            ("MutatingAdmissionPolicy", f"gpushare-{team.name}-hami-scheduler")
        ]["spec"]
        conditions = {c["name"]: c["expression"] for c in policy["matchConditions"]}
        assert all(f"'{r}'" in conditions["asks-hami"] for r in tenancy.HAMI_RESOURCES)
        assert f"'{names.DEFAULT_SCHEDULER_NAME}'" in conditions["default-scheduler"]
        assert "object.metadata.labels['hami.io/webhook'] != 'ignore'" in conditions["not-opted-out"]
        expression = policy["mutations"][0]["applyConfiguration"]["expression"]
        assert f"schedulerName: '{names.HAMI_SCHEDULER_NAME}'" in expression
    dev_raw["gpushare:teams"][0]["pools"] = ["g6-timeslice"]
    dev_raw["gpushare:teams"][0]["quota"] = {"gpus": 0, "sharedGpus": 8}
    dev_raw["gpushare:teams"][1]["pools"] = ["g4dn-shared", "g5-shared"]
    config = load_stack_config(dev_raw, today=PLAN_DATE)
    without_hami = _by_name(tenancy.team_objects(config, config.teams[0]))
    assert ("MutatingAdmissionPolicy", "gpushare-ml-research-hami-scheduler") not in without_hami


def test_policies_match_pod_creation_in_the_team_namespace_only(dev):
    objects = _team_objects(dev)
    policies = [o for o in objects if o["kind"] in ("MutatingAdmissionPolicy", "ValidatingAdmissionPolicy")]
    assert policies
    for policy in policies:
        team = policy["metadata"]["labels"][names.TEAM_LABEL]
        constraints = policy["spec"]["matchConstraints"]
        assert constraints["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": team}}
        assert constraints["resourceRules"] == [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
        ]
    assert admission_scope_problems(objects) == []
    assert scheduler_policy_problems(objects) == []


def test_priority_sets_class_value_and_preemption_together(dev):
    """Priority admission runs before MutatingAdmissionPolicy, so the class name alone would not take effect."""
    classes = {c["metadata"]["name"]: c for c in tenancy.priority_classes()}
    for team in dev.teams:
        policy = _by_name(tenancy.team_objects(dev, team))[
            ("MutatingAdmissionPolicy", f"gpushare-{team.name}-priority")
        ]["spec"]
        expression = policy["mutations"][0]["applyConfiguration"]["expression"]
        assert [c["name"] for c in policy["matchConditions"]] == ["asks-gpu", "no-own-class"]
        chosen = classes[f"gpushare-{team.priority}"]
        assert f"priorityClassName: '{chosen['metadata']['name']}'" in expression
        assert f"priority: {chosen['value']}" in expression
        assert f"preemptionPolicy: '{chosen['preemptionPolicy']}'" in expression


def test_priority_tiers_are_ordered_never_default_and_batch_never_preempts():
    classes = tenancy.priority_classes()
    values = [c["value"] for c in classes]
    assert values == sorted(values, reverse=True) and len(set(values)) == len(values)
    assert max(values) < 1_000_000_000, "user classes must stay below the system classes"
    assert not any(c["globalDefault"] for c in classes)
    assert {c["metadata"]["name"]: c["preemptionPolicy"] for c in classes}["gpushare-batch"] == "Never"


def test_spot_only_batch_team_gets_spot_node_selector_on_gpu_pods(dev_raw):
    dev_raw["gpushare:pools"][0]["capacityTypes"] = ["spot", "on-demand"]
    dev_raw["gpushare:teams"][0]["pools"] = ["g5-shared", "g6-timeslice"]
    dev_raw["gpushare:pools"][2]["capacityTypes"] = ["spot"]
    dev_raw["gpushare:teams"][0]["quota"] = {"gpus": 40, "gpuMemoryMib": 92112, "gpuCores": 400, "sharedGpus": 8}
    dev_raw["gpushare:teams"][0]["spotOnly"] = True
    dev_raw["gpushare:teams"][1]["pools"] = ["g4dn-shared", "g5-shared"]
    config = load_stack_config(dev_raw, today=PLAN_DATE)
    policy = _by_name(tenancy.team_objects(config, config.teams[0]))[
        ("MutatingAdmissionPolicy", "gpushare-ml-research-spot")
    ]["spec"]
    [mutation] = policy["mutations"]
    assert mutation["patchType"] == "JSONPatch", "nodeSelector is atomic: ApplyConfiguration may not change it"
    assert (
        "path: '/spec/nodeSelector/karpenter.sh~1capacity-type', value: 'spot'" in mutation["jsonPatch"]["expression"]
    )
    assert [c["name"] for c in policy["matchConditions"]] == ["asks-gpu"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"spotOnly": True, "priority": "standard"}, "teams[0].spotOnly: true needs priority batch"),
        ({"spotOnly": True, "priority": "batch"}, "pools g5-shared, g4dn-shared, g6-timeslice offer no spot capacity"),
        (
            {"priority": "urgent"},
            "teams[0].priority: 'urgent' is not one of the choices; allowed: critical, standard",
        ),
    ],
)
def test_bad_team_admission_settings_are_refused(dev_raw, change, message):
    dev_raw["gpushare:teams"][0] |= change
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_stack_config(dev_raw, today=PLAN_DATE)


@pytest.mark.parametrize(
    ("team_change", "field"),
    [({}, "schedulerPolicy"), ({"schedulerPolicy": None, "priority": "batch"}, "priority")],
)
def test_clusters_before_1_36_refuse_mutating_team_settings(dev_raw, team_change, field):
    dev_raw["gpushare:cluster"]["kubernetesVersion"] = "1.35"
    dev_raw["gpushare:teams"][0]["priority"] = "standard"
    dev_raw["gpushare:teams"][1] = {k: v for k, v in (dev_raw["gpushare:teams"][1] | team_change).items() if v}
    if field == "schedulerPolicy":
        dev_raw["gpushare:teams"][1]["priority"] = "standard"
    with pytest.raises(ConfigError, match=rf"teams\[1\]\.{field}: .*GA from Kubernetes 1.36.*is 1.35"):
        load_stack_config(dev_raw, today=PLAN_DATE)


def test_standard_teams_on_older_clusters_get_no_mutating_policies(dev_raw):
    config = load_stack_config(on_minor(dev_raw, "1.35"), today=PLAN_DATE)
    kinds = {o["kind"] for o in _team_objects(config)}
    assert "MutatingAdmissionPolicy" not in kinds
    assert "ValidatingAdmissionPolicy" in kinds, "ValidatingAdmissionPolicy is GA since 1.30"


def test_per_gpu_limit_is_the_largest_gpu_of_the_team_pools(dev):
    # ml-research: g5 (A10G, 23028 MiB) and g4dn (T4, 15360 MiB); inference: g4dn only.
    assert per_gpu_limits(c for p in dev.teams[0].pools for c in pool_plans(dev)[p].capacities) == {
        names.GPU: 1,
        names.GPU_MEMORY: 23028,
        names.GPU_CORES: 100,
        names.GPU_MEMORY_PERCENTAGE: 100,
    }
    policy, binding = tenancy.per_gpu_limit_policy(dev, dev.teams[1])
    [memory] = [v for v in policy["spec"]["validations"] if "'nvidia.com/gpumem'" in v["expression"]]
    assert "quantity('15360')" in memory["expression"] and "'nvidia.com/gpumem'" in memory["expression"]
    assert memory["message"].startswith("nvidia.com/gpumem per container must be at most 15360")
    assert "g4dn-shared" in memory["message"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]


def _vgpu_bound(config, team_name):
    team = next(t for t in config.teams if t.name == team_name)
    policy = tenancy.per_gpu_limit_policy(config, team)[0]
    [bound] = [v for v in policy["spec"]["validations"] if "'nvidia.com/gpu'" in v["expression"]]
    return bound


def test_vgpus_per_container_are_bounded_by_the_gpus_of_the_team_nodes(dev_raw, prod_raw):
    # dev: every HAMi pool has one-GPU types, so a container asking 2 vGPUs would make Karpenter launch nodes
    # HAMi never places it on.
    bound = _vgpu_bound(load_stack_config(dev_raw, today=PLAN_DATE), "inference")
    assert "quantity('1')" in bound["expression"]
    assert bound["message"].startswith("nvidia.com/gpu per container must be at most 1: HAMi gives each vGPU")
    # A 4-GPU type in a HAMi pool raises it to 4.
    for pool in dev_raw["gpushare:pools"]:
        if pool["name"] == "g4dn-shared":
            pool["instanceTypes"] = ["g4dn.12xlarge"]
    assert "quantity('4')" in _vgpu_bound(load_stack_config(dev_raw, today=PLAN_DATE), "inference")["expression"]
    # ml-research also has prod's 8-GPU exclusive training pool: a whole-GPU pod may ask 8.
    bound = _vgpu_bound(load_stack_config(prod_raw, today=PLAN_DATE), "ml-research")
    assert "quantity('8')" in bound["expression"] and "training" in bound["message"]


def test_per_gpu_limit_follows_scaling_and_skips_exclusive_only_teams(prod_raw):
    prod_raw["gpushare:hami"]["profile"]["deviceCoreScaling"] = 0.5
    prod_raw["gpushare:teams"].append({"name": "trainers", "pools": ["training"], "quota": {"gpus": 8}})
    config = load_stack_config(prod_raw, today=PLAN_DATE)
    assert per_gpu_limits(pool_plans(config)["g5-shared"].capacities)[names.GPU_CORES] == 50
    assert tenancy.per_gpu_limit_policy(config, config.teams[-1]) == []


def test_scope_check_finds_each_way_a_policy_can_escape_its_namespace(dev):
    objects = _team_objects(dev)
    policy = next(o for o in objects if o["kind"] == "ValidatingAdmissionPolicy")
    name = policy["metadata"]["name"]
    policy["spec"]["matchConstraints"]["namespaceSelector"] = {}
    binding = next(o for o in objects if o["kind"] == "MutatingAdmissionPolicyBinding")
    binding["spec"]["matchResources"] = {}
    orphan = next(o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding")
    objects.remove(orphan)
    assert sorted(admission_scope_problems(objects)) == sorted(
        [
            f"ValidatingAdmissionPolicy {name}: matchConstraints must select only namespace ml-research",
            f"ValidatingAdmissionPolicy {name}: no ValidatingAdmissionPolicyBinding names it",
            f"MutatingAdmissionPolicyBinding {binding['metadata']['name']}: matchResources must select only "
            "namespace ml-research",
        ]
    )


def test_scheduler_policy_check_finds_a_namespace_policy_nothing_applies(dev):
    objects = [o for o in _team_objects(dev) if not o["metadata"]["name"].endswith("gpu-scheduler-policy")]
    assert scheduler_policy_problems(objects) == [
        "Namespace inference: scheduler policy binpack is not applied to its pods (no MutatingAdmissionPolicy "
        "for namespace inference sets hami.io/gpu-scheduler-policy)"
    ]


def test_plan_declares_admission_policies_after_namespace_and_priority_classes(plans):
    """Typed resources (so a real `pulumi up` creates them), each team policy waiting for its namespace and
    the PriorityClasses it names, all parented to the Tenancy component."""
    plan = plans["dev"]
    resources = plan["resources"]
    [tenancy_urn] = [r["urn"] for r in resources if r["type"] == "gpushare:index:Tenancy"]
    classes = {r["urn"] for r in resources if r["type"] == "kubernetes:scheduling.k8s.io/v1:PriorityClass"}
    assert len(classes) == 3
    priority = next(r for r in resources if r["name"] == "mutatingadmissionpolicy-gpushare-inference-priority")
    assert priority["type"] == "kubernetes:admissionregistration.k8s.io/v1:MutatingAdmissionPolicy"
    assert priority["parent"] == tenancy_urn
    assert classes <= set(priority["dependencies"])
    namespace = next(r["urn"] for r in resources if r["name"] == "namespace-inference")
    assert namespace in priority["dependencies"]
    pc = next(r for r in resources if r["urn"] in classes and r["name"] == "priorityclass-gpushare-batch")
    assert pc["inputs"]["value"] == 10000 and pc["inputs"]["preemptionPolicy"] == "Never"
    tokens = {r["type"] for r in resources}
    for kind in ("MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        assert f"kubernetes:admissionregistration.k8s.io/v1:{kind}" in tokens


def test_per_gpu_limit_check_finds_missing_and_loosened_policies(dev):
    objects = _team_objects(dev)
    assert per_gpu_limit_problems(dev, objects) == []
    loose = next(
        o for o in objects if o["metadata"]["name"] == "gpushare-inference-per-gpu-limit" and "validations" in o["spec"]
    )
    loose["spec"]["validations"] = loose["spec"]["validations"][1:]
    unbound = [
        o
        for o in objects
        if o["metadata"]["name"] != "gpushare-ml-research-per-gpu-limit"
        or o["kind"] != "ValidatingAdmissionPolicyBinding"
    ]
    assert per_gpu_limit_problems(dev, unbound) == [
        "team ml-research: no ValidatingAdmissionPolicyBinding gpushare-ml-research-per-gpu-limit",
        "ValidatingAdmissionPolicy gpushare-inference-per-gpu-limit: differs from the per-GPU limits of pools "
        "g4dn-shared",
    ]


def test_isolation_policy_caps_priority_at_the_tier_and_pools_at_the_team(prod):
    """Every team gets it, bound with Deny to its namespace: the ceiling is its own tier's value and the pools
    allowed are exactly its own, by both pool labels (the CEL itself runs in `make admission-test`)."""
    for team in prod.teams:
        policy, binding = tenancy.isolation_policy(prod, team)
        priority, pools, selected = policy["spec"]["validations"]
        assert priority["expression"].endswith(f"object.spec.priority <= {tenancy.PRIORITIES[team.priority][0]}")
        other_pools = [p.name for p in prod.pools if p.name not in team.pools]
        assert other_pools, "the check needs a pool the team does not have"
        for key in (names.POOL_LABEL, names.NODEPOOL_LABEL):
            assert f"'{key}'" in pools["expression"]
        assert all(f"'{p}'" in pools["expression"] for p in team.pools)
        assert not any(f"'{p}'" in pools["expression"] for p in other_pools)
        assert selected["expression"].startswith(f"!{tenancy.asks_any(tenancy.GPU_RESOURCES)} || ")
        assert policy["spec"]["failurePolicy"] == "Fail"
        assert binding["spec"]["validationActions"] == ["Deny"]
        assert binding["spec"]["matchResources"]["namespaceSelector"] == tenancy.namespace_selector(team)
        assert policy in tenancy.team_objects(prod, team)


def test_team_quota_covers_hami_resources(prod):
    """Kubernetes' requests. keys and HAMi's own limits. memory and core keys, which HAMi 2.10 charges for every
    request style."""
    objects = tenancy.team_objects(prod, prod.teams[0])
    assert [o["kind"] for o in objects][:3] == ["Namespace", "ResourceQuota", "LimitRange"]
    assert objects[1]["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "120",
        "requests.nvidia.com/gpumem": "368448",
        "requests.nvidia.com/gpucores": "1600",
        "limits.nvidia.com/gpumem": "368448",
        "limits.nvidia.com/gpucores": "1600",
    }


def test_team_memory_quota_counts_in_units_of_the_memory_factor(prod_raw):
    """Pods request gpumem in units of memoryFactor MiB, and HAMi multiplies its limit by the factor."""
    prod_raw["gpushare:hami"]["profile"]["memoryFactor"] = 4
    config = load_stack_config(prod_raw, today=PLAN_DATE)
    hard = tenancy.team_objects(config, config.teams[0])[1]["spec"]["hard"]
    assert hard["requests.nvidia.com/gpumem"] == hard["limits.nvidia.com/gpumem"] == str(368448 // 4)


def test_team_only_on_exclusive_pools_skips_the_hami_webhook(prod_raw):
    prod_raw["gpushare:teams"][0]["pools"] = ["training", "g5-shared"]
    prod_raw["gpushare:teams"].append({"name": "trainers", "pools": ["training"], "quota": {"gpus": 8}})
    config = load_stack_config(prod_raw, today=PLAN_DATE)
    namespace = tenancy.team_objects(config, config.teams[-1])[0]
    assert namespace["metadata"]["labels"]["hami.io/webhook"] == "ignore"
    mixed = tenancy.team_objects(config, config.teams[0])[0]
    assert "hami.io/webhook" not in mixed["metadata"]["labels"]


def test_team_scheduler_policy_and_pools_are_recorded_on_the_namespace(dev):
    namespace = tenancy.team_objects(dev, dev.teams[1])[0]
    assert namespace["metadata"]["annotations"] == {
        "gpushare.io/gpu-scheduler-policy": "binpack",
        "gpushare.io/node-scheduler-policy": "spread",
        "gpushare.io/pools": "g4dn-shared",
        "gpushare.io/priority": "critical",
    }
    assert tenancy.team_objects(dev, dev.teams[0])[0]["metadata"]["annotations"] == {
        "gpushare.io/pools": "g5-shared,g4dn-shared,g6-timeslice",
        "gpushare.io/priority": "batch",
    }


def test_per_gpu_memory_bound_is_in_units_of_the_memory_factor(dev_raw):
    dev_raw["gpushare:hami"]["profile"]["memoryFactor"] = 4
    config = load_stack_config(dev_raw, today=PLAN_DATE)
    validations = tenancy.per_gpu_limit_policy(config, config.teams[0])[0]["spec"]["validations"]
    [memory] = [v for v in validations if v["message"].startswith("nvidia.com/gpumem per container")]
    assert "quantity('5757')" in memory["expression"]  # 23028 MiB of an A10G in units of 4 MiB
    assert "holds 5757 units of 4 MiB (memoryFactor 4" in memory["message"]


def test_quota_keys_left_out_render_what_the_pools_register_not_zero(dev_raw):
    """A team stating only gpus once got gpumem and gpucores 0, so the API server refused its every vGPU pod."""
    dev_raw["gpushare:teams"][1]["quota"] = {"gpus": 20}
    config = load_stack_config(dev_raw, today=PLAN_DATE)
    # g4dn-shared: maxGpus 4 of 1-GPU T4 nodes (15360 MiB, 100 cores each); the team lists no time-sliced pool.
    assert tenancy.team_objects(config, config.teams[1])[1]["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "20",
        "requests.nvidia.com/gpumem": "61440",
        "requests.nvidia.com/gpucores": "400",
        "requests.nvidia.com/gpu.shared": "0",
        "limits.nvidia.com/gpumem": "61440",
        "limits.nvidia.com/gpucores": "400",
    }


def test_gpu_pods_without_the_gpu_toleration_get_it(dev):
    """ExtendedResourceToleration's job, which EKS does not enable: only GPU pods, only when none tolerates."""
    policy = _by_name(tenancy.team_objects(dev, dev.teams[1]))[
        ("MutatingAdmissionPolicy", "gpushare-inference-gpu-toleration")
    ]["spec"]
    conditions = {c["name"]: c["expression"] for c in policy["matchConditions"]}
    assert conditions == {
        "asks-gpu": tenancy.asks_any(tenancy.GPU_RESOURCES),
        "no-gpu-toleration": f"!({tenancy.tolerates_gpu_taint()})",
    }
    expression = policy["mutations"][0]["jsonPatch"]["expression"]
    wanted = f"{{'key': '{names.GPU_TAINT['key']}', 'operator': 'Exists', 'effect': '{names.GPU_TAINT['effect']}'}}"
    assert f"path: '/spec/tolerations/-', value: {wanted}" in expression
    assert f"path: '/spec/tolerations', value: [{wanted}]" in expression


def test_a_pod_without_a_pool_gets_the_one_team_pool_that_holds_it(dev):
    """ml-research: two HAMi pools (T4, A10G) and a time-sliced one; inference: one T4 pool."""
    plans = pool_plans(dev)
    for team in dev.teams:
        policy = _by_name(tenancy.team_objects(dev, team))[
            ("MutatingAdmissionPolicy", f"gpushare-{team.name}-pool-selector")
        ]["spec"]
        expression = policy["mutations"][0]["jsonPatch"]["expression"]
        for pool in team.pools:
            assert f"value: {{'{names.POOL_LABEL}': '{pool}'}}" in expression
            assert tenancy.pool_holds(pool_container_limits(plans[pool])) in expression
        assert expression.endswith(": []"), "a pod no pool alone holds gets nothing (the isolation policy refuses it)"
        assert [c["name"] for c in policy["matchConditions"]] == ["asks-gpu", "no-pool-selector"]


def test_what_one_container_may_ask_per_pool_follows_its_sharing(dev):
    plans = pool_plans(dev)
    assert pool_container_limits(plans["g5-shared"]) == per_gpu_limits(plans["g5-shared"].capacities)
    assert pool_container_limits(plans["g4dn-shared"])[names.GPU_MEMORY] == 15360
    assert pool_container_limits(plans["g6-timeslice"]) == {names.GPU_SHARED: 1}
    held = tenancy.pool_holds({names.GPU_SHARED: 1})
    assert tenancy.asks_any((names.GPU,)) in held and tenancy.asks_any((names.GPU_MEMORY,)) in held


def test_clusters_before_1_36_refuse_gpu_pods_without_the_toleration(dev_raw):
    """No MutatingAdmissionPolicy adds it there: the isolation policy names it instead of a pod Pending forever."""
    older = load_stack_config(on_minor(dev_raw, "1.35"), today=PLAN_DATE)
    [policy, _] = tenancy.isolation_policy(older, older.teams[0])
    messages = [v["message"] for v in policy["spec"]["validations"]]
    assert messages[0].startswith("a pod asking GPUs must tolerate the GPU pools' taint nvidia.com/gpu=true:NoSchedule")
    dev_raw["gpushare:cluster"]["kubernetesVersion"] = "1.36"
    current = load_stack_config(dev_raw, today=PLAN_DATE)
    [policy, _] = tenancy.isolation_policy(current, current.teams[0])
    assert not any("tolerate" in v["message"] for v in policy["spec"]["validations"])
