"""Hub snapshots as `benchmark.path`: what `huggingface-cli download --repo-type dataset ID --local-dir DIR`
leaves on a login node, loaded on a compute node without a network.

A `--local-dir` snapshot holds the repository's files at their repository paths, plus
`.cache/huggingface/` (download metadata and locks) and, for LV-Eval and LooGLE, the repository's
loading script and dataset card. Each fixture below writes that exact layout (records from the
loader tests' builders), with a loading script that would leave a marker file if anything ran
it, and loads it through `load_benchmark` with `path=DIR`, offline:

- LV-Eval (`Infinigence/LVEval`): `{dataset}.zip` files at the root, each holding
  `{dataset}/{dataset}_{level}.jsonl`, next to `LVEval.py`, `README.md`, `LICENSE_*`;
- LooGLE (`bigai-nlco/LooGLE`): `data.zip` holding `{task}.json` (JSON Lines, as `LooGLE.py` reads
  them), next to `LooGLE.py`, `README.md`, `assets/`, and parquet conversions (`shortdep_qa/`,
  `loogle/`) that are not read;
- CLongEval (`zexuanqiu22/CLongEval`): `{n-m_task}/{small,medium,large}.jsonl` task folders.
"""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path

import pytest

import eval.benchmarks.clongeval as ce
import eval.benchmarks.lveval as lv
from eval.benchmarks import load_benchmark
from tests.test_loader_clongeval import task_records
from tests.test_loader_loogle import _original_rows
from tests.test_loader_lveval import dataset_records


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _snapshot_extras(root: Path, script: str | None, files: list[str]) -> Path:
    """The `.cache/huggingface/` folder `--local-dir` writes (a metadata file per downloaded file), the
    dataset card and the repository's loading script, which leaves a marker when run or imported."""
    meta = root / ".cache" / "huggingface" / "download"
    for name in files + ([script] if script else []) + ["README.md", ".gitattributes"]:
        (meta / f"{name}.metadata").parent.mkdir(parents=True, exist_ok=True)
        (meta / f"{name}.metadata").write_text("0123abcd\nfeedbeef\n1732400000.0\n")
        (meta / f"{name}.lock").write_text("")
    (root / ".cache" / "huggingface" / ".gitignore").write_text("*")
    (root / "README.md").write_text("---\nlicense: mit\n---\n# dataset card\n")
    (root / ".gitattributes").write_text("*.zip filter=lfs diff=lfs merge=lfs -text\n")
    if script:
        marker = root / "SCRIPT_WAS_RUN"
        (root / script).write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                                   "raise SystemExit('never run a dataset script')\n")
    return root


def _script_never_ran(root: Path) -> None:
    assert not (root / "SCRIPT_WAS_RUN").exists(), "the repository's loading script was run"


# ---------------------------------------------------------------- LV-Eval: Infinigence/LVEval


