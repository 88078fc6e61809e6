"""Turn a CustomResourceDefinition YAML into the schema file tests/unit/test_k8s_manifests.py
validates deploy/k8s against (kubeconform cannot be installed here: it is no PyPI,
Debian or npm package).

The file keeps the CRD version's openAPIV3Schema without its "description" texts (a
tenth of the size, the same constraints) and says where it came from:

    git show v1.9.0:manifests/base/crds/kubeflow.org_pytorchjobs.yaml > /tmp/pytorchjobs.yaml
    python scripts/k8s_crd_schema.py /tmp/pytorchjobs.yaml v1 \
        --source "kubeflow/training-operator v1.9.0 (6f74c7f...) \
manifests/base/crds/kubeflow.org_pytorchjobs.yaml" \
        > deploy/k8s/schemas/kubeflow.org_v1_pytorchjob.json
"""
from __future__ import annotations

import argparse
import json
import sys

import yaml


def _strip(node):
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("crd", help="the CRD YAML file")
    ap.add_argument("version", help="the CRD version to keep, e.g. v1 or v2beta1")
    ap.add_argument("--source", required=True, help="repository, tag, commit and path")
    args = ap.parse_args(argv)
    with open(args.crd) as fh:
        crd = yaml.safe_load(fh)
    spec = crd["spec"]
    found = [v for v in spec["versions"] if v["name"] == args.version]
    if not found:
        known = ", ".join(v["name"] for v in spec["versions"])
        print(f"k8s_crd_schema: error: {args.crd} has no version {args.version!r}; it has {known}",
              file=sys.stderr)
        return 2
    out = {"source": args.source, "license": "Apache-2.0 (the Kubeflow project)",
           "group": spec["group"], "version": args.version, "kind": spec["names"]["kind"],
           "openAPIV3Schema": _strip(found[0]["schema"]["openAPIV3Schema"])}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
