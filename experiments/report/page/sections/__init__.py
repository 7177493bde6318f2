"""The report's sections in page order: the one list that orders the page and numbers its sections.

Each section is one module that owns both halves of it:
- `ANCHOR`: its name (the HTML id of a numbered section); `TITLE`: the title of its numbered heading, or None for
  a part without a number (the first screen, or a subsection of the numbered section before it);
- `rows(facts)`: the rows it shows, computed from what the sections share (`page.report_summary.Facts`): a list, or
  a frozen dataclass the module defines, or None where it has none of its own; `summarize` keeps them in the
  Summary's `sections` under its ANCHOR;
- `render(doc, summary, outline)`: the section drawn from the Summary alone (its own rows:
  `summary.sections[ANCHOR]`), below its numbered heading, which `present` adds (`outline` numbers the sections:
  "section 4").

A section computes and renders its rows in its one module (the Summary names no section's types); what several
sections share (the verdict rows and their plans, the agreements) is computed once, in build.facts.

A new section: a module here and its place in SECTIONS."""

from __future__ import annotations

from experiments.report.page.contents import Outline
from experiments.report.page.sections import (
                                              budget,
                                              configs,
                                              diagnostics,
                                              first_screen,
                                              lost_answers,
                                              other_arms,
                                              overlap,
                                              pairwise,
                                              plots,
                                              reproducibility,
                                              routing,
                                              upper_bound,
                                              verdict,
                                              whatif,
)

SECTIONS = (first_screen, verdict, other_arms, upper_bound, budget, configs, routing, pairwise, whatif, plots,
            diagnostics, lost_answers, overlap, reproducibility)
OUTLINE = Outline.of(SECTIONS)
