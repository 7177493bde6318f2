"""`make demo`: the main job on the embedded default, then the report.

Runs the Hydra multirun `experiment=demo` (long context vs RAG with BM25 and MiniLM on the
synthetic benchmark, see conf/experiment/demo.yaml), writes the report and prints where it is.
Rerunning resumes: finished samples are not redone and cached generations are reused.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from experiments.report.page.build import build_report, print_locations, say_building

DEMO_DIR = Path("outputs/demo")


def main() -> int:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "experiments.run", "-m", "experiment=demo", f"hydra.sweep.dir={DEMO_DIR}",
           *sys.argv[1:]]
    print("running:", " ".join(cmd[1:]), flush=True)
    done = subprocess.run(cmd, env=env)
    if done.returncode != 0:
        print(f"demo sweep failed (exit {done.returncode}); rerun `make demo` to resume", file=sys.stderr)
        return done.returncode
    say_building([str(DEMO_DIR)])
    files = build_report([str(DEMO_DIR)])
    print(f"\ndemo finished in {time.perf_counter() - t0:.0f} s")
    print_locations(files, resolve=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
