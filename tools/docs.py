"""Documentation tables generated from the code: `make docs` rewrites them in place between their markers, in
whichever page (README.md, docs/*.md, e2e/README.md) `TABLES` says holds each.

The config table walks the pydantic schema (so a field added anywhere appears without editing this file),
the catalog table reads the shipped catalog, the policy table reads the pack's registry, the scenario table the
scenarios `make e2e` runs.
"""

from __future__ import annotations

import json
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import AwareDatetime, BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from e2e.simulator.replay import Mapping, PodLine
from e2e.simulator.trace import Trace
from e2e.suites.runner import SCENARIOS
from gpushare import images, versions
from gpushare.catalog import load_catalog
from gpushare.config import PATTERN_RULES, PROJECT, StackConfig
from gpushare.errors import EXIT_BAD_INPUT, UserError
from gpushare.hami import SharingProfile, node_capacity, smallest_memory_factor
from gpushare.paths import PROJECT_ROOT
from policies.gpushare_policies.registry import RULES


class DocsError(UserError):
    """A page lacks a marker pair the generator fills."""


def _cell(text: str) -> str:
    """Markdown table cells cannot hold a bare `|` or a line break."""
    return text.replace("|", "\\|").replace("\n", " ")


def _text(text: str) -> str:
    """Prose in a cell: `<name>` placeholders would otherwise be read as HTML tags and vanish."""
    return _cell(text).replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    return f"`{_cell(text)}`"


