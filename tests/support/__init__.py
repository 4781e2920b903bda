"""Plain helpers shared by the tests; the fixtures that use them live in ``tests/conftest.py``.

``pyproject.toml`` puts ``tests/`` on ``sys.path`` (``pythonpath``), so a test imports these as
``from support.workspace import ...``.
"""
