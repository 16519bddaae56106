"""nbval settings for the tutorial: compare text, not mime types that vary between versions (HTML, widgets)."""


def pytest_collectstart(collector):
    """Skip comparing rich outputs whose markup changes with library versions."""
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += (
            "text/html",
            "image/png",
            "image/svg+xml",
            "application/javascript",
            "application/vnd.jupyter.widget-view+json",
            "stderr",
        )
