"""Docs-site Markdown markup reduced to its visible text, checked on the chunks ingestion stores.

Every page here is written for these tests, in the markup of MkDocs (Material, pymdownx), Python-Markdown,
Hugo, Docusaurus/MDX and MyST; code blocks showing that markup stay as they are.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from helpers.extras import needs

from rags_expert.retrieval.ingest import file_records
from rags_expert.retrieval.loaders.markup import _ALERT, _CODE_REFERENCE_LINK, _REFERENCE_LINK

MARKUP = re.compile(
    r"\{\{[<%]|[%>]\}\}|^\s*(?:!!!|\?\?\?|===\s|:::|///|--8<--)|^\s*\.\. |:\w+:`|\{\w+\}`|^\[[^\]]+\]:\s", re.M
)
"""Markup that must not survive outside code: shortcodes, admonition/tab/colon/slash openers, includes,
directives, roles, link definitions."""


def chunks(tmp_path: Path, name: str, text: str, size: int = 1200) -> list[dict]:
    """The payloads of the chunks ingestion stores for a file ``name`` holding ``text``."""
    path = tmp_path / name
    path.write_text(text)
    return [r.payload for r in file_records(path, path.read_bytes(), [], size, min(200, size // 4))]


def prose(text: str) -> str:
    """``text`` without its fenced code blocks."""
    return re.sub(r"(?ms)^\s*(```+|~~~+).*?^\s*\1\s*$", "", text)


def test_an_admonition_opener_without_a_space_after_its_marker_is_one(tmp_path):
    """Python-Markdown reads ``!!!tip`` as ``!!! tip`` (cibuildwheel's docs write it so): its body is the admonition's
    text, not a line of markup."""
    page = "# Setup\n\n!!!tip\n    Pass `--platform linux` to build Linux wheels anywhere.\n\n???note\n    Details.\n"
    (chunk,) = chunks(tmp_path, "setup.md", page)
    assert "!!!" not in chunk["content"] and "???" not in chunk["content"], chunk["content"]
    assert "Pass `--platform linux` to build Linux wheels anywhere." in chunk["content"]


def test_mkdocs_admonitions_details_and_tabs_keep_their_titles_and_bodies_not_their_markup(tmp_path):
    page = """# Client

!!! warning "Connection pool"
    The pool keeps **ten** connections per host.

    !!! tip
        Nested tips are dedented too.

??? note "Why ten?"
    Measured on a busy proxy.

???+ info
    Expanded by default.

=== "pip"

    ```bash
    pip install client
    ```

=== "uv"
    Run `uv add client`.

After the tabs.
"""
    (chunk,) = chunks(tmp_path, "client.md", page)
    text = chunk["content"]
    assert not MARKUP.search(prose(text)), text
    for shown in (
        "Connection pool",
        "The pool keeps **ten** connections per host.",
        "Tip",
        "Nested tips are dedented too.",
        "Why ten?",
        "Measured on a busy proxy.",
        "Info",
        "pip",
        "uv",
        "Run `uv add client`.",
        "After the tabs.",
    ):
        assert f"\n{shown}\n" in f"\n{text}\n", shown
    assert "```bash\npip install client\n```" in text  # the tab's code, dedented, still a fence


def test_code_showing_the_markup_is_left_as_code(tmp_path):
    page = """# Admonitions

Write this:

    !!! note "Title"
        Body.

```markdown
{{% note %}}Kept in the fence.{{% /note %}}
```
"""
    (chunk,) = chunks(tmp_path, "syntax.md", page)
    assert '    !!! note "Title"\n        Body.' in chunk["content"]
    assert "{{% note %}}Kept in the fence.{{% /note %}}" in chunk["content"]


def test_hugo_shortcodes_lose_their_tags_and_keep_their_bodies_and_titles(tmp_path):
    page = """+++
title = "Deploying"
weight = 10
+++

# Deploying

{{% alert title="Before you start" color="warning" %}}
Set `REGION` first.
{{% /alert %}}

{{< tabpane >}}
{{< tab header="Linux" >}}
Use systemd.
{{< /tab >}}
{{< /tabpane >}}

See {{< ref "install.md" >}} for the install {{< icon "info" >}} guide.
"""
    (chunk,) = chunks(tmp_path, "deploy.md", page)
    text = chunk["content"]
    assert not MARKUP.search(text), text
    assert "weight" not in text and "+++" not in text  # the TOML front matter is in no chunk
    assert chunk["title"] == "Deploying"
    for shown in ("Before you start", "Set `REGION` first.", "Linux", "Use systemd.", "See  for the install  guide."):
        assert shown in text, shown


def test_docusaurus_mdx_and_myst_markup(tmp_path):
    page = """---
sidebar_position: 2
title: Retries
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';

# Retries

:::tip Backoff
Retries back off exponentially.
:::

<Tabs>
<TabItem value="py" label="Python">

Call {py:func}`client.retry` or :meth:`~client.Client.retry`.

</TabItem>
</Tabs>

```{note}
:class: dropdown
MyST note body.
```

```{code-block} python
retry(3)
```

```{toctree}
install
usage
```

:::{warning}
Colon-fenced warning.
:::

/// details | Expand me
Slash block body.
///

--8<-- "includes/abbreviations.md"

Read [the guide][guide].

[guide]: https://example.com/guide
"""
    (chunk,) = chunks(tmp_path, "retries.mdx", page)
    text = chunk["content"]
    assert not MARKUP.search(prose(text)), text
    assert "sidebar_position" not in text and "import " not in text and "<Tab" not in text
    for shown in (
        "Backoff",
        "Retries back off exponentially.",
        "Python",
        "Call `client.retry` or `retry`.",
        "Note",
        "MyST note body.",
        "```python\nretry(3)\n```",
        "Warning",
        "Colon-fenced warning.",
        "Expand me",
        "Slash block body.",
        "Read the guide.",  # a reference link shows its text (issue 53)
    ):
        assert shown in text, shown
    assert "install\nusage" not in text and ":class:" not in text and "abbreviations" not in text


def test_a_setext_heading_is_not_a_content_tab(tmp_path):
    page = "Guide\n=====\n\nText under it.\n\nPart\n----\n\nMore.\n"
    sections = [c["section"] for c in chunks(tmp_path, "g.md", page)]
    assert sections == ["Guide", "Guide > Part"]


def test_pipe_table_rows_carry_their_column_names_and_the_heading_is_their_section(tmp_path):
    page = """# Settings

## Timeouts

| Option | Default | Meaning |
|:-------|--------:|---------|
| `timeout` | 15 | Seconds per request |
| retries | 3 | A pipe \\| in a cell |
| empty | | |
"""
    (chunk,) = chunks(tmp_path, "settings.md", page)
    assert chunk["section"] == "Settings > Timeouts"
    assert chunk["content"].split("\n") == [
        "Settings > Timeouts",
        "Option: `timeout`; Default: 15; Meaning: Seconds per request",
        "",
        "Option: retries; Default: 3; Meaning: A pipe | in a cell",
        "",
        "Option: empty",
    ]


def test_a_row_found_alone_still_names_its_columns(tmp_path):
    rows = "\n".join(f"| opt{i} | {i * 7} | {'word ' * 20}|" for i in range(60))
    found = chunks(tmp_path, "big.md", f"# Options\n\n| option | default | notes |\n|---|---|---|\n{rows}\n", 400)
    assert len(found) > 5
    for chunk in found:
        body = chunk["content"].split("\n", 1)[1]
        for line in filter(None, body.split("\n")):
            assert re.fullmatch(r"option: opt\d+; default: \d+; notes: (word ?)+", line), line


@needs("rst")  # an eval-rst block is read by the rst loader
def test_myst_glossary_eval_rst_and_roles_across_lines(tmp_path):
    page = """(terms)=

# Terms

::::{glossary}

Bound logger
    What `get_logger` returns.

    :::{seealso}
    {doc}`bound-loggers`
    :::

Processor
    A callable in the chain.
::::

```{eval-rst}
.. function:: hook(cls, fields)

   Called with the class and its fields.

.. caution::

   Writing to ``params`` directly bypasses validation.
```

Arguments can be {ref}`documented in the
docstring <documenting-arguments>` too.
"""
    found = chunks(tmp_path, "terms.md", page)
    # the eval-rst object description is a heading below the page's, and the page's text after it is the page's
    assert [c["section"] for c in found] == ["Terms", "Terms > hook", "Terms"]
    text = "\n".join(c["content"] for c in found)
    assert not MARKUP.search(prose(text)), text
    for shown in (
        "Bound logger\n\nWhat `get_logger` returns.",
        "See also:\n\nbound-loggers",
        "Processor\n\nA callable in the chain.",
        "`hook(cls, fields)`\n\nCalled with the class and its fields.",
        "Caution:\n\nWriting to `params` directly bypasses validation.",
        "Arguments can be documented in the\ndocstring too.",
    ):
        assert shown in text, shown
    assert "    What" not in text  # definitions are paragraphs, not indented code
    assert "(terms)=" not in text


def test_code_spans_are_kept_as_written_and_only_roles_reduced(tmp_path):
    page = """# Placeholders

The hook reads `${WIDGET_HOME}` and `${WIDGET_PROJECT_NAME}`, then fills `{name}` and `{name}/{tag}` in
the path; see {func}`render_path` and :meth:`~widget.Path.fill` for `` `{odd}` `` cases. A `$` alone is
fine. Footnote marks [^1] go, but `[^1]` in code stays.

A lone `` pair opens no code span, so {term}`widget` is still a role.

Icons :material-check: go, `:material-check:` stays, and so does `{{< pin >}}`.

[^1]: A note.
"""
    (chunk,) = chunks(tmp_path, "placeholders.md", page)
    text = chunk["content"]
    for shown in (
        "The hook reads `${WIDGET_HOME}` and `${WIDGET_PROJECT_NAME}`, then fills `{name}` and `{name}/{tag}` in",
        "the path; see `render_path` and `fill` for `` `{odd}` `` cases. A `$` alone is",
        "fine. Footnote marks  go, but `[^1]` in code stays.",
        "A lone `` pair opens no code span, so widget is still a role.",
        "Icons  go, `:material-check:` stays, and so does `{{< pin >}}`.",
        "1. A note.",
    ):
        assert shown in text, shown


def test_myst_version_directives_read_as_sphinx_shows_them(tmp_path):
    page = """# Changelog

```{versionadded} 0.10
The `widgets` option.

It defaults to an empty list.
```

:::{versionchanged} 25.2.0
Takes a **list** now.
:::

```{deprecated} 3.1 Use {func}`make_widget` instead.
Kept for old callers.
```

````{versionremoved} 4.0
```toml
widgets = []
```
````

```{versionadded} 0.9
```
"""
    (chunk,) = chunks(tmp_path, "changelog.md", page)
    text = chunk["content"]
    assert not MARKUP.search(prose(text)), text
    for shown in (
        "New in version 0.10: The `widgets` option.\n\nIt defaults to an empty list.",
        "Changed in version 25.2.0: Takes a **list** now.",
        "Deprecated since version 3.1: Use `make_widget` instead.\n\nKept for old callers.",
        "Removed in version 4.0:\n\n```toml\nwidgets = []\n```",
        "New in version 0.9.",
    ):
        assert shown in text, shown


def test_an_unknown_myst_directive_keeps_its_argument_line_and_body_as_written(tmp_path):
    page = """# Settings

```{settingtabs} cache.size = 64
```

```{settingtabs} retry.mode "fast", timeout: 15s
limit = 5
label: "a: b"
```

:::{quick-grid}
---
columns: 2
---
left = 1
:::

```{quick-grid}
:gutter: 3
:func:`spin` starts here = yes
```

:::{py:function} spin(times=3)
Spins.
:::

```{note}
:class: dropdown
Noted.
```

```{testsetup} *
import hidden_fixture
```
"""
    found = chunks(tmp_path, "settings.md", page)
    assert [c["section"] for c in found] == ["Settings", "Settings > spin", "Settings"]  # an object description
    text = "\n".join(c["content"] for c in found)
    assert not MARKUP.search(prose(text)), text
    for shown in (
        "cache.size = 64",
        'retry.mode "fast", timeout: 15s\n\nlimit = 5\nlabel: "a: b"',
        "left = 1",
        "`spin` starts here = yes",
        "`spin(times=3)`\n\nSpins.",
        "Note\n\nNoted.",
    ):
        assert shown in text, shown
    for hidden in ("Settingtabs", "Quick grid", "columns: 2", "gutter", "{", "---", ":::", "dropdown", "hidden_"):
        assert hidden not in text, hidden


@needs("rst")  # an eval-rst block is read by the rst loader
def test_an_eval_rst_object_description_is_a_heading_below_the_markdown_heading_it_sits_under(tmp_path):
    page = """# Configuration

## Build options

```{eval-rst}
.. confval:: build-dir
  :type: ``str``
  :default: ``build``

  Where the build tree goes.
```

:::{eval-rst}
.. confval:: strict

  Fail on warnings.
:::

Both can be given on the command line.

## Notes

- A list item:

  ```{eval-rst}
  .. confval:: nested

     Read in the item, without a heading of its own.
  ```
"""
    found = [(c["section"], c["content"].removeprefix(c["section"] + "\n")) for c in chunks(tmp_path, "c.md", page)]
    assert found[:3] == [
        ("Configuration > Build options > build-dir", "Type: `str`\n\nDefault: `build`\n\nWhere the build tree goes."),
        ("Configuration > Build options > strict", "Fail on warnings."),
        ("Configuration > Build options", "Both can be given on the command line."),
    ]
    assert found[3][0] == "Configuration > Notes" and "`nested`" in found[3][1], found
    assert len(found) == 4, found


def test_a_myst_object_description_is_a_heading_below_the_page_heading(tmp_path):
    page = """# Settings

Read at start-up.

```{py:data} DEBUG
:type: bool

Whether debug pages are shown.

Default: `False`
```

:::{confval} timeout
:default: `30`

Seconds to wait.
:::

```{py:module} app
```

Both are read once.

- A list item:

  ```{py:function} inner(x)
  Read in the item.
  ```
"""
    found = [(c["section"], c["content"].removeprefix(c["section"] + "\n")) for c in chunks(tmp_path, "s.md", page)]
    assert found == [
        ("Settings", "Read at start-up."),
        ("Settings > DEBUG", "Type: bool\n\nWhether debug pages are shown.\n\nDefault: `False`"),
        ("Settings > timeout", "Default: `30`\n\nSeconds to wait."),
        ("Settings", "Both are read once.\n\n- A list item:\n\ninner(x)\n\n  Read in the item."),
    ]


def test_github_alerts_and_reference_links_read_as_the_page_shows_them(tmp_path):
    """GitHub's alerts (``> [!NOTE]``) and reference-style links (``[`Data`][]``, mkdocstrings' cross-references)
    were quoted in answers as written: ``> [!NOTE] > The [`Data`][] class …``."""
    page = """# Tables

