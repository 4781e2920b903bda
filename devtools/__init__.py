"""Tools for working on context-harness, not shipped in the package: the docs site's generated reference
(``pages.PAGES``, wired into ``mkdocs.yml`` as a hook by ``mkdocs_hooks.py``)."""
