"""airbench-nb: evaluate large audio-language models the AIR-Bench way, in notebooks and from the shell."""

from importlib import metadata

try:
    __version__ = metadata.version("airbench-nb")
except metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
