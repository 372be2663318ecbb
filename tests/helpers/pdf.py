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
