"""pydantic's complaints in the project's words: what the key takes, in YAML terms, with an example where it helps.

A YAML user writes lists, maps, text and numbers; they never see a tuple, a model class or a regular expression. So
each pydantic error type a model can raise has a sentence here, told from the field it is about (its unit, from the
units in its name; its naming rule; its keys), and a type with no sentence is found by the tests, not by a user.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

# Units a key's name ends in (`memoryMib`, `diskSizeGib`), the project's rule for numbers with a unit.
UNITS = {"Mib": ("MiB", 1), "Gib": ("GiB", 1024), "Seconds": ("seconds", None), "Percent": ("percent", None)}
# Binary Kubernetes quantities a user may write where a key takes a plain number of MiB or GiB (the decimal M, G
# and T are powers of ten: no whole number of MiB to suggest).
QUANTITY = re.compile(r"^([0-9]+)(Mi|Gi|Ti)$")
QUANTITY_MIB = {"Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
QUANTITY_NAMES = {"Mi": "MiB", "Gi": "GiB", "Ti": "TiB"}


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Wording:
    """One sentence per pydantic error type. `model` is the root of the locations pydantic reports (its fields tell
    units, keys and examples); `rules` says each string pattern the model uses in words."""

    def __init__(self, model: type[BaseModel] | None = None, rules: Mapping[str, str] | None = None) -> None:
        self.model = model
        self.rules = dict(rules or {})

    def message(self, detail: Mapping[str, Any]) -> str:
        """The line for one pydantic error, without its key."""
        kind = str(detail["type"])
        loc = tuple(detail["loc"])
        ctx = detail.get("ctx") or {}
        value = detail.get("input")
        got = f" (got {short(value)})"
        sentence = getattr(self, f"_{kind}", None)
        if sentence is not None:
            return sentence(loc, ctx, value, got)
        return str(detail["msg"]) + got  # no sentence yet: tests/gpushare/test_wording.py finds every such type

    # -- what a key is, from the model ---------------------------------------------------------------------------

    def annotation_at(self, loc: Sequence[int | str]) -> Any:
        """The type the model declares at `loc` (None when the location leaves what the model declares)."""
        current: Any = self.model
        for part in loc:
            current = _unwrap(current)
            if isinstance(current, type) and issubclass(current, BaseModel):
                field = _field(current, str(part))
                if field is None:
                    return None
                current = field.annotation
            elif typing.get_origin(current) in (tuple, list) and isinstance(part, int):
                current = typing.get_args(current)[0]
            elif typing.get_origin(current) is dict:
                key_type, value_type = typing.get_args(current)
                current = key_type if part == "[key]" else value_type
            else:
                return None
        return current

    def unit(self, loc: Sequence[int | str]) -> tuple[str, int | None] | None:
        """(unit, MiB per unit) of a key whose name says its unit."""
        name = next((part for part in reversed(loc) if isinstance(part, str) and part != "[key]"), "")
        return next((unit for suffix, unit in UNITS.items() if name.endswith(suffix)), None)

    def keys(self, loc: Sequence[int | str]) -> list[str]:
        """The keys the map at `loc` takes."""
        model = _unwrap(self.annotation_at(loc))
        if isinstance(model, type) and issubclass(model, BaseModel):
            return [field.alias or name for name, field in model.model_fields.items()]
        return []

    def meant(self, loc: Sequence[int | str]) -> str | None:
        """The key an unknown one at `loc` most likely meant, among its map's keys (`maxGPUs` -> `maxGpus`)."""
        nearest = difflib.get_close_matches(str(loc[-1]), self.keys(loc[:-1]), n=1, cutoff=0.6) if loc else []
        return nearest[0] if nearest else None

    def example(self, loc: Sequence[int | str]) -> str:
        """`, e.g. {node: binpack, gpu: spread}`: the map at `loc` with its defaults, when it has one short enough."""
        model = _unwrap(self.annotation_at(loc))
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return ""
        try:
            defaults = model().model_dump(by_alias=True, mode="json")
        except ValidationError:  # a map with required keys has no example of its own
            return ""
        text = yaml.safe_dump(defaults, default_flow_style=True, sort_keys=False).strip()
        return f", e.g. {text}" if defaults and len(text) <= 60 else ""

    # -- the sentences, one per pydantic error type --------------------------------------------------------------

    def _missing(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return "is required"

    def _extra_forbidden(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        allowed = self.keys(loc[:-1])
        if not allowed:
            return "unknown key"
        meant = self.meant(loc)
        hint = f"did you mean {meant}? " if meant else ""
        return f"unknown key; {hint}allowed: {', '.join(allowed)}"

    def _whole_number(self, loc: tuple, value: Any, got: str) -> str:
        unit = self.unit(loc)
        if unit is None:
            return f"takes a whole number, e.g. 4{got}"
        name, mib = unit
        match = QUANTITY.match(value) if isinstance(value, str) else None
        in_mib = int(match.group(1)) * QUANTITY_MIB[match.group(2)] if match else 0
        if match and mib is not None and in_mib % mib == 0:
            written = f"{match.group(1)} {QUANTITY_NAMES[match.group(2)]}"
            return f"takes a whole number of {name}, without a unit: write {in_mib // mib} for {written}{got}"
        if name == "MiB":
            return f"takes a whole number of MiB, e.g. 49152 for 48 GiB{got}"
        return f"takes a whole number of {name}, e.g. 100{got}"

    def _int_type(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return self._whole_number(loc, value, got)

    _int_parsing = _int_from_float = _int_parsing_size = _int_type

    def _float_type(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return f"takes a number, e.g. 0.5{got}"

    _float_parsing = _float_type

    def _bool_type(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return f"takes true or false{got}"

    _bool_parsing = _bool_type

    def _string_type(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        if isinstance(value, bool):
            word = str(value).lower()
            return f"takes text; YAML read {word} here (it reads yes/no and on/off as true/false too): quote the text"
        if isinstance(value, int | float):
            text = self.as_written(loc, value)
            lost = " (YAML drops the trailing zero of a number)" if text != f"{value}" else ""
            return f'takes text; YAML read {value} as a number: write it as a string, in quotes: "{text}"{lost}'
        return f"takes text{got}"

    def as_written(self, loc: Sequence[int | str], number: float) -> str:
        """The text a number most likely was before YAML read it: `1.30` for 1.3 where the key's rule needs two
        digits after the point (a Kubernetes minor), else the number as it reads."""
        text = f"{number}"
        pattern = self.pattern_at(loc)
        if pattern is None or re.fullmatch(pattern, text):
            return text
        return next((f"{text}{zeros}" for zeros in ("0", "00") if re.fullmatch(pattern, f"{text}{zeros}")), text)

    def pattern_at(self, loc: Sequence[int | str]) -> str | None:
        """The string pattern of the key at `loc`, if it has one."""
        if not loc:
            return None
        parent = _unwrap(self.annotation_at(loc[:-1]))
        if not (isinstance(parent, type) and issubclass(parent, BaseModel)):
            return None
        field = _field(parent, str(loc[-1]))
        return next((m.pattern for m in field.metadata if getattr(m, "pattern", None)), None) if field else None

    def _string_pattern_mismatch(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        rule = self.rules.get(str(ctx.get("pattern")))
        if rule is None:
            return f"does not follow this key's naming rule{got}"
        return f"{short(value)} is not {rule}"

    def _string_too_short(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return f"takes at least {ctx.get('min_length')} characters{got}"

    def _string_too_long(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return f"takes at most {ctx.get('max_length')} characters{got}"

    def _list_type(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return f"takes a list (one `- item` per line, or [a, b]){got}"

    _tuple_type = _set_type = _frozen_set_type = _list_type

    def _too_short(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        least = ctx.get("min_length")
        return f"needs at least {least} item{'s' if least != 1 else ''}{got}"

    def _too_long(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return f"takes at most {ctx.get('max_length')} items (got {ctx.get('actual_length')})"

    def _dict_type(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return f"takes a map of keys to values{got}"

    def _model_type(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        keys = self.keys(loc)
        if not keys:
            return self._dict_type(loc, ctx, value, got)
        return f"takes a map with the keys {', '.join(keys)}{self.example(loc)}{got}"

    _model_attributes_type = _model_type

    def _literal_error(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        allowed = [item.strip().strip("'") for item in re.split(r",| or ", str(ctx.get("expected", "")))]
        allowed = [item for item in allowed if item]
        nearest = difflib.get_close_matches(str(value), allowed, n=1, cutoff=0.6)
        hint = f"did you mean {nearest[0]}? " if nearest and nearest[0] != str(value) else ""
        return f"{short(value)} is not one of the choices; {hint}allowed: {', '.join(allowed)}"

    def _bound(self, loc: tuple, value: Any, relation: tuple[str, str], limit: Any) -> str:
        unit = self.unit(loc)
        number = f"{limit:g}" if isinstance(limit, float) else f"{limit}"
        return f"{short(value)} is too {relation[0]}; allowed: {relation[1]} {number}{f' {unit[0]}' if unit else ''}"

    def _greater_than_equal(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return self._bound(loc, value, ("small", "at least"), ctx.get("ge"))

    def _greater_than(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return self._bound(loc, value, ("small", "more than"), ctx.get("gt"))

    def _less_than_equal(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return self._bound(loc, value, ("large", "at most"), ctx.get("le"))

    def _less_than(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return self._bound(loc, value, ("large", "less than"), ctx.get("lt"))

    def _value_error(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return str(ctx.get("error", "")) or f"is not allowed{got}"

    _assertion_error = _value_error

    def _date_parsing(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return f"takes a date like 2026-07-20{got}"

    _date_type = _date_from_datetime_parsing = _date_from_datetime_inexact = _date_parsing

    def _datetime_parsing(self, loc: tuple, ctx: dict, value: Any, got: str) -> str:
        return f"takes a time like 2026-11-18T01:00:00Z, or a date like 2026-11-18{got}"

    _datetime_type = _datetime_from_date_parsing = _datetime_object_invalid = _datetime_parsing


def _unwrap(annotation: Any) -> Any:
    """The type under Optional[...] and Annotated[...]."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _field(model: type[BaseModel], key: str) -> FieldInfo | None:
    for name, field in model.model_fields.items():
        if key in (name, field.alias):
            return field
    return None
