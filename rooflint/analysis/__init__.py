"""The pure analysis core: counters and times in, roofline points, causes, verdicts
and moves out. Imports no document, no CuPy, no GPU code and no command: the documents
(formats/) are built from its types, and the decisions over them are judge/'s."""
