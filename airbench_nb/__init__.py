"""airbench-nb: evaluate large audio-language models the AIR-Bench way, in notebooks and from the shell."""

from importlib import metadata

try:
    __version__ = metadata.version("airbench-nb")
except metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]

# Benchmarks of one's own (AIRBENCH_NB_PLUGINS, entry points "airbench_nb.plugins") register in every process of the
# kit, notebook kernels included; last, so that a plugin importing the kit finds the package initialised.
from airbench_nb.plugins import load_plugins  # noqa: E402

load_plugins()
