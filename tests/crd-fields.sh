#!/bin/sh
# The field table of Karpenter's CRDs (issue 16): every field of every
# CRD version in data/crds/ has a row in doc/crd-support.tsv, every row a
# field, every field decode/decode-nodeclass.c refuses (its
# unsupported_*_fields lists) is classified refused, and doc/crd-fields.md
# is what tools/crd-fields.py renders from them. Each failure names the path.
set -eu
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
PYTHON=${PYTHON:-/usr/bin/python3}
if ! "$PYTHON" -c 'import yaml' 2>/dev/null; then
	echo "SKIP: $PYTHON has no PyYAML"
	exit 77
fi
"$PYTHON" "$SRCDIR/tools/crd-fields.py" --srcdir "$SRCDIR" check
echo "ok - doc/crd-support.tsv classifies every CRD field and doc/crd-fields.md is current"
