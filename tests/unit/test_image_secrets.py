"""The image's secret scanner (scripts/image_secrets.py) finds what it must, where it must.

scripts/build_image.sh exports every layer of the built image and runs the scanner over
them; these tests build small OCI layouts and layer tars by hand: a private key, a token,
a credentials file by its name, a key deleted by a later layer's whiteout (still in the
image), a match split across two read chunks, and the clean case.

    python -m pytest tests/unit/test_image_secrets.py -q
"""
from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("image_secrets",
                                               ROOT / "scripts" / "image_secrets.py")
image_secrets = importlib.util.module_from_spec(_spec)
sys.modules["image_secrets"] = image_secrets  # its dataclass looks itself up there
_spec.loader.exec_module(image_secrets)

# Assembled at run time, so that this file itself holds no secret's shape.
KEY = ("-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
       "-----END OPENSSH PRIVATE KEY-----\n").encode()
TOKEN = ("export GH_TOKEN=gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\n").encode()


def layer_tar(files: dict[str, bytes], gz: bool = False) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def oci_layout(tmp_path: Path, layers: list[bytes]) -> Path:
    """An OCI image layout with these layers, as `buildah push oci:DIR` writes one."""
    blobs = tmp_path / "oci" / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def blob(data: bytes) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return {"digest": f"sha256:{digest}", "size": len(data)}

    manifest = {"schemaVersion": 2, "config": blob(b"{}"),
                "layers": [blob(data) for data in layers]}
    index = {"schemaVersion": 2, "manifests": [blob(json.dumps(manifest).encode())]}
    (tmp_path / "oci" / "index.json").write_text(json.dumps(index))
    return tmp_path / "oci"


def run(capsys, *targets: Path) -> tuple[int, str]:
    rc = image_secrets.main([str(t) for t in targets])
    return rc, capsys.readouterr().out


def test_a_clean_image_passes_and_says_what_it_read(tmp_path, capsys):
    layout = oci_layout(tmp_path, [layer_tar({"etc/os-release": b"ID=debian\n"}),
                                   layer_tar({"opt/app/main.py": b"print('hi')\n" * 100})])
    rc, out = run(capsys, layout)
    assert rc == 0, out
    assert "no private key or token in 2 layers (2 files" in out


def test_a_private_key_in_any_layer_fails_naming_layer_and_path(tmp_path, capsys):
    layout = oci_layout(tmp_path, [layer_tar({"etc/os-release": b"ID=debian\n"}),
                                   layer_tar({"home/hvd/.ssh/deploy": KEY}, gz=True)])
    rc, out = run(capsys, layout)
    assert rc == 1
    assert "layer 2: /home/hvd/.ssh/deploy: private key" in out


def test_a_key_deleted_by_a_later_layer_is_still_found(tmp_path, capsys):
    # The whiteout hides the file from the final file system, not from layer 1's tar.
    layout = oci_layout(tmp_path, [layer_tar({"etc/ssh/host_key": KEY}),
                                   layer_tar({"etc/ssh/.wh.host_key": b""})])
    rc, out = run(capsys, layout)
    assert rc == 1 and "layer 1: /etc/ssh/host_key: private key" in out


def test_a_token_and_a_credentials_file_by_name(tmp_path, capsys):
    layer = tmp_path / "layer.tar"
    layer.write_bytes(layer_tar({"home/hvd/.bashrc": b"alias ll='ls -l'\n" + TOKEN,
                                 "etc/ssh/ssh_host_ed25519_key": b"",
                                 "root/.netrc": b"machine example.org\n"}))
    rc, out = run(capsys, layer)
    assert rc == 1
    assert "/home/hvd/.bashrc: GitHub token" in out
    assert "/etc/ssh/ssh_host_ed25519_key: a credentials file by its name" in out
    assert "/root/.netrc: a credentials file by its name" in out


def test_a_key_split_across_two_read_chunks_is_found(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(image_secrets, "CHUNK", 64)
    data = b"x" * 50 + KEY  # the armour starts at 50 and ends past 64
    layer = tmp_path / "layer.tar"
    layer.write_bytes(layer_tar({"opt/blob.bin": data}))
    rc, out = run(capsys, layer)
    assert rc == 1 and "private key" in out


def test_compiled_code_is_searched_for_keys_not_tokens():
    elf = b"\x7fELF" + b"\0" * 60
    assert image_secrets.secret_in(TOKEN) == "GitHub token"
    assert image_secrets._scan_stream(io.BytesIO(elf + TOKEN)) is None
    assert image_secrets._scan_stream(io.BytesIO(elf + KEY)) == "private key"


@pytest.mark.parametrize("text", [
    b"use the public key -----BEGIN PUBLIC KEY-----",   # not private
    b"\0-----BEGIN OPENSSH PRIVATE KEY-----\n\0-----END",  # ssh's own string: no body
    b"my_hf_" + b"a" * 34,                              # inside a word
    b"AKIA" + b"0" * 15,                                # too short
])
def test_look_alikes_pass(text):
    assert image_secrets.secret_in(text) is None


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert image_secrets.main([str(tmp_path / "nope")]) == 2
    assert image_secrets.main([str(tmp_path)]) == 2  # a folder without index.json
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("image_secrets: error: no such file or folder")
    assert "not an OCI image layout" in err[1]


def test_only_the_allowed_paths_may_hold_a_key(tmp_path, capsys):
    layer = tmp_path / "layer.tar"
    layer.write_bytes(layer_tar({"usr/lib/x86_64-linux-gnu/libgnutls.so.30.34.3": KEY,
                                 "usr/lib/x86_64-linux-gnu/libother.so.1": KEY}))
    rc, out = run(capsys, layer)
    assert rc == 1 and "libother.so.1: private key" in out and "libgnutls" not in out
