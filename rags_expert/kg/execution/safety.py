"""Pre-check that rejects Cypher which would write, before it reaches the database.

This check gives the model a clear reflection ("only read queries are allowed")
instead of a database error. It is not the guarantee: every generated query also
runs in the database's read-only mode (FalkorDB ``GRAPH.RO_QUERY``, a Neo4j READ
session), so a write that slips past this check is refused there too.

String literals, comments and backticked names are blanked out first, so a
question about "the SET domain" or a property called ``created`` is not flagged.
"""

from __future__ import annotations

import re

_WRITE_CLAUSES = re.compile(
    r"(?<![\w.$:`])\b("
    r"CREATE|MERGE|SET|DELETE|DETACH|REMOVE|DROP|FOREACH|ALTER|GRANT|REVOKE|DENY|"
    r"LOAD\s+CSV|IN\s+TRANSACTIONS|START\s+DATABASE|STOP\s+DATABASE"
    r")\b",
    re.IGNORECASE,
)
_CALL = re.compile(r"(?<![\w.$:`])\bCALL\s+([A-Za-z_][\w.]*)\s*\(?", re.IGNORECASE)
# Procedure names that can change data, schema, users or the server.
_WRITE_PROCEDURE = re.compile(
    r"(^|\.)(dbms|apoc\.(create|merge|refactor|periodic|load|import|export|trigger|nodes\.delete|"
    r"atomic|lock|schema\.assert|cypher\.(run)?(write|doit|do)))\b"
    r"|create|merge|delete|remove|drop|write|set[A-Z_]|\.set|clear|kill|terminate|upsert|rename|truncate|"
    r"\.add|\.import|\.load",
    re.IGNORECASE,
)
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.DOTALL)
_BACKTICK = re.compile(r"`[^`]*`")
_LINE_COMMENT = re.compile(r"//[^\n]*")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)


def _code_only(query: str) -> str:
    """The query with literals, comments and backticked names replaced by neutral tokens."""
    text = _STRING.sub("''", query)
    text = _BLOCK_COMMENT.sub(" ", text)
    text = _LINE_COMMENT.sub(" ", text)
    return _BACKTICK.sub("`x`", text)


def write_clause_reason(query: str) -> str | None:
    """Why ``query`` is not read-only, or None when no write clause or write procedure is found."""
    code = _code_only(query)
    if m := _WRITE_CLAUSES.search(code):
        clause = re.sub(r"\s+", " ", m.group(1).upper())
        return f"the query contains the write clause {clause}; only read queries (MATCH ... RETURN) are allowed"
    for m in _CALL.finditer(code):
        name = m.group(1)
        if _WRITE_PROCEDURE.search(name):
            return f"the query calls {name}, a procedure that can write or administer the database; only read queries are allowed"
    return None


def is_read_only(query: str) -> bool:
    """True when :func:`write_clause_reason` finds nothing."""
    return write_clause_reason(query) is None
