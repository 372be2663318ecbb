"""The BioCypher schema as the model sees it: labels, properties, directed patterns.

:func:`load_schema` reads the three shapes a BioCypher schema comes in:

* a ``schema_config.yaml`` (top-level entries with ``represented_as``),
* a ``schema_info.yaml`` (the same entries plus ``is_schema_info: true``),
* a file holding several named schemas under ``kg_schemas`` (BioChatter's
  ``kg_schema_data.yaml``; pick one with ``name=``),

or an already-parsed dict of any of these. Labels follow BioCypher's convention:
a node's label is its schema name in PascalCase (``cell type`` → ``CellType``);
a relationship's type is its ``label_as_edge`` when given, else its name in
PascalCase (``gene to protein association`` → ``GeneToProteinAssociation``).
Entries with ``present_in_knowledge_graph: false`` are left out.

A :class:`KGSchema` is immutable: :meth:`KGSchema.subset` returns a new one, so
narrowing the schema for one question never leaks into the next.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class SchemaError(ValueError):
    """A schema file or dict that cannot be read as a BioCypher schema."""


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def pascal_case(name: str) -> str:
    """BioCypher's label for a schema name: words joined, each first letter upper-cased."""
    words = re.split(r"[\s_]+", name.strip())
    return "".join(w[:1].upper() + w[1:] for w in words if w)


def cypher_name(name: str) -> str:
    """A label or property name as it must be written in Cypher (backticked when not a plain identifier)."""
    return name if _IDENT.match(name) else "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class Entity:
    """A node type: schema name, Cypher label and properties (name → type)."""

    name: str
    label: str
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Relationship:
    """An edge type with its allowed directions (source label → target label)."""

    name: str
    label: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    properties: tuple[tuple[str, str], ...] = ()

    def patterns(self) -> list[str]:
        return [
            f"(:{cypher_name(s)})-[:{cypher_name(self.label)}]->(:{cypher_name(t)})"
            for s in self.sources
            for t in self.targets
        ]


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def _properties(entry: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    props = entry.get("properties") or {}
    if not isinstance(props, Mapping):
        return ()
    excluded = set(_as_list(entry.get("exclude_properties")))
    return tuple((str(k), str(v)) for k, v in props.items() if str(k) not in excluded)


@dataclass(frozen=True)
class KGSchema:
    """Entities and relationships of one knowledge graph."""

    entities: tuple[Entity, ...]
    relationships: tuple[Relationship, ...]
    name: str = ""

    # --- construction ---

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str = "") -> KGSchema:
        """Build from a schema_config / schema_info mapping (schema name → entry)."""
        if not isinstance(data, Mapping):
            raise SchemaError(f"a schema must be a mapping of schema names to entries, not {type(data).__name__}")
        entries = {
            str(k): v
            for k, v in data.items()
            if isinstance(v, Mapping) and v.get("present_in_knowledge_graph", True) is not False
        }
        nodes = {k: v for k, v in entries.items() if not _is_edge(v)}
        label_of = {k: pascal_case(k) for k in nodes}
        entities = tuple(Entity(k, label_of[k], _properties(v)) for k, v in nodes.items())
        rels = []
        for k, v in entries.items():
            if not _is_edge(v):
                continue
            sources = [label_of.get(s, pascal_case(s)) for s in _as_list(v.get("source"))]
            targets = [label_of.get(t, pascal_case(t)) for t in _as_list(v.get("target"))]
            if not sources or not targets:
                continue  # an edge without endpoints cannot be queried as a pattern
            label = str(v.get("label_as_edge") or pascal_case(k))
            rels.append(Relationship(k, label, tuple(sources), tuple(targets), _properties(v)))
        if not entities and not rels:
            raise SchemaError("the schema has no entities or relationships (entries need 'represented_as')")
        return cls(entities, tuple(rels), name)

    # --- queries ---

    def entity(self, label_or_name: str) -> Entity | None:
        key = label_or_name.strip().lower()
        return next((e for e in self.entities if key in (e.label.lower(), e.name.lower())), None)

    def relationship(self, label_or_name: str) -> Relationship | None:
        key = label_or_name.strip().lower()
        return next((r for r in self.relationships if key in (r.label.lower(), r.name.lower())), None)

    def subset(self, entities: Iterable[str] = (), relationships: Iterable[str] = ()) -> KGSchema:
        """A new schema with the named entities and relationships (labels or schema names).

        A kept relationship brings its endpoint entities; a relationship between two
        kept entities is kept too. Unknown names are ignored. An empty selection
        returns the whole schema.
        """
        ents = {e.label for n in entities if (e := self.entity(n))}
        rels = {r.label for n in relationships if (r := self.relationship(n))}
        if not ents and not rels:
            return self
        kept_rels = [
            r for r in self.relationships if r.label in rels or (set(r.sources) & ents and set(r.targets) & ents)
        ]
        for r in kept_rels:
            ents.update(r.sources)
            ents.update(r.targets)
        return KGSchema(tuple(e for e in self.entities if e.label in ents), tuple(kept_rels), self.name)

    def prompt(self) -> str:
        """The schema as prompt text: labels with properties, relationship types, valid patterns."""
        lines = ["Node labels (with properties):"]
        for e in self.entities:
            props = ", ".join(f"{cypher_name(p)}: {t}" for p, t in e.properties) or "no properties listed"
            lines.append(f"- :{cypher_name(e.label)} ({e.name}) — {props}")
        lines.append("")
        lines.append("Relationship types (with properties):")
        if not self.relationships:
            lines.append("- none")
        for r in self.relationships:
            props = ", ".join(f"{cypher_name(p)}: {t}" for p, t in r.properties) or "no properties listed"
            lines.append(f"- :{cypher_name(r.label)} ({r.name}) — {props}")
        lines.append("")
        lines.append("Valid patterns (the arrow gives the only stored direction):")
        patterns = [p for r in self.relationships for p in r.patterns()]
        lines.extend(f"- {p}" for p in patterns) if patterns else lines.append("- none")
        return "\n".join(lines)

    def summary(self) -> str:
        """One line per entity / relationship type, for the narrowing prompt."""
        lines = [f"- entity {e.label} ({e.name})" for e in self.entities]
        lines += [
            f"- relationship {r.label} ({r.name}): {'|'.join(r.sources)} -> {'|'.join(r.targets)}"
            for r in self.relationships
        ]
        return "\n".join(lines)


