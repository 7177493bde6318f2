"""What the report and the run print as text: stop strings escaped in the report's shared config (not raw line
breaks), and one time estimate per line while a run answers (the progress bar has no remaining-time guess of its
own beside the run's estimate)."""

from __future__ import annotations

import yaml

from experiments.report.page.sections.reproducibility import escaped_yaml
from experiments.run import PROGRESS_BAR


def test_stop_strings_are_shown_escaped_and_read_back_the_same():
    config = {"generator": {"stop": ["\n", ". ", "\t", "\n\n"], "model": "bundled:smollm2"}}
    text = escaped_yaml(config)
    assert '- "\\n"' in text and '- "\\t"' in text and '- "\\n\\n"' in text and "- '. '" in text
    assert all(line.strip() for line in text.splitlines())  # no blank line from a raw "\n"
    assert yaml.safe_load(text) == config


def test_the_progress_bar_keeps_no_time_estimate_of_its_own():
    from tqdm import tqdm

    assert "remaining" not in PROGRESS_BAR and "rate" not in PROGRESS_BAR
    bar = tqdm(total=24, desc="longctx", bar_format=PROGRESS_BAR, disable=False, file=open("/dev/null", "w"))
    bar.update(7)
    shown = str(bar)
    bar.close()
    assert "7/24" in shown and "elapsed" in shown and "<" not in shown
