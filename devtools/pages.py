"""The generated pages of the docs site, by their path under ``docs/`` (written by ``devtools/reference.py``)."""

from __future__ import annotations

from collections.abc import Callable

from devtools import cli_page, config_page, errors_page, tools_page

PAGES: dict[str, Callable[[], str]] = {
    "reference/config.md": config_page.page,
    "reference/cli.md": cli_page.page,
    "reference/mcp-tools.md": tools_page.page,
    "reference/errors.md": errors_page.page,
}
