#!/usr/bin/env bash
# Refresh the JavaScript that `amem graph --format html` inlines: d3-force and the three d3 modules it
# stands on, at the pinned versions below, from the npm registry. Each tarball is checked against the
# sha512 integrity the registry publishes for it before anything is taken from it; then its minified UMD
# build and its licence go to vendor/. To move to a new release, change a version here, run this, run the
# graph tests (tests/test_graph_html.py), and commit vendor/ with the new versions.
set -euo pipefail
cd "$(dirname "$0")"

# Order matters: the page loads them in this order (d3-force needs the other three as globals).
PACKAGES=(d3-dispatch@3.0.2 d3-quadtree@3.0.2 d3-timer@3.0.2 d3-force@3.0.1)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p vendor
: >"$work/VERSIONS"
for spec in "${PACKAGES[@]}"; do
    name=${spec%@*}
    integrity=$(npm view "$spec" dist.integrity)
    [[ $integrity == sha512-* ]] || { echo "no sha512 integrity for $spec: $integrity" >&2; exit 1; }
    tarball=$(cd "$work" && npm pack --silent "$spec")
    actual="sha512-$(openssl dgst -sha512 -binary "$work/$tarball" | base64 -w0)"
    if [[ $actual != "$integrity" ]]; then
        echo "integrity mismatch for $spec: registry $integrity, tarball $actual" >&2
        exit 1
    fi
    mkdir -p "$work/$name"
    tar -xzf "$work/$tarball" -C "$work/$name"
    cp "$work/$name/package/dist/$name.min.js" "vendor/$name.min.js"
    cp "$work/$name/package/LICENSE" "vendor/LICENSE.$name"
    echo "$spec $integrity" >>"$work/VERSIONS"
done
mv "$work/VERSIONS" vendor/VERSIONS
echo "vendor/ refreshed:" && cat vendor/VERSIONS
