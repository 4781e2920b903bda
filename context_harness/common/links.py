"""Links a document makes: Markdown links to relative targets and ``[[wikilinks]]`` (a pure leaf:
the store extracts them at sync time, the core resolves them).

``extract_links`` reads a body (code fences and inline code skipped); ``link_key`` turns a link into
what the store indexes: for a Markdown link the target's path from the source's root (resolved
against the linking document's folder), for a wikilink its lowercased name. ``document_names`` are
the names a wikilink may use for a document: its file stem, its path without ``.md``, its title.
As in Obsidian, a wikilink may also give a partial path, the end of the document's path
(``[[garden-shed/permit]]`` for ``projects/garden-shed/permit.md``): ``wikilink_names`` adds every
such tail, and ``partial_path`` tells whether a wiki key is one of a document's.

A reStructuredText document (``.rst``, ``.rest``, a site's ``.rst.txt``: ``extract_links`` is given
its ``source_id``) links by ``:doc:`` roles and ``.. toctree::`` entries (Markdown-kind links to the
named document, relative to the file or, with a leading ``/``, to the source's root, with the
linking file's own ending: ``:doc:`../library/os``` in ``tutorial/a.rst`` is ``library/os.rst``),
by hyperlink references with a relative target (```text <other.rst>`_``) and by ``:ref:`label```
(kind ``ref``), which the core resolves to the document holding ``.. _label:`` (kind ``label``: not a
link, where a label is defined), in the same source first. Roles inside literal blocks are read too.

An e-mail (``.eml``: its ``message_id`` and ``in_reply_to`` metadata, not its body) links to the message
it answers: ``message_links`` gives a ``reply`` link naming the parent's Message-ID, resolved (as a
``ref``) to the indexed message whose own ``message`` row (as a ``label``) holds that id, in any source.
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


REST_SUFFIXES = (".rst", ".rst.txt", ".rest")
LABEL_KEY = "rst-label:"  # a ref's and a label's key: never a path or a name a wikilink uses
MESSAGE_KEY = "message-id:"  # an e-mail's Message-ID (kind "message") and a reply's In-Reply-To (kind "reply")
_MESSAGE_ID = re.compile(r"<([^<>\s]+)>")
_ROLE = re.compile(r"(?<![\w`]):(doc|ref|std:doc|std:ref):`([^`]+)`")
_EXPLICIT = re.compile(r"^[ \t]*<([^<>\n]+)>\s*$|^[ \t]*\S.*?<([^<>\n]+)>\s*$", re.DOTALL)
_LABEL = re.compile(r"^[ \t]*\.\.[ \t]+_([^:`\n]+|`[^`\n]+`):[ \t]*(\S*)[ \t]*$", re.MULTILINE)
_HYPERLINK = re.compile(r"(?<![\w`])`[^`<>]*<([^<>`\s]+)>`__?(?!\w)")
_TOCTREE = re.compile(r"^([ \t]*)\.\.[ \t]+toctree::[^\n]*\n((?:\1[ \t]+[^\n]*\n|[ \t]*\n)*)", re.MULTILINE)


@dataclass(frozen=True)
class Link:
    kind: str  # "markdown" or "wiki"; in reST also "ref" (a :ref: role) and "label" (where one is defined);
    # an e-mail's "message" (its own Message-ID) and "reply" (the one it answers)
    target: str  # as written, without its #anchor or ?query (Markdown: percent-decoded)


def is_rest(source_id: str | None) -> bool:
    return bool(source_id) and source_id.lower().endswith(REST_SUFFIXES)  # type: ignore[union-attr]


def may_link(body: str, source_id: str | None = None) -> bool:
    """Whether ``body`` may hold a link at all (a cheap test before ``extract_links``)."""
    return "[" in body or (is_rest(source_id) and ("`" in body or ".. " in body))


def extract_links(body: str, source_id: str | None = None) -> list[Link]:
    """The body's links in order, each (kind, target) once. Links inside code are not links. A
    reStructuredText document's (by ``source_id``) roles, toctrees and labels too (see the module)."""
    found: dict[Link, None] = {}
    if is_rest(source_id):
        for link in _rest_links(body, source_id or ""):
            found[link] = None
    text = _INLINE_CODE.sub(" ", _FENCE.sub("\n", body))
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


def _rest_links(body: str, source_id: str) -> list[Link]:
    ending = next(s for s in sorted(REST_SUFFIXES, key=len, reverse=True) if source_id.lower().endswith(s))

    def doc(target: str) -> Link | None:
        target = target.strip()
        if not target or _SCHEME.match(target) or any(c in target for c in "*?["):
            return None
        return Link("markdown", target if target.lower().endswith(REST_SUFFIXES) else target + ending)

    links: list[Link | None] = []
    for match in _ROLE.finditer(body):
        role, content = match.group(1).removeprefix("std:"), match.group(2)
        named = _EXPLICIT.match(content)
        target = (named.group(1) or named.group(2)) if named else content
        target = target.strip().lstrip("~!")
        if role == "doc":
            links.append(doc(target))
        elif target:
            links.append(Link("ref", " ".join(target.lower().split())))
    for match in _TOCTREE.finditer(body):
        for line in match.group(2).splitlines():
            entry = line.strip()
            if entry and not entry.startswith(":") and entry != "self":
                named = _EXPLICIT.match(entry)
                links.append(doc((named.group(1) or named.group(2)) if named else entry))
    for match in _HYPERLINK.finditer(body):
        target = match.group(1)
        if not (_SCHEME.match(target) or target.startswith(("#", "//")) or target.endswith("_")):
            links.append(Link("markdown", unquote(target.split("#", 1)[0]).strip()) if target.split("#", 1)[0]
                         else None)
    for match in _LABEL.finditer(body):
        name, uri = match.group(1).strip("`").strip(), match.group(2)
        if name and name != "_" and not uri:
            links.append(Link("label", " ".join(name.lower().split())))
        elif uri and not (_SCHEME.match(uri) or uri.startswith(("#", "//")) or uri.endswith("_")):
            links.append(Link("markdown", unquote(uri.split("#", 1)[0])))
    return [link for link in links if link is not None and link.target]


def message_links(metadata: dict[str, object] | None) -> list[Link]:
    """An e-mail's place in a thread, from its metadata (``formats/mail.py``): its own Message-ID as a
    ``message`` row, and the message its ``In-Reply-To`` names as a ``reply`` link (the first id there)."""
    links = []
    for kind, name in (("message", "message_id"), ("reply", "in_reply_to")):
        value = (metadata or {}).get(name)
        found = _MESSAGE_ID.search(value) if isinstance(value, str) else None
        if found:
            links.append(Link(kind, found.group(1)))
    return links


def link_key(link: Link, source_id: str) -> str:
    """What the store indexes for ``link`` made by the document at ``source_id``."""
    if link.kind in ("ref", "label"):
        return LABEL_KEY + link.target
    if link.kind in ("message", "reply"):
        return MESSAGE_KEY + link.target
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
