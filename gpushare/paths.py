"""Where the project lives: the one definition of the repository root, which holds the stack files, the program
and the tools' output folder (build/)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

PROJECT_ROOT: Final = Path(__file__).resolve().parent.parent
