"""A team's manifests as written: multi-document YAML files (or folders of them) of Pods, Deployments, ReplicaSets,
StatefulSets, Jobs and CronJobs, checked before any cluster starts.

Every problem is one line naming the file and the document (1-based, in file order): a file that is not YAML, a
document that is not a Kubernetes object, and a workload the API server would refuse as written (the checks below
are the API server's own validation rules for the fields a workload cannot do without). Objects `make try` cannot
judge offline (Services, PVCs, ConfigMaps, ...) and workloads that ask no GPU are kept as skipped. Workloads are
applied unchanged but for the namespace, which becomes the team's, and, when two documents name the same workload,
the name of every one after the first (`<name>-2`, ...): the report says both.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from gpushare.errors import UserError
from gpushare.files import read_yaml_documents
from gpushare.render.tenancy import GPU_RESOURCES

# Kind -> the one apiVersion today's API server serves it as (extensions/v1beta1, apps/v1beta1/2 and batch/v1beta1
# were removed in Kubernetes 1.16 and 1.25).
WORKLOAD_API = {
    "Pod": "v1",
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
}
# Controllers whose pods restart forever: their template must say Always (the API server refuses anything else).
ALWAYS_RESTART = ("Deployment", "ReplicaSet", "StatefulSet")
SUFFIXES = (".yaml", ".yml")
# A DNS-1123 subdomain (object names) and label (container names), as apimachinery's validation defines them.
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# A resource.Quantity: a decimal number with a binary (Ki..Ei), decimal (n, u, m, k, M..E) or exponent suffix.
QUANTITY = re.compile(r"^(?P<number>[+-]?(\d+(\.\d*)?|\.\d+))(?P<suffix>[KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?$")
BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1, "k": 10**3}
DECIMAL |= {"M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
# The longest CronJob name: its Jobs are named <cronjob>-<minutes since epoch>, within a label's 63 characters.
CRONJOB_NAME_MAX = 52


@dataclass(frozen=True)
class Workload:
    """One workload document as it goes onto the cluster: `obj` is the document with the team's namespace (and,
    for a repeated name, `name` instead of `written_name`)."""

    file: str
    document: int
    kind: str
    written_name: str
    name: str
    written_namespace: str | None
    obj: dict[str, Any]

    @property
    def source(self) -> str:
        return f"{self.file}#{self.document}"

    @property
    def template(self) -> dict[str, Any]:
        """The pod template (a bare Pod is its own)."""
        return pod_template(self.kind, self.obj)


@dataclass(frozen=True)
class Skipped:
    file: str
    document: int
    kind: str
    name: str
    why: str

    @property
    def source(self) -> str:
        return f"{self.file}#{self.document}"


@dataclass(frozen=True)
class Manifests:
    workloads: tuple[Workload, ...]
    skipped: tuple[Skipped, ...]


def pod_template(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    if kind == "Pod":
        return {"metadata": obj.get("metadata") or {}, "spec": spec}
    if kind == "CronJob":
        spec = ((spec or {}).get("jobTemplate") or {}).get("spec")
    return (spec or {}).get("template") or {}


def quantity(value: Any) -> Fraction | None:
    """A Kubernetes quantity (`500m`, `2`, `16Gi`, `1e3`) as a number, None when it is none."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    found = QUANTITY.match(str(value).strip())
    if found is None:
        return None
    number, suffix = Fraction(found["number"]), found["suffix"] or ""
    if suffix in BINARY:
        return number * BINARY[suffix]
    if suffix in DECIMAL:
        return number * DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


def containers(template: dict[str, Any]) -> list[dict[str, Any]]:
    """Containers and init containers of a pod template, the ones that are mappings."""
    spec = template.get("spec") or {}
    listed = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    return [c for c in listed if isinstance(c, dict)]


def asks_gpu(template: dict[str, Any]) -> bool:
    for container in containers(template):
        resources = container.get("resources") or {}
        for side in ("requests", "limits"):
            if any(resource in GPU_RESOURCES for resource in resources.get(side) or {}):
                return True
    return False


