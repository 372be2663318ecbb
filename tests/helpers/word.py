"""Word documents for the loader and CLI tests, built with python-docx (the ``docx`` extra)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any


def add_table(document: Any, rows: Sequence[Sequence[str]], *, bold_header: bool = False) -> Any:
    """A table of ``rows`` (each a row's cell texts) appended to ``document``; ``bold_header``: its first row bold,
    as Word marks a header row."""
    table = document.add_table(rows=len(rows), cols=max(len(r) for r in rows))
    for row, values in zip(table.rows, rows, strict=True):
        for cell, value in zip(row.cells, values, strict=False):
            cell.text = value
    if bold_header:
        for cell in table.rows[0].cells:
            for run in cell.paragraphs[0].runs:
                run.bold = True
    return table


def saved(document: Any) -> bytes:
    """The document as a .docx file's bytes."""
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def tiny_png() -> bytes:
    """A valid 1x1 grey PNG."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b"")
    )


def bomb(text: str, inflated_mb: int) -> bytes:
    """A valid .docx saying ``text`` with a picture whose media part is ``inflated_mb`` MiB of zeros deflated into
    about a thousandth of it (a decompression bomb: 1,024 MiB is a 1 MB file). The picture is in the text, so
    python-docx reads its part when it opens the document."""
    import zipfile

    import docx

    document = docx.Document()
    document.add_paragraph(text)
    document.add_picture(io.BytesIO(tiny_png()))
    source = zipfile.ZipFile(io.BytesIO(saved(document)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            if not info.filename.startswith("word/media/"):
                archive.writestr(info.filename, source.read(info))
                continue
            with archive.open(info.filename, "w", force_zip64=True) as part:
                for _ in range(inflated_mb):
                    part.write(bytes(2**20))
    return out.getvalue()
