"""Importing the notebook stack (nbformat, papermill, nbconvert) without a 2.5-second detour through IRI grammars.

nbformat validates notebooks with jsonschema. When the optional ``rfc3987_syntax`` is installed (jupyter-events pulls
it in), jsonschema's ``_format`` module imports it to check the ``iri`` and ``iri-reference`` string formats, and
``rfc3987_syntax`` builds 38 lark grammars on import: about 2.5 s of CPU in every process that executes or reads a
notebook (each ``airbench-nb run``, each run of a grid), for formats that no notebook schema uses and that nbformat
never checks (it validates without a format checker). :func:`light_jsonschema` imports jsonschema with that one
optional module absent, exactly as on an installation without it (jsonschema skips the two formats then); any later
``import rfc3987_syntax`` works as usual.
"""

from __future__ import annotations

import sys


def light_jsonschema() -> None:
    """Import jsonschema (once per process) without its optional ``rfc3987_syntax`` IRI checks.

    A no-op when jsonschema is imported already (whatever it imported stays).
    """
    if "jsonschema" in sys.modules:
        return
    absent = "rfc3987_syntax" not in sys.modules
    if absent:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # an import of it raises ImportError
    try:
        import jsonschema  # noqa: F401
    finally:
        if absent and sys.modules.get("rfc3987_syntax", 0) is None:
            del sys.modules["rfc3987_syntax"]
