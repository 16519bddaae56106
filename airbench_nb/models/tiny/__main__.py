"""``python -m airbench_nb.models.tiny FAMILY FOLDER``."""

from airbench_nb.models.tiny import main

main()
