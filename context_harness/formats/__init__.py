"""Document formats, a leaf both connectors and ingest use: Markdown front matter and titles
(``markdown.py``), documents converted to text (``documents.py``: PDF, DOCX, HTML and the table of
every format; ``office.py``: PPTX, ODT; ``sheets.py``: XLSX, ODS, CSV; ``ebooks.py``: EPUB;
``notebooks.py``: Jupyter; ``mail.py``: .eml, .mbox), and reStructuredText (``rest.py``, by
docutils), AsciiDoc and Org read as title and sections (``outlines.py``)."""
