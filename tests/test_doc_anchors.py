"""Every ``#anchor`` a page of docs/ or the README links to is a heading of the page it names.

``mkdocs build --strict`` does not check anchors, so a renamed heading silently broke links into
docs/benchmarks.md. Anchors are computed with the rules of Python-Markdown's ``toc`` extension, which mkdocs
uses: the heading's text without its markup, accents folded to ASCII, punctuation dropped, lower case,
runs of spaces and hyphens made one hyphen; a repeated heading gets ``_1``, ``_2``...
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_CODE_SPAN = re.compile(r"`+([^`]*)`+")
_LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"<[^>]+>")
_INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)")


def slugify(heading: str) -> str:
    """The id Python-Markdown's toc gives a heading with this Markdown text."""
    text = _TAG.sub("", _LINK_TEXT.sub(r"\1", _CODE_SPAN.sub(r"\1", heading)))
    text = re.sub(r"(\*\*|__|\*|~~)", "", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _lines_outside_fences(page: Path) -> list[tuple[int, str]]:
    """The page's lines (numbered from 1) that are not inside a fenced code block."""
    out, fenced = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out.append((number, line))
    return out


def anchors(page: Path) -> set[str]:
    """The ids of the page's headings, made unique as toc makes them."""
    ids: set[str] = set()
    for _, line in _lines_outside_fences(page):
        if heading := _HEADING.match(line):
            base = slug = slugify(heading.group(2))
            n = 1
            while slug in ids:
                slug, n = f"{base}_{n}", n + 1
            ids.add(slug)
    return ids


def links(page: Path) -> list[tuple[int, str]]:
    """``(line, target)`` of every inline or reference link on the page outside code."""
    found = []
    for number, line in _lines_outside_fences(page):
        text = _CODE_SPAN.sub("", line)
        found += [(number, m.group(1)) for m in _INLINE_LINK.finditer(text)]
        found += [(number, m.group(1)) for m in _REFERENCE.finditer(text)]
    return found


def broken_anchors(pages: list[Path]) -> list[str]:
    """``page:line: target`` for each link whose anchor is not a heading of the Markdown page it names."""
    broken = []
    for page in pages:
        for number, target in links(page):
            path, _, anchor = target.partition("#")
            if not anchor or "://" in path or path.startswith("mailto:"):
                continue
            linked = page if not path else (page.parent / path).resolve()
            if linked.suffix != ".md" or not linked.is_file():
                continue  # a missing page is mkdocs --strict's to report; here: anchors of pages that exist
            if anchor not in anchors(linked):
                shown = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
                broken.append(f"{shown}:{number}: {target}")
    return broken


def test_every_anchor_into_a_page_names_one_of_its_headings():
    assert broken_anchors(PAGES) == []


@pytest.mark.parametrize(
    "heading, slug",
    [
        ("Single-fact questions offline (issue 11)", "single-fact-questions-offline-issue-11"),
        ("`ask --local` start-up and answer time, before/after", "ask-local-start-up-and-answer-time-beforeafter"),
        ("Fusion grid on dev (`--tune`; top 6 per model)", "fusion-grid-on-dev-tune-top-6-per-model"),
        ("[The API](api/index.md) & **bold** café", "the-api-bold-cafe"),
        ("finalize_failure", "finalize_failure"),
    ],
)
def test_slugs_follow_the_toc_rules(heading, slug):
    assert slugify(heading) == slug


def test_a_renamed_heading_is_reported_with_its_page_and_line(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## Results (issue 3)\n\n## Results (issue 3)\n")
    (tmp_path / "b.md").write_text(
        "See [one](a.md#results-issue-3), [two](a.md#results-issue-3_1), [top](#notes) and [gone](a.md#results).\n"
        "```\n[in code](a.md#nowhere)\n```\n\n## Notes\n"
    )
    found = [line.split(": ", 1)[1] for line in broken_anchors([tmp_path / "b.md"])]
    assert found == ["a.md#results"]


def test_our_slugs_are_python_markdowns_own():
    """The rules above against the real toc extension, where the docs extra installed it."""
    markdown = pytest.importorskip("markdown")
    for page in PAGES:
        md = markdown.Markdown(extensions=["toc", "tables", "fenced_code"])
        md.convert(page.read_text(encoding="utf-8"))
        theirs = {token["id"] for token in _flatten(md.toc_tokens)}  # type: ignore[attr-defined]
        assert anchors(page) == theirs, page


def _flatten(tokens: list[dict]) -> list[dict]:
    return [t for token in tokens for t in [token, *_flatten(token["children"])]]
