"""The offline model (``--local``): a llama.cpp server started as a child process (:mod:`~rags_expert.local.server`),
the runner's command line and environment (:mod:`~rags_expert.local.command`), and the default runner, xllamacpp
(:mod:`~rags_expert.local.xllamacpp`)."""