@pytest.fixture(scope="module")
def lveval_snapshot(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("snap") / "LVEval"
    root.mkdir()
    for ds in lv.DATASETS:
        with zipfile.ZipFile(root / f"{ds}.zip", "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(f"{ds}/", "")  # the folder entry, as zip tools write it
            for level in ("16k", "32k"):
                zf.writestr(f"{ds}/{ds}_{level}.jsonl", _jsonl(dataset_records(ds, level)))
    for name in ("LICENSE_CC", "LICENSE_MIT"):
        (root / name).write_text("license text\n")
    return _snapshot_extras(root, "LVEval.py", [f"{ds}.zip" for ds in lv.DATASETS])


def test_lveval_hub_snapshot_loads_as_path(lveval_snapshot):
    res = load_benchmark({"name": "lveval", "path": str(lveval_snapshot)})
    assert (Counter((s.task, s.length_level) for s in res.samples)
            == {(ds, lvl): 2 for ds in lv.DATASETS for lvl in ("16k", "32k")})
    first = res.samples[0]
    assert first.metadata["source"].endswith(f"{lv.DATASETS[0]}.zip!{lv.DATASETS[0]}/{lv.DATASETS[0]}_16k.jsonl")
    # what the loader tests check on unpacked files holds for the zips too: needle evidence, confusing facts
    fr = next(s for s in res.samples if s.task == "factrecall_en")
    assert fr.evidence and fr.distractors and fr.metadata["evidence_source"] != "none"
    _script_never_ran(lveval_snapshot)


def test_lveval_partial_snapshot_selects_and_names_what_is_missing(lveval_snapshot, tmp_path):
    # `--include "cmrc_mixup.zip"`: one dataset downloaded
    (tmp_path / "cmrc_mixup.zip").write_bytes((lveval_snapshot / "cmrc_mixup.zip").read_bytes())
    _snapshot_extras(tmp_path, "LVEval.py", ["cmrc_mixup.zip"])
    res = load_benchmark({"name": "lveval", "path": str(tmp_path), "levels": ["32k"], "limit": 1})
    assert [(s.task, s.length_level) for s in res.samples] == [("cmrc_mixup", "32k")]
    with pytest.raises(FileNotFoundError, match=r"factrecall_en\.zip"):
        load_benchmark({"name": "lveval", "path": str(tmp_path), "tasks": ["factrecall_en"]})
    _script_never_ran(tmp_path)


# ---------------------------------------------------------------- LooGLE: bigai-nlco/LooGLE


def _loogle_snapshot(root: Path, member_folder: str = "") -> Path:
    root.mkdir(parents=True)
    with zipfile.ZipFile(root / "data.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for task, rows in _original_rows().items():
            zf.writestr(f"{member_folder}{task}.json", _jsonl(rows))  # JSON Lines under .json, as LooGLE.py reads them
        zf.writestr(f"__MACOSX/{member_folder}._shortdep_qa.json", b"\x00\x05\x16\x07 not json")
    # parquet conversions in the repository: not read (a broken file here would fail the load if it were)
    for name in ("shortdep_qa/test-00000-of-00001.parquet", "loogle/0000.parquet"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"PAR1 not a real parquet file")
    (root / "assets").mkdir()
    (root / "assets" / "table.png").write_bytes(b"\x89PNG\r\n")
    return _snapshot_extras(root, "LooGLE.py", ["data.zip", "shortdep_qa/test-00000-of-00001.parquet",
                                                "loogle/0000.parquet", "assets/table.png"])


@pytest.mark.parametrize("member_folder", ["", "data/"])
def test_loogle_hub_snapshot_loads_as_path(tmp_path, member_folder):
    root = _loogle_snapshot(tmp_path / "LooGLE", member_folder)
    res = load_benchmark({"name": "loogle", "path": str(root)})
    assert Counter(s.task for s in res.samples) == {"shortdep_qa": 3, "longdep_qa": 1, "shortdep_cloze": 1,
                                                    "longdep_summarization": 1}
    # the same samples as the unpacked files the loader tests use
    plain = tmp_path / "plain"
    plain.mkdir()
    for task, rows in _original_rows().items():
        (plain / f"{task}.jsonl").write_text(_jsonl(rows), encoding="utf-8")
    ref = load_benchmark({"name": "loogle", "path": str(plain)})
    assert [(s.id, s.question, s.answers, s.evidence) for s in res.samples] == \
        [(s.id, s.question, s.answers, s.evidence) for s in ref.samples]
    sel = load_benchmark({"name": "loogle", "path": str(root), "tasks": ["longdep_qa"]})
    assert [s.task for s in sel.samples] == ["longdep_qa"]
    # the archive itself as the path
    assert len(load_benchmark({"name": "loogle", "path": str(root / "data.zip")}).samples) == len(res.samples)
    _script_never_ran(root)


def test_loogle_snapshot_errors_name_the_archive_member(tmp_path):
    root = tmp_path / "LooGLE"
    root.mkdir()
    with zipfile.ZipFile(root / "data.zip", "w") as zf:
        zf.writestr("shortdep_qa.json", _jsonl(_original_rows()["shortdep_qa"]) + "{oops\n")
    with pytest.raises(ValueError, match=r"data\.zip!shortdep_qa\.json:2: malformed JSON"):
        load_benchmark({"name": "loogle", "path": str(root)})
    (root / "data.zip").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"data\.zip: not a readable zip archive"):
        load_benchmark({"name": "loogle", "path": str(root)})
    empty = tmp_path / "empty"  # a snapshot whose data.zip was left out (`--exclude "*.zip"`)
    empty.mkdir()
    _snapshot_extras(empty, "LooGLE.py", [])
    with pytest.raises(ValueError, match=r"holds none of the task files.*data\.zip"):
        load_benchmark({"name": "loogle", "path": str(empty)})
    _script_never_ran(empty)


# ---------------------------------------------------------------- CLongEval: zexuanqiu22/CLongEval


def test_clongeval_hub_snapshot_loads_as_path(tmp_path):
    root = tmp_path / "CLongEval"
    files = []
    for task in ce.TASKS:
        for size in ce.SIZES:
            name = f"{ce.TASK_FOLDERS[task]}/{size}.jsonl"
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(_jsonl(task_records(task, size)), encoding="utf-8")
            files.append(name)
    _snapshot_extras(root, None, files)
    res = load_benchmark({"name": "clongeval", "path": str(root)})
    expected = Counter({(t, s): len(task_records(t, s)) for t in ce.TASKS for s in ce.SIZES})
    assert Counter((s.task, s.length_level) for s in res.samples) == expected
    kpr = next(s for s in res.samples if s.task == "key_passage_retrieval")
    assert kpr.evidence and kpr.evidence[0].quality == 1.0
    sel = load_benchmark({"name": "clongeval", "path": str(root), "tasks": ["table_querying"], "levels": ["large"]})
    assert {(s.task, s.length_level) for s in sel.samples} == {("table_querying", "large")}
