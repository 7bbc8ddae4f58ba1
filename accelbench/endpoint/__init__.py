"""Served LLMs the MLPerf Endpoints way (issue 31): an OpenAI-compatible streaming client, a
fixed-concurrency driver, the curve's figures and the servers accelbench starts itself (docs/llm.md).

``cell.measure`` is the driver of every cell whose stack is an endpoint stack (``llm@url``,
``llm@transformers``, ...): the cell process hands it the ``CellSpec``.
"""
