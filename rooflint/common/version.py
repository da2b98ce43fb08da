"""rooflint's version, in a module of its own: the package's ``__init__`` re-exports it for
users and packaging, and the modules that record it (results) import it from here, never
from the package that imports them."""

__version__ = "0.1.0"
