"""HAMi's admission webhook sees exactly the team namespaces that use HAMi pools.

HAMi's webhook hands every pod asking nvidia.com/gpu to hami-scheduler, which cannot place pods on nodes
without HAMi; namespaces labelled hami.io/webhook=ignore are skipped, and so are those the release lists in
scheduler.admissionWebhook.whitelistNamespaces, those its namespaceSelector (2.10.0) does not select, and all of
them when the webhook is off; with manageNamespaceSelector false (2.10.0) the chart renders no namespaceSelector and
the label skips nothing (charts/hami/templates/scheduler/webhook.yaml 2.8.3, 2.10.0). Teams on exclusive pools only
need the label; teams on a HAMi pool must be seen, or their pods bypass HAMi's placement and isolation.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..hami import Hami
from ..kube import pools
from ..rule import Finding, Rule, finding
from ..selectors import namespace_labels, selects
from ..stack import NAMESPACE, StackView, sorted_by_name

LABEL, IGNORE = names.HAMI_WEBHOOK_IGNORE


def check(view: StackView, _config: None) -> Iterator[Finding]:
    sharing = {pool.name: pool.labels.get(names.SHARING_LABEL) for pool in pools(view)}
    hami = Hami.of(view)
    webhook = hami.webhook if hami is not None else {}
    selector = hami.webhook_namespace_selector if hami is not None else None
    skipped = webhook.get("whitelistNamespaces")
    skipped = [str(n) for n in skipped] if isinstance(skipped, list) else []
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        labels = namespace.get("metadata", "labels") or {}
        listed = (namespace.get("metadata", "annotations") or {}).get(names.TEAM_POOLS_ANNOTATION)
        if names.TEAM_LABEL not in labels or not listed:
            continue
        team_pools = [name.strip() for name in str(listed).split(",") if name.strip() in sharing]
        uses_hami = any(sharing[name] == names.SHARING_HAMI for name in team_pools)
        ignored = labels.get(LABEL) == IGNORE
        if uses_hami and hami is not None and webhook.get("enabled") is False:
            yield finding(
                hami.resource,
                "values.scheduler.admissionWebhook.enabled",
                False,
                f"team {namespace.object_name} uses HAMi pools, but without HAMi's webhook no pod is handed to "
                "hami-scheduler: HAMi places none of them",
                "remove the key (the chart turns the webhook on)",
            )
        if uses_hami and namespace.object_name in skipped:
            yield finding(
                hami.resource,
                "values.scheduler.admissionWebhook.whitelistNamespaces",
                skipped,
                f"team {namespace.object_name} uses HAMi pools, but HAMi's webhook skips its namespace: its pods "
                "bypass hami-scheduler and its GPU memory isolation",
                f"remove {namespace.object_name} from the list",
            )
        elif (
            uses_hami
            and not ignored
            and hami is not None
            and selector is not None
            and not selects(selector, namespace_labels(namespace.object_name, labels))
        ):
            yield finding(
                hami.resource,
                "values.scheduler.admissionWebhook.namespaceSelector",
                webhook.get("namespaceSelector"),
                f"team {namespace.object_name} uses HAMi pools, but the webhook's namespaceSelector does not select "
                "its namespace: its pods bypass hami-scheduler and its GPU memory isolation",
                f"select namespace {namespace.object_name} (or drop the key)",
            )
        if not uses_hami and ignored and hami is not None and selector is None:
            yield finding(
                hami.resource,
                "values.scheduler.admissionWebhook.manageNamespaceSelector",
                False,
                f"chart {hami.version} then renders no namespaceSelector, so HAMi's webhook also sends the GPU pods of "
                f"team {namespace.object_name} (exclusive pools only, labelled {LABEL}={IGNORE}) to hami-scheduler, "
                "which cannot place them",
                "remove the key (the chart renders the selector that skips the label)",
            )
        if uses_hami and ignored:
            yield finding(
                namespace,
                f'metadata.labels["{LABEL}"]',
                labels.get(LABEL),
                "the team uses HAMi pools, but HAMi's webhook skips its pods: they bypass hami-scheduler and its "
                "GPU memory isolation",
                f"remove the {LABEL} label",
            )
        elif team_pools and not uses_hami and not ignored:
            yield finding(
                namespace,
                f'metadata.labels["{LABEL}"]',
                labels.get(LABEL),
                "the team uses only exclusive pools, so HAMi's webhook sends its GPU pods to hami-scheduler, "
                "which cannot place them",
                f"label the namespace {LABEL}={IGNORE}",
            )


RULE = Rule(
    name="hami-webhook-scope",
    order=18,
    description=f"Team namespaces on exclusive pools only carry {LABEL}={IGNORE}, which the webhook's "
    "namespaceSelector honours; namespaces of teams on HAMi pools do not, and the HAMi release's webhook is on and "
    "selects them (not in whitelistNamespaces, within its namespaceSelector).",
    why="Without the label exclusive-pool pods go to hami-scheduler and stay Pending; with it, shared-pool "
    "pods bypass HAMi.",
    remediation="Keep the label gpushare puts on namespaces of exclusive-only teams, and only there.",
    enforcement="mandatory",
    severity="high",
    check=check,
)
