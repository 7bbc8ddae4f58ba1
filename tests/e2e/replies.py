"""A served reply as the endpoint client records it, for tests that judge a reply's text."""

from __future__ import annotations

from accelbench.endpoint.records import RequestRecord


def served_reply(text: str, tokens: int, concurrency: int = 2) -> RequestRecord:
    """An ok streamed reply of ``text``, ``tokens`` long by the client's count and the server's."""
    return RequestRecord(
        concurrency=concurrency,
        index=0,
        role="timed",
        salt="ab",
        issue_s=0.0,
        send_s=0.0,
        first_content_s=0.1,
        end_s=0.2,
        chunk_s=(0.1,),
        text=text,
        output_tokens=tokens,
        usage_output_tokens=tokens,
        usage_prompt_tokens=9,
        status="ok",
        error="",
    )
