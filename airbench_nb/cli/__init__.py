"""The ``airbench-nb`` command: the same functions the notebooks call, from a shell.

One module per command group (``data``, ``pipeline``, ``models``, ``judging``, ``analysis``, ``annotation``); the
Typer app and what the commands share live in ``app``. The commands are registered here, in the order ``--help``
lists them.
"""

from __future__ import annotations

from airbench_nb.cli import analysis, annotation, data, importing, judging, models, pipeline, weights
from airbench_nb.cli.app import EXIT_BAD_INPUT, EXIT_FAILED_ITEMS, EXIT_FATAL_API, app, version

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED_ITEMS", "EXIT_FATAL_API", "app", "main"]

for _name, _command in (
    ("version", version),
    ("import-official", data.import_official_cmd),
    ("import-sources", data.import_sources_cmd),
    ("validate", data.validate),
    ("run", pipeline.run),
    ("params", pipeline.params),
    ("mix", data.mix_cmd),
    ("build", data.build),
    ("infer", models.infer),
    ("judge", judging.judge),
    ("score", judging.score),
    ("score-official", judging.score_official),
    ("rotate", data.rotate),
    ("analyze", analysis.analyze),
    ("compare", analysis.compare),
    ("agreement", analysis.agreement_cmd),
    ("judge-map", analysis.judge_map),
    ("sample-annotation", annotation.sample_annotation_cmd),
    ("sample-listening", annotation.sample_listening_cmd),
    ("mos", annotation.mos_cmd),
    ("report", pipeline.report),
    ("weights", weights.weights_cmd),
):
    app.command(_name)(_command)
    if _name == "import-sources":  # import takes named sources (--vctk DIR): extra arguments reach it unparsed
        app.command("import", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
            importing.import_cmd
        )


def main() -> None:
    """Entry point of the console script."""
    app()
