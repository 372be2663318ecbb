"""``SearchOptions``: the one value that owns a search's defaults, default tags and empty-list rule."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rags_expert.rag.options import RequestOptions
from rags_expert.rag.retrieve.fallback_source import fallback_options
from rags_expert.retrieval.options import SearchOptions
from rags_expert.settings import RetrievalSettings


def test_absent_options_take_the_configured_top_k_and_default_tags():
    resolved = SearchOptions().resolved(RetrievalSettings(top_k=5, library_tags=["handbook"]))
    assert (resolved.top_k, resolved.library_tags, resolved.limit) == (5, ["handbook"], 5)


def test_the_requests_own_options_win_over_the_settings():
    resolved = SearchOptions(top_k=2, library_tags=["faq"]).resolved(
        RetrievalSettings(top_k=5, library_tags=["handbook"])
    )
    assert (resolved.top_k, resolved.library_tags) == (2, ["faq"])


def test_no_configured_default_tags_means_no_filter():
    assert SearchOptions().resolved(RetrievalSettings(library_tags=[])).library_tags is None


@pytest.mark.parametrize(
    ("options", "nothing"),
    [
        (SearchOptions(), False),
        (SearchOptions(library_tags=["a"], document_uids=["d"]), False),
        (SearchOptions(library_tags=[]), True),
        (SearchOptions(document_uids=[]), True),
    ],
)
def test_an_empty_list_scopes_nothing_and_an_absent_one_scopes_everything(options, nothing):
    assert options.scopes_nothing is nothing


def test_an_empty_request_list_survives_the_default_tags():
    resolved = SearchOptions(library_tags=[]).resolved(RetrievalSettings(library_tags=["handbook"]))
    assert resolved.library_tags == [] and resolved.scopes_nothing


def test_a_request_caps_top_k_at_the_configured_value_and_keeps_user_id_from_retrievers():
    request = RequestOptions.model_validate({"top_k": 9, "library_tags": "faq", "user_id": "u1", "thread_id": "t"})
    assert request.search(4).kwargs() == {"top_k": 4, "library_tags": ["faq"]}
    assert RequestOptions().search(4).kwargs() == {"top_k": 4}


def test_options_round_trip_through_their_keywords():
    options = SearchOptions(top_k=3, library_tags=["a"], document_uids=["d"], search_policy="strict")
    assert SearchOptions.of(options.kwargs() | {"unrelated": 1}) == options


def test_an_invalid_option_is_refused_when_validated():
    with pytest.raises(ValidationError):
        SearchOptions.model_validate({"search_policy": "fuzzy"})
    with pytest.raises(ValidationError):
        SearchOptions.model_validate({"top_k": 0})


def test_the_value_is_immutable():
    with pytest.raises(ValidationError):
        SearchOptions(top_k=3).top_k = 4  # type: ignore[misc]


def test_unresolved_options_have_no_limit():
    with pytest.raises(ValueError, match="not resolved"):
        _ = SearchOptions().limit


def test_the_fallback_search_keeps_the_filters_only_when_configured():
    options = SearchOptions(top_k=3, library_tags=["a"], document_uids=["d"], search_policy="semantic")
    assert fallback_options(options, request_filters=True) == options
    assert fallback_options(options, request_filters=False).kwargs() == {"top_k": 3}
