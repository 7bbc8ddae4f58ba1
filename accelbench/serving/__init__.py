"""Served models: a model behind a real inference server, measured over the network (docs/serving.md).

A served deployment is a stack named ``<stack>@<server>`` (``onnxruntime@ray-serve``) registered in
``accelbench.registry``: ``stack`` (the ``ServedStack`` base), ``ray_serve`` (the Ray Serve stacks),
``ray_app`` (the server script), ``process`` (start, readiness, stop by session, ports), ``client``
(the v2 HTTP client with its asynchronous ``submit``), ``protocol`` (v2 binary encoding), ``metrics``
(the server's own timings).
"""
