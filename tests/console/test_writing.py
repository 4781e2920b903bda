"""Writing from the console, through the real HTTP app under uvicorn on a writable folder: New note,
Edit with a preview, a change on disk meanwhile shown beside the user's text (never overwritten
silently), Move, Delete and Restore from the trash; refused without CSRF and in read-only mode."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from context_harness.store.records import document_id
from support.console import client, csrf_of


@pytest.fixture
def writable(config, config_path: Path):
    config.connectors.filesystem["docs"].writable = True
    (config_path.parent / "docs" / "fronted.md").write_text(
        "---\ntitle: Fronted\ntags: [keep]\n---\nFirst body line about walnuts.\n", encoding="utf-8")
    return config


def textarea_of(page: str) -> str:
    return html.unescape(re.search(r'<textarea id="note-text" name="\w+"[^>]*>(.*?)</textarea>', page, re.S).group(1))


def hidden(page: str, name: str) -> str:
    return html.unescape(re.search(rf'<input type="hidden" name="{name}" value="([^"]*)"', page).group(1))


def test_new_edit_preview_move_delete_restore(writable, config_path: Path, start_server):
    docs = config_path.parent / "docs"
    server = start_server(writable)
    with client(server) as ui:
        form = ui.get("/ui/notes/new")
        assert form.status_code == 200 and '<a href="/ui/notes/new">New note</a>' in form.text
        csrf = csrf_of(form.text)
        made = ui.post("/ui/notes/new", data={"csrf": csrf, "source": "filesystem:docs", "path": "inbox/shed.md",
                                              "title": "Shed", "content": "Paint it *green*.\r\nThen [[fronted]]."})
        assert made.status_code == 303 and made.headers["location"].startswith("/ui/doc?id=")
        assert (docs / "inbox" / "shed.md").read_text(encoding="utf-8") == "# Shed\n\nPaint it *green*.\nThen [[fronted]].\n"
        page = ui.get(made.headers["location"]).text
        assert "<em>green</em>" in page and 'class="wikilink" rel="noopener noreferrer">fronted</a>' in page
        doc_id = hidden(page, "id")

        edit = ui.get("/ui/notes/edit", params={"id": doc_id})
        assert textarea_of(edit.text) == "# Shed\n\nPaint it *green*.\nThen [[fronted]].\n"
        version = hidden(edit.text, "version")
        preview = ui.post("/ui/notes/edit", data={"csrf": csrf, "id": doc_id, "version": version, "do": "preview",
                                                  "text": "# Shed\r\n\r\nPaint it **blue**.\r\n"})
        assert '<article class="markdown preview"><h1 dir="auto">Shed</h1>\n<p dir="auto">Paint it <strong>blue</strong>.</p>' in preview.text
        assert "green" in (docs / "inbox" / "shed.md").read_text(encoding="utf-8"), "a preview writes nothing"
        saved = ui.post("/ui/notes/edit", data={"csrf": csrf, "id": doc_id, "version": version, "do": "save",
                                                "text": "# Shed\r\n\r\nPaint it **blue**.\r\n"})
        assert saved.status_code == 303
        assert (docs / "inbox" / "shed.md").read_text(encoding="utf-8") == "# Shed\n\nPaint it **blue**.\n"
        found = ui.get("/ui/search", params={"q": "blue", "mode": "keyword"}).text
        assert "Shed" in found and "<mark>blue</mark>" in found

        page = ui.get(saved.headers["location"]).text
        moved = ui.post("/ui/notes/move", data={"csrf": csrf, "id": doc_id, "version": hidden(page, "version"),
                                                "to": "projects/shed.md"})
        assert moved.status_code == 303 and not (docs / "inbox" / "shed.md").exists()
        assert (docs / "projects" / "shed.md").exists() and moved.headers["location"] != f"/ui/doc?id={doc_id}"
        page = ui.get(moved.headers["location"]).text
        new_id = hidden(page, "id")
        deleted = ui.post("/ui/notes/delete", data={"csrf": csrf, "id": new_id, "version": hidden(page, "version")})
        assert deleted.status_code == 303 and deleted.headers["location"].startswith("/ui/trash?done=deleted")
        assert not (docs / "projects" / "shed.md").exists()
        assert ui.get(f"/ui/doc?id={new_id}").status_code == 404
        trash = ui.get(deleted.headers["location"]).text
        assert "projects/shed.md" in trash and "Done: deleted projects/shed.md." in trash
        restored = ui.post("/ui/trash/restore", data={"csrf": csrf, "trash_id": hidden(trash, "trash_id")})
        assert restored.status_code == 303 and restored.headers["location"] == f"/ui/doc?id={new_id}"
        assert (docs / "projects" / "shed.md").read_text(encoding="utf-8") == "# Shed\n\nPaint it **blue**.\n"
        assert "The trash is empty." in ui.get("/ui/trash").text


def test_a_change_on_disk_shows_both_versions_and_the_user_chooses(writable, config_path: Path, start_server):
    note = config_path.parent / "docs" / "fronted.md"
    server = start_server(writable)
    with client(server) as ui:
        found = ui.get("/ui/search", params={"q": "walnuts", "mode": "keyword"}).text
        doc_id = html.unescape(re.search(r'href="/ui/doc\?id=([^"&]+)', found).group(1))
        edit = ui.get("/ui/notes/edit", params={"id": doc_id}).text
        csrf, version = csrf_of(edit), hidden(edit, "version")
        assert textarea_of(edit) == "First body line about walnuts.\n"  # the front matter is not in the editor
        note.write_text(note.read_text(encoding="utf-8") + "A line someone added on disk.\n", encoding="utf-8")

        mine = "First body line about walnuts, edited in the console.\n"
        clash = ui.post("/ui/notes/edit", data={"csrf": csrf, "id": doc_id, "version": version, "do": "save",
                                                "text": mine})
        assert clash.status_code == 409 and "Changed on disk while you edited" in clash.text
        assert "A line someone added on disk." in note.read_text(encoding="utf-8"), "nothing overwritten"
        assert "edited in the console" not in note.read_text(encoding="utf-8")
        theirs = re.search(r'<article class="markdown theirs">(.*?)</article>', clash.text, re.S).group(1)
        assert "A line someone added on disk." in theirs
        assert textarea_of(clash.text) == mine and hidden(clash.text, "version") != version
        assert version in clash.text  # the message names the version the user started from

        chosen = ui.post("/ui/notes/edit", data={"csrf": csrf, "id": doc_id, "do": "save", "text": mine,
                                                 "version": hidden(clash.text, "version")})
        assert chosen.status_code == 303
        assert note.read_text(encoding="utf-8") == "---\ntitle: Fronted\ntags: [keep]\n---\n" + mine

        stale = ui.post("/ui/notes/delete", data={"csrf": csrf, "id": doc_id, "version": version})
        assert stale.status_code == 409 and "changed on disk" in stale.text and note.exists()


def test_writes_need_csrf_and_a_writable_console(writable, config, config_path: Path, start_server):
    note = config_path.parent / "docs" / "fronted.md"
    server = start_server(writable)
    with client(server) as ui:
        assert ui.post("/ui/notes/new", data={"source": "docs", "path": "x.md", "content": "x"}).status_code == 403
        assert ui.post("/ui/trash/restore", data={"trash_id": "x"}).status_code == 403
        bad = ui.post("/ui/notes/new", data={"csrf": csrf_of(ui.get("/ui/trash").text), "source": "docs",
                                             "path": "../outside.md", "content": "x"})
        assert bad.status_code == 400 and 'role="alert"' in bad.text and not (config_path.parent / "outside.md").exists()
        other = ui.get("/ui/notes/edit", params={"id": document_id("filesystem:docs", "fronted.md")})
        assert other.status_code == 200  # the writable source's note; another source's is refused:
    config.connectors.filesystem["docs"].writable = False
    config.connectors.filesystem["notes"] = config.connectors.filesystem["docs"].model_copy(
        update={"root": config_path.parent / "notes", "writable": True})
    (config_path.parent / "notes").mkdir()
    server = start_server(config)
    with client(server) as ui:
        refused = ui.get("/ui/notes/edit", params={"id": document_id("filesystem:docs", "fronted.md")})
        assert refused.status_code == 403 and "filesystem:docs is not writable" in refused.text
        assert "filesystem:notes" in refused.text
    config.connectors.filesystem["docs"].writable = True
    config.ui.read_only = True
    server = start_server(config)
    with client(server) as ui:
        page = ui.get("/ui/search").text
        assert "/ui/notes/new" not in page and ui.get("/ui/notes/new").status_code == 403
        doc_id = document_id("filesystem:docs", "fronted.md")
        deleted = ui.post("/ui/notes/delete", data={"csrf": csrf_of(page), "id": doc_id})
        assert deleted.status_code == 403 and note.exists()
