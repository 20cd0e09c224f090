"""One error root for everything logscope raises on purpose."""


class LogscopeError(Exception):
    """Base of every error logscope raises; the CLI prints it as one sentence and exits 3 (no result: ``logscope.exits``)."""


class UnreadableInput(LogscopeError):
    """Nothing in the input could be read as text (binary data, missing file, empty input)."""