> [!NOTE]
> The [`Data`][] class holds rows; see [the loading guide][loading] and [Other][].

> [!warning] Mind the size
> Keep tables under 10 GB.

> A plain quote stays a quote.

Code keeps its brackets: `grid[i][j]`, and so does prose indexing, grid[0][1]. ![A chart][chart] goes too.

```markdown
> [!TIP]
> See [`Data`][].
```

[loading]: https://example.org/loading
"""
    (chunk,) = chunks(tmp_path, "tables.md", page)
    text = chunk["content"]
    assert "[!" not in prose(text), text
    for shown in (
        "Note\n\nThe `Data` class holds rows; see the loading guide and Other.",
        "Warning\n\nMind the size\nKeep tables under 10 GB.",
        "> A plain quote stays a quote.",
        "Code keeps its brackets: `grid[i][j]`, and so does prose indexing, grid[0][1]. A chart goes too.",
        "```markdown\n> [!TIP]\n> See [`Data`][].\n```",
    ):
        assert shown in text, (shown, text)


@pytest.mark.parametrize(
    "line", ["[" * 100_000, "[a][" * 25_000, "][" * 50_000, "[`" * 50_000, "[`a`][" * 17_000, "> [!NOTE]" * 11_000]
)
def test_the_alert_and_reference_link_patterns_take_linear_time(line):
    """Each class stops at the next bracket or backtick: 100 KB of openers is read in milliseconds, not minutes."""
    start = time.process_time()  # CPU seconds: a busy machine does not count
    for pattern in (_ALERT, _REFERENCE_LINK, _CODE_REFERENCE_LINK):
        pattern.sub("", line)
    assert time.process_time() - start < 0.5
