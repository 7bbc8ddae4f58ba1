"""Agentic multi-turn sessions (issue 44): a session is a sequence of turns, each sent with the whole
conversation so far (the server's real replies included) after the turn's think delay; a load is a number
of concurrent sessions (``--sessions 1,2,4``). ``cell.measure`` is the endpoint cells' driver when a run
asks for sessions (docs/sessions.md).
"""
