"""Reading user-supplied files: any failure is one UserError line naming the file, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpushare.errors import UserError


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not valid JSON (not UTF-8 text)") from None
    except json.JSONDecodeError as error:
        raise UserError(f"{path}: not valid JSON ({error.msg}, line {error.lineno})") from None
