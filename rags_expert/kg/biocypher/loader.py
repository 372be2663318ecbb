"""Load a small sample knowledge graph that follows a BioCypher schema.

:func:`load_sample_graph` writes the records of ``sample_kg.yaml`` (shipped with
the package) for one schema (``gene_kg`` or ``safety_kg``) into a graph
backend, checking every record against the schema first: a node's properties
must be declared for its entity (``id`` is always allowed), and each edge's
endpoints must match one of the relationship's ``(:Source)-[:REL]->(:Target)``
patterns. Labels come from the schema (:mod:`rags_expert.kg.biocypher.schema`), so the
loaded graph uses exactly the labels the agent's prompt shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from rags_expert.kg.backends import GraphBackend
from rags_expert.kg.biocypher.schema import KGSchema, SchemaError, cypher_name

SAMPLE_FILE = Path(__file__).with_name("sample_kg.yaml")


@dataclass(frozen=True)
class LoadPlan:
    """Nodes by label and edges by (type, source label, target label), ready to write."""

    nodes: dict[str, list[dict[str, Any]]]
    edges: dict[tuple[str, str, str], list[dict[str, Any]]]

    @property
    def node_count(self) -> int:
        return sum(len(v) for v in self.nodes.values())

    @property
    def edge_count(self) -> int:
        return sum(len(v) for v in self.edges.values())


def sample_names() -> list[str]:
    """Schema names the packaged sample covers."""
    return sorted(_sample())


def _sample() -> dict[str, Any]:
    text = resources.files("rags_expert.kg.biocypher").joinpath("sample_kg.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def plan_sample(schema: KGSchema, name: str | None = None, data: dict[str, Any] | None = None) -> LoadPlan:
    """Check the sample records for ``name`` (default: ``schema.name``) against ``schema``; raise SchemaError."""
    key = name or schema.name
    records = (data or _sample()).get(key)
    if records is None:
        raise SchemaError(f"no sample data for schema {key!r}; available: {', '.join(sample_names())}")
    nodes: dict[str, list[dict[str, Any]]] = {}
    label_of_id: dict[str, str] = {}
    for entity_name, rows in (records.get("nodes") or {}).items():
        entity = schema.entity(entity_name)
        if entity is None:
            raise SchemaError(f"sample node type {entity_name!r} is not an entity of schema {key!r}")
        allowed = {p for p, _ in entity.properties} | {"id"}
        for row in rows:
            if unknown := set(row) - allowed:
                raise SchemaError(f"{entity.label} {row.get('id')!r}: properties {sorted(unknown)} not in the schema")
            if "id" not in row:
                raise SchemaError(f"a {entity.label} node has no id")
            label_of_id[row["id"]] = entity.label
            nodes.setdefault(entity.label, []).append(dict(row))
    edges: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for rel_name, rows in (records.get("edges") or {}).items():
        rel = schema.relationship(rel_name)
        if rel is None:
            raise SchemaError(f"sample edge type {rel_name!r} is not a relationship of schema {key!r}")
        allowed = {p for p, _ in rel.properties}
        for source, target, props in rows:
            src, tgt = label_of_id.get(source), label_of_id.get(target)
            if src is None or tgt is None:
                raise SchemaError(f"{rel.label} edge {source}->{target}: unknown node id")
            if src not in rel.sources or tgt not in rel.targets:
                raise SchemaError(f"{rel.label} edge ({src})->({tgt}) does not match the schema's patterns")
            if unknown := set(props or {}) - allowed:
                raise SchemaError(
                    f"{rel.label} edge {source}->{target}: properties {sorted(unknown)} not in the schema"
                )
            edges.setdefault((rel.label, src, tgt), []).append({"s": source, "t": target, "props": dict(props or {})})
    return LoadPlan(nodes, edges)


async def load_sample_graph(
    backend: GraphBackend, schema: KGSchema, name: str | None = None, *, replace: bool = True
) -> LoadPlan:
    """Write the sample graph for ``schema`` into ``backend`` (after deleting what is there when ``replace``)."""
    plan = plan_sample(schema, name)
    if replace:
        if hasattr(backend, "delete_graph"):
            await backend.delete_graph()  # type: ignore[attr-defined]
        else:
            await backend.execute_write("MATCH (n) DETACH DELETE n")
    for label, rows in plan.nodes.items():
        await backend.execute_write(f"UNWIND $rows AS row CREATE (n:{cypher_name(label)}) SET n = row", {"rows": rows})
    for (rel, src, tgt), rows in plan.edges.items():
        await backend.execute_write(
            f"UNWIND $rows AS row "
            f"MATCH (a:{cypher_name(src)} {{id: row.s}}), (b:{cypher_name(tgt)} {{id: row.t}}) "
            f"CREATE (a)-[r:{cypher_name(rel)}]->(b) SET r = row.props",
            {"rows": rows},
        )
    return plan
