"""rq-webhook-receiver's pytest plugin (`plugin.py`, entry point `pytest11`:
`webhook_receiver`), the check that a project's own top-level `app` or `workers` does not
clash with ours (`clash.py`), and where a test run will import them from (`predict.py`).

Imports nothing: `clash.py` needs only the standard library, so the worker, in an install
without pytest, uses it too (`workers/runtime/run.py`).
"""
