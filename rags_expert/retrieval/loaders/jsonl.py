"""JSONL: one unit per object; its text from content/text/page_content/body, the other keys kept as metadata."""

from __future__ import annotations

import json
from pathlib import Path

from rags_expert.retrieval.loaders.base import TextUnit, UnreadableFileError, decode, shown_path

TEXT_KEYS = ("content", "text", "page_content", "body")


def load_jsonl(path: Path, data: bytes) -> list[TextUnit]:
    """JSONL: one unit per object; text from content/text/page_content/body, other keys kept as metadata."""
    units = []
    for lineno, line in enumerate(decode(data, path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UnreadableFileError(f"{shown_path(path)}:{lineno}: invalid JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise UnreadableFileError(f"{shown_path(path)}:{lineno}: expected a JSON object per line")
        text = next((obj[k] for k in TEXT_KEYS if isinstance(obj.get(k), str)), None)
        if text is None:
            raise UnreadableFileError(f"{shown_path(path)}:{lineno}: no text field (one of {', '.join(TEXT_KEYS)})")
        extra = {k: v for k, v in obj.items() if k not in TEXT_KEYS and k not in ("title", "page")}
        page = obj.get("page") if isinstance(obj.get("page"), int) else None
        units.append(
            TextUnit(
                text=text,
                title=str(obj.get("title") or f"{path.stem} #{lineno}"),
                page=page,
                key=f"L{lineno}",
                metadata=extra,
            )
        )
    return units
