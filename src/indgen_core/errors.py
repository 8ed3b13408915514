"""Errors a user can act on.

Anything raised as `IndGenError` reaches the command line as one sentence and a non-zero
exit status, never as a traceback: the message must say what was wrong and what to do.
"""


class IndGenError(Exception):
    """A problem with the user's input or environment, explained in one sentence."""

    exit_code = 2


class MissingDependencyError(IndGenError):
    """An optional dependency is not installed; the message names the extra to install."""

    exit_code = 3

    def __init__(self, module: str, extra: str, purpose: str):
        super().__init__(
            f"{purpose} needs the Python module '{module}', which is not installed: "
            f"run `make setup` or `pip install -e '.[{extra}]'`."
        )
        self.module = module
        self.extra = extra


def require(module: str, extra: str, purpose: str):
    """Import an optional heavy dependency where it is used, or fail with one clear sentence."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name and module.split(".", maxsplit=1)[0] != exc.name.split(".")[0]:
            raise  # the module exists but something inside it is broken: show the real error
        raise MissingDependencyError(module, extra, purpose) from None


def first_line(exc: BaseException, limit: int = 160) -> str:
    """An exception as one short line (class and the first line of its message): libraries'
    multi-line explanations stay out of a user's terminal."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{exc.__class__.__name__}: {lines[0][:limit]}" if lines else exc.__class__.__name__
