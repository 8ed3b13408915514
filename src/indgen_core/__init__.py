"""IndGen core: axes and progressions, the protocol checks, campaigns, statistics,
the results store, reports and the policy wire protocol. Plain Python, no ROS import."""

from importlib import metadata as _metadata


def _version() -> str:
    try:
        return _metadata.version("indgen")
    except _metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


__version__ = _version()
