"""Hydra launcher presets (conf/hydra/launcher/): composed as a sweep would compose them, validated,
and for SLURM turned into the sbatch script submitit would submit (no cluster needed)."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.conftest import CONF


def _compose(overrides):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="config", overrides=overrides, return_hydra_config=True)


def test_local_parallel_preset_is_the_joblib_launcher():
    launcher = _compose(["hydra/launcher=local_parallel"]).hydra.launcher
    assert launcher._target_ == "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"
    assert launcher.n_jobs == 2 and launcher.prefer == "processes" and launcher.backend == "loky"
    assert _compose(["hydra/launcher=local_parallel", "hydra.launcher.n_jobs=8"]).hydra.launcher.n_jobs == 8


@pytest.mark.parametrize("preset, gpus, partition", [("slurm_gpu", 1, "gpu"), ("slurm_cpu", 0, "cpu")])
def test_slurm_presets_request_their_resources(preset, gpus, partition):
    launcher = _compose([f"hydra/launcher={preset}"]).hydra.launcher
    assert launcher._target_ == "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    assert launcher.gpus_per_node == gpus and launcher.partition == partition
    assert launcher.timeout_min == 240 and launcher.nodes == 1 and launcher.tasks_per_node == 1
    assert launcher.cpus_per_task >= 1 and launcher.mem_gb >= 1 and launcher.array_parallelism >= 1
    assert launcher.submitit_folder.endswith(".submitit/%j")


def test_slurm_preset_overrides_are_type_checked():
    launcher = _compose(["hydra/launcher=slurm_gpu", "hydra.launcher.gpus_per_node=4",
                         "hydra.launcher.partition=a100", "generator=vllm", "generator.tensor_parallel_size=4"])
    assert launcher.hydra.launcher.gpus_per_node == 4 and launcher.generator.tensor_parallel_size == 4
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException):
        _compose(["hydra/launcher=slurm_gpu", "hydra.launcher.gpus_per_node=lots"])


def test_slurm_gpu_preset_becomes_an_sbatch_script_with_a_gpu_request(tmp_path, monkeypatch):
    """Pass the preset to submitit as the launcher does and read the sbatch script it would submit
    (nothing is submitted; submitit's "are we on a cluster" probe is told yes)."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
    from submitit.slurm.slurm import SlurmExecutor, _make_sbatch_string

    monkeypatch.setattr(SlurmExecutor, "affinity", classmethod(lambda cls: 1))

    cfg = _compose(["hydra/launcher=slurm_gpu", "hydra.launcher.account=proj42",
                    f"hydra.sweep.dir={tmp_path}"])
    params = OmegaConf.to_container(cfg.hydra.launcher, resolve=False)
    params.pop("_target_")
    params.pop("submitit_folder")
    params.pop("max_num_timeout")
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    executor = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="slurm")
    executor.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in params.items()
                                  if k != "name"}, name="raglc")
    script = _make_sbatch_string(command="python -m experiments.run", folder=tmp_path / "submitit",
                                 **executor._executor.parameters)
    assert "#SBATCH --gpus-per-node=1" in script
    assert "#SBATCH --partition=gpu" in script and "#SBATCH --account=proj42" in script
    assert "#SBATCH --time=240" in script and "#SBATCH --cpus-per-task=8" in script
    assert "#SBATCH --mem=64GB" in script


def test_presets_are_files_users_can_find():
    names = sorted(p.stem for p in (CONF / "hydra" / "launcher").glob("*.yaml"))
    assert names == ["local_parallel", "slurm_cpu", "slurm_gpu", "slurm_local"]
    assert Path(CONF / "hydra" / "launcher" / "slurm_gpu.yaml").read_text().count("submitit_slurm") == 1
