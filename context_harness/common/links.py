"""Links a document makes: Markdown links to relative targets and ``[[wikilinks]]`` (a pure leaf:
the store extracts them at sync time, the core resolves them).

``extract_links`` reads a body (code fences and inline code skipped); ``link_key`` turns a link into
what the store indexes: for a Markdown link the target's path from the source's root (resolved
against the linking document's folder), for a wikilink its lowercased name. ``document_names`` are
the names a wikilink may use for a document: its file stem, its path without ``.md``, its title.
As in Obsidian, a wikilink may also give a partial path, the end of the document's path
(``[[garden-shed/permit]]`` for ``projects/garden-shed/permit.md``): ``wikilink_names`` adds every
such tail, and ``partial_path`` tells whether a wiki key is one of a document's.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]{0,3}\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
_MARKDOWN = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(?:<([^>\n]+)>|([^)\s]+))(?:\s+[\"'(][^)]*)?\s*\)")
_WIKI = re.compile(r"\[\[([^\[\]|#\n]*)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Link:
    kind: str  # "markdown" or "wiki"
    target: str  # as written, without its #anchor or ?query (Markdown: percent-decoded)


def extract_links(body: str) -> list[Link]:
    """The body's links in order, each (kind, target) once. Links inside code are not links."""
    text = _INLINE_CODE.sub(" ", _FENCE.sub("\n", body))
    found: dict[Link, None] = {}
    for match in _MARKDOWN.finditer(text):
        target = match.group(1) or match.group(2)
        if _SCHEME.match(target) or target.startswith(("#", "//")):
            continue  # a URL, mailto:, or an anchor in the same document
        target = unquote(target.split("#", 1)[0].split("?", 1)[0]).strip()
        if target:
            found[Link("markdown", target)] = None
    for match in _WIKI.finditer(text):
        target = match.group(1).strip()
        if target:
            found[Link("wiki", target)] = None
    return list(found)


def link_key(link: Link, source_id: str) -> str:
    """What the store indexes for ``link`` made by the document at ``source_id``."""
    if link.kind == "wiki":
        name = link.target.lower()
        return name[:-3] if name.endswith(".md") else name
    if link.target.startswith("/"):
        path = link.target.lstrip("/")
    else:
        path = posixpath.join(posixpath.dirname(source_id), link.target)
    return posixpath.normpath(path)


def markdown_paths(key: str) -> list[str]:
    """The ``source_id``s a Markdown link key may name: itself, or with ``.md`` added."""
    return [key] if key.lower().endswith(".md") else [key, key + ".md"]


def document_names(source_id: str, title: str | None) -> set[str]:
    """The lowercased names a wikilink may call the document at ``source_id`` by."""
    path = source_id.lower()
    stem = posixpath.splitext(path)[0]
    names = {stem, posixpath.basename(stem)}
    if title and title.strip():
        names.add(title.strip().lower())
    return names


def wikilink_names(source_id: str, title: str | None) -> set[str]:
    """``document_names`` and every tail of the path (``b/c`` of ``a/b/c.md``): each name a wikilink
    written in an Obsidian-style vault may call the document at ``source_id`` by."""
    stem = posixpath.splitext(source_id.lower())[0]
    parts = stem.split("/")
    return document_names(source_id, title) | {"/".join(parts[i:]) for i in range(len(parts))}


def partial_path(key: str, source_id: str) -> bool:
    """Whether the wiki key ``key`` (with a ``/``) names the document at ``source_id`` by the end of its
    path, whole folder names only (``shed/permit`` is not the end of ``garden-shed/permit.md``)."""
    stem = posixpath.splitext(source_id.lower())[0]
    key = key.strip("/")
    return "/" in key and (stem == key or stem.endswith("/" + key))
