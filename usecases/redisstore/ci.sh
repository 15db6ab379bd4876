#!/usr/bin/env bash
# CI for the redisstore module, called by the repository's .ci/run once
# redis-server is installed (this script installs nothing). The tests start
# their own servers on 127.0.0.1 random ports: a single node, a three-master
# Cluster and a Sentinel deployment (master, replica, sentinel), and kill
# them when they end. With CI=true a missing redis-server fails the tests
# instead of skipping them. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

if ! command -v redis-server >/dev/null 2>&1; then
  echo "redisstore ci: redis-server is not on PATH (install it first: apt-get install -y redis-server)" >&2
  exit 1
fi
redis-server --version

go vet ./...
# Bounded: the suites take about 1.5 minutes on a 2-core machine.
CI=true go test -count=1 -timeout 8m ./...
