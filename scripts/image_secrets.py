"""image_secrets.py: find private keys and tokens in every layer of an OCI image.

A key added in one layer and deleted in a later one is still in the image (in the first
layer's tar), so every layer is read, not the final file system. scripts/build_image.sh
exports the image uncompressed (`buildah push --disable-compression IMAGE oci:DIR`) and runs

    python3 scripts/image_secrets.py DIR        # an OCI image layout (index.json, blobs/)
    python3 scripts/image_secrets.py LAYER.tar  # or layer tars, in order

Exit 0: nothing found (one line with the count of layers, files and bytes read); 1: one
line per finding (layer, path, what), 2: bad input. Standard library only (it runs on the
host, outside the image). What counts as a secret: PEM/OpenSSH/PuTTY private keys, and
the token formats of GitHub, GitLab, AWS, Slack, PyPI and Hugging Face (CONTENT below;
compiled code is searched for keys only, _scan_stream says why);
files named like credentials (ssh host keys, id_rsa, .netrc, .pypirc, .git-credentials)
whatever they hold (NAMES). Unit tests: tests/unit/test_image_secrets.py.
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

CHUNK = 8 << 20
OVERLAP = 256  # a match split across two chunks is still seen
# The bytes that mark a secret: what, the literal each starts with (found by bytes.find,
# fast), and the whole shape matched from there (a regular expression alone reads a
# binary at ~10 MiB/s; this reads it at several hundred).
CONTENT: tuple[tuple[str, tuple[bytes, ...], re.Pattern[bytes]], ...] = (
    # The armour and a body: programs that read keys (ssh, sshd, gnutls) hold the armour
    # alone as a string; a key has base64 after it (PEM's Proc-Type/DEK-Info may come first).
    ("private key", (b"-----BEGIN ",), re.compile(
        rb"-----BEGIN (?:RSA |DSA |EC |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----"
        rb"\r?\n(?:[A-Za-z-]+: [^\n]*\n)*\r?\n?[A-Za-z0-9+/=]{20,}")),
    ("PuTTY private key", (b"PuTTY-User-Key-File-",), re.compile(rb"PuTTY-User-Key-File-\d: ")),
    ("GitHub token", (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
     re.compile(rb"(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})(?![A-Za-z0-9_])")),
    ("GitLab token", (b"glpat-",), re.compile(rb"glpat-[A-Za-z0-9_-]{20}(?![A-Za-z0-9_-])")),
    ("AWS access key id", (b"AKIA", b"ASIA"), re.compile(rb"A[KS]IA[0-9A-Z]{16}(?![0-9A-Za-z])")),
    ("Slack token", (b"xoxa-", b"xoxb-", b"xoxp-", b"xoxr-", b"xoxs-"),
     re.compile(rb"xox[abprs]-[0-9]{10,13}-[0-9A-Za-z-]{10,}")),
    ("PyPI token", (b"pypi-AgEIcHlwaS5vcmc",),
     re.compile(rb"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}")),
    ("Hugging Face token", (b"hf_",), re.compile(rb"hf_[A-Za-z]{34}(?![A-Za-z0-9_])")),
)
# Keys that are in the image on purpose, by path (fnmatch) and why: public test vectors
# compiled into a distribution's own library. Each one was looked at.
ALLOWED = {
    "usr/lib/*/libgnutls.so.*": "GnuTLS's FIPS self-test keys (Debian's libgnutls30; "
                                "published in GnuTLS's source, lib/fips.c's tests)",
}
KEYS = 2  # CONTENT's first two are keys (anywhere in a file); the rest tokens
COMPILED = (b"\x7fELF", b"!<arch>\n")  # ELF objects and ar archives (.a)
# File names that hold credentials whatever is inside.
NAMES = re.compile(r"(?:^|/)(?:ssh_host_[a-z0-9]+_key|id_(?:rsa|dsa|ecdsa|ed25519)"
                   r"|\.netrc|\.pypirc|\.git-credentials|\.docker/config\.json)$")


@dataclass(frozen=True)
class Finding:
    layer: int
    path: str
    what: str

    def __str__(self) -> str:
        return f"image_secrets: layer {self.layer}: /{self.path}: {self.what}"


def secret_in(buf: bytes, tokens: bool = True) -> str | None:
    """What secret the bytes hold, or None; tokens=False: private keys only. A key's
    armour counts anywhere; a token must start a word (not follow a letter, digit or _)."""
    for i, (what, literals, pattern) in enumerate(CONTENT if tokens else CONTENT[:KEYS]):
        for literal in literals:
            at = buf.find(literal)
            while at != -1:
                before = buf[at - 1:at]
                starts_word = i < KEYS or not (before.isalnum() or before == b"_")
                if starts_word and pattern.match(buf, at):
                    return what
                at = buf.find(literal, at + 1)
    return None


def _scan_stream(f) -> str | None:
    """The first secret in a file object's bytes, read in overlapping chunks. Compiled
    code (ELF objects, static archives: torch's and CUDA's 90% of the image's bytes) is
    searched for private keys only: its token search would take minutes, and a token
    lands in a configuration file, a script or a history, not in a compiled library."""
    tail = b""
    tokens = None
    while chunk := f.read(CHUNK):
        if tokens is None:
            tokens = not chunk.startswith(COMPILED)
        buf = tail + chunk
        what = secret_in(buf, tokens)
        if what:
            return what
        tail = buf[-OVERLAP:]
    return None


def scan_layer(index: int, layer: tarfile.TarFile, stats: list[int]) -> Iterator[Finding]:
    """Every finding in one layer's tar (a whiteout deletes nothing from this layer)."""
    for member in layer:
        path = str(PurePosixPath(member.name.lstrip("./") or "."))
        if NAMES.search(path) and not member.isdir():
            yield Finding(index, path, "a credentials file by its name")
        if not member.isfile():
            continue
        stats[1] += 1
        stats[2] += member.size
        f = layer.extractfile(member)
        if f is None:
            continue
        with f:
            what = _scan_stream(f)
        if what and not any(fnmatch.fnmatchcase(path, glob) for glob in ALLOWED):
            yield Finding(index, path, what)


def _open_layer(path: Path) -> tarfile.TarFile:
    return tarfile.open(name=str(path), mode="r|*")  # plain or gzip, read as a stream


def layers_of(target: Path) -> list[Path]:
    """The layer tars of an OCI layout (manifest order), or the given tar itself."""
    if target.is_file():
        return [target]
    index_file = target / "index.json"
    if not index_file.is_file():
        raise ValueError(f"{target}: not an OCI image layout (no index.json) nor a layer tar")
    blob = lambda digest: target / "blobs" / Path(*digest.split(":", 1))  # noqa: E731
    index = json.loads(index_file.read_text())
    manifests = index.get("manifests") or []
    if len(manifests) != 1:
        raise ValueError(f"{target}: expected one image in index.json, found {len(manifests)}")
    manifest = json.loads(blob(manifests[0]["digest"]).read_text())
    return [blob(layer["digest"]) for layer in manifest["layers"]]


def scan(targets: list[Path]) -> tuple[list[Finding], list[int]]:
    """Findings over all layers of the targets, and [layers, files, bytes] read."""
    findings: list[Finding] = []
    stats = [0, 0, 0]
    paths = [p for t in targets for p in layers_of(t)]
    for i, path in enumerate(paths, 1):
        stats[0] += 1
        with _open_layer(path) as layer:
            findings.extend(scan_layer(i, layer, stats))
    return findings, stats


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    targets = [Path(a) for a in argv]
    for t in targets:
        if not t.exists():
            print(f"image_secrets: error: no such file or folder: {t}", file=sys.stderr)
            return 2
    try:
        findings, (layers, files, size) = scan(targets)
    except (ValueError, OSError, tarfile.TarError, KeyError, json.JSONDecodeError) as e:
        print(f"image_secrets: error: {e}", file=sys.stderr)
        return 2
    for f in findings:
        print(f)
    verdict = f"{len(findings)} secret(s) found" if findings else "no private key or token"
    print(f"image_secrets: {verdict} in {layers} layers ({files} files, "
          f"{size / 2**30:.2f} GiB read)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
