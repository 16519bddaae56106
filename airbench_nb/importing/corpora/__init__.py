"""The kit's own import recipes, one module per corpus family; importing this package registers them.

Each module registers its recipes with :func:`airbench_nb.importing.register_recipe`; ``airbench-nb import --list``
shows them and ``docs/data.md`` says where to get each corpus and the exact command.
"""

# isort: off
# Registration order is the order of ``import --list``.
# isort: on
import airbench_nb.importing.corpora.airbench_hub  # noqa: F401 - AIR-Bench from the Hub and the official release
import airbench_nb.importing.corpora.choice_qa  # noqa: F401 - MMAU, MMAR and MMSU
import airbench_nb.importing.corpora.sseu  # noqa: F401 - SSEU-Bench from VCTK, DESED and MAESTRO-Real
import airbench_nb.importing.corpora.ugbench  # noqa: F401 - UG-Bench's corpora
