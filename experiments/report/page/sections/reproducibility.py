"""Section "Reproducibility": the runs' data fingerprints, config hashes, package versions and shared config, and
how to rerun each config (rows: experiments.report.reproducibility)."""

from __future__ import annotations


from experiments.report.page.cells import fmt
from experiments.report.page.contents import Outline
from experiments.report.page.document import Code, Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.reproducibility import Reproducibility, RunRow, reproducibility

ANCHOR, TITLE = "reproducibility", "Reproducibility"

RUNS_HEAD = ["config", "benchmark", "config hash", "models", "data fingerprint", "dataset revision", "overrides",
             "records", "wall s", "run dir"]
EXPLAINED = ("Data fingerprint: sha256 of the run's benchmark config and the sorted ids of the samples it recorded "
             "(same fingerprint, same questions). Config hash: the runner's hash of everything that changes the "
             "records. Rerun a config with `python -m experiments.run` and the overrides shown.")


def rows(f: Facts) -> Reproducibility:
    return reproducibility(f.runs, f.out, f.loaded.duplicates)


def render(doc: Document, s: Summary, outline: Outline) -> None:
    rep: Reproducibility = s.sections[ANCHOR]
    doc.add(Paragraph(EXPLAINED), Heading(3, "Package versions"), Paragraph(
        "Recorded by the runs." if rep.versions_recorded else
        "Of the environment that wrote this report (the runs did not record theirs)."))
    doc.add(Table(["package", "version"], [[k, v] for k, v in rep.versions.items()]))
    doc.add(Heading(3, "Runs"), Table(RUNS_HEAD, [_run_cells(r) for r in rep.runs]))
    if rep.merged:
        doc.add(Paragraph(f"{len(rep.merged)} duplicate run(s) of an identical config point were merged (the one "
                          "with the most records is shown): " + ", ".join(f"`{p}`" for p in rep.merged) + "."))
    _shared_config(doc, rep)


def _run_cells(r: RunRow) -> list[str]:
    return [r.label, r.benchmark, r.config_hash, r.models, r.data_fingerprint, r.dataset_revision,
            f"`{r.overrides}`" if r.overrides != "-" else "-", str(r.n_records), fmt(r.wall_s), f"`{r.run_dir}`"]


def _shared_config(doc: Document, rep: Reproducibility) -> None:
    """The config all runs share, and the keys that differ between them."""
    if not rep.common:
        doc.add(Paragraph("The run directories have no .hydra/config.yaml."))
        return
    doc.add(Heading(3, "Config shared by all runs"), Code(rep.common, "yaml"))
    if rep.varying:
        doc.add(Paragraph("Keys that differ between runs (or that some runs lack): "
                          + ", ".join(f"`{k}`" for k in rep.varying) + "."))
