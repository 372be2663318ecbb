"""Loading agents the way agent hosts do: a YAML list of entries, or entry-point discovery.

```yaml
agents:                      # or a bare list
  - name: docs-expert
    class_path: rags_expert.rag:RagsExpert       # "module:Class" or "module.Class"
    enabled: true
    settings:                # passed to the class as its settings
      retrieval: {top_k: 6}
      llm: {model: gpt-4o-mini}
```

``await load_agents("agents.yaml")`` imports each enabled class, builds it with
its settings, awaits ``async_init()`` and returns the agents by name. Installed
packages advertise their agent classes under the ``agentflow.agents`` entry-point
group (this package: ``rags-expert``); :func:`discover_agent_classes` lists them.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from rags_expert.agentflow import AgentFlow
from rags_expert.settings.errors import describe_validation_error

ENTRY_POINT_GROUP = "agentflow.agents"


class AgentSpec(BaseModel):
    """One entry of a host's agent list."""

    name: str = Field(min_length=1)
    class_path: str = Field(min_length=3)
    enabled: bool = True
    settings: dict[str, Any] = Field(default_factory=dict)


class AgentConfigError(ValueError):
    """An entry of the agent list is malformed or names a class that cannot be loaded."""


def read_specs(source: str | Path | list[dict[str, Any]] | dict[str, Any]) -> list[AgentSpec]:
    """Parse a YAML file path, YAML text, or an already-loaded list / ``{agents: [...]}`` mapping."""
    data: Any = source
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and Path(source).is_file()):
        data = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
    elif isinstance(source, str):
        data = yaml.safe_load(source)
    if isinstance(data, dict):
        data = data.get("agents")
    if not isinstance(data, list):
        raise AgentConfigError("the agent list must be a YAML list, or a mapping with an 'agents' list")
    specs = []
    for i, entry in enumerate(data):
        try:
            specs.append(AgentSpec.model_validate(entry))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "entry"
            raise AgentConfigError(f"agent entry #{i + 1}: {field}: {first['msg']}") from None
    names = [s.name for s in specs]
    if dupes := sorted({n for n in names if names.count(n) > 1}):
        raise AgentConfigError(f"duplicate agent name(s): {', '.join(dupes)}")
    return specs


def import_class(class_path: str) -> type[AgentFlow]:
    """Import ``module:Class`` or ``module.Class`` and check that it is an AgentFlow."""
    module_name, _, attr = class_path.partition(":") if ":" in class_path else class_path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise AgentConfigError(f"cannot import {class_path!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, AgentFlow)):
        raise AgentConfigError(f"{class_path!r} is not an AgentFlow subclass")
    return cls


async def load_agents(
    source: str | Path | list[dict[str, Any]] | dict[str, Any], **init_kwargs: Any
) -> dict[str, AgentFlow]:
    """Build and initialise every enabled agent of the list; ``init_kwargs`` go to each constructor."""
    agents: dict[str, AgentFlow] = {}
    for spec in read_specs(source):
        if not spec.enabled:
            continue
        cls = import_class(spec.class_path)
        try:
            agent = cls(spec.settings, **init_kwargs)
        except ValidationError as exc:  # the entry's settings: named like every settings error
            raise AgentConfigError(f"agent {spec.name!r}: {describe_validation_error(exc)}") from None
        agent.name = spec.name  # the host's name for this instance
        agents[spec.name] = await agent.async_init()
    return agents


def discover_agent_classes() -> dict[str, type[AgentFlow]]:
    """AgentFlow classes advertised by installed packages under the ``agentflow.agents`` group."""
    return {ep.name: ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)}
