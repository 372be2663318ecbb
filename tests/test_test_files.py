"""Every module of the package has its test file: ``rags_expert/<path>/<name>.py`` → ``tests/<path>/test_<name>.py``
(``_name.py`` → ``test_name.py``), or an entry in :data:`EXCEPTIONS` that says where it is tested instead.

An exception's reason names the test files that exercise the module (most at the level a user meets it: the graph,
the CLI as a subprocess, the MCP server), and those files must exist; an exception for a module that now has its
test file, or that is gone, fails too, so the list only shrinks. ``__init__.py`` and ``__main__.py`` are not
counted.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rags_expert"

EXCEPTIONS: dict[str, str] = {
    "agentflow.py": "tested in tests/fred/test_fred_parts.py, tests/test_docs.py",
    "checkpoints/errors.py": "the checkpointer's fault reason, exercised through tests/checkpoints/test_checkpoint_faults.py",
    "checkpoints/guard.py": "tested in tests/test_conversation.py",
    "checkpoints/postgres.py": "tested in tests/checkpoints/test_checkpoints.py",
    "cli/ask.py": "`rags-expert ask` run as a subprocess: tests/cli/test_cli_ask.py, tests/cli/test_cli_errors.py",
    "cli/evaluate.py": "`rags-expert eval` run as a user runs it (subprocess): tests/cli/test_cli_eval.py",
    "cli/kg.py": "tested in tests/kg/test_cli.py",
    "cli/knowledge.py": "`ingest` / `search` run as subprocesses: tests/retrieval/test_cli.py",
    "cli/mcp.py": "`rags-expert mcp` run as a subprocess: tests/hosts/test_mcp_startup.py",
    "cli/stale.py": "`rags-expert stale` run as a subprocess: tests/cli/test_cli_citations.py, tests/cli/test_cli_answer_files.py",
    "cli/support.py": "tested in tests/cli/test_cli_help.py, tests/cli/test_cli_text_args.py",
    "cli/verify.py": "`rags-expert verify` run as a subprocess: tests/cli/test_cli_citations.py",
    "diagrams.py": "tested in tests/rag/test_graph.py, tests/test_docs.py",
    "evaluation/compare.py": "tested in tests/test_eval_questions.py",
    "evaluation/hotpotqa.py": "the built-in HotpotQA set through tests/test_evaluation.py",
    "evaluation/judge.py": "the answer judge through `rags-expert eval`: tests/cli/test_cli_eval.py",
    "evaluation/questions.py": "tested in tests/test_eval_questions.py",
    "evaluation/report.py": "tested in tests/test_eval_questions.py",
    "evaluation/runner.py": "the questions through the graph: tests/test_evaluation.py, tests/cli/test_cli_eval.py",
    "evaluation/scoring.py": "tested in tests/test_eval_questions.py",
    "events.py": "tested in tests/hosts/test_progress_markup.py",
    "evidence/answer_type.py": "tested in tests/evidence/test_answer_category.py, tests/evidence/test_scorer_names.py",
    "evidence/code.py": "tested in tests/evidence/test_scorer_names.py, tests/evidence/test_units.py",
    "evidence/passages.py": "what ingest embeds of a chunk, through `ingest` then `ask`: tests/cli/test_ask_vector_cache.py",
    "evidence/reader/features.py": "the reader's four modules share one suite: tests/evidence/test_reader.py",
    "evidence/reader/model.py": "the reader's four modules share one suite: tests/evidence/test_reader.py",
    "evidence/reader/quote.py": "the reader's four modules share one suite: tests/evidence/test_reader.py",
    "evidence/reader/scorer.py": "the reader's four modules share one suite: tests/evidence/test_reader.py",
    "evidence/rerank.py": "tested in tests/evidence/test_hash_seed.py, tests/rag/retrieve/test_reranking.py",
    "evidence/scorer.py": "tested in tests/evidence/test_hash_seed.py, tests/evidence/test_scorer_names.py",
    "evidence/text.py": "tested in tests/evidence/test_reader.py, tests/test_input_limits.py",
    "fred/agents.py": "tested in tests/fred/test_fred_parts.py, tests/fred/test_fred_pod.py",
    "fred/search.py": "tested in tests/fred/test_document_search.py",
    "fred/tuning.py": "tested in tests/fred/test_fred_parts.py",
    "fred/turn.py": "tested in tests/checkpoints/test_checkpoint_faults.py, tests/fred/test_fred_parts.py",
    "hosts/loading.py": "tested in tests/hosts/test_hosts.py, tests/kg/test_flow.py",
    "hosts/mcp/http.py": "tested in tests/hosts/test_mcp_http_auth.py",
    "hosts/mcp/jsonrpc.py": "invalid JSON-RPC messages sent to the running server: tests/hosts/test_mcp_startup.py, tests/hosts/test_mcp_http_auth.py",
    "hosts/mcp/server.py": "the server over stdio and HTTP: tests/hosts/test_mcp_server.py",
    "hosts/mcp/tools.py": "tested in tests/hosts/test_mcp_startup.py",
    "hosts/progress.py": "tested in tests/cli/test_ingest_progress.py, tests/fred/test_fred_parts.py",
    "kg/agent.py": "tested in tests/kg/test_flow.py, tests/settings/test_settings_split.py",
    "kg/backends/base.py": "the protocol and error kinds, through both backends: tests/kg/backends/test_falkordb_backend.py, tests/kg/backends/test_neo4j_backend.py",
    "kg/backends/falkordb_server.py": "the embedded server started and stopped: tests/kg/backends/test_falkordb_backend.py",
    "kg/benchmark.py": "tested in tests/kg/test_biochatter_cases.py",
    "kg/biocypher/loader.py": "tested in tests/kg/biocypher/test_schema.py, tests/kg/test_flow.py",
    "kg/cypher_agent.py": "the Cypher loop through its graph: tests/kg/reflexion/test_loop.py, tests/kg/test_flow.py",
    "kg/execution/run.py": "tested in tests/kg/execution/test_read_only.py",
    "kg/execution/safety.py": "the write pre-check: tests/kg/execution/test_read_only.py",
    "kg/reflexion/_prompting.py": "what the model is told, through the loop: tests/kg/reflexion/test_loop.py",
    "kg/reflexion/_scoring.py": "scoring and lessons, through the loop: tests/kg/reflexion/test_loop.py, tests/kg/test_lessons_kg.py",
    "kg/reflexion/base.py": "tested in tests/kg/reflexion/test_seed_hooks.py",
    "language.py": "tested in tests/rag/test_multilingual.py",
    "lazy.py": "the lazy package exports: tests/test_public_api.py, tests/cli/test_cli_dispatch.py",
    "lessons/memory.py": "the lesson memory on a real Qdrant store: tests/test_lessons.py, tests/test_lesson_scope.py",
    "lessons/stages.py": "recall and learning through both graphs: tests/test_lessons.py, tests/kg/test_lessons_kg.py",
    "limits.py": "tested in tests/retrieval/test_loader_bounds.py, tests/test_conversation.py",
    "llm/chat.py": "tested in tests/llm/test_grading_format_fallback.py, tests/llm/test_usage_budget.py",
    "llm/grading.py": "tested in tests/llm/test_grading_format_fallback.py, tests/llm/test_parsing.py",
    "llm/structured.py": "tested in tests/llm/test_grading_format_fallback.py, tests/local/test_local_model_e2e.py",
    "llm/usage.py": "tested in tests/llm/test_usage_budget.py",
    "local/command.py": "tested in tests/local/test_gguf_profile.py, tests/local/test_local_llm.py",
    "local/gguf.py": "tested in tests/local/test_gguf_profile.py",
    "local/server.py": "tested in tests/cli/test_ask_local_cli.py, tests/cli/test_ask_local_multihop.py",
    "local/xllamacpp.py": "tested in tests/local/test_local_llm.py, tests/local/test_local_model_e2e.py",
    "rag/_shared/bridge.py": "tested in tests/rag/retrieve/test_hops.py, tests/rag/test_linked_pairs.py",
    "rag/_shared/choice.py": "the unit a run quotes, through the graph: tests/rag/test_linked_pairs.py, tests/rag/retrieve/test_hops.py",
    "rag/_shared/extractive.py": "the extractive answer through the graph: tests/rag/test_linked_pairs.py, tests/rag/test_graph_routes.py",
    "rag/_shared/timings.py": "the timings in the final message: tests/rag/retrieve/test_recall.py, tests/llm/test_usage_budget.py",
    "rag/agent.py": "tested in tests/local/test_warm_up.py, tests/rag/retrieve/test_hops.py",
    "rag/answer/citations.py": "deprecated shim (removed in 0.3): tests/test_layout.py checks its warning and names",
    "rag/answer/final.py": "the final messages through the graph: tests/rag/test_graph.py, tests/rag/test_property_termination.py",
    "rag/answer/prompt.py": "tested in tests/local/test_warm_up.py, tests/rag/test_multilingual.py",
    "rag/citations.py": "deprecated shim (removed in 0.3): tests/test_layout.py checks its warning and names",
    "rag/grade/relevance.py": "grade_documents through the graph: tests/rag/test_graph.py, tests/rag/test_graph_routes.py",
    "rag/names.py": "tested in tests/rag/test_graph.py",
    "rag/nodes.py": "the nodes through the graph: tests/rag/test_graph.py, tests/rag/test_request_context.py",
    "rag/options.py": "tested in tests/fred/test_document_search.py, tests/rag/test_request_context.py",
    "rag/profiles.py": "tested in tests/local/test_warm_up.py, tests/rag/test_multilingual.py",
    "rag/verdict/_decision.py": "grade_generation through the graph: tests/rag/test_graph_routes.py, tests/rag/verdict/test_verified.py",
    "rag/verdict/_evidence.py": "the evidence's verdicts through the small profile: tests/rag/test_graph_routes.py, tests/evidence/test_small_profile.py",
    "rag/wrappers/guard.py": "tested in tests/rag/test_authorization.py",
    "retrieval/base.py": "the retriever keywords: tests/retrieval/test_search_options.py",
    "retrieval/edge.py": "tested in tests/retrieval/test_shared_folder.py",
    "retrieval/embeddings.py": "tested in tests/rag/retrieve/test_hops.py, tests/rag/retrieve/test_recall.py",
    "retrieval/factory.py": "tested in tests/retrieval/test_knowledge_flow.py",
    "retrieval/lease.py": "tested in tests/retrieval/test_shared_folder.py",
    "retrieval/loaders/base.py": "every format read: tests/retrieval/test_loaders_formats.py, tests/retrieval/test_loader_bounds.py",
    "retrieval/loaders/docx.py": "tests/retrieval/test_loaders_formats.py, tests/cli/test_ingest_formats.py (one suite for all formats)",
    "retrieval/loaders/html.py": "tests/retrieval/test_loaders_formats.py, tests/cli/test_ingest_formats.py (one suite for all formats)",
    "retrieval/loaders/jsonl.py": "tests/retrieval/test_loaders_formats.py, tests/cli/test_ingest_formats.py (one suite for all formats)",
    "retrieval/loaders/markdown.py": "tests/retrieval/test_loaders_formats.py, tests/retrieval/test_loaders_markup.py",
    "retrieval/loaders/markup.py": "tested in tests/retrieval/test_loaders_markup.py, tests/retrieval/test_markup_linear.py",
    "retrieval/loaders/notebook.py": "tests/retrieval/test_loaders_formats.py, tests/cli/test_ingest_formats.py (one suite for all formats)",
    "retrieval/loaders/pdf.py": "tests/retrieval/test_loaders_formats.py, tests/retrieval/test_loader_bounds.py (one suite for all formats)",
    "retrieval/loaders/registry.py": "the suffix registry through ingest: tests/cli/test_ingest_formats.py, tests/retrieval/test_loaders_formats.py",
    "retrieval/loaders/roles.py": "tested in tests/retrieval/test_markup_linear.py",
    "retrieval/loaders/rst.py": "tests/retrieval/test_loaders_formats.py, tests/cli/test_ingest_formats.py (one suite for all formats)",
    "retrieval/loaders/tables.py": "tests/retrieval/test_loaders_formats.py, tests/cli/test_ingest_formats.py (one suite for all formats)",
    "retrieval/options.py": "tested in tests/fred/test_document_search.py, tests/retrieval/test_search_options.py",
    "retrieval/qdrant.py": "tested in tests/cli/test_ingest_progress.py, tests/hosts/test_langgraph_server.py",
    "retrieval/rerank/base.py": "tested in tests/rag/retrieve/test_reranking.py, tests/retrieval/test_rerank_clients.py",
    "retrieval/rerank/compressor.py": "tested in tests/rag/retrieve/test_reranking.py",
    "retrieval/rerank/http_api.py": "tested in tests/retrieval/test_rerank_clients.py",
    "retrieval/rerank/knowledge_flow.py": "the rerank clients side by side: tests/retrieval/test_rerank_clients.py",
    "retrieval/sparse.py": "BM25 vectors through hybrid ingest and search: tests/retrieval/test_ingest.py",
    "retrieval/store.py": "the data folder shared by processes: tests/retrieval/test_shared_folder.py",
    "settings/agents.py": "the composed settings: tests/settings/test_settings_split.py, tests/settings/test_settings_errors.py",
    "settings/authorization.py": "tests/settings/test_settings_split.py, tests/rag/test_authorization_hooks.py",
    "settings/base.py": "tests/settings/test_settings_split.py, tests/settings/test_settings_errors.py (one suite for all sections)",
    "settings/environment.py": "tested in tests/hosts/test_mcp_startup.py, tests/test_secrets.py",
    "settings/errors.py": "tested in tests/settings/test_settings_errors.py",
    "settings/evaluation.py": "tests/settings/test_settings_split.py, tests/cli/test_cli_eval.py",
    "settings/evidence.py": "tests/settings/test_settings_split.py, tests/settings/test_settings_errors.py (one suite for all sections)",
    "settings/kg.py": "tests/settings/test_settings_split.py, tests/kg/execution/test_policy.py",
    "settings/knowledge.py": "tests/settings/test_settings_split.py, tests/settings/test_settings_errors.py (one suite for all sections)",
    "settings/mcp.py": "tests/settings/test_settings_split.py, tests/hosts/test_mcp_http_auth.py",
    "settings/multihop.py": "tests/settings/test_settings_split.py, tests/rag/retrieve/test_hops.py",
    "settings/reference.py": "the generated docs/settings.md kept in sync: tests/test_prompts_settings.py, tests/test_docs.py",
    "settings/rerank.py": "tests/settings/test_settings_split.py, tests/rag/retrieve/test_reranking.py",
    "settings/sections.py": "tests/settings/test_settings_split.py, tests/settings/test_settings_errors.py (one suite for all sections)",
    "testing.py": "tested in tests/evidence/test_small_profile.py, tests/fred/test_fred_parts.py",
    "threads.py": "the daemon-thread runner under several event loops: tests/test_event_loops.py",
}
"""Module (relative to ``rags_expert/``) → where it is tested instead of its own test file."""


def mirror(module: Path) -> Path:
    """``rags_expert/kg/execution/_policy.py`` → ``tests/kg/execution/test_policy.py``."""
    relative = module.relative_to(PACKAGE)
    return ROOT / "tests" / relative.parent / f"test_{relative.stem.lstrip('_')}.py"


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py"))


def test_every_module_has_its_test_file_or_an_exception():
    untested = [str(m.relative_to(PACKAGE)) for m in _modules() if not mirror(m).exists()]
    assert sorted(set(untested) - set(EXCEPTIONS)) == []


def test_every_exception_is_still_needed():
    needed = {str(m.relative_to(PACKAGE)) for m in _modules() if not mirror(m).exists()}
    assert sorted(set(EXCEPTIONS) - needed) == []


def test_every_exception_names_test_files_that_exist():
    bad = {
        module: reason
        for module, reason in EXCEPTIONS.items()
        if not (named := re.findall(r"tests/[\w/]+\.py", reason)) or not all((ROOT / n).exists() for n in named)
    }
    assert bad == {}


def test_the_check_sees_a_module_without_a_test_file():
    assert mirror(PACKAGE / "kg" / "execution" / "_policy.py") == ROOT / "tests/kg/execution/test_policy.py"
    assert not mirror(PACKAGE / "no_such_module.py").exists()
