"""README stays true: its generated tables equal what `make docs` writes, and every schema field says why."""

from __future__ import annotations

from typing import Literal, get_args

import pytest
from pydantic import BaseModel, Field

import tools.docs
from gpushare.config import StackConfig
from tests.conftest import ROOT
from tools.docs import DocsError, field_rows, stack_config_rows, update_readme

README = (ROOT / "README.md").read_text()


def test_readme_generated_tables_are_current():
    assert update_readme(README) == README, "README.md tables are stale: run `make docs` and commit the result"


def test_update_readme_replaces_a_stale_table():
    stale = README.replace("| `aws:region` |", "| `aws:regionX` |")
    assert stale != README
    assert update_readme(stale) == README


def test_update_readme_names_a_missing_marker_pair():
    with pytest.raises(DocsError, match="policy-table"):
        update_readme(README.replace("<!-- END policy-table -->", ""))


def test_make_docs_rewrites_a_stale_readme_and_refuses_one_without_markers(tmp_path, monkeypatch, capsys):
    readme = tmp_path / "README.md"
    monkeypatch.setattr(tools.docs, "README", readme)
    readme.write_text(README.replace("| `aws:region` |", "| `aws:regionX` |"))
    assert tools.docs.main() == 0
    assert readme.read_text() == README
    readme.write_text("no markers\n")
    assert tools.docs.main() == 2
    assert readme.read_text() == "no markers\n"
    assert "config-table" in capsys.readouterr().err


def test_every_config_field_has_a_description():
    missing = [key for key, *_, meaning in stack_config_rows() if not meaning]
    assert not missing, f"add description= to these config fields: {', '.join(missing)}"


def _schema_models(model: type[BaseModel]) -> set[type[BaseModel]]:
    found = {model}
    for field in model.model_fields.values():
        for arg in (*get_args(field.annotation), field.annotation):
            for inner in (*get_args(arg), arg):
                if isinstance(inner, type) and issubclass(inner, BaseModel) and inner not in found:
                    found |= _schema_models(inner)
    return found


def test_every_config_model_says_what_it_is_for():
    undocumented = [m.__name__ for m in _schema_models(StackConfig) if not m.__dict__.get("__doc__")]
    assert not undocumented, f"add a docstring to: {', '.join(sorted(undocumented))}"


class _Inner(BaseModel):
    size_gib: int = Field(default=50, alias="sizeGib", ge=20, le=1000, description="disk")
    mode: Literal["a", "b"] = Field(description="pick one")


class _Outer(BaseModel):
    items: tuple[_Inner, ...] = Field(description="many")
    optional: _Inner | None = Field(default=None, description="maybe")
    pattern: str = Field(default="x", pattern=r"^(x|y)$", description="either")


def test_a_new_field_anywhere_in_the_schema_gets_a_row():
    rows = field_rows("gpushare:outer", _Outer.model_fields["items"])
    rows += field_rows("gpushare:outer.optional", _Outer.model_fields["optional"])
    rows += field_rows("gpushare:outer.pattern", _Outer.model_fields["pattern"])
    assert rows == [
        ("gpushare:outer[].sizeGib", "int", "`50`", ">= 20, <= 1000", "disk"),
        ("gpushare:outer[].mode", "a / b", "required", "", "pick one"),
        ("gpushare:outer.optional", "object", "none", "", "maybe"),
        ("gpushare:outer.optional.sizeGib", "int", "`50`", ">= 20, <= 1000", "disk"),
        ("gpushare:outer.optional.mode", "a / b", "required", "", "pick one"),
        ("gpushare:outer.pattern", "string", "`x`", "`^(x\\|y)$`", "either"),
    ]
