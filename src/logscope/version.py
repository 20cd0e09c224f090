"""logscope's version, in a module of its own so that lower layers (render, store, analyses) can name it
without importing the package root (which imports the API, and so every layer)."""

__version__ = "0.1.0"
