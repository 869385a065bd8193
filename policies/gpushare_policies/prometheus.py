"""What the stack's kube-prometheus-stack release renders for its Prometheus, as the pinned chart's templates do
(prometheus-community/helm-charts, charts/kube-prometheus-stack at 88.5.3: templates/prometheus/prometheus.yaml
and values.yaml); the chart is never rendered here, so its defaults are written down."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpushare import names

from .stack import Resource, StackView

SPEC = ("values", "prometheus", "prometheusSpec")
# values.yaml 88.5.3: every *SelectorNilUsesHelmValues defaults to true, selectors and namespace selectors to {}.
NIL_USES_HELM_VALUES_DEFAULT = True


@dataclass(frozen=True)
class Selection:
    """How the Prometheus the chart renders selects one kind of object: the label selector (None: it selects no
    object at all), the namespace selector, and the values key that decided the selector."""

    selector: dict[str, Any] | None
    namespace_selector: dict[str, Any]
    key: str
    value: Any


def kube_prometheus_stack(view: StackView) -> Resource | None:
    return view.release(names.KUBE_PROMETHEUS_STACK_CHART)


def selection(release: Resource, kind: str) -> Selection:
    """`kind` is `rule` or `serviceMonitor`. The template: a non-empty `<kind>Selector` is used as given; else
    `<kind>SelectorNilUsesHelmValues` true selects `release: <release name>`; else `{}` selects everything, except
    that a ruleSelector set to null renders no ruleSelector, which makes the operator select no rule. A
    namespace selector is used as given, or `{}` (every namespace)."""
    spec = release.get(*SPEC) or {}
    given = spec.get(f"{kind}Selector")
    namespaces = spec.get(f"{kind}NamespaceSelector")
    namespace_selector = namespaces if isinstance(namespaces, dict) and namespaces else {}
    base = "values.prometheus.prometheusSpec."
    if isinstance(given, dict) and given:
        return Selection(given, namespace_selector, f"{base}{kind}Selector", given)
    nil_uses = spec.get(f"{kind}SelectorNilUsesHelmValues", NIL_USES_HELM_VALUES_DEFAULT)
    if nil_uses:
        selector = {"matchLabels": {"release": release.object_name}}
        return Selection(selector, namespace_selector, f"{base}{kind}SelectorNilUsesHelmValues", nil_uses)
    if kind == "rule" and f"{kind}Selector" in spec and given is None:
        return Selection(None, namespace_selector, f"{base}{kind}Selector", None)
    return Selection({}, namespace_selector, f"{base}{kind}Selector", given)


def agent_mode(release: Resource) -> bool:
    """prometheus.agentMode: the chart renders a PrometheusAgent, which evaluates no rules."""
    return release.get("values", "prometheus", "agentMode") is True


@dataclass(frozen=True)
class VolumeClaim:
    """A volume the chart's Prometheus or Alertmanager claims: `spec` is the release path of its custom resource's
    spec in the values, `storage` the key under it holding the claim (prometheusSpec.storageSpec and
    alertmanagerSpec.storage: templates/prometheus/prometheus.yaml, templates/alertmanager/alertmanager.yaml at
    88.5.3)."""

    what: str
    spec: tuple[str, ...]
    storage: str

    def template(self, release: Resource) -> Any:
        """The claim template in the release's values, None when the component keeps no volume."""
        return release.get(*self.spec, self.storage, "volumeClaimTemplate")

    def path(self, *keys: str) -> str:
        """`values.<spec>.<keys>` as messages name it."""
        return ".".join((*self.spec, *keys))


VOLUME_CLAIMS = (
    VolumeClaim("Prometheus", SPEC, "storageSpec"),
    VolumeClaim("Alertmanager", ("values", "alertmanager", "alertmanagerSpec"), "storage"),
)
