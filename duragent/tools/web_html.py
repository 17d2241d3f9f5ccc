"""HTML to Markdown for the ``web`` tool, bounded in the work a hostile page can cause.

Kept apart from the fetching so its cost model stays in one place: it runs on a thread (the
caller's job), holds at most ``max_body`` of input, and converts at most :data:`MAX_TAGS` tags.
"""

from __future__ import annotations

import re

__all__ = ["MAX_TAGS", "html_to_markdown"]

MAX_TAGS = 20_000
_DROPPED_TAGS = ("script", "style", "noscript", "template", "iframe", "svg")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")


def _first_tags(html: str, limit: int) -> tuple[str, bool]:
    """``html`` up to its ``limit``-th tag, and whether anything was cut."""
    pos = -1
    for _ in range(limit + 1):
        pos = html.find("<", pos + 1)
        if pos < 0:
            return html, False
    return html[:pos], True


def html_to_markdown(html: str, max_tags: int = MAX_TAGS) -> str:
    """Markdown of an HTML document, without scripts, styles and other non-content.

    CPU-bound on large pages, so callers run it on a thread. Text without any tag is returned
    unchanged (BeautifulSoup would warn that it looks like a file name). A document nested too
    deeply for the recursive converter falls back to its plain text. Only the first
    ``max_tags`` tags are converted: the tree and the converter cost ~50 us and ~600 bytes per
    tag, so a 1 MiB page of 260,000 ``<br>`` took 15 s of CPU and 190 MB; 20,000 tags is about
    what fills the 50 KiB the model reads of a dense page.
    """
    if "<" not in html:
        return html.strip()
    html, cut = _first_tags(html, max_tags)
    # Imported here: BeautifulSoup and markdownify cost ~0.15 s, paid only when a page is read.
    from bs4 import BeautifulSoup
    from markdownify import ATX, MarkdownConverter

    soup = BeautifulSoup(_XML_DECLARATION.sub("", html, count=1), "html.parser")
    for tag in soup(list(_DROPPED_TAGS)):
        tag.decompose()
    try:
        markdown = MarkdownConverter(heading_style=ATX, bullets="-").convert_soup(soup)
    except RecursionError:
        markdown = soup.get_text("\n")
    markdown = _BLANK_RUNS.sub("\n\n", markdown).strip()
    if cut:
        markdown += f"\n\n[page has more than {max_tags} tags; only the start was converted]"
    return markdown