def _models(annotation: Any) -> list[type[BaseModel]]:
    return [a for a in get_args(annotation) or (annotation,) if isinstance(a, type) and issubclass(a, BaseModel)]


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def type_name(annotation: Any) -> str:
    """A reader's name for a field's type: `list of string`, `binpack / spread`, `int`."""
    if _is_union(annotation):
        return " or ".join(type_name(a) for a in get_args(annotation) if a is not type(None))
    origin = get_origin(annotation)
    if origin is Annotated:  # a type with its own validator (SubnetId, Cidr, ...): named by what it holds
        return type_name(get_args(annotation)[0])
    if origin is Literal:
        return " / ".join(str(v) for v in get_args(annotation))
    if origin in (tuple, list):
        return f"list of {type_name(get_args(annotation)[0])}"
    if origin is dict:
        return "map"
    names = {str: "string", int: "int", float: "number", bool: "bool", AwareDatetime: "RFC 3339 time"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def default_text(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    default = field.default
    if default is None or default is PydanticUndefined:
        return "none"
    if isinstance(default, tuple):
        default = list(default)
    if isinstance(default, str):
        return _code(default)
    return _code(json.dumps(default))


_BOUNDS: tuple[tuple[type, str, str], ...] = (
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "<="),
    (annotated_types.Lt, "lt", "<"),
)


def constraints_text(field: FieldInfo) -> str:
    """Bounds, lengths and patterns pydantic enforces on the field, as the docs state them (a stack key's pattern
    in the words its error message uses)."""
    parts = []
    for item in field.metadata:
        for kind, attribute, sign in _BOUNDS:
            if isinstance(item, kind):
                parts.append(f"{sign} {getattr(item, attribute)}")
        if isinstance(item, annotated_types.MinLen):
            parts.append(f"at least {item.min_length}")
        if isinstance(item, annotated_types.MaxLen):
            parts.append(f"at most {item.max_length}")
        pattern = getattr(item, "pattern", None)
        if pattern is not None:
            parts.append(PATTERN_RULES.get(pattern) or _code(pattern))  # the rule a refused value is told
    return ", ".join(parts)


Row = tuple[str, str, str, str, str]


def field_rows(key: str, field: FieldInfo) -> list[Row]:
    """(key, type, default, allowed, meaning) for a leaf field, or for every leaf below a nested model."""
    nested = _models(field.annotation)
    if not nested:
        return [
            (key, type_name(field.annotation), default_text(field), constraints_text(field), field.description or "")
        ]
    # An optional object gets its own row: its children's defaults apply only once it is set.
    head = [(key, "object", "none", "", field.description or "")] if field.default is None else []
    if get_origin(field.annotation) in (tuple, list):
        key += "[]"
    if get_origin(field.annotation) is dict:  # a map of objects: its keys are names (perPool.<pool>)
        head = [(key, "map", default_text(field), "", field.description or "")]
        key += ".<name>"
    return head + [
        row for name, sub in nested[0].model_fields.items() for row in field_rows(f"{key}.{sub.alias or name}", sub)
    ]


def stack_config_rows() -> list[Row]:
    """Every stack config key in schema order; `region` is Pulumi's `aws:region`, the rest are `gpushare:*`."""
    rows = []
    for name, field in StackConfig.model_fields.items():
        key = field.alias or name
        rows.extend(field_rows("aws:region" if key == "region" else f"{PROJECT}:{key}", field))
    return rows


def config_table() -> str:
    lines = ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    for key, kind, default, allowed, meaning in stack_config_rows():
        lines.append(f"| {_code(key)} | {_text(kind)} | {default} | {allowed} | {_text(meaning)} |")
    return "\n".join(lines)


def model_table(model: type[BaseModel], prefix: str = "") -> str:
    """Every key of a model's schema (nested models flattened), as the docs' key tables show them."""
    lines = ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    for name, field in model.model_fields.items():
        for key, kind, default, allowed, meaning in field_rows(prefix + (field.alias or name), field):
            lines.append(f"| {_code(key)} | {_text(kind)} | {default} | {allowed} | {_text(meaning)} |")
    return "\n".join(lines)


def trace_table() -> str:
    """Every key of a `make simulate` trace file (e2e.simulator.trace), from its schema."""
    return model_table(Trace)


def replay_table() -> str:
    """Every key of a replay's mapping file, then every column of its pod list (e2e.simulator.replay)."""
    return model_table(Mapping) + "\n" + model_table(PodLine, "(pod list) ").split("\n", 2)[2]


def catalog_table() -> str:
    """Every catalog instance type with what one node registers under the default HAMi profile, and the least
    memoryFactor a HAMi pool of it needs (above 1, gpumem is registered and requested in units of that many MiB)."""
    catalog = load_catalog()
    profile = SharingProfile()
    lines = [
        "| instance type | GPUs | GPU | vGPUs (split 10) | gpumem MiB | HAMi memoryFactor at least | vCPU | memory GiB "
        "| USD/h on-demand |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for itype in catalog.instance_types:
        factor = smallest_memory_factor(catalog, itype, profile)
        cap = node_capacity(catalog, itype, SharingProfile(memoryFactor=factor))
        lines.append(
            f"| {itype.name} | {itype.gpu_count} | {itype.gpu_model} | {cap.vgpus} | {cap.gpu_memory_mib} | {factor} "
            f"| {itype.vcpu} | {itype.memory_mib // 1024} | {itype.on_demand_usd_per_hour} |"
        )
    return "\n".join(lines)


def policy_table() -> str:
    """The policy pack's rules: id, level, what, why, fix."""
    lines = ["| id | level | what | why | fix |", "|---|---|---|---|---|"]
    for rule in RULES:
        config = ", ".join(f"`{key}`" for key in rule.config_schema())
        fix = f"{rule.remediation} Tunable: {config}." if config else rule.remediation
        lines.append(
            f"| `{rule.name}` | {rule.enforcement} ({rule.severity}) | {rule.description} | {rule.why} | {fix} |"
        )
    return "\n".join(lines)


def policy_config_table() -> str:
    """Every tunable property of the pack's rules, from each rule's config schema."""
    lines = ["| policy | property | type | default | meaning |", "|---|---|---|---|---|"]
    for rule in RULES:
        for name, schema in rule.config_schema().items():
            default = _code(json.dumps(schema["default"])) if "default" in schema else "required"
            lines.append(
                f"| `{rule.name}` | `{name}` | {schema.get('type', '')} | {default} "
                f"| {_text(schema.get('description', ''))} |"
            )
    return "\n".join(lines)


def minimum_versions_table() -> str:
    """Each feature's minimum version, and Karpenter's per Kubernetes minor, from gpushare/minimum-versions.yaml."""
    lines = ["| feature | needs | set by | on an older version | source |", "|---|---|---|---|---|"]
    for entry in versions.table().features.values():
        keys = ", ".join(_code(key) for key in entry.keys) or "(hand-edited objects)"
        lines.append(
            f"| {_text(entry.what)} | {versions.COMPONENT_NAMES[entry.component]} {entry.minimum} | {keys} "
            f"| {_text(entry.breaks)} | {_text(entry.source)} |"
        )
    for minor, karpenter in versions.table().karpenter_for_kubernetes.items():
        lines.append(
            f"| Kubernetes {minor} | Karpenter {karpenter} | `gpushare:karpenter.chartVersion` | Karpenter's "
            "compatibility matrix does not admit it | aws/karpenter-provider-aws upgrading/compatibility.md |"
        )
    return "\n".join(lines)


def image_homes_table() -> str:
    """Every image the stack runs and its upstream home, from gpushare/images.py."""
    lines = ["| image | runs | built by |", "|---|---|---|"]
    lines += [f"| `{home.reference}` | {_text(home.runs)} | {home.project} |" for home in images.IMAGE_HOMES]
    return "\n".join(lines)


def scenario_table() -> str:
    """Every scenario of `make e2e` with its suite and what it shows (`Scenario.shows`); scenarios of one suite
    showing the same thing share a row."""
    rows: list[tuple[str, list[str], str]] = []
    for scenario in SCENARIOS.values():
        suite = scenario.run.__module__.rsplit(".", 1)[-1] + ".py"
        if rows and rows[-1][0] == suite and rows[-1][2] == scenario.shows:
            rows[-1][1].append(scenario.name)
        else:
            rows.append((suite, [scenario.name], scenario.shows))
    lines = ["| suite (`e2e/suites/`) | scenario | what it shows |", "|---|---|---|"]
    for suite, names, shows in rows:
        lines.append(f"| `{suite}` | {', '.join(f'`{name}`' for name in names)} | {_cell(shows)} |")
    return "\n".join(lines)


# Each generated table: the page (relative to the project root) that holds its markers, and what renders it.
TABLES: dict[str, tuple[str, Callable[[], str]]] = {
    "config-table": ("docs/configuration.md", config_table),
    "minimum-versions-table": ("docs/configuration.md", minimum_versions_table),
    "catalog-table": ("docs/catalog.md", catalog_table),
    "policy-table": ("docs/policies.md", policy_table),
    "policy-config-table": ("docs/policies.md", policy_config_table),
    "image-homes-table": ("docs/registries.md", image_homes_table),
    "scenario-table": ("e2e/README.md", scenario_table),
    "trace-table": ("e2e/README.md", trace_table),
    "replay-table": ("e2e/README.md", replay_table),
}


def pages() -> list[str]:
    """The pages holding generated tables, in the order TABLES first names them."""
    return list(dict.fromkeys(page for page, _ in TABLES.values()))


def update_page(page: str, text: str) -> str:
    """The page's text with every generated table it holds replaced by its current content."""
    for name, (home, render) in TABLES.items():
        if home != page:
            continue
        block = re.compile(rf"(<!-- BEGIN {name} -->\n).*?(<!-- END {name} -->)", re.DOTALL)
        if not block.search(text):
            raise DocsError(f"{page}: no <!-- BEGIN {name} --> ... <!-- END {name} --> markers")
        table = render()
        text = block.sub(lambda match, table=table: f"{match[1]}{table}\n{match[2]}", text)
    return text


def main(root: Path = PROJECT_ROOT) -> int:
    """Rewrite every page whose tables are stale; a page without its markers is named and nothing is written."""
    try:
        current = {page: (root / page).read_text() for page in pages()}
        updated = {page: update_page(page, text) for page, text in current.items()}
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    stale = [page for page in current if updated[page] != current[page]]
    for page in stale:
        (root / page).write_text(updated[page])
    print(f"rewrote the generated tables in {', '.join(stale)}" if stale else "the generated tables are current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
