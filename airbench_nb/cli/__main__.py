"""``python -m airbench_nb.cli``: the ``airbench-nb`` command."""

from airbench_nb.cli import main

main()
