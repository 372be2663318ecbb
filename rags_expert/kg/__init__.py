"""KG-query reflexion agent: writes Cypher for a BioCypher knowledge graph, runs it read-only, reflects, revises."""
