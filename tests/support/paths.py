"""Where things are in the repository."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SHARED = REPO.parent / "shared"
BIN = Path(sys.executable).parent  # the entry points installed beside this Python (ctx, context-harness)
