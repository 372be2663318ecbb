"""Small PDFs written byte by byte for the loader tests (no PDF library writes them)."""

from __future__ import annotations


def pdf_bytes(objects: list[bytes]) -> bytes:
    """A PDF of the given objects (numbered from 1, the first the catalog) with a correct cross-reference table."""
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


def _text(x: int, y: int, words: str) -> bytes:
    """A content-stream line showing ``words`` at (x, y) in 10-point Helvetica."""
    return b"BT /F1 10 Tf %d %d Td (%s) Tj ET\n" % (x, y, words.encode())


def ruled_table_pdf() -> bytes:
    """A 300x300 page: the caption "Table 2: Upload limits", a ruled table (limit/value; size/25 MB; files/10)
    and the paragraph "Uploads are checked twice." under it."""
    rows, cols = [235, 210, 185, 160], [50, 150, 250]
    lines = b"0.5 w\n" + b"".join(b"50 %d m 250 %d l S\n" % (y, y) for y in rows)
    lines += b"".join(b"%d 160 m %d 235 l S\n" % (x, x) for x in cols)
    cells = [("limit", "value"), ("size", "25 MB"), ("files", "10")]
    text = _text(50, 245, "Table 2: Upload limits")
    for (left, right), top in zip(cells, rows):
        text += _text(55, top - 17, left) + _text(155, top - 17, right)
    text += _text(50, 120, "Uploads are checked twice.")
    stream = lines + text
    return pdf_bytes(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 300] /Contents 4 0 R"
            b" /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>",
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        ]
    )


def _grid(rows: list[int], cols: list[int], cells: list[tuple[str, str]]) -> bytes:
    """A ruled two-column table: horizontal rules at ``rows`` (top down), vertical ones at ``cols``, a cell's text
    17 points under the rule above it."""
    lines = b"0.5 w\n" + b"".join(b"%d %d m %d %d l S\n" % (cols[0], y, cols[-1], y) for y in rows)
    lines += b"".join(b"%d %d m %d %d l S\n" % (x, rows[-1], x, rows[0]) for x in cols)
    for (left, right), top in zip(cells, rows, strict=False):
        lines += _text(cols[0] + 5, top - 17, left) if left else b""
        lines += _text(cols[1] + 5, top - 17, right) if right else b""
    return lines


def _pages(streams: list[bytes]) -> bytes:
    """A PDF of 300x300 pages, one per content stream, in 10-point Helvetica."""
    count = len(streams)
    kids = b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(count))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count)]
    for i, stream in enumerate(streams):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 300] /Contents %d 0 R" % (4 + 2 * i)
            + b" /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>"
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    return pdf_bytes(objects)


def continued_table_pdf() -> bytes:
    """Two pages with the running header "Field Guide" and a page number: page 1 the caption "Table 4: Settings"
    and a ruled table (setting/default; size/25; limit/"the upload cap") at its foot; page 2, at its top, the
    table's continuation without a header row, its first row the end of the "limit" row ("in megabytes"), then
    depth/4, and the paragraph "Depth is per worker." under it."""
    first = _text(50, 285, "Field Guide") + _text(50, 245, "Table 4: Settings")
    first += _grid(
        [235, 210, 185, 160], [50, 150, 250], [("setting", "default"), ("size", "25"), ("limit", "the upload cap")]
    )
    first += _text(145, 15, "1")
    second = _text(50, 285, "Field Guide")
    second += _grid([270, 245, 220], [50, 150, 250], [("", "in megabytes"), ("depth", "4")])
    second += _text(50, 180, "Depth is per worker.") + _text(145, 15, "2")
    return _pages([first, second])


def graph_paper_pdf(lines: int, size: int = 600) -> bytes:
    """A one-page PDF ruled as graph paper: ``lines`` vertical and ``lines`` horizontal rules evenly spaced over a
    ``size``-point square page, and one line of text ("Graph paper.") above them; 120 lines is about 6.5 KB."""
    step = size / (lines + 1)
    rules = b"0.2 w\n" + b"".join(b"%.2f 0 m %.2f %d l S\n" % (step * i, step * i, size) for i in range(1, lines + 1))
    rules += b"".join(b"0 %.2f m %d %.2f l S\n" % (step * i, size, step * i) for i in range(1, lines + 1))
    stream = rules + _text(10, size - 1, "Graph paper.")
    return pdf_bytes(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents 4 0 R" % (size, size + 10)
            + b" /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>",
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        ]
    )
