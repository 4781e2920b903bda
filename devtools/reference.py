"""The reference pages (``docs/reference/config.md``, ``cli.md``, ``mcp-tools.md``, ``errors.md``) are
generated from the code and kept in the repository, so every path a message names exists in a checkout
and in the installed package (the wheel carries ``docs/`` as its sample knowledge base; ``ctx help
config`` prints it). ``tests/test_docs.py`` and the MkDocs build fail when one is stale.

    python -m devtools.reference --write    # regenerate the pages after changing the code
    python -m devtools.reference            # exit 1 naming the stale pages
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from devtools.pages import PAGES

DOCS = Path(__file__).resolve().parents[1] / "docs"
WRITE_COMMAND = "python -m devtools.reference --write"


def generated() -> dict[Path, str]:
    """Every generated page's file and its text as the code makes it now."""
    return {DOCS / uri: make() for uri, make in PAGES.items()}


def stale(pages: dict[Path, str] | None = None) -> list[str]:
    """The generated pages whose committed file is missing or differs, as ``docs/...`` paths."""
    pages = generated() if pages is None else pages
    out = []
    for path, text in pages.items():
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        if current != text:
            out.append(path.relative_to(DOCS.parent).as_posix())
    return out


def write() -> list[str]:
    """Write every stale page; the ones written."""
    pages = generated()
    changed = stale(pages)
    for path, text in pages.items():
        if path.relative_to(DOCS.parent).as_posix() in changed:
            path.write_text(text, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="Regenerate the stale pages.")
    args = parser.parse_args(argv)
    if args.write:
        changed = write()
        print("\n".join(f"wrote {p}" for p in changed) or "the reference pages are current")
        return 0
    behind = stale()
    if behind:
        print(f"stale: {', '.join(behind)}; run `{WRITE_COMMAND}`", file=sys.stderr)
        return 1
    print("the reference pages are current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
