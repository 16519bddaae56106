"""Plugins: modules outside the kit that register benchmarks, item kinds, metrics, judges or model backends.

A benchmark of one's own is a module that registers its pieces on import (see "Add a benchmark" in
``docs/extending.md``). Every process of the kit has to import it before it reads a manifest of its kind: the shell
command, and each notebook's kernel that ``airbench-nb run`` starts. :func:`load_plugins` imports

- the modules named in the environment variable :data:`PLUGINS_ENV` (``AIRBENCH_NB_PLUGINS``: module names separated
  by commas, importable from ``sys.path`` or ``PYTHONPATH``; the kernels inherit the variable), and
- the modules of the installed packages' entry points in the group :data:`ENTRY_POINT_GROUP` (``airbench_nb.plugins``,
  the way pytest and inspect_ai find theirs),

once per process. ``import airbench_nb`` calls it, so that no command, notebook or test needs to.
"""

from __future__ import annotations

import importlib
import logging
import os
from importlib import metadata

logger = logging.getLogger(__name__)

PLUGINS_ENV = "AIRBENCH_NB_PLUGINS"
"""Environment variable naming plugin modules, separated by commas."""
ENTRY_POINT_GROUP = "airbench_nb.plugins"
"""Entry-point group of installed plugins (the entry point's value is the module to import)."""

_loaded: list[str] = []
_loading = False


class PluginError(ImportError):
    """A plugin module that could not be imported (its name, where it was named, and why)."""


def plugin_modules() -> list[tuple[str, str]]:
    """The plugin modules to import: ``(module, where it was named)``, the environment variable's first."""
    named = [(m.strip(), PLUGINS_ENV) for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
    points = metadata.entry_points(group=ENTRY_POINT_GROUP)
    named += [(point.value.split(":")[0], f"entry point {point.name!r} of {ENTRY_POINT_GROUP}") for point in points]
    return named


def load_plugins() -> list[str]:
    """Import every plugin module not imported yet (see the module docstring), and return the loaded ones.

    Raises:
        PluginError: For a module that cannot be imported; the message names it, where it was named and the error.
    """
    global _loading
    if _loading:  # a plugin importing the kit while it loads
        return list(_loaded)
    _loading = True
    try:
        for module, where in plugin_modules():
            if module in _loaded:
                continue
            try:
                importlib.import_module(module)
            except Exception as exc:
                raise PluginError(f"plugin {module!r} ({where}) could not be imported: {exc}") from exc
            _loaded.append(module)
            logger.debug("plugin %s loaded (%s)", module, where)
    finally:
        _loading = False
    return list(_loaded)


__all__ = ["ENTRY_POINT_GROUP", "PLUGINS_ENV", "PluginError", "load_plugins", "plugin_modules"]
