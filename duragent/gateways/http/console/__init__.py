"""The web console at ``/ui``: a static shell and the two read routes its pages need.

- ``routes``: the shell, its static files and the ``/ui/api`` views (module docstring: why
  the pages hold no data and how the token is kept);
- ``static/``: the page, script and style sheet, read with ``importlib.resources`` and
  shipped as package data (``pyproject.toml``).
"""
