"""Errors in the project's words: every pydantic error type the stack schema can raise has a sentence, and no line
a user reads speaks the validation library's language (types, classes, regular expressions)."""

from __future__ import annotations

import copy
import re
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from gpushare.config import PATTERN_RULES, StackConfig
from gpushare.errors import ConfigError
from gpushare.loader import WORDING, load_stack_config
from gpushare.wording import Wording
from tests.conftest import PLAN_DATE, raw_stack

# What pydantic says and a YAML user never means: its types, classes and regular expressions.
LIBRARY_WORDS = re.compile(
    r"Input should|[Tt]uple|dictionary|instance of|String should|pattern|Field required|Extra inputs|Value error"
    r"|[A-Z][A-Za-z]+Config\b|\[0-9\]|\{[0-9],|\(\?|\\[sdw]|\^|\$'"
)
# One of each kind of wrong value a stack file can hold where another kind is expected.
WRONG_VALUES: list[Any] = ["text", "48Gi", 1.3, -1, 0, 10**9, [], ["x", "x"], {}, {"x": 1}, True, None]


def _fields(model: type[BaseModel], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key the schema declares, as an alias path (list items and map values are walked through)."""
    for name, field in model.model_fields.items():
        key = (*path, field.alias or name)
        yield key
        for sub in _nested_models(field.annotation):
            if sub is not model:
                yield from _fields(sub, key)


def _nested_models(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _nested_models(arg)


def _schema_patterns(model: type[BaseModel], seen: set[type] | None = None) -> set[str]:
    seen = seen if seen is not None else set()
    seen.add(model)
    found = set()
    for field in model.model_fields.values():
        found |= {m.pattern for m in field.metadata if getattr(m, "pattern", None)}
        for sub in _nested_models(field.annotation):
            if sub not in seen:
                found |= _schema_patterns(sub, seen)
    return found


def _shipped_data(stack: str) -> dict[str, Any]:
    """A shipped stack as StackConfig input (field keys, not stack-file keys)."""
    return {("region" if key == "aws:region" else key.partition(":")[2]): v for key, v in raw_stack(stack).items()}


def _with(data: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """`data` with `value` at `path`, through the first item of each list on the way (missing maps made)."""
    data = copy.deepcopy(data)
    target: Any = data
    for key in path[:-1]:
        if isinstance(target, list):
            target = target[0] if target else target
        if not isinstance(target, dict):
            return data
        if not isinstance(target.get(key), dict | list) or target.get(key) == []:
            target[key] = {}
        target = target[key]
    if isinstance(target, list):
        target = target[0] if target else {}
    if isinstance(target, dict):
        target[path[-1]] = value
    return data


def _every_schema_error() -> Iterator[tuple[tuple[str, ...], Any, dict[str, Any]]]:
    """Each error pydantic raises for each wrong value at each key of both shipped stacks."""
    for stack in ("dev", "prod"):
        base = _shipped_data(stack)
        for path in _fields(StackConfig):
            for value in WRONG_VALUES:
                try:
                    StackConfig.model_validate(_with(base, path, value))
                except ValidationError as error:
                    for detail in error.errors(include_url=False):
                        yield path, value, detail


SCHEMA_ERRORS = list(_every_schema_error())


def test_every_error_type_the_schema_raises_has_a_sentence():
    """A new error type (a new field kind) fails here before a user reads it in pydantic's words."""
    types = {detail["type"] for _, _, detail in SCHEMA_ERRORS}
    assert {"missing", "extra_forbidden", "int_parsing", "string_type", "model_type", "tuple_type"} <= types
    lacking = sorted(kind for kind in types if not hasattr(Wording, f"_{kind}"))
    assert lacking == []


def test_no_schema_error_reads_in_the_librarys_words():
    bad = sorted(
        {
            f"{'.'.join(path)} = {value!r}: {line}"
            for path, value, detail in SCHEMA_ERRORS
            if LIBRARY_WORDS.search(line := WORDING.message(detail))
        }
    )
    assert bad == []


def test_every_pattern_the_schema_uses_is_said_in_words():
    assert _schema_patterns(StackConfig) == set(PATTERN_RULES)


def test_the_check_on_library_words_catches_them():
    """The two tests above can fail: pydantic's own messages trip them."""
    detail = next(d for _, _, d in SCHEMA_ERRORS if d["type"] == "string_pattern_mismatch")
    assert LIBRARY_WORDS.search(str(detail["msg"]))
    assert LIBRARY_WORDS.search(Wording().message({**detail, "type": "some_new_type"}))


def _line(path: str, value: Any, stack: str = "dev") -> str:
    raw = raw_stack(stack)
    key, *steps = path.split(".")
    target: Any = raw
    for step in [key, *steps][:-1]:
        target = target[int(step)] if isinstance(target, list) else target[step]
    last = [key, *steps][-1]
    target[int(last) if isinstance(target, list) else last] = value
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    [line] = str(caught.value).splitlines()
    return line


@pytest.mark.parametrize(
    ("path", "value", "line"),
    [
        (
            "gpushare:pools.0.instanceTypes",
            "g5.xlarge",
            "gpushare:pools[0].instanceTypes: takes a list (one `- item` per line, or [a, b]) (got 'g5.xlarge')",
        ),
        (
            "gpushare:hami.schedulerPolicy",
            "binpack",
            "gpushare:hami.schedulerPolicy: takes a map with the keys node, gpu, e.g. {node: binpack, gpu: spread} "
            "(got 'binpack')",
        ),
        (
            "gpushare:cluster.kubernetesVersion",
            1.3,  # what YAML reads from an unquoted 1.30
            "gpushare:cluster.kubernetesVersion: takes text; YAML read 1.3 as a number: write it as a string, in "
            'quotes: "1.30" (YAML drops the trailing zero of a number)',
        ),
        (
            "gpushare:teams.0.quota.gpuMemoryMib",
            "48Gi",
            "gpushare:teams[0].quota.gpuMemoryMib: takes a whole number of MiB, without a unit: write 49152 for 48 "
            "GiB (got '48Gi')",
        ),
        (
            "gpushare:teams.0.quota.gpuMemoryMib",
            "lots",
            "gpushare:teams[0].quota.gpuMemoryMib: takes a whole number of MiB, e.g. 49152 for 48 GiB (got 'lots')",
        ),
        (
            "gpushare:pools.0.name",
            "G5_shared",
            "gpushare:pools[0].name: 'G5_shared' is not a name of 1 to 32 lower-case letters, digits and '-', "
            "starting with a letter and ending with a letter or digit, e.g. ml-research",
        ),
        (
            "gpushare:pools.0.maxGPUs",
            4,
            "gpushare:pools[0].maxGPUs: unknown key; did you mean maxGpus? allowed: name, instanceTypes, "
            "capacityTypes, maxGpus, sharing, replicas, disruption",
        ),
        (
            "gpushare:hami.schedulerPolicy.gpu",
            "spred",
            "gpushare:hami.schedulerPolicy.gpu: 'spred' is not one of the choices; did you mean spread? allowed: "
            "binpack, spread",
        ),
        (
            "gpushare:cluster.systemNodeGroup.diskSizeGib",
            5,
            "gpushare:cluster.systemNodeGroup.diskSizeGib: 5 is too small; allowed: at least 20 GiB",
        ),
        (
            "gpushare:cluster.systemNodeGroup.diskSizeGib",
            "100Gi",
            "gpushare:cluster.systemNodeGroup.diskSizeGib: takes a whole number of GiB, without a unit: write 100 for "
            "100 GiB (got '100Gi')",
        ),
        (
            "gpushare:cluster.systemNodeGroup.diskSizeGib",
            "500Mi",
            "gpushare:cluster.systemNodeGroup.diskSizeGib: takes a whole number of GiB, e.g. 100 (got '500Mi')",
        ),
        (
            "gpushare:pools.0.name",
            True,  # what YAML reads from an unquoted `on` or `yes`
            "gpushare:pools[0].name: takes text; YAML read true here (it reads yes/no and on/off as true/false too): "
            "quote the text",
        ),
    ],
    ids=[
        "list",
        "map",
        "unquoted version",
        "unit",
        "not a number",
        "naming rule",
        "unknown key",
        "choice",
        "bound",
        "GiB written with its unit",
        "no whole number to suggest",
        "true where text goes",
    ],
)
def test_messages_say_what_the_key_takes(path, value, line):
    assert _line(path, value) == line