def _container_problems(container: Any, where: str) -> list[str]:
    if not isinstance(container, dict):
        return [f"{where}: is not a mapping"]
    problems = []
    name = container.get("name")
    if not isinstance(name, str) or not LABEL.match(name) or len(name) > 63:
        problems.append(f"{where}.name: {name!r} must be a DNS label (lower-case letters, digits, '-', 63 at most)")
    if not container.get("image"):
        problems.append(f"{where}.image: missing; the API server refuses a container without an image")
    resources = container.get("resources") or {}
    if not isinstance(resources, dict):
        return [*problems, f"{where}.resources: is not a mapping"]
    values: dict[str, dict[str, Fraction]] = {}
    for side in ("requests", "limits"):
        asked = resources.get(side) or {}
        if not isinstance(asked, dict):
            problems.append(f"{where}.resources.{side}: is not a mapping")
            continue
        for resource, value in asked.items():
            amount = quantity(value)
            if amount is None:
                problems.append(
                    f"{where}.resources.{side}[{resource}]: {value!r} is not a quantity (e.g. 500m, 2, 16Gi)"
                )
            elif amount < 0:
                problems.append(f"{where}.resources.{side}[{resource}]: {value!r} must not be negative")
            elif "/" in str(resource) and not str(resource).startswith("kubernetes.io/") and amount.denominator != 1:
                problems.append(
                    f"{where}.resources.{side}[{resource}]: {value!r} must be a whole number (extended resource)"
                )
            else:
                values.setdefault(side, {})[str(resource)] = amount
    requests, limits = values.get("requests", {}), values.get("limits", {})
    for resource, amount in requests.items():
        extended = "/" in resource and not resource.startswith("kubernetes.io/")
        if extended and resource not in limits:
            problems.append(
                f"{where}.resources.limits[{resource}]: missing; an extended resource requested must be limited too"
            )
        elif extended and limits[resource] != amount:
            problems.append(f"{where}.resources.requests[{resource}]: must equal its limit (no overcommit)")
        elif resource in limits and amount > limits[resource]:
            problems.append(f"{where}.resources.requests[{resource}]: must be less than or equal to its limit")
    return problems


def _template_problems(kind: str, obj: dict[str, Any]) -> list[str]:
    """What the API server would refuse in the workload's pod template and its controller's spec."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return ["spec: missing"]
    problems = []
    prefix = {"Pod": "spec", "CronJob": "spec.jobTemplate.spec.template.spec"}.get(kind, "spec.template.spec")
    if kind == "CronJob":
        if not isinstance(spec.get("schedule"), str) or not spec["schedule"].strip():
            problems.append("spec.schedule: missing; a CronJob needs a cron schedule")
        if not isinstance(spec.get("jobTemplate"), dict):
            return [*problems, "spec.jobTemplate: missing"]
    template = pod_template(kind, obj)
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(pod_spec, dict):
        return [*problems, f"{prefix}: missing; a {kind} needs a pod template"]
    listed = pod_spec.get("containers")
    if not isinstance(listed, list) or not listed:
        problems.append(f"{prefix}.containers: missing; a pod needs at least one container")
    for side in ("containers", "initContainers"):
        items = pod_spec.get(side) or []
        if not isinstance(items, list):
            problems.append(f"{prefix}.{side}: is not a list")
            continue
        for index, container in enumerate(items):
            problems += _container_problems(container, f"{prefix}.{side}[{index}]")
    named = [c.get("name") for c in containers(template)]
    for name in sorted({n for n in named if isinstance(n, str) and named.count(n) > 1}):
        problems.append(f"{prefix}: container name {name!r} is used twice")
    restart = pod_spec.get("restartPolicy")
    if kind in ALWAYS_RESTART and restart not in (None, "Always"):
        problems.append(f"{prefix}.restartPolicy: {restart!r}; a {kind}'s pods must restart Always")
    if kind in ("Job", "CronJob") and restart not in ("Never", "OnFailure"):
        problems.append(f"{prefix}.restartPolicy: {restart!r}; a Job's pods need Never or OnFailure")
    if kind in ALWAYS_RESTART:
        selector = spec.get("selector")
        wanted = selector.get("matchLabels") if isinstance(selector, dict) else None
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not isinstance(selector, dict) or not (wanted or selector.get("matchExpressions")):
            problems.append(f"spec.selector: missing; apps/v1 {kind}s must select their pods")
        elif isinstance(wanted, dict) and any(labels.get(k) != v for k, v in wanted.items()):
            problems.append("spec.selector: does not match the template's labels (spec.template.metadata.labels)")
    return problems


def _object_problems(doc: Any) -> tuple[list[str], str]:
    """Why a document is not a Kubernetes object (an empty list when it is), and its kind."""
    if not isinstance(doc, dict):
        return [f"is not a Kubernetes object (a {type(doc).__name__ if doc is not None else 'empty document'})"], ""
    kind, api = doc.get("kind"), doc.get("apiVersion")
    missing = [key for key, value in (("apiVersion", api), ("kind", kind)) if not isinstance(value, str) or not value]
    name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    if kind == "List" and not missing:
        return ["is a List: write each of its items as a document of its own"], ""
    if not isinstance(name, str):
        missing.append("metadata.name")
    if missing:
        return [f"is not a Kubernetes object (no {', '.join(missing)})"], ""
    return [], str(kind)


def _workload_problems(kind: str, doc: dict[str, Any]) -> list[str]:
    problems = []
    if doc["apiVersion"] != WORKLOAD_API[kind]:
        problems.append(f"apiVersion: {doc['apiVersion']!r}; the API server serves {kind} as {WORKLOAD_API[kind]}")
    name = doc["metadata"]["name"]
    longest = CRONJOB_NAME_MAX if kind == "CronJob" else 253 if kind == "Pod" else 63
    if not SUBDOMAIN.match(name) or len(name) > longest:
        problems.append(
            f"metadata.name: {name!r} must be lower-case letters, digits, '-' and '.', starting and ending with a "
            f"letter or digit, {longest} characters at most"
        )
    return problems + _template_problems(kind, doc)


def manifest_files(path: Path) -> list[Path]:
    """The file, or every .yaml/.yml file under the folder, in path order."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
    return [path]


