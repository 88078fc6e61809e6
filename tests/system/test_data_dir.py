"""Real images from a local --data-dir: an ImageFolder made here, read by resnet50.

The multi-process test trains ResNet-50 (BatchNorm in every block) on the folder
with ddp-gloo on 2 torchrun ranks and checks the convergence suite's equivalence
with the single-process reference that cuts each global batch into the ranks'
shards (a reference on the whole global batch would normalise over other samples).

    python -m pytest tests/system/test_data_dir.py
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.launch import LEAN_PLUGINS, explain, launched

CLASSES, PER_CLASS, SIDE = ("cat", "dog"), 8, 16


@pytest.fixture
def image_folder(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    root = tmp_path / "images"
    for label, name in enumerate(CLASSES):
        (root / name).mkdir(parents=True)
        for i in range(PER_CLASS):
            pixels = rng.integers(0, 128, (SIDE, SIDE, 3)) + 127 * label
            Image.fromarray(pixels.astype(np.uint8)).save(root / name / f"{i}.png")
    return root


def test_resnet50_reads_an_image_folder(image_folder):
    from hvd_vs_ddp.workloads import registry

    workload = registry.get("resnet50", data_dir=str(image_folder), image_size=32)
    data = workload.build_dataset(workload.seed)
    assert len(data) == len(CLASSES) * PER_CLASS
    x, y = data[0]
    assert tuple(x.shape) == (3, 32, 32) and 0.0 <= float(x.min()) <= float(x.max()) <= 1.0
    assert sorted({int(data[i][1]) for i in range(len(data))}) == [0, 1]
    assert workload.hyperparameters()["data_dir"] == str(image_folder)


@pytest.mark.multiproc
def test_ddp_on_real_images_matches_the_sharded_single_reference(image_folder, tmp_path):
    out = tmp_path / "conv.json"
    proc = launched("torchrun", 2, [
        "-m", "pytest", *LEAN_PLUGINS, "suites/test_convergence.py",
        "-k", "test_convergence and resnet50",
        "-q", "-p", "no:cacheprovider", "--backends", "ddp-gloo",
        "--data-dir", str(image_folder), "--workload-param", "resnet50:image_size=32",
        "--workload-param", "resnet50:batch_size=2", "--convergence-steps", "4",
        "--benchmark-json", str(out)], timeout=600)
    assert proc.returncode == 0, explain(proc)
    (bench,) = [b for b in json.loads(out.read_text())["benchmarks"]
                if b["extra_info"]["kind"] == "convergence"]
    info = bench["extra_info"]
    assert info["workload"] == "resnet50" and info["world_size"] == 2
    assert info["workload_params"]["data_dir"] == str(image_folder.resolve())
    assert len(info["losses"]) == 4 and info["max_rel_dev"] <= info["tolerance"]
