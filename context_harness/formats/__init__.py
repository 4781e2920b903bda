"""Document formats, a leaf both connectors and ingest use: Markdown front matter and titles
(``markdown.py``) and PDF, DOCX and HTML converted to text (``documents.py``)."""