def read_manifests(path: Path, namespace: str) -> Manifests:
    """The workloads and skipped objects of `path`; UserError with one line per problem of every file."""
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    files = manifest_files(path)
    if not files:
        raise UserError(f"{path}: holds no .yaml or .yml file")
    problems: list[str] = []
    workloads: list[Workload] = []
    skipped: list[Skipped] = []
    taken: dict[tuple[str, str], str] = {}
    for file in files:
        try:
            documents = read_yaml_documents(file)
        except UserError as error:
            problems.append(str(error).replace(f"{file}: ", f"{file}: not YAML: ", 1))
            continue
        for index, doc in enumerate(documents, start=1):
            if doc is None:  # an empty document (`---` at the end, a comment only): kubectl skips it too
                continue
            where = f"{file}: document {index}"
            wrong, kind = _object_problems(doc)
            if wrong:
                problems += [f"{where}: {line}" for line in wrong]
                continue
            name = doc["metadata"]["name"]
            if kind not in WORKLOAD_API:
                skipped.append(Skipped(str(file), index, kind, name, f"a {kind} is not a workload make try judges"))
                continue
            found = _workload_problems(kind, doc)
            if found:
                problems += [f"{where} ({kind} {name}): {line}" for line in found]
                continue
            if not asks_gpu(pod_template(kind, doc)):
                skipped.append(Skipped(str(file), index, kind, name, "asks no GPU"))
                continue
            unique = _unique(kind, name, taken)
            taken[(kind, unique)] = f"{file}#{index}"
            obj = copy.deepcopy(doc)
            written_namespace = obj["metadata"].get("namespace")
            obj["metadata"] = {**obj["metadata"], "name": unique, "namespace": namespace}
            workloads.append(Workload(str(file), index, kind, name, unique, written_namespace, obj))
    if problems:
        raise UserError("\n".join(problems))
    if not workloads:
        raise UserError(
            f"{path}: holds no workload asking a GPU (Pod, Deployment, ReplicaSet, StatefulSet, Job, CronJob)"
        )
    return Manifests(tuple(workloads), tuple(skipped))


def _unique(kind: str, name: str, taken: dict[tuple[str, str], str]) -> str:
    """`name`, or `name-2`, `name-3`, ... when an earlier document holds a workload of that kind and name."""
    candidate, count = name, 1
    while (kind, candidate) in taken:
        count += 1
        candidate = f"{name}-{count}"
    return candidate
