"""``ctx help [PAGE]``: a page of the documentation that ships with the package, offline.

The pages are the bundled sample knowledge base (``docs/`` of the repository, ``context_harness/sample/docs``
in a wheel): the generated references (``ctx help config``, ``cli``, ``mcp-tools``, ``errors``), the
how-to guides, the tutorial. Error messages and the config ``ctx init`` writes point here."""

from __future__ import annotations

import re
from pathlib import Path

import click

import context_harness
from context_harness.errors import NotFound

# Where context_harness.sample finds the bundled docs (read here without importing it: `ctx help`
# needs no config machinery).
PACKAGED = Path(context_harness.__file__).parent / "sample" / "docs"
CHECKOUT = Path(context_harness.__file__).resolve().parents[1]


def docs_folder() -> Path:
    if PACKAGED.is_dir():
        return PACKAGED
    if (CHECKOUT / "mkdocs.yml").is_file() and (CHECKOUT / "docs").is_dir():
        return CHECKOUT / "docs"
    raise NotFound(f"the bundled documentation is missing ({PACKAGED}); reinstall context-harness")


def pages(folder: Path) -> dict[str, Path]:
    """Every page by its path under ``docs/`` without ``.md`` (``reference/config``)."""
    return {p.relative_to(folder).with_suffix("").as_posix(): p for p in sorted(folder.rglob("*.md"))}


def find(name: str, folder: Path) -> Path:
    """The page ``name`` names: its path (``reference/agents``, ``.md`` optional) or, when only one page
    has it, its file name (``config``); a name two pages share picks the reference page."""
    known = pages(folder)
    key = name.strip().strip("/").removesuffix(".md")
    if key in known:
        return known[key]
    named = [k for k in known if k.rsplit("/", 1)[-1] == key]
    if len(named) > 1:
        named = [k for k in named if k.startswith("reference/")] or named
    if len(named) == 1:
        return known[named[0]]
    if named:
        raise NotFound(f"{name!r} names {len(named)} pages ({', '.join(named)}); give the path, e.g. "
                       f"`ctx help {named[0]}`")
    raise NotFound(f"no page {name!r} in the bundled documentation; `ctx help` lists them")


# A page that is a file of the repository's root included when the site is built (mkdocs' snippets:
# docs/changelog.md is `--8<-- "CHANGELOG.md"`).
SNIPPET = re.compile(r'^--8<-- "([\w.-]+)"$', re.MULTILINE)


def text(path: Path) -> str:
    """The page as the site shows it: an included root file's text in place of its snippet line (in a
    checkout, where the file is), else a line saying where the text is."""
    def included(match: re.Match[str]) -> str:
        source = CHECKOUT / match.group(1)
        if source.is_file():
            return source.read_text(encoding="utf-8").rstrip("\n")
        return (f"This page is {match.group(1)} at the root of the source repository, which the package "
                f"does not ship; read it in a checkout of the source.")
    return SNIPPET.sub(included, path.read_text(encoding="utf-8"))


def title(path: Path) -> str:
    """The page's first `# ` heading, else its file name as words (`changelog` -> `Changelog`)."""
    for line in text(path).splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").capitalize()


@click.command("help")
@click.argument("page", required=False)
def help_command(page: str | None) -> None:
    """Print a page of the bundled documentation (offline): `ctx help config` is every config key;
    with no PAGE, list the pages."""
    folder = docs_folder()
    if page is None:
        known = pages(folder)
        width = max(len(k) for k in known)
        for key, path in known.items():
            click.echo(f"{key.ljust(width)}  {title(path)}")
        click.echo(f"\n`ctx help PAGE` prints one (a page's name is enough when no other page has it); "
                   f"they are Markdown, also at {folder}")
        return
    click.echo(text(find(page, folder)), nl=False)
