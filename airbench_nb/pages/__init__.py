"""The sections of a run's landing page, one registration module per benchmark, and the style the pages share.

:mod:`~airbench_nb.pages.base` holds :class:`PageInputs`, :class:`PageSection` and the registry
(:data:`PAGE_SECTIONS`); importing this package registers the kit's sections: :mod:`~airbench_nb.pages.airbench`
(``Main table``), :mod:`~airbench_nb.pages.controls` (``Controls``), :mod:`~airbench_nb.pages.perturbations`
(``Perturbations``), :mod:`~airbench_nb.pages.stability` (``Stability``: decoding stability over sampled answers,
of every choice item), :mod:`~airbench_nb.pages.calibration` (``Calibration``), :mod:`~airbench_nb.pages.judge_panel`
(``Judge panel``) and :mod:`~airbench_nb.pages.judge_mapping` (``Mapped Chat scores``), AIR-Bench's;
:mod:`~airbench_nb.pages.sseu`
(``SSEU-Bench``), :mod:`~airbench_nb.pages.ugbench` (``UG-Bench``), :mod:`~airbench_nb.pages.tiered` (``Tiered sound
sources``) and :mod:`~airbench_nb.pages.choice_qa` (``MMAU``, ``MMAR``, ``MMSU``); :mod:`~airbench_nb.pages.clusters`
(``Clustered intervals``) is the kit's own, after every benchmark's (:data:`KIT_PAGE_SECTIONS`).
:mod:`~airbench_nb.pages.style` holds the CSS both landing pages share, :mod:`~airbench_nb.pages.cells` the
formatting of their table cells. A new benchmark's section is one more module that calls
:func:`register_page_section`, imported here, and named in its benchmark's ``page_sections``;
:func:`airbench_nb.report_page.write_report_page` places it in the benchmarks' order.
"""

# isort: off
# The registration modules, imported in the benchmarks' order (the page places sections by BENCHMARKS, not by this).
from airbench_nb.pages.airbench import MAIN_TABLE
from airbench_nb.pages.controls import CONTROLS_SECTION
from airbench_nb.pages.perturbations import PERTURBATIONS_SECTION
from airbench_nb.pages.stability import STABILITY_SECTION
from airbench_nb.pages.calibration import CALIBRATION_SECTION
from airbench_nb.pages.judge_panel import JUDGE_PANEL_SECTION
from airbench_nb.pages.judge_mapping import JUDGE_MAPPING_SECTION
from airbench_nb.pages.sseu import SSEU_SECTION
from airbench_nb.pages.ugbench import UGBENCH_SECTION
from airbench_nb.pages.tiered import TIERED_SECTION
from airbench_nb.pages.choice_qa import MMAR_SECTION, MMAU_SECTION, MMSU_SECTION
from airbench_nb.pages.clusters import CLUSTERS_SECTION

# isort: on
from airbench_nb.pages.base import (
    KIT_PAGE_SECTIONS,
    PAGE_SECTIONS,
    PageInputs,
    PageSection,
    page_section_for,
    register_page_section,
    render_template,
)
from airbench_nb.pages.style import PAGE_CSS

__all__ = [
    "CALIBRATION_SECTION",
    "CLUSTERS_SECTION",
    "CONTROLS_SECTION",
    "KIT_PAGE_SECTIONS",
    "JUDGE_MAPPING_SECTION",
    "JUDGE_PANEL_SECTION",
    "MAIN_TABLE",
    "MMAR_SECTION",
    "MMAU_SECTION",
    "MMSU_SECTION",
    "PAGE_CSS",
    "PAGE_SECTIONS",
    "PERTURBATIONS_SECTION",
    "SSEU_SECTION",
    "STABILITY_SECTION",
    "TIERED_SECTION",
    "UGBENCH_SECTION",
    "PageInputs",
    "PageSection",
    "page_section_for",
    "register_page_section",
    "render_template",
]
