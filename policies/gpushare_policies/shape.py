"""The shape of every field a rule reads, checked once before any rule runs.

Rules read plans and engine snapshots leniently (a missing field is a finding, not a crash), but a field of
the wrong JSON type (a string where a list of requirements belongs) would crash them. A malformed stack is
refused here with one line naming the resource and the path, the same in `make check`, `make plan` and the
Pulumi analyzer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from gpushare import names
from gpushare.errors import UserError

from .stack import (
    CAPACITY_BUFFER,
    DAEMON_SET,
    EC2_NODE_CLASS,
    EKS_CLUSTER,
    EKS_COMPONENT,
    HELM_RELEASE,
    LIMIT_RANGE,
    NAMESPACE,
    NODE_OVERLAY,
    NODE_POOL,
    POD_TEMPLATE,
    RESOURCE_QUOTA,
    UNKNOWN,
    Resource,
    StackView,
)


class MalformedStack(UserError):
    """A field a rule reads has the wrong JSON type."""


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


KINDS: Final[dict[str, tuple[str, Callable[[Any], bool]]]] = {
    "obj": ("an object", lambda v: isinstance(v, dict)),
    "list": ("a list", lambda v: isinstance(v, list)),
    "str": ("a string", lambda v: isinstance(v, str)),
    "int": ("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "scalar": ("a string, number or boolean", _scalar),
}
_POD = "spec.template.spec"
_TEMPLATE = {
    "metadata": "obj",
    "metadata.name": "str",
    "metadata.labels": "obj",
    "metadata.labels.*": "str",
    "metadata.annotations": "obj",
    "metadata.annotations.*": "str",
}
# A metav1.LabelSelector, relative to where it sits.
_LABEL_SELECTOR = {
    "": "obj",
    ".matchLabels": "obj",
    ".matchLabels.*": "str",
    ".matchExpressions[]": "obj",
    ".matchExpressions[].key": "str",
    ".matchExpressions[].values[]": "str",
}
# Per resource type: path -> kind. `a[]` walks each item of list a; `a.*` each value of object a.
SHAPES: Final[dict[str, dict[str, str]]] = {
    NODE_POOL: {
        **_TEMPLATE,
        "spec": "obj",
        "spec.template": "obj",
        "spec.template.metadata": "obj",
        "spec.template.metadata.labels": "obj",
        "spec.template.metadata.labels.*": "str",
        "spec.template.spec": "obj",
        "spec.template.spec.requirements[]": "obj",
        "spec.template.spec.requirements[].key": "str",
        "spec.template.spec.requirements[].operator": "str",
        "spec.template.spec.requirements[].values[]": "scalar",
        "spec.template.spec.taints[]": "obj",
        "spec.template.spec.startupTaints[]": "obj",
        "spec.template.spec.nodeClassRef": "obj",
        "spec.template.spec.nodeClassRef.*": "scalar",
        "spec.limits": "obj",
        "spec.limits.*": "scalar",
        "spec.disruption": "obj",
        "spec.disruption.budgets[]": "obj",
    },
    NODE_OVERLAY: {
        **_TEMPLATE,
        "spec": "obj",
        "spec.requirements[]": "obj",
        "spec.requirements[].key": "str",
        "spec.requirements[].operator": "str",
        "spec.requirements[].values[]": "scalar",
        "spec.capacity": "obj",
        "spec.capacity.*": "scalar",
        "spec.weight": "int",
    },
    EC2_NODE_CLASS: {
        **_TEMPLATE,
        "spec": "obj",
        "spec.metadataOptions": "obj",
        "spec.blockDeviceMappings[]": "obj",
        "spec.blockDeviceMappings[].ebs": "obj",
        "spec.subnetSelectorTerms[]": "obj",
        "spec.subnetSelectorTerms[].tags": "obj",
        "spec.securityGroupSelectorTerms[]": "obj",
        "spec.securityGroupSelectorTerms[].tags": "obj",
        "spec.amiSelectorTerms[]": "obj",
        "spec.tags": "obj",
    },
    DAEMON_SET: {
        **_TEMPLATE,
        "spec": "obj",
        "spec.template": "obj",
        _POD: "obj",
        f"{_POD}.nodeSelector": "obj",
        f"{_POD}.nodeSelector.*": "scalar",
        f"{_POD}.tolerations[]": "obj",
        f"{_POD}.affinity": "obj",
        f"{_POD}.volumes[]": "obj",
        f"{_POD}.volumes[].name": "str",
        f"{_POD}.volumes[].configMap": "obj",
        f"{_POD}.containers[]": "obj",
        f"{_POD}.containers[].image": "str",
        f"{_POD}.containers[].command[]": "scalar",
        f"{_POD}.containers[].args[]": "scalar",
        f"{_POD}.containers[].volumeMounts[]": "obj",
        f"{_POD}.containers[].volumeMounts[].*": "scalar",
        f"{_POD}.containers[].securityContext": "obj",
    },
    HELM_RELEASE: {
        "name": "str",
        "chart": "str",
        "version": "str",
        "namespace": "str",
        "values": "obj",
        "values.scheduler": "obj",
        "values.scheduler.kubeScheduler": "obj",
        "values.scheduler.kubeScheduler.image": "obj",
        "values.scheduler.defaultSchedulerPolicy": "obj",
        "values.devicePlugin": "obj",
        "values.devicePlugin.tolerations[]": "obj",
        "values.devicePlugin.nvidiaNodeSelector": "obj",
        "values.devicePlugin.nvidianodeSelector": "obj",
        "values.resourceName": "str",
        "values.resourceMem": "str",
        "values.resourceCores": "str",
        "values.resourceMemPercentage": "str",
        "values.settings": "obj",
        "values.settings.featureGates": "obj",
        "values.nodeSelector": "obj",
        "values.tolerations[]": "obj",
        "values.image": "obj",
        "values.image.frontend": "obj",
        "values.image.backend": "obj",
        "values.affinity": "obj",
        "values.affinity.nodeAffinity": "obj",
        "values.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution": "obj",
        "values.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[]": "obj",
        "values.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[]"
        ".matchExpressions[]": "obj",
        **{
            f"values.prometheus.prometheusSpec.{kind}{selector}{path}": shape
            for kind in ("rule", "serviceMonitor")
            for selector in ("Selector", "NamespaceSelector")
            for path, shape in _LABEL_SELECTOR.items()
        },
    },
    f"kubernetes:{names.MONITORING_API}:PrometheusRule": {
        **_TEMPLATE,
        "spec": "obj",
        "spec.groups[]": "obj",
        "spec.groups[].rules[]": "obj",
    },
    f"kubernetes:{names.MONITORING_API}:ServiceMonitor": {
        **_TEMPLATE,
        "spec": "obj",
        "spec.namespaceSelector": "obj",
        "spec.namespaceSelector.matchNames[]": "str",
        **{f"spec.selector{path}": kind for path, kind in _LABEL_SELECTOR.items()},
        "spec.endpoints[]": "obj",
        "spec.endpoints[].port": "str",
    },
    NAMESPACE: {**_TEMPLATE},
    LIMIT_RANGE: {
        **_TEMPLATE,
        "spec": "obj",
        "spec.limits[]": "obj",
        "spec.limits[].default": "obj",
        "spec.limits[].defaultRequest": "obj",
        "spec.limits[].max": "obj",
        "spec.limits[].min": "obj",
    },
    **{
        f"kubernetes:admissionregistration.k8s.io/v1:{kind}": {
            **_TEMPLATE,
            "spec": "obj",
            "spec.policyName": "str",
            "spec.matchConstraints": "obj",
            "spec.matchResources": "obj",
            **{
                f"spec.{match}.namespaceSelector{path}": kind
                for match in ("matchConstraints", "matchResources")
                for path, kind in _LABEL_SELECTOR.items()
            },
            "spec.mutations[]": "obj",
            "spec.mutations[].applyConfiguration": "obj",
            "spec.mutations[].applyConfiguration.expression": "str",
        }
        for kind in (
            "MutatingAdmissionPolicy",
            "MutatingAdmissionPolicyBinding",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        )
    },
    RESOURCE_QUOTA: {**_TEMPLATE, "spec": "obj", "spec.hard": "obj", "spec.hard.*": "scalar"},
    POD_TEMPLATE: {
        **_TEMPLATE,
        "metadata.namespace": "str",
        "template": "obj",
        "template.spec": "obj",
        "template.spec.nodeSelector": "obj",
        "template.spec.nodeSelector.*": "scalar",
        "template.spec.tolerations[]": "obj",
        "template.spec.affinity": "obj",
        "template.spec.containers[]": "obj",
        "template.spec.containers[].resources": "obj",
        "template.spec.containers[].resources.requests": "obj",
        "template.spec.containers[].resources.requests.*": "scalar",
        "template.spec.containers[].resources.limits": "obj",
        "template.spec.containers[].resources.limits.*": "scalar",
    },
    CAPACITY_BUFFER: {
        **_TEMPLATE,
        "metadata.namespace": "str",
        "spec": "obj",
        "spec.podTemplateRef": "obj",
        "spec.podTemplateRef.name": "str",
        "spec.replicas": "int",
        "spec.limits": "obj",
        "spec.limits.*": "scalar",
    },
    EKS_COMPONENT: {"publicAccessCidrs[]": "str", "tags": "obj"},
    EKS_CLUSTER: {"vpcConfig": "obj", "vpcConfig.publicAccessCidrs[]": "str"},
}


def _problem(value: Any, parts: list[str], where: str, kind: str) -> str | None:
    if value is None or value is UNKNOWN:
        return None
    if not parts:
        description, fits = KINDS[kind]
        return None if fits(value) else f"{where} is {type(value).__name__} {value!r:.40}; expected {description}"
    head, rest = parts[0], parts[1:]
    if not isinstance(value, dict):
        return None  # the parent's own entry reports it
    if head == "*":
        return next((p for key, item in value.items() if (p := _problem(item, rest, f"{where}.{key}", kind))), None)
    key, many = (head[:-2], True) if head.endswith("[]") else (head, False)
    child = value.get(key)
    path = f"{where}.{key}" if where else key
    if not many:
        return _problem(child, rest, path, kind)
    if child is None or child is UNKNOWN:
        return None
    if not isinstance(child, list):
        return f"{path} is {type(child).__name__} {child!r:.40}; expected a list"
    return next((p for i, item in enumerate(child) if (p := _problem(item, rest, f"{path}[{i}]", kind))), None)


def problems(resource: Resource) -> list[str]:
    """`<Kind> <name>: <path> is <type> <value>; expected <kind>` for each misshapen field."""
    found = []
    for path, kind in SHAPES.get(resource.type, {}).items():
        problem = _problem(resource.props, path.split("."), "", kind)
        if problem:
            found.append(f"{resource.label}: {problem}")
    return found


def check_shapes(view: StackView) -> None:
    """MalformedStack naming the first misshapen field (all of them, one per line, in its text)."""
    found = [problem for resource in view.resources for problem in problems(resource)]
    if found:
        raise MalformedStack(
            "malformed stack: " + "; ".join(found[:1]) + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
        )
