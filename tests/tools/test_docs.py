"""The docs stay true: every generated table equals what `make docs` writes wherever it lives, every relative link in
README.md and docs/ resolves, the README's stack file is the shipped example's, and every schema field says why."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, get_args

import pytest
import yaml
from pydantic import BaseModel, Field

import tools.docs
from e2e.suites.runner import SCENARIOS
from gpushare.config import StackConfig
from tests.conftest import ROOT
from tools.docs import TABLES, DocsError, field_rows, pages, scenario_table, stack_config_rows, update_page

PAGES = {page: (ROOT / page).read_text() for page in pages()}
LINKED_PAGES = [ROOT / "README.md", ROOT / "e2e" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", sorted(PAGES))
def test_generated_tables_are_current(page):
    assert update_page(page, PAGES[page]) == PAGES[page], f"{page}: tables are stale: run `make docs` and commit it"


def test_every_table_has_its_markers_in_its_page():
    for name, (page, _) in TABLES.items():
        assert f"<!-- BEGIN {name} -->" in PAGES[page] and f"<!-- END {name} -->" in PAGES[page], (name, page)


def test_update_page_replaces_a_stale_table():
    page = TABLES["config-table"][0]
    stale = PAGES[page].replace("| `aws:region` |", "| `aws:regionX` |")
    assert stale != PAGES[page]
    assert update_page(page, stale) == PAGES[page]


def test_update_page_names_the_page_and_a_missing_marker_pair():
    page = TABLES["policy-table"][0]
    with pytest.raises(DocsError, match=f"{page}: no <!-- BEGIN policy-table"):
        update_page(page, PAGES[page].replace("<!-- END policy-table -->", ""))


def _copy_pages(root: Path) -> None:
    for page, text in PAGES.items():
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        (root / page).write_text(text)


def test_make_docs_rewrites_a_stale_page_and_refuses_one_without_markers(tmp_path, capsys):
    _copy_pages(tmp_path)
    page = TABLES["config-table"][0]
    (tmp_path / page).write_text(PAGES[page].replace("| `aws:region` |", "| `aws:regionX` |"))
    assert tools.docs.main(tmp_path) == 0
    assert (tmp_path / page).read_text() == PAGES[page]
    assert f"rewrote the generated tables in {page}" in capsys.readouterr().out
    scenarios = TABLES["scenario-table"][0]
    (tmp_path / scenarios).write_text("no markers\n")
    (tmp_path / page).write_text(PAGES[page].replace("| `aws:region` |", "| `aws:regionX` |"))
    assert tools.docs.main(tmp_path) == 2
    assert (tmp_path / scenarios).read_text() == "no markers\n"
    assert "| `aws:regionX` |" in (tmp_path / page).read_text(), "a refused run writes no page"
    assert f"{scenarios}: no <!-- BEGIN scenario-table" in capsys.readouterr().err


def test_the_scenario_table_has_every_scenario_once_with_what_it_shows():
    table = scenario_table()
    named = re.findall(r"`([a-z0-9-]+)`", " ".join(line.split(" | ")[1] for line in table.splitlines()[2:]))
    assert sorted(named) == sorted(SCENARIOS)
    missing = [name for name, scenario in SCENARIOS.items() if not scenario.shows]
    assert not missing, f"give these scenarios shows=: {', '.join(missing)}"


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as '-'."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def _relative_links(text: str) -> list[str]:
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_and_its_heading(page):
    broken = []
    for link in _relative_links(page.read_text()):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target.read_text()):
            broken.append(f"{link}: no heading with that anchor")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_every_docs_page_is_in_the_readme_documentation_list():
    readme = (ROOT / "README.md").read_text()
    listed = set(re.findall(r"^- \[(docs/[\w-]+\.md)\]", readme, flags=re.M))
    assert listed == {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}


def test_the_readme_stack_file_is_the_shipped_example():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- the stack file: (\S+) without its comments -->\n```yaml\n(.*?)```", readme, re.S)
    assert block, "README.md lost its stack file block"
    assert yaml.safe_load(block[2]) == yaml.safe_load((ROOT / block[1]).read_text())


def test_a_broken_link_is_caught():
    assert _relative_links("[a](docs/nowhere.md) `[b](x.md)` [c](https://example.com)") == ["docs/nowhere.md"]
    assert "team-gpu-quotas-what-is-charged" in _anchors("### Team GPU quotas: what is charged\n")


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
