"""The host input pipeline: JPEG files on disk, decoded and augmented by DataLoader workers.

The suites' default input is tensors already in memory (`--input memory`): the step never
waits for data and no core decodes anything. `--input jpeg` feeds an image workload the
way ImageNet training is fed by PyTorch's own examples: each sample is a JPEG file read
from disk, decoded on the host (PIL, as torchvision's ImageFolder does) and augmented
(RandomResizedCrop to the workload's image size, a random horizontal flip, normalisation)
inside the DataLoader's worker processes (`--loader-workers`), with `--pin-memory` as the
other knob. Both libraries get the same files, the same order and the same knobs.

The files come from a user's ImageFolder (the workload's data_dir, `run --data-dir`:
ROOT/CLASS/*.jpg) or from a synthetic set made here once: smooth random images (a
coarse random field upsampled, plus grain, each class its own tint) encoded at quality
90, SOURCE_SCALE times the training size on a side (the crop then has real work to do,
as 224-pixel crops of ~400-pixel photos do), kept in the project's cache folder
(hvd_vs_ddp/common/cache.py) under jpeg/<n>x<size>px-c<classes>-s<seed>/, so nothing is
downloaded and later runs reuse it. Several ranks may ask at once: each builds in its
own temporary folder and renames it into place; the first rename wins.

    python -m hvd_vs_ddp.workloads.jpeg_set    # makes (or finds) a small set, times decoding
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.utils.data import Dataset

from hvd_vs_ddp.common.cache import cache_root
from hvd_vs_ddp.common.errors import InputError

SOURCE_SCALE = 2       # a synthetic JPEG is this many times the training image size a side
QUALITY = 90
DONE = "complete"      # the marker a finished set holds (written last, before the rename)
EXTENSIONS = (".jpg", ".jpeg")
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # ImageNet's, as torchvision's


@dataclass(frozen=True)
class JpegSpec:
    """What a synthetic set holds; its folder name says it all."""

    images: int
    size: int            # the JPEG's side in pixels
    classes: int
    seed: int

    @property
    def folder(self) -> str:
        return f"{self.images}x{self.size}px-c{self.classes}-s{self.seed}"


def _image(g: torch.Generator, size: int, label: int, classes: int) -> torch.Tensor:
    """One smooth random RGB image (uint8, 3 x size x size), tinted by its class."""
    coarse = torch.rand(1, 3, 8, 8, generator=g) * 200 + 28
    field = torch.nn.functional.interpolate(coarse, size=(size, size), mode="bicubic",
                                            align_corners=False)[0]
    grain = torch.randn(3, size, size, generator=g) * 12
    tint = torch.tensor([label / classes, 1 - label / classes, 0.5]).view(3, 1, 1) * 40
    return (field + grain + tint).clamp(0, 255).to(torch.uint8)


def make_set(root: Path, spec: JpegSpec) -> None:
    """Write the synthetic set into `root` (ROOT/cNNN/NNNNNN.jpg, labels round-robin)."""
    from PIL import Image

    g = torch.Generator().manual_seed(spec.seed)
    for c in range(spec.classes):
        (root / f"c{c:03d}").mkdir(parents=True, exist_ok=True)
    for i in range(spec.images):
        label = i % spec.classes
        pixels = _image(g, spec.size, label, spec.classes).permute(1, 2, 0).numpy()
        Image.fromarray(pixels, "RGB").save(root / f"c{label:03d}" / f"{i:06d}.jpg",
                                            quality=QUALITY)
    (root / DONE).write_text(f"{spec}\n")


def synthetic_root(spec: JpegSpec) -> Path:
    """The set's folder, made once and cached; where keeping is off (HVD_VS_DDP_CACHE=off),
    a fresh folder under the system's temporary folder (made again by each process)."""
    base = cache_root()
    if base is None:
        base = Path(tempfile.mkdtemp(prefix="hvd-vs-ddp-jpeg-"))
    final = base / "jpeg" / spec.folder
    if (final / DONE).is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{spec.folder}.", dir=final.parent))
    try:
        make_set(work, spec)
        try:
            os.rename(work, final)
        except OSError:  # another rank finished first (or a stale half set is in the way)
            if not (final / DONE).is_file():
                shutil.rmtree(final, ignore_errors=True)
                os.rename(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def list_files(root: Path) -> tuple[list[tuple[str, int]], int]:
    """[(path, label)] of every JPEG under ROOT/CLASS/, classes in sorted order; and the
    number of classes. InputError when a class folder holds no JPEG."""
    classes = sorted(d for d in Path(root).iterdir() if d.is_dir())
    if not classes:
        raise InputError(f"--input jpeg: {root} has no class folders (ROOT/CLASS/*.jpg)")
    files: list[tuple[str, int]] = []
    for label, folder in enumerate(classes):
        found = sorted(str(p) for p in folder.rglob("*") if p.suffix.lower() in EXTENSIONS)
        if not found:
            raise InputError(f"--input jpeg: class folder {folder} holds no JPEG file "
                             f"({', '.join(EXTENSIONS)}); the host pipeline decodes JPEGs")
        files += [(p, label) for p in found]
    return files, len(classes)


class JpegFolder(Dataset):
    """Samples read from JPEG files, decoded and augmented when fetched (in the
    DataLoader's workers when there are any): RandomResizedCrop(size), a random flip,
    float and normalised; returns (3 x size x size float tensor, label)."""

    def __init__(self, root: Path, size: int) -> None:
        from torchvision.transforms import v2

        self.root, self.size = Path(root), size
        self.files, self.classes = list_files(self.root)
        self.transform = v2.Compose([
            v2.RandomResizedCrop(size, antialias=True), v2.RandomHorizontalFlip(),
            v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        from PIL import Image

        path, label = self.files[index]
        with Image.open(path) as f:
            image = f.convert("RGB")  # reads and decodes the file
        return self.transform(image), label


def image_shape(workload) -> tuple[int, int]:
    """(image size, classes) of a workload the host pipeline can feed: one that trains
    on labelled square images (its params name image_size and classes, and its data
    set's samples are C x H x W images with one class label). InputError otherwise."""
    params = workload.params
    size, classes = params.get("image_size"), params.get("classes")
    if isinstance(size, int) and isinstance(classes, int):
        x, y = workload.build_dataset(workload.seed)[0]
        label = isinstance(y, int) or (isinstance(y, torch.Tensor) and y.dim() == 0)
        if isinstance(x, torch.Tensor) and x.dim() == 3 and label:
            return size, classes
    raise InputError(f"--input jpeg: workload {workload.name!r} does not train on labelled "
                     "images (image_size and classes, one label per image); the host "
                     "pipeline feeds image classifiers such as resnet50")


def dataset_for(workload, source_size: int = 0) -> JpegFolder:
    """The JPEG data set a workload trains on with --input jpeg: its data_dir's JPEGs
    (an ImageFolder), or the synthetic set of its samples, classes and seed, each JPEG
    `source_size` pixels a side (0: SOURCE_SCALE times the image size)."""
    size, classes = image_shape(workload)
    data_dir = workload.params.get("data_dir")
    if data_dir:
        if (Path(data_dir) / "cifar-10-batches-py").is_dir():
            raise InputError(f"--input jpeg: {data_dir} holds CIFAR-10 as arrays, not JPEG "
                             "files; give an ImageFolder of JPEGs or no --data-dir")
        return JpegFolder(Path(data_dir), size)
    samples = int(workload.params.get("samples") or 256)
    spec = JpegSpec(samples, source_size or size * SOURCE_SCALE, classes, workload.seed)
    return JpegFolder(synthetic_root(spec), size)


def describe(ds: JpegFolder) -> dict:
    """What the record keeps of the set: its folder, files, classes, mean file size."""
    from PIL import Image

    sizes = [os.path.getsize(p) for p, _ in ds.files[:64]]
    with Image.open(ds.files[0][0]) as first:
        source = list(first.size)
    return {"root": str(ds.root), "images": len(ds.files), "classes": ds.classes,
            "image_size": ds.size, "source_px": source,
            "mean_file_kb": round(sum(sizes) / len(sizes) / 1024, 1)}


if __name__ == "__main__":
    import time

    spec = JpegSpec(64, 128, 10, 0)
    t0 = time.perf_counter()
    ds = JpegFolder(synthetic_root(spec), 64)
    print(f"set {ds.root} ready in {time.perf_counter() - t0:.2f} s: {describe(ds)}")
    t0 = time.perf_counter()
    for i in range(len(ds)):
        ds[i]
    print(f"decoded and augmented {len(ds)} images in one process: "
          f"{(time.perf_counter() - t0) / len(ds) * 1e3:.2f} ms each")
