"""Two-document questions answered from one search in the ``small`` profile: a chunk that names another retrieved
document's title, the two holding together what neither holds alone, are both relevant and the answer quotes the
naming sentence and the named document's answer (rags_expert.rag._shared.bridge.linked_pairs / pair_quote)."""

from __future__ import annotations

from helpers.documents import KeywordRetriever
from helpers.scripts import Script
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.evidence import EvidenceScorer
from rags_expert.rag._shared.bridge import linked_pairs, pair_quote
from rags_expert.settings import EvidenceSettings
from rags_expert.testing import ScriptedChatModel

QUESTION = "Where was the painter of the Harbour Lights mural born?"


def doc(title: str, text: str) -> Document:
    return Document(f"{title}\n{text}", metadata={"title": title, "source": f"kb/{title}.md", "chunk_id": title})


MURAL = doc(
    "Harbour Lights (mural)",
    "Harbour Lights is a mural on the sea wall of Port Ellis. It was painted in 1962 by Ines Harrow.",
)
PAINTER = doc("Ines Harrow", "Ines Harrow (1921-1990) was a muralist. She was born in Crowmere, a quarry town.")
OTHER = doc("Crowmere", "Crowmere is a quarry town in the Velora valley. Its railway opened in 1889.")


def test_a_pair_is_one_chunk_naming_another_that_adds_what_the_question_needs():
    pairs = linked_pairs(QUESTION, [MURAL, PAINTER, OTHER], 0.7)
    assert [(p.a, p.b) for p in pairs] == [(0, 1)]  # the mural names the painter; Crowmere adds no question term
    assert pairs[0].coverage >= 0.7
    assert pairs[0].coverage == 0.8  # harbour, light, mural + born; not "painter" (the mural says "painted")
    assert linked_pairs(QUESTION, [MURAL, PAINTER], 0.9) == []  # below a higher bar
    assert linked_pairs(QUESTION, [PAINTER, OTHER], 0.0) == []  # the painter names Crowmere, which adds nothing


async def test_the_pair_quote_is_the_naming_sentence_and_the_named_chunks_answer():
    found = await pair_quote(QUESTION, [OTHER, MURAL, PAINTER], EvidenceScorer(EvidenceSettings()), 0.7)
    assert found is not None
    pair, said, match = found
    assert (pair.a, pair.b) == (1, 2)
    assert said == "It was painted in 1962 by Ines Harrow."
    assert match.sentence == "She was born in Crowmere, a quarry town."


async def ask(**settings):
    script = Script(generate=lambda text: "I do not know.")
    retriever = KeywordRetriever(docs=[MURAL, PAINTER, OTHER], calls=[])
    agent = await RagsExpert(
        {
            "llm": {"max_retries": 0},
            "retrieval": {"top_k": 3},
            "evidence": {"profile": "small", "use_embeddings": False},
        }
        | settings,
        chat_model=ScriptedChatModel(responder=script),
        retriever=retriever,
    ).async_init()
    out = await agent.get_compiled_graph(checkpointer=False).ainvoke({"messages": [HumanMessage(QUESTION)]})
    return out["messages"][-1]


async def test_one_search_answers_the_two_document_question_citing_both():
    msg = await ask()
    meta = msg.response_metadata
    assert meta["outcome"] == "success" and meta["answer_kind"] == "extractive"
    assert msg.content == (
        "The sources say: “It was painted in 1962 by Ines Harrow.” [1] and "
        "“She was born in Crowmere, a quarry town.” [2]"
    )
    assert [s["title"] for s in meta["sources"]] == ["Harbour Lights (mural)", "Ines Harrow"]
    assert all(c["span"] is not None for c in meta["citations"])  # each quote is the span of the chunk it cites


async def test_with_multihop_off_the_pair_is_not_used():
    msg = await ask(multihop={"max_hops": 1})
    assert msg.response_metadata["outcome"] == "failure"


def test_a_page_title_written_in_lower_case_is_no_link():
    """Library docs: a page titled "Testing" is not named by "… a client for testing …"; a person's name is."""
    guide = doc("Middleware", "Use the test client for testing middleware. Ines Harrow wrote the first version.")
    testing = doc("Testing", "The test client runs the application in a thread.")
    assert linked_pairs("Which client is used for testing middleware?", [guide, testing], 0.0) == []
    assert [
        (p.a, p.b) for p in linked_pairs("Where was the author of the middleware born?", [guide, PAINTER], 0.0)
    ] == [(0, 1)]


def test_code_names_are_no_bridge():
    from rags_expert.rag._shared.bridge import bridge_names

    sentence = "With `receive_json` on the WebSocket Session, as Ines Harrow showed, JSON is read."
    assert bridge_names(sentence, "How do I read JSON from a websocket?") == ["WebSocket Session", "Ines Harrow"]


async def test_a_code_line_or_a_lead_in_is_never_quoted_by_a_pair():
    """The only sentences naming the painter are a code line and a lead-in: no pair quote (the issue-22 rule)."""
    mural = doc(
        "Harbour Lights (mural)",
        "Harbour Lights is a mural on the sea wall of Port Ellis. It was painted by:\n\n"
        "```\npainter = 'Ines Harrow'\n```\n",
    )
    assert linked_pairs(QUESTION, [mural, PAINTER], 0.7)  # the pair is there
    assert await pair_quote(QUESTION, [mural, PAINTER], EvidenceScorer(EvidenceSettings()), 0.7) is None


