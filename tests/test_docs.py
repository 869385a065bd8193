"""README stays true: the catalog table is generated, and every config field is documented."""

from __future__ import annotations

from pydantic import BaseModel

from gpushare.config import StackConfig
from tests.conftest import ROOT
from tools.docs import catalog_table

README = (ROOT / "README.md").read_text()


def test_readme_catalog_table_is_current():
    assert catalog_table() in README, "regenerate with `python -m tools.docs` and paste into README.md"


def _keys(model: type[BaseModel], prefix: str) -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        alias = field.alias or name
        annotation = field.annotation
        inner = getattr(annotation, "__args__", (annotation,))
        nested = [a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)]
        path = f"{prefix}.{alias}" if prefix else alias
        keys.extend(_keys(nested[0], path) if nested else [path])
    return keys


def test_every_config_key_is_in_the_readme_table():
    rows = [line for line in README.splitlines() if line.startswith("| `")]
    for key in _keys(StackConfig, ""):
        if key == "region":
            assert any(row.startswith("| `aws:region`") for row in rows)
            continue
        head, _, rest = key.partition(".")
        prefix = f"gpushare:{head}" + ("[]" if head in ("pools", "teams") else "")
        parent, _, last = f"{prefix}.{rest}".rpartition(".")
        assert any(f"`{parent}." in row and last in row for row in rows), f"README config table lacks {key}"
