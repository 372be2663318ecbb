"""The kg package stays arranged by stage: small folders, and ``_`` modules used only inside ``rags_expert.kg``."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KG = ROOT / "rags_expert" / "kg"


def test_every_kg_folder_holds_at_most_7_modules_besides_its_init():
    crowded = {
        str(folder.relative_to(KG)): n
        for folder in [KG, *(p for p in KG.iterdir() if p.is_dir() and (p / "__init__.py").exists())]
        if (n := len([m for m in folder.glob("*.py") if m.name != "__init__.py"])) > 7
    }
    assert crowded == {}


def test_internal_modules_are_imported_only_inside_kg():
    internal = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts) for p in KG.rglob("_[a-z]*.py") if p.name != "__init__.py"
    )
    assert internal  # the check sees something
    outside = [
        f"{path.relative_to(ROOT)} names {name}"
        for folder in ("rags_expert", "tests", "bench", "examples")
        for path in (ROOT / folder).rglob("*.py")
        if KG not in path.parents and path != Path(__file__).resolve()
        for name in internal
        if re.search(rf"\b{re.escape(name)}\b", path.read_text(encoding="utf-8"))
    ]
    assert outside == []