def test_a_common_word_capitalised_at_a_sentence_start_is_no_bridge():
    """Library docs: "Attributes can have …" is no name to search for (the page writes "attributes" too), nor a word
    the chunks capitalise only where a sentence starts; a name the chunks write mid-sentence stays one."""
    from rags_expert.rag._shared.bridge import bridge_names

    text = "Attributes can have a `converter`. You can change these attributes any way you want."
    assert bridge_names("Attributes can have a `converter`.", "How do I force keyword fields?", text=text) == []
    text = "Validators run on init. Validators can be disabled."
    assert bridge_names("Validators run on init.", "How do I turn checks off?", text=text) == []
    text = "The mural was painted by Ines. Harbour Lights was painted by Ines in 1921."
    assert bridge_names("The mural was painted by Ines.", "Where was the painter born?", text=text) == ["Ines"]


async def test_a_hop_is_not_planned_over_a_sentence_initial_common_word():
    from rags_expert.rag._shared.bridge import plan_bridge

    chunk = doc(
        "Examples",
        "Attributes can have a converter function, which is called with the passed-in value. "
        "Converters run on initialization and on attribute setting; attributes may also have validators.",
    )
    question = "How do I force callers to pass some fields by name rather than positionally?"
    assert await plan_bridge(question, [chunk], EvidenceScorer(EvidenceSettings())) is None


async def test_a_hop_answer_comes_from_the_bridges_own_page():
    """A sentence naming the bridge on a page about something else (a test client's page mentioning JSON) is not the
    hop's answer; the same sentence on the bridge's page is."""
    from rags_expert.rag._shared.bridge import hop_quote

    question, said = "Where was the director of Zorvan born?", "The director of Zorvan was Mara Quill."
    scorer = EvidenceScorer(EvidenceSettings())
    elsewhere = doc("Testing", "Mara Quill was born in Lowfield.")
    assert await hop_quote(question, "Mara Quill", [elsewhere], scorer, said) is None
    own = doc("Mara Quill", "Mara Quill was born in Lowfield.")
    found = await hop_quote(question, "Mara Quill", [own], scorer, said)
    assert found is not None and found.sentence == "Mara Quill was born in Lowfield."


async def test_a_page_sharing_only_a_word_with_the_bridge_is_not_its_page():
    """A hop's sentence counts only on a page whose title or a heading names the bridge whole, by its last word, or
    is a whole part of it; headings that share other words ("Lantern Dashboard > Sync settings" for "Lantern Sync
    Protocol") or a word stem ("lantern_syncs") belong to another subject."""
    from rags_expert.rag._shared.bridge import hop_quote

    question = "Which port does the protocol of Beacon Relay listen on?"
    said = "Beacon Relay speaks the Lantern Sync Protocol."
    scorer = EvidenceScorer(EvidenceSettings())
    fact = "The Lantern Sync Protocol listens on port 7411 by default."

    def page(title: str, section: str) -> Document:
        return Document(f"{section}\n{fact}", metadata={"title": title, "section": section, "chunk_id": section})

    for other in (
        page("Lantern Dashboard", "Lantern Dashboard > Sync settings"),
        page("Options", "Options > lantern_syncs"),
    ):
        assert await hop_quote(question, "Lantern Sync Protocol", [other], scorer, said) is None
    for own in (
        page("Lantern Sync Protocol", "Lantern Sync Protocol > Ports"),  # named whole
        page("Reference", "Reference > The protocol > History of the Protocol"),  # by its last word
        page("Lantern", "Lantern > Ports"),  # a whole part of the name
    ):
        found = await hop_quote(question, "Lantern Sync Protocol", [own], scorer, said)
        assert found is not None and found.sentence == fact, own.metadata


def test_a_one_word_topic_title_is_no_link():
    """Library docs: a page titled "Middleware", named as "WebSocket Middleware" by another page that also writes
    "middleware", is a topic every page touches, not a second document the question needs."""
    guide = doc("WebSockets", "Likewise, WebSocket Middleware may alter incoming data. Add middleware with care.")
    middleware = doc("Middleware", "The maximum size of a message is set by the server, not by the app.")
    question = "What is the default maximum size of an incoming WebSocket message?"
    assert linked_pairs(question, [guide, middleware], 0.0) == []
    painter = doc("Ines Harrow", "Ines Harrow was born in Lowfield.")
    mural = doc("Harbour Lights", "Harbour Lights was painted by Ines Harrow. Murals fade in the salt air.")
    assert [(p.a, p.b) for p in linked_pairs("Where was the painter of Harbour Lights born?", [mural, painter], 0.0)]


def test_a_title_the_question_names_is_no_bridge():
    """Asked about "Ines Harrow" directly, the mural naming her is no first hop: in a library's documentation, the
    front page's title ("Python-Markdown") is named by every page and asked about in every question."""
    question = "Where was Ines Harrow, the painter of the mural, born?"
    assert [(p.a, p.b) for p in linked_pairs(QUESTION, [MURAL, PAINTER], 0.0)] == [(0, 1)]
    assert linked_pairs(question, [MURAL, PAINTER], 0.0) == []


async def test_the_pages_own_headings_name_no_bridge():
    """A chunk opens with its section path ("Using Tern as a Python Library > The Basics of Tern > Tab Width"); those
    headings are where its sentences stand, not a document to search next."""
    from rags_expert.rag._shared.bridge import plan_bridge

    section = "Using Tern as a Python Library > The Basics of Tern > Tab Width"
    page = Document(
        f"{section}\nThe `tab_width` keyword sets the width of tabs in the source as an integer.",
        metadata={"title": "Using Tern as a Python Library", "section": section},
    )
    scorer = EvidenceScorer(EvidenceSettings(use_embeddings=False))
    assert await plan_bridge("What is the default value of Tern's tab_width option?", [page], scorer) is None
