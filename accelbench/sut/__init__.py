"""The SUT process: a stack's code runs in a process of its own that holds nothing of the harness.

``remote`` (the harness's side: start it, ask it, a session whose ``infer`` crosses the wire), ``host``
(the SUT process's side), ``wire`` (JSON headers and raw numpy buffers, never pickle) and ``hardening``
(undumpable harness processes, no ptrace capability in the SUT, a scrubbed environment).
See ``docs/audits.md`` for the threat model.
"""
