"""The only code that touches a GPU. It runs in a worker process (worker.py).

Nothing outside this package imports CuPy; the parent talks to the worker through the
plain dataclasses in protocol.py, serialised as JSON lines.
"""
