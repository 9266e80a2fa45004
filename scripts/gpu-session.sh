#!/bin/sh
# On the lent GPU machine (the device tool runs commands in the repository
# root): unpacks the bundle that `scripts/ember.sh gpu-bundle` built here
# (carry build-gpu/gpu-bundle.tar.xz) and runs it; arguments go to its
# run.sh (all, tests, unit, e2e, bench; none: all). Logs come back packed
# in $OUT/gpu-logs.tar.gz.
#   run(command="scripts/gpu-session.sh unit", carry=["build-gpu/gpu-bundle.tar.xz"])
set -e
bundle=build-gpu/gpu-bundle.tar.xz
[ -f "$bundle" ] || { echo "no $bundle: run scripts/ember.sh gpu-bundle and carry it" >&2; exit 2; }
dir=$(mktemp -d)
tar -C "$dir" -xJf "$bundle"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
exec "$dir/gpu-bundle/run.sh" "$@"
