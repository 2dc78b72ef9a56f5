#!/usr/bin/env bash
# The main job on the built-in examples: compile each Maxout net into a hardmax Transformer and
# evaluate both exactly on the same points (the outputs must agree digit for digit), certify
# claims C1-C4 for each pair, re-verify every certificate with the independent checker, and
# run the proof script of every claim C1-C8.
set -euo pipefail
cd "$(dirname "$0")"
out=${OUT:-../out}
mkdir -p "$out"
for pair in abs:points_1d relu_net:points_2d maxout_2d:points_maxout; do
  net=${pair%%:*}; pts=${pair##*:}.json
  echo "== $net"
  exactform compile "$net.json" -o "$out/$net.tf.json"
  exactform eval "$net.json" --points "$pts" --json > "$out/$net.net.out.json"
  exactform eval "$out/$net.tf.json" --points "$pts" --json > "$out/$net.tf.out.json"
  if cmp -s "$out/$net.net.out.json" "$out/$net.tf.out.json"; then
    echo "exact outputs agree: $(cat "$out/$net.tf.out.json")"
  else
    echo "MISMATCH between $net and its Transformer" >&2; exit 1
  fi
  exactform certify "$net.json" "$out/$net.tf.json" -o "$out/$net.cert.json"
done
echo "== independent check of the certificates"
exactform check "$out"
echo "== the claims C1-C8 (proofs/C*.py), certificates under $out/proofs"
exactform prove --out "$out/proofs"