def _is_edge(entry: Mapping[str, Any]) -> bool:
    kind = str(entry.get("represented_as", "")).lower()
    if kind == "edge":
        return True
    return bool(entry.get("is_relationship")) and kind != "node" and "source" in entry


def load_schema(source: KGSchema | Mapping[str, Any] | str | Path, name: str | None = None) -> KGSchema:
    """A :class:`KGSchema` from a schema object, a dict, or a YAML file path; see the module docstring."""
    if isinstance(source, KGSchema):
        return source
    label = name or ""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise SchemaError(f"schema file not found: {path}")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise SchemaError(f"schema file {path} is not valid YAML: {exc}") from None
        label = label or path.stem
    else:
        data = source
    if not isinstance(data, Mapping):
        raise SchemaError("a schema must be a YAML mapping")
    if "kg_schemas" in data:
        schemas = data["kg_schemas"]
        if not isinstance(schemas, Mapping) or not schemas:
            raise SchemaError("'kg_schemas' must map schema names to schemas")
        if name is None:
            if len(schemas) != 1:
                raise SchemaError(f"the file holds several schemas; choose one with a name: {', '.join(schemas)}")
            name = next(iter(schemas))
        if name not in schemas:
            raise SchemaError(f"no schema named {name!r}; known: {', '.join(schemas)}")
        return KGSchema.from_dict(schemas[name], name)
    body = {k: v for k, v in data.items() if k != "is_schema_info"}
    return KGSchema.from_dict(body, label)
