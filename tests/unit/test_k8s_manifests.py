"""deploy/ checked the way a cluster would check it, without a cluster.

- deploy/k8s: every PyTorchJob and MPIJob validates against the Kubeflow CRD's own
  openAPIV3Schema (deploy/k8s/schemas/, with source and version; made by
  scripts/k8s_crd_schema.py), strictly: an unknown field is an error, as with
  `kubectl apply --validate=strict` or kubeconform -strict. Resources without a CRD (the
  PersistentVolumeClaim) get a structural check. Names and labels follow Kubernetes'
  rules, and every claimName refers to a claim defined here.
- deploy/slurm/compare.sbatch and the shell scripts: shellcheck (installed by
  scripts/test.sh in CI; skipped with a reason elsewhere when it is missing).

    python -m pytest tests/unit/test_k8s_manifests.py
"""
from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
jsonschema = pytest.importorskip("jsonschema", reason="pip install jsonschema (in the [all] extra)")

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
SCHEMAS = {("kubeflow.org/v1", "PyTorchJob"): "kubeflow.org_v1_pytorchjob.json",
           ("kubeflow.org/v2beta1", "MPIJob"): "kubeflow.org_v2beta1_mpijob.json"}
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?$")
PVC_SPEC_KEYS = {"accessModes", "resources", "storageClassName", "volumeMode", "selector",
                 "volumeName", "dataSource", "dataSourceRef", "volumeAttributesClassName"}
ACCESS_MODES = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"}


def _documents() -> list[tuple[str, dict]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((f"{path.name}:{doc.get('kind')}/{doc['metadata']['name']}", doc))
    return docs


DOCS = _documents()


def _strict(schema: dict) -> dict:
    """Unknown fields become errors where the API server would reject them."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if (node.get("type") == "object" and "properties" in node
                    and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(schema)
    return schema


def _crd_errors(doc: dict) -> list[str]:
    stored = json.loads((K8S / "schemas" / SCHEMAS[(doc["apiVersion"], doc["kind"])]).read_text())
    validator = jsonschema.Draft7Validator(_strict(stored["openAPIV3Schema"]))
    return [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in validator.iter_errors(doc)]


def _pvc_errors(doc: dict) -> list[str]:
    errors = []
    if doc.get("apiVersion") != "v1":
        errors.append(f"apiVersion {doc.get('apiVersion')!r}, expected 'v1'")
    spec = doc.get("spec") or {}
    errors += [f"spec.{k}: unknown field" for k in set(spec) - PVC_SPEC_KEYS]
    modes = spec.get("accessModes") or []
    if not modes or set(modes) - ACCESS_MODES:
        errors.append(f"spec.accessModes {modes!r}: expected some of {sorted(ACCESS_MODES)}")
    storage = str(((spec.get("resources") or {}).get("requests") or {}).get("storage", ""))
    if not QUANTITY.match(storage):
        errors.append(f"spec.resources.requests.storage {storage!r} is not a quantity")
    return errors


def _metadata_errors(doc: dict) -> list[str]:
    meta, errors = doc.get("metadata") or {}, []
    name = meta.get("name", "")
    if not (DNS1123.match(name) and len(name) <= 253):
        errors.append(f"metadata.name {name!r} is not a DNS-1123 subdomain")
    for key, value in (meta.get("labels") or {}).items():
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            errors.append(f"metadata.labels.{key}: {value!r} is not a label value")
    return errors


@pytest.mark.parametrize("doc", [d for _, d in DOCS], ids=[i for i, _ in DOCS])
def test_manifest_is_what_its_api_accepts(doc):
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key in SCHEMAS:
        errors = _crd_errors(doc)
    elif doc.get("kind") == "PersistentVolumeClaim":
        errors = _pvc_errors(doc)
    else:
        pytest.fail(f"no check for {key}: add its CRD schema to deploy/k8s/schemas/ "
                    "(scripts/k8s_crd_schema.py) or a structural check here")
    errors += _metadata_errors(doc)
    assert not errors, "\n".join(errors)


def test_both_jobs_are_there_and_their_claims_exist():
    kinds = {d["kind"] for _, d in DOCS}
    assert {"PyTorchJob", "MPIJob", "PersistentVolumeClaim"} <= kinds, kinds
    claims = {d["metadata"]["name"] for _, d in DOCS if d["kind"] == "PersistentVolumeClaim"}
    text = "".join(p.read_text() for p in K8S.glob("*.yaml"))
    used = set(re.findall(r"claimName:\s*(\S+)", text))
    assert used and used <= claims, f"claims used {used}, defined {claims}"


@pytest.mark.parametrize("kind, path, breakage", [
    ("PyTorchJob", "spec.pytorchReplicaSpecs.Master.replicas", "one"),  # wrong type
    ("PyTorchJob", "spec.pytorchReplicaSpecs.Master.template.spec.containers.0.resources", "x"),
    ("PyTorchJob", "spec.runPolicy.cleanPodPolicyy", "Running"),        # misspelt field
    ("PyTorchJob", "spec.pytorchReplicaSpecs.Master.template.spec.containers.0.imagePullPolicy", 3),
    ("MPIJob", "spec.slotsPerWorker", "many"),
    ("MPIJob", "spec.mpiImplementation", "LAM"),                        # not in the enum
    ("MPIJob", "spec.mpiReplicaSpecs.Worker.template.spec.containerz", []),
])
def test_the_check_rejects_a_broken_job(kind, path, breakage):
    doc = copy.deepcopy(next(d for _, d in DOCS if d["kind"] == kind))
    *parents, last = path.split(".")
    node = doc
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[int(last) if last.isdigit() else last] = breakage
    assert _crd_errors(doc), f"setting {path} = {breakage!r} passed the schema"


SHELL_FILES = ["deploy/slurm/compare.sbatch", "scripts/setup.sh", "scripts/test.sh",
               "scripts/build_horovod.sh", "scripts/compare.sh", "scripts/install_mpis.sh",
               "scripts/build_image.sh", ".ci/run"]


@pytest.mark.parametrize("rel", SHELL_FILES)
def test_shellcheck(rel):
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck is not installed (apt-get install shellcheck; "
                    "scripts/test.sh installs it in CI)")
    if not (ROOT / rel).exists():
        pytest.skip(f"{rel} is not in this checkout")
    proc = subprocess.run(["shellcheck", "--shell=bash", str(ROOT / rel)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
