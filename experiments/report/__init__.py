"""The report: many run directories -> verdict, what-if, plots, diagnostics (`python -m experiments.report`).

The reader side of the project. It reads what the runner wrote (records.jsonl, metrics.json and
Hydra's saved config in each run directory) and never runs a model.

- `runs`: finding run directories and reading them into `Run`s (one per config point)
- `settings`: the report's defaults (conf/report.yaml) and command-line overrides
- `pricing`: what an answer and an index cost under those settings
- `verdict`: per benchmark and level, long context against RAG, with intervals and a decision
- `whatif`: deployment cost and latency at a given number of questions per document
- `oracle`: the per-sample better of two configs (an upper bound for a router)
- `diagnostics`: why an arm lost: evidence missed, evidence present but wrong, agreement
- `plots`, `document`: figures, and the markdown/HTML document model
- `reproducibility`: configs, model ids, data fingerprints and package versions per run
- `build`: puts it all together (`build_report`, the CLI)
- `simulated_sweeps`: sweeps with a known truth written as run directories (tests and demos)
"""
