"""Everything about calling a chat model: building it and handling its faults (:mod:`~rags_expert.llm.chat`), the
one structured call (:mod:`~rags_expert.llm.structured`), tolerant reply parsing (:mod:`~rags_expert.llm.parsing`),
the shared graders, rephraser and scorer (:mod:`~rags_expert.llm.grading`), retry waits
(:mod:`~rags_expert.llm.backoff`) and token usage (:mod:`~rags_expert.llm.usage`)."""
