"""Markdown as the console shows it: a document's text rendered with markdown-it-py (CommonMark and
tables) and sanitised with nh3, its links pointing at the console's pages, and search snippets as
plain text with the query's words marked.

Raw HTML in a document is never passed through: markdown-it runs with ``html`` off (a ``<script>``
shows as text), its link check drops ``javascript:``, ``vbscript:``, ``file:`` and ``data:`` URLs, and
nh3 then keeps only the tags and attributes below (no ``on*`` handler, no ``style``, ``http``,
``https`` and ``mailto`` URLs or relative ones). Images show as their alt text: the console's
Content-Security-Policy would block them anyway.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markupsafe import Markup

from context_harness.common.analysis import UNDETERMINED, has_unspaced, index_terms

TAGS = {"a", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li",
        "ol", "p", "pre", "s", "span", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul"}
#: Blocks that take their direction from their own first strong character (``dir="auto"``), so an
#: Arabic or Hebrew paragraph in an English note reads right to left, and the other way round.
DIRECTED = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "blockquote", "td", "th"}
ATTRIBUTES = {"a": {"href", "class", "title"}, "div": {"class"}, "code": {"class"}, "span": {"class", "id"},
              "ol": {"start"}, **{tag: {"dir"} for tag in DIRECTED}}
_CLASSES = {"here", "unresolved", "image", "wikilink"}
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_WORD = re.compile(r"\w{2,}", re.UNICODE)

Resolve = Callable[[str, str], str | None]  # (kind, target as written) -> document id, or None


def _attribute(tag: str, name: str, value: str) -> str | None:
    """Keep only what the renderer itself sets: ``chunk-N`` anchors, its classes, ``language-*``,
    ``dir="auto"``."""
    if name == "dir":
        return value if value == "auto" else None
    if name == "id":
        return value if re.fullmatch(r"chunk-\d+", value) else None
    if name == "class":
        kept = [c for c in value.split() if c in _CLASSES or (tag == "code" and re.fullmatch(r"language-[\w+#-]+", c))]
        return " ".join(kept) or None
    return value


_CLEANER = nh3.Cleaner(tags=TAGS, attributes=ATTRIBUTES, url_schemes={"http", "https", "mailto"},
                       attribute_filter=_attribute, link_rel="noopener noreferrer", strip_comments=True)


def _wikilink(state: StateInline, silent: bool) -> bool:
    """``[[target]]``, ``[[target|shown]]``, ``[[target#heading]]``: a link token with ``wiki`` set."""
    src, start = state.src, state.pos
    if not src.startswith("[[", start):
        return False
    end = src.find("]]", start + 2)
    inner = src[start + 2:end] if end != -1 else ""
    if end == -1 or not inner.strip() or "[" in inner or "\n" in inner:
        return False
    if not silent:
        target, _, shown = inner.partition("|")
        target = target.split("#", 1)[0].strip()
        token = state.push("link_open", "a", 1)
        token.attrs = {"href": "", "class": "wikilink"}
        token.meta = {"wiki": target}
        text = state.push("text", "", 0)
        text.content = (shown or inner).strip()
        state.push("link_close", "a", -1)
    state.pos = end + 2
    return True


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    md.enable("strikethrough")
    md.inline.ruler.before("link", "wikilink", _wikilink)

    def image(self: object, tokens: Sequence[Token], idx: int, options: object, env: object) -> str:
        alt = "".join(child.content for child in tokens[idx].children or [])
        return f'<span class="image">[image: {html.escape(alt or "no description")}]</span>'

    md.add_render_rule("image", image)
    return md


_MD = _parser()


def doc_href(doc_id: str) -> str:
    return "/ui/doc?id=" + quote(doc_id, safe="")


def _rewrite_links(tokens: list[Token], resolve: Resolve) -> None:
    """Internal links and wikilinks to the linked document's console page; an unresolved one to a
    search for what it names (marked ``unresolved``); web and mail links stay as they are."""
    for block in tokens:
        for token in block.children or []:
            if token.type != "link_open":
                continue
            wiki = token.meta.get("wiki") if token.meta else None
            href = str(token.attrs.get("href", ""))
            if wiki is None and (_SCHEME.match(href) or href.startswith(("#", "//"))):
                continue
            kind, target = ("wiki", wiki) if wiki is not None else (
                "markdown", unquote(href.split("#", 1)[0].split("?", 1)[0]).strip())
            found = resolve(kind, target) if target else None
            if found is not None:
                token.attrs["href"] = doc_href(found)
            else:
                name = target.rsplit("/", 1)[-1].removesuffix(".md") if target else ""
                token.attrs["href"] = "/ui/search?q=" + quote(name, safe="")
                token.attrs["class"] = (str(token.attrs.get("class", "")) + " unresolved").strip()
                token.attrs["title"] = f"no document found for {target!r}: search for it"


@dataclass(frozen=True)
class Section:
    index: int  # the chunk's index
    start: int  # where it starts in the text rendered (characters)


def render(text: str, resolve: Resolve, sections: Sequence[Section] = (), here: int | None = None) -> Markup:
    """``text`` (Markdown) as safe HTML. ``sections``: where chunks start, each marked by an anchor
    ``#chunk-N`` before the block it starts in; the blocks of chunk ``here`` sit in ``div.here``."""
    tokens = _MD.parse(text)
    _rewrite_links(tokens, resolve)
    for token in tokens:
        if token.nesting == 1 and token.tag in DIRECTED:
            token.attrSet("dir", "auto")
    lines = sorted((text.count("\n", 0, max(0, s.start)), s.index) for s in sections)
    here_lines = _span_of(text, sections, here)
    out: list[Token] = []
    placed = 0
    inside = False
    for token in tokens:
        top = token.level == 0 and token.nesting in (0, 1) and token.map is not None
        if top:
            assert token.map is not None
            first, last = token.map
            anchors = []
            while placed < len(lines) and lines[placed][0] < last:
                anchors.append(lines[placed][1])
                placed += 1
            for index in anchors:
                out.append(_raw(f'<span id="chunk-{index}"></span>'))
            holds = here_lines is not None and first < here_lines[1] and last > here_lines[0]
            if holds and not inside:
                out.append(_raw('<div class="here">'))
                inside = True
            elif not holds and inside:
                out.append(_raw("</div>"))
                inside = False
        out.append(token)
    out.extend(_raw(f'<span id="chunk-{index}"></span>') for _, index in lines[placed:])
    if inside:
        out.append(_raw("</div>"))
    return Markup(_boxed_tables(_CLEANER.clean(_MD.renderer.render(out, _MD.options, {}))))


def _boxed_tables(html: str) -> str:
    """Each table of sanitised ``html`` in a box that scrolls sideways by itself (a phone's page does
    not), which the keyboard can focus to scroll. Only the renderer makes a ``<table>`` tag: raw HTML
    is off, so a table typed in a note is escaped text by now."""
    return (html.replace("<table>", '<div class="table-box" role="region" tabindex="0" aria-label="Table"><table>')
            .replace("</table>", "</table></div>"))


def render_plain(text: str, sections: Sequence[Section] = (), here: int | None = None) -> Markup:
    """Text that is not Markdown (plain text, a converted PDF) in a ``<pre>``, escaped, each chunk's
    piece in a ``span#chunk-N`` (running to the next chunk's start)."""
    starts = sorted((min(max(0, s.start), len(text)), s.index) for s in sections)
    if not starts:
        return Markup(f'<pre class="body" dir="auto">{html.escape(text)}</pre>')
    cuts = [0, *[start for start, _ in starts[1:]], len(text)]
    mark = ' class="here"'
    pieces = [f'<span id="chunk-{index}"{mark if index == here else ""}>{html.escape(text[cuts[i]:cuts[i + 1]])}</span>'
              for i, (_, index) in enumerate(starts)]
    return Markup('<pre class="body" dir="auto">' + "".join(pieces) + "</pre>")


def _span_of(text: str, sections: Sequence[Section], here: int | None) -> tuple[int, int] | None:
    """The lines chunk ``here`` covers, end exclusive: from the line it starts on to the next chunk's
    start (that line too when the next starts mid-line, as a long paragraph's second chunk does)."""
    ordered = sorted(sections, key=lambda s: s.start)
    for i, section in enumerate(ordered):
        if section.index == here:
            first = text.count("\n", 0, max(0, section.start))
            if i + 1 == len(ordered):
                return first, 1 << 30
            end = min(max(0, ordered[i + 1].start), len(text))
            mid_line = end > 0 and text[end - 1] != "\n"
            return first, max(first + 1, text.count("\n", 0, end) + (1 if mid_line else 0))
    return None


def _raw(content: str) -> Token:
    token = Token("html_block", "", 0)
    token.content = content
    return token


# -- snippets --------------------------------------------------------------------------------------

_MARKUP_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\[\[([^\]|#]*)(?:#[^\]|]*)?\|([^\]]*)\]\]"), r"\2"),  # [[target|shown]]
    (re.compile(r"\[\[([^\]|#]*)(?:#[^\]]*)?\]\]"), r"\1"),  # [[target]]
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)?"), r"\1"),  # ![alt](src)
    (re.compile(r"\[([^\]]*)\]\([^)]*\)?"), r"\1"),  # [text](href)
    (re.compile(r"<(https?://[^>\s]+)>"), r"\1"),  # <autolink>
    (re.compile(r"`+"), ""),
    (re.compile(r"(\*\*|__|~~)"), ""),
    (re.compile(r"(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)"), ""),
    (re.compile(r"(^|\s)(#{1,6}|>|[-+*]|\d+\.)\s+"), r"\1"),  # heading, quote, list markers
    (re.compile(r"\s*\|\s*(?:[-:]+\s*\|\s*)*"), " · "),  # table cells
    (re.compile(r"(?:\s*·\s*)+"), " · "),
]


def plain(text: str) -> str:
    """A snippet's Markdown as the words a reader sees: no backticks, link syntax, emphasis marks or
    table pipes (a link shows its text), whitespace collapsed."""
    for pattern, replacement in _MARKUP_RULES:
        text = pattern.sub(replacement, text)
    return " ".join(text.split()).strip(" ·")


def _highlighted(query: str) -> re.Pattern[str] | None:
    """What ``snippet`` marks: each word starting with a query word (of three letters or more, when the
    query has any: "in" and "of" are marked everywhere else); in scripts written without spaces, the
    query's runs and their character pairs (or words) wherever they stand."""
    found = {w.lower() for w in _WORD.findall(query)}
    unspaced = {w for w in found if has_unspaced(w)}
    spaced = found - unspaced
    words = sorted({w for w in spaced if len(w) > 2} or spaced, key=len, reverse=True)
    pieces = sorted({p for w in unspaced for p in (w, *index_terms(w, UNDETERMINED)) if has_unspaced(p)},
                    key=len, reverse=True)
    alternatives = ([r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words) + r")\w*"] if words else []) + [
        re.escape(p) for p in pieces]
    return re.compile("|".join(alternatives), re.IGNORECASE) if alternatives else None


def snippet(text: str, query: str) -> Markup:
    """``plain(text)``, escaped, with the query's words in ``<mark>`` (see ``_highlighted``)."""
    shown = plain(text)
    pattern = _highlighted(query)
    if pattern is None:
        return Markup(html.escape(shown))
    out, at = [], 0
    for match in pattern.finditer(shown):
        out.append(html.escape(shown[at:match.start()]))
        out.append(f"<mark>{html.escape(match.group(0))}</mark>")
        at = match.end()
    out.append(html.escape(shown[at:]))
    return Markup("".join(out))


__all__ = ["Resolve", "Section", "doc_href", "plain", "render", "render_plain", "snippet"]
