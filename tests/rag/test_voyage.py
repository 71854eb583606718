"""The Voyage AI embedder against the fake embeddings API: input types, batching, sizes, errors."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from rag.embed import VoyageEmbedder
from rag.errors import ConfigError, RetrievalError
from tests.fakes.voyage_server import (
    FakeVoyage,
    fake_vector,
    rate_limited,
    server_error,
    unauthorized,
)

KEY = "pa-fake-secret-7f3a9c"
WRONG_KEY = "pa-stale-secret-2b8e1d"
TEXTS = ["Expenses are paid back within thirty days.", "VPN: install WireGuard.",
         "Holidays: 25 days a year.", "On-call hands over on Mondays.", "Badges open doors."]


@pytest.fixture
async def voyage() -> AsyncIterator[FakeVoyage]:
    server = FakeVoyage(api_key=KEY)
    await server.start()
    yield server
    await server.stop()


def make(server: FakeVoyage, **overrides: object) -> VoyageEmbedder:
    # No retries unless a test asks: the SDK's first back-off alone is a second or more.
    values: dict[str, object] = dict(api_key=KEY, model="voyage-3.5", dimension=1024,
                                     base_url=server.base_url, max_retries=0)
    values.update(overrides)
    return VoyageEmbedder(**values)  # type: ignore[arg-type]


def assert_no_secret(error: BaseException) -> None:
    shown = " ".join((str(error), repr(error), getattr(error, "user_message", "")))
    assert KEY not in shown and WRONG_KEY not in shown


async def test_documents_and_queries_say_which_they_are(voyage: FakeVoyage) -> None:
    embedder = make(voyage)
    documents = await embedder.embed_documents(TEXTS[:2])
    query = await embedder.embed_query("how do I get paid back?")
    first, second = voyage.requests
    assert first.body["input_type"] == "document" and first.body["input"] == TEXTS[:2]
    assert second.body["input_type"] == "query" and second.body["input"] == [
        "how do I get paid back?"]
    assert {first.body["model"], second.body["model"]} == {"voyage-3.5"}
    assert first.headers["Authorization"] == f"Bearer {KEY}"
    assert documents == [fake_vector(t, 1024) for t in TEXTS[:2]]
    assert query == fake_vector("how do I get paid back?", 1024)
    assert embedder.name == "voyage:voyage-3.5" and embedder.dimension == 1024


async def test_batches_are_split_and_order_is_kept(voyage: FakeVoyage) -> None:
    embedder = make(voyage, batch_size=2)
    vectors = await embedder.embed_documents(TEXTS)
    assert [r.body["input"] for r in voyage.requests] == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:]]
    assert vectors == [fake_vector(t, 1024) for t in TEXTS]
    assert await embedder.embed_documents([]) == []
    assert len(voyage.requests) == 3  # nothing to embed, nothing sent


@pytest.mark.parametrize(("model", "dimension", "sent"), [
    ("voyage-3.5", 512, 512),
    ("voyage-3-large", 2048, 2048),
    ("voyage-code-3", 256, 256),
    ("voyage-3.5", 1024, None),      # the default size: no need to ask
    ("voyage-3", 1024, None),        # fixed-size models refuse the parameter
    ("voyage-3-lite", 512, None),
    ("voyage-code-2", 1536, None),
])
async def test_output_dimension_is_sent_only_when_it_changes_the_size(
        voyage: FakeVoyage, model: str, dimension: int, sent: int | None) -> None:
    vector = await make(voyage, model=model, dimension=dimension).embed_query("size?")
    (request,) = voyage.requests
    assert request.body.get("output_dimension") == sent
    assert vector == fake_vector("size?", dimension)


async def test_a_size_the_model_cannot_make_names_the_settings(voyage: FakeVoyage) -> None:
    with pytest.raises(RetrievalError) as caught:
        await make(voyage, model="voyage-3", dimension=512).embed_query("size?")
    assert voyage.requests[0].body["output_dimension"] == 512
    assert "SIFT_EMBEDDING__VOYAGE_DIMENSION" in caught.value.user_message
    assert "not supported for voyage-3" in str(caught.value)  # Voyage's reason, for the log


async def test_vectors_of_another_size_are_a_config_error(voyage: FakeVoyage) -> None:
    voyage.fixed["voyage-next-1"] = 1536  # a model newer than Sift's table of sizes
    embedder = make(voyage, model="voyage-next-1", dimension=1024)
    with pytest.raises(ConfigError) as caught:
        await embedder.embed_documents(TEXTS[:1])
    message = caught.value.user_message
    assert "SIFT_EMBEDDING__VOYAGE_DIMENSION is 1024" in message and "set it to 1536" in message


@pytest.mark.parametrize("how", ["wrong key", "key echoed by the service"])
async def test_401_names_the_key_setting_and_never_shows_the_key(voyage: FakeVoyage,
                                                                 how: str) -> None:
    if how == "wrong key":
        embedder = make(voyage, api_key=WRONG_KEY, max_retries=2)
    else:
        voyage.faults.append(unauthorized(f"API key {KEY} was revoked."))
        embedder = make(voyage, max_retries=2)
    with pytest.raises(RetrievalError) as caught:
        await embedder.embed_documents(TEXTS[:1])
    assert "SIFT_EMBEDDING__VOYAGE_API_KEY" in caught.value.user_message
    assert "AuthenticationError" in str(caught.value)
    assert_no_secret(caught.value)
    assert len(voyage.requests) == 1  # a refused key is not worth retrying


async def test_persistent_500_is_a_retrieval_error(voyage: FakeVoyage) -> None:
    voyage.faults.extend(server_error() for _ in range(5))
    with pytest.raises(RetrievalError) as caught:
        await make(voyage, max_retries=2).embed_query("anyone there?")
    assert caught.value.user_message == "I can't reach the embedding service right now."
    assert "ServerError" in str(caught.value)
    assert_no_secret(caught.value)
    assert len(voyage.requests) == 1  # the SDK retries 429, 502-504 and timeouts, not 500


async def test_429_is_retried_and_then_answered(voyage: FakeVoyage) -> None:
    voyage.faults.append(rate_limited(0.1))
    started = time.monotonic()
    vector = await make(voyage, max_retries=1).embed_query("busy?")
    assert vector == fake_vector("busy?", 1024)
    assert len(voyage.requests) == 2 and time.monotonic() - started < 5


async def test_retries_stop_at_max_retries(voyage: FakeVoyage) -> None:
    voyage.faults.extend(rate_limited(0.1) for _ in range(5))
    with pytest.raises(RetrievalError) as caught:
        await make(voyage, max_retries=1).embed_query("busy?")
    assert "try again in a minute" in caught.value.user_message
    assert len(voyage.requests) == 2  # the first try and one retry


async def test_an_unreachable_service_is_a_retrieval_error() -> None:
    gone = FakeVoyage()
    await gone.start()
    await gone.stop()  # the port is now closed
    with pytest.raises(RetrievalError) as caught:
        await make(gone).embed_query("hello?")
    assert caught.value.user_message == "I can't reach the embedding service right now."
    assert_no_secret(caught.value)
