"""E-mail: a message (``.eml``) or a mailbox (``.mbox``) as text, with the standard library's
``email`` and ``mailbox``.

A message's subject is its title, its sender the author, its ``Date`` when it was written; ``from``,
``to``, ``cc``, ``date``, ``message_id`` and ``in_reply_to`` go into the document's metadata. Its text
is the plain-text body, else the HTML one read as an HTML page; attachments are left out.

A mailbox is one document, a ``#`` section per message (its subject, then a line naming sender,
recipients and date): a thread reads in order and its messages are found by one search. A message
that answers another in the same mailbox (``In-Reply-To``) says which one. The mailbox's dates are
its first and last message's. Bounds: at most ``MAX_MESSAGES`` messages (``too_many_messages``) and
``MAX_PARTS`` MIME parts a message (``too_many_parts``).

Messages are parsed with the ``compat32`` policy and their headers decoded (RFC 2047) one by one:
the ``default`` policy's header objects cost 2 ms a message (1,000 messages: 2.1 s), this 0.15 ms.
"""

from __future__ import annotations

import datetime as dt
import email
import email.errors
import email.header
import email.utils
import itertools
import mailbox
import os
import tempfile
from email.message import Message

from context_harness.formats.documents import ConversionFailed, Converted, ConvertOptions, html_text

MAX_MESSAGES = 10_000
MAX_PARTS = 1_000
HEADERS = ("from", "to", "cc", "date", "message_id", "in_reply_to")


def eml(raw: bytes, options: ConvertOptions) -> Converted:
    """One message: subject, sender and date as title, author and date; its headers as metadata."""
    message = _parse(raw)
    meta = _headers(message)
    date = _date(meta.get("date"))  # when it was written: a message is not edited after
    return Converted(meta.get("subject"), _body(message), meta.get("from"), date, date,
                     metadata={k: meta[k] for k in HEADERS if k in meta})


def mbox(raw: bytes, options: ConvertOptions) -> Converted:
    """Every message of a mailbox, in the file's order (``mailbox`` reads a path: a private copy)."""
    with tempfile.TemporaryDirectory(prefix="ctx-mbox-") as folder:
        path = os.path.join(folder, "mailbox")
        with open(path, "wb") as out:
            out.write(raw)
        box = mailbox.mbox(path, create=False)
        try:
            keys = box.keys()
            if len(keys) > MAX_MESSAGES:
                raise ConversionFailed("too_many_messages")
            messages = [_parse(box.get_bytes(key)) for key in keys]
        finally:
            box.close()
    heads = [_headers(m) for m in messages]
    by_id = {h["message_id"]: h for h in heads if h.get("message_id")}
    blocks = []
    for message, head in zip(messages, heads, strict=True):
        blocks.append("# " + (head.get("subject") or "(no subject)"))
        blocks.append(" · ".join(f"{name.title()}: {head[name]}" for name in ("from", "to", "cc", "date")
                                 if head.get(name)))
        parent = by_id.get(head.get("in_reply_to", ""))
        if parent is not None:
            blocks.append(f"In reply to: {parent.get('subject') or '(no subject)'} ({parent.get('from', '')}, "
                          f"{parent.get('date', '')})")
        body = _body(message)
        if body:
            blocks.append(body)
    dates = sorted(d for d in (_date(h.get("date")) for h in heads) if d is not None)
    return Converted(None, "\n\n".join(blocks), None, dates[0] if dates else None, dates[-1] if dates else None,
                     {"messages": len(messages)})


def _parse(raw: bytes) -> Message:
    message = email.message_from_bytes(raw)
    if sum(1 for _ in itertools.islice(message.walk(), MAX_PARTS + 1)) > MAX_PARTS:
        raise ConversionFailed("too_many_parts")
    return message


def _headers(message: Message) -> dict[str, str]:
    """The headers that name a message, decoded and on one line (one that cannot be decoded as written)."""
    found = {}
    for name in ("subject", *HEADERS):
        value = message.get(name.replace("_", "-"))
        if value is None:
            continue
        try:
            text = str(email.header.make_header(email.header.decode_header(str(value))))
        except (email.errors.HeaderParseError, LookupError, UnicodeError, ValueError):
            text = str(value)
        text = " ".join(text.split())
        if text:
            found[name] = text
    return found


def _body(message: Message) -> str:
    """The first plain-text part that is not an attachment, else the first HTML one as text; ""
    when there is none."""
    html = None
    for part in message.walk():
        if part.is_multipart() or part.get_content_disposition() == "attachment":
            continue
        kind = part.get_content_type()
        if kind == "text/plain":
            return _text(part).replace("\r\n", "\n").strip()
        if kind == "text/html" and html is None:
            html = part
    if html is None:
        return ""
    try:
        return html_text(_text(html).encode("utf-8"), base_level=1).text.strip()
    except ConversionFailed:
        return ""


def _text(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    try:
        return payload.decode(part.get_content_charset() or "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        return payload.decode("utf-8", "replace")


def _date(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
