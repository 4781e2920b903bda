"""Document formats, a leaf both connectors and ingest use: Markdown front matter and titles
(``markdown.py``), PDF, DOCX and HTML converted to text (``documents.py``), and reStructuredText
(``rest.py``, by docutils), AsciiDoc and Org read as title and sections (``outlines.py``)."""
