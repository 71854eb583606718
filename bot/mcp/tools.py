"""The MCP tools `search`, `ask` and `get_document`, described for a model that must choose
them, each run as the person its bearer token names through the API's calls."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from bot.api.calls import Caller, CallRefused, Calls
from bot.api.models import AskResult, DocumentOut, PassageOut, SearchResult
from bot.mcp.gate import caller_in
from rag.types import Mode

INSTRUCTIONS = (
    "Sift answers from the organisation's own knowledge base (policies, handbooks, wikis, "
    "tickets), only with documents the signed-in person may read. Prefer `ask` for a "
    "question that wants an answer; `search` to see passages yourself; `get_document` to "
    "read a whole document a search or an answer named.")
SEARCH = (
    "Find the passages of the organisation's knowledge base that best match a query, ranked "
    "as Sift ranks them for answers, limited to documents the caller may read. Returns "
    "each passage's text, document title, URL, source, document id and last update. Use it "
    "to look things up or to choose a document to read whole with get_document.")
ASK = (
    "Ask the organisation's knowledge base a question and get a graded answer with numbered "
    "citations [n] to its sources, written only from documents the caller may read. When the "
    "knowledge base does not cover the question the status is 'no_answer': say so rather "
    "than guessing. Ask one self-contained question per call.")
GET_DOCUMENT = (
    "Read the whole text of one document of the knowledge base, by the doc_id (or URL) a "
    "search or an answer's citation returned. Only documents the caller may read are found.")

Query = Annotated[str, Field(min_length=1, max_length=4000, description="What to look for.")]
Limit = Annotated[int, Field(ge=1, le=50, description="How many passages at most.")]
Question = Annotated[str, Field(min_length=1, max_length=4000,
                                description="The question, self-contained, in plain words.")]
Ref = Annotated[str, Field(min_length=1, max_length=2000,
                           description="A doc_id from search or a citation, or the URL.")]


def _caller() -> Caller:
    caller = caller_in(get_access_token())  # set by the bearer gate: /mcp refuses without
    if caller is None:
        raise CallRefused(401, "This call carries no bearer token.")
    return caller


def _result(model: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)],
                          structured_content=model.model_dump(mode="json"))


def _refused(exc: CallRefused) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=exc.sentence)], is_error=True)


def _passages_text(result: SearchResult) -> str:
    if not result.passages:
        return "No passage the caller may read matches that query."
    return "\n\n".join(_passage_text(i, p) for i, p in enumerate(result.passages, start=1))


def _passage_text(i: int, p: PassageOut) -> str:
    updated = f", updated {p.updated_at.date().isoformat()}" if p.updated_at else ""
    return (f"{i}. {p.title} ({p.source}{updated})\n   doc_id: {p.doc_id}  url: {p.url}\n"
            f"   {p.text.strip()}")


def _answer_text(result: AskResult) -> str:
    sources = "\n".join(f"[{c.n}] {c.title}: {c.url} (doc_id {c.doc_id})"
                        for c in result.citations)
    return f"{result.text}\n\nSources:\n{sources}" if sources else result.text


def build_server(calls: Calls) -> MCPServer:
    server = MCPServer("Sift", instructions=INSTRUCTIONS)

    @server.tool(description=SEARCH)
    async def search(query: Query, limit: Limit = 8) -> Annotated[CallToolResult, SearchResult]:
        try:
            passages = await calls.search(_caller(), query, limit)
        except CallRefused as exc:
            return _refused(exc)
        result = SearchResult(passages=[PassageOut.of(p) for p in passages])
        return _result(result, _passages_text(result))

    @server.tool(description=ASK)
    async def ask(question: Question, mode: Literal["accurate", "fast"] | None = None
                  ) -> Annotated[CallToolResult, AskResult]:
        try:
            answer, ref = await calls.ask(_caller(), question, Mode(mode) if mode else None)
        except CallRefused as exc:
            return _refused(exc)
        result = AskResult.of(answer, ref)
        return _result(result, _answer_text(result))

    @server.tool(description=GET_DOCUMENT)
    async def get_document(id: Ref) -> Annotated[CallToolResult, DocumentOut]:
        try:
            found = DocumentOut.of(await calls.document(_caller(), id))
        except CallRefused as exc:
            return _refused(exc)
        return _result(found, f"# {found.title}\n{found.url}\n\n{found.text}")

    return server
