"""Reading the model's replies: the reply schemas and tolerant extraction of a Cypher query.

A structured reply (:func:`rags_expert.llm.grading.structured_call`) that parses gives the
query and critique directly; one that does not is searched for a fenced Cypher block
or for the text from the first ``MATCH``/``CALL``/``WITH``/``UNWIND``. When no query can
be found the critique says so, and the next tool message tells the model (a reflection,
not an exception).
"""

from __future__ import annotations

import re

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from rags_expert.kg.biocypher.schema import KGSchema
from rags_expert.llm.grading import StructuredReply
from rags_expert.llm.parsing import extract_code_block


class DraftQuery(BaseModel):
    """A Cypher query answering the question, with a one-sentence self-critique."""

    model_config = ConfigDict(populate_by_name=True)

    query: str = Field(
        validation_alias=AliasChoices("query", "cypher", "cypher_query", "revised_query", "answer"),
        description="one read-only Cypher query (MATCH ... RETURN)",
    )
    reflection: str = Field(
        "",
        validation_alias=AliasChoices("reflection", "critique", "reasoning", "explanation"),
        description="one sentence: what could be wrong with this query",
    )


class RevisedQuery(DraftQuery):
    """A revised Cypher query, with what was wrong and what changed."""


class SchemaSelection(BaseModel):
    """The entity labels and relationship types a question needs."""

    entities: list[str] = Field(default_factory=list, description="entity labels the query must match")
    relationships: list[str] = Field(default_factory=list, description="relationship types it must traverse")


# indentation only (not blank lines: a run of them was scanned again from each line start, quadratic)
_STATEMENT_START = re.compile(r"(?im)^[^\S\n]*+((?:OPTIONAL\s+)?MATCH|CALL|WITH|UNWIND)\b")


def clean_query(text: str) -> str:
    """Strip whitespace, wrapping quotes/backticks and a trailing semicolon."""
    query = text.strip()
    if len(query) >= 2 and query[0] == query[-1] and query[0] in "`'\"":
        query = query[1:-1].strip()
    return query.rstrip(";").strip()


def extract_cypher(text: str) -> str | None:
    """A Cypher statement in free text: a fenced block, else the lines from the first MATCH/CALL/WITH/UNWIND."""
    if block := extract_code_block(text, ("cypher", "sql", "neo4j", "opencypher")):
        return clean_query(block)
    m = _STATEMENT_START.search(text or "")
    if not m:
        return None
    body = text[m.start() :].split("\n\n", 1)[0]
    return clean_query(body) or None


def read_query_reply(reply: StructuredReply) -> tuple[str, str]:
    """(query, reflection) from a structured reply; the query is "" when none can be found."""
    if reply.parsed is not None and reply.parsed.query.strip():
        return clean_query(reply.parsed.query), reply.parsed.reflection.strip()
    query = extract_cypher(reply.raw) or ""
    if query:
        return query, ""
    return "", f"The reply could not be read as a query: {reply.raw[:300]!r}"


def _names_in(text: str, labels: list[str]) -> list[str]:
    """The ``labels`` that occur in ``text`` as whole words."""
    return [label for label in labels if re.search(rf"(?<![\w]){re.escape(label)}(?![\w])", text)]


def read_schema_selection(reply: StructuredReply, schema: KGSchema) -> tuple[list[str], list[str]]:
    """(entities, relationships) the model picked; from an unparsed reply, every schema label it names."""
    if reply.parsed is not None:
        return reply.parsed.entities, reply.parsed.relationships
    return (
        _names_in(reply.raw, [e.label for e in schema.entities]),
        _names_in(reply.raw, [r.label for r in schema.relationships]),
    )
