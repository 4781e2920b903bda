"""A file's extension matches the globs whatever its case (``X.MD`` is Markdown), include and exclude
alike; a file that is not indexed is said why: binary (a NUL byte), not UTF-8, or the globs."""

from __future__ import annotations

import pytest

from context_harness.connectors.filesystem import LEFT_OUT, FilesystemConnector, Globs, spellings
from context_harness.core.harness import Harness
from support.workspace import Workspace

pytestmark = pytest.mark.anyio


def test_spellings_lower_the_extension_only() -> None:
    assert spellings("Notes/X.MD") == ("Notes/X.MD", "Notes/X.md")
    assert spellings("a/b.Markdown") == ("a/b.Markdown", "a/b.markdown")
    assert spellings("x.md") == ("x.md",)
    assert spellings("DIR.MD/README") == ("DIR.MD/README",)  # no extension: a folder's dot does not count
    assert spellings(".MD") == (".MD",)  # a dot file has no extension
    globs = Globs(["**/*.md"], ["drafts/**/*.md"])
    assert globs.wanted("X.MD") and globs.wanted("sub/y.Md") and not globs.wanted("drafts/Z.MD")
    assert not globs.wanted("X.MDX") and not globs.wanted("md/README")


async def test_upper_case_extensions_are_indexed(workspace: Workspace) -> None:
    workspace.write("SHOUT.MD", "# Shouted\n\nA note saved by a tool that writes capitals.\n")
    workspace.write("sub/Read.Me.TXT", "plain text in capitals\n")
    workspace.write("sub/lower.md", "# Lower\n\nthe usual spelling\n")
    workspace.write("old/KEEP.MD", "# Kept out\n\nexcluded whatever its case\n")
    config = workspace.config()
    config.connectors.filesystem["docs"].exclude_globs = ["old/**/*.md"]
    async with Harness.open(config) as h:
        summary = (await h.sync()).sources[0]
        listed = {(await h.get(d.id)).source_id: (await h.get(d.id)) for d in (await h.document_listing()).documents}
    assert summary.added == 3 and set(listed) == {"SHOUT.MD", "sub/Read.Me.TXT", "sub/lower.md"}
    assert listed["SHOUT.MD"].content_type == "text/markdown" and listed["SHOUT.MD"].title == "Shouted"


def test_a_file_left_out_says_why(workspace: Workspace) -> None:
    (workspace.docs / "nul.md").write_bytes(b"# Title\n\nbefore\x00after\n")
    (workspace.docs / "latin.md").write_bytes("caf\u00e9\n".encode("latin-1"))
    (workspace.docs / "picture.png").write_bytes(b"\x89PNG")
    workspace.write("ok.md", "# Fine\n")
    (workspace.docs / ".gitignore").write_text("ignored.md\n", encoding="utf-8")
    workspace.write("ignored.md", "# Ignored\n")
    connector = FilesystemConnector("docs", workspace.config().connectors.filesystem["docs"])
    assert "NUL byte" in connector.unindexed_reason("nul.md") and "binary" in connector.unindexed_reason("nul.md")
    assert connector.unindexed_reason("latin.md") == "it is not valid UTF-8 text"
    assert connector.unindexed_reason("picture.png") == LEFT_OUT
    assert connector.unindexed_reason("ignored.md") == LEFT_OUT
    assert connector.unindexed_reason("ok.md").startswith("it was read")
