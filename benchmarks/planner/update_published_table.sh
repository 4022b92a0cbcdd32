#!/usr/bin/env bash
# Regenerates the published-runs table of docs/planner_validation.md (between its
# <!-- published-runs:begin --> and <!-- published-runs:end --> markers) from planner_validation:
#   bash benchmarks/planner/update_published_table.sh BUILD_DIR
# (builds the target first). tests/planner/test_published_runs.cpp fails when the page's rows
# differ from what the cost model predicts now.
set -euo pipefail
build=${1:?usage: update_published_table.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
cmake --build "$build" --target planner_validation >/dev/null
table=$("$build/benchmarks/planner_validation" published)
python3 - "$root/docs/planner_validation.md" <<PY
import sys
path = sys.argv[1]
text = open(path).read()
b, e = "<!-- published-runs:begin -->", "<!-- published-runs:end -->"
i, j = text.index(b) + len(b), text.index(e)
open(path, "w").write(text[:i] + "\n" + """$table""" + "\n" + text[j:])
PY
echo "docs/planner_validation.md: published-runs table regenerated"
