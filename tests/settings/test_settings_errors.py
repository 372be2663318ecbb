"""The one wording of an invalid setting (rags_expert.settings.errors) and the bounds it reports.

Every numeric setting has an upper bound, so a value such as ``budget.max_calls=10**40`` is refused when the
settings are read, naming the bound, instead of failing later inside C code, Qdrant or msgpack
("TypeError: Integer exceeds 64-bit range").
"""

from __future__ import annotations

import annotated_types
import pytest
from pydantic import BaseModel, ValidationError

from rags_expert.settings import KGExpertSettings, RagsExpertSettings
from rags_expert.settings.errors import describe_validation_error


def numeric_fields(model: type[BaseModel], prefix: str = ""):
    """``(path, FieldInfo)`` of every int or float setting of ``model`` and its sections."""
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from numeric_fields(annotation, f"{prefix}{name}.")
        elif annotation in (int, float, int | None, float | None):
            yield f"{prefix}{name}", info


NUMERIC = dict([*numeric_fields(RagsExpertSettings), *numeric_fields(KGExpertSettings)])


@pytest.mark.parametrize("path", sorted(NUMERIC))
def test_every_numeric_setting_has_an_upper_bound_refusing_huge_values(path):
    info = NUMERIC[path]
    assert any(isinstance(m, annotated_types.Le | annotated_types.Lt) for m in info.metadata), path
    model = KGExpertSettings if path.startswith("kg.") else RagsExpertSettings
    with pytest.raises(ValidationError) as caught:
        model().updated({path: 10**40})
    assert describe_validation_error(caught.value).startswith(
        f"{path.rsplit('.', 1)[-1]}={10**40} is invalid: must be "
    )


def error_of(**settings) -> str:
    with pytest.raises(ValidationError) as caught:
        RagsExpertSettings(**settings)
    return describe_validation_error(caught.value)


def test_a_secret_settings_value_is_never_shown():
    assert error_of(llm={"api_key": 12}) == "api_key=*** is invalid: must be text (llm.api_key)"


def test_every_secret_setting_is_known_as_one():
    from rags_expert.settings.errors import _secret_paths, is_secret_path

    assert {"llm.api_key", "checkpointer.url", "knowledge_flow.token", "kg.neo4j_password"} <= _secret_paths()
    assert all(is_secret_path(p) for p in _secret_paths())
    assert not is_secret_path("budget.max_tokens") and not is_secret_path("llm.base_url")
    assert error_of(checkpointer={"url": 5}).startswith("url=*** is invalid: ")


def test_an_unknown_key_is_named_without_its_value():
    assert error_of(llm={"api_ky": "sk-live-0123456789"}) == "api_ky is not a setting (llm.api_ky)"


def test_a_long_value_is_cut_and_url_credentials_are_masked():
    line = error_of(retrieval={"top_k": "x" * 500})
    assert line.startswith("top_k=" + "x" * 50) and "…" in line and len(line) < 140
    assert error_of(store={"timeout": "http://u:pw-secret@host/"}) == (
        "timeout=http://***@host/ is invalid: must be a number (store.timeout)"
    )
