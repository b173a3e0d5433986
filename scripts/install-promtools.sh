#!/usr/bin/env bash
# Installs promtool (Debian package `prometheus`), the Pushgateway
# (`prometheus-pushgateway`) and node_exporter (`prometheus-node-exporter`)
# into .tools/bin by unpacking the packages, not installing them: no service
# is started and nothing outside .tools changes. deploy/ checks rules,
# metrics, pushes and the textfile against them (deploy/promtool_test.go,
# deploy/consumers_test.go). Idempotent: prints nothing when all are there.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/.tools/bin"
if [[ -x "$bin/promtool" && -x "$bin/pushgateway" && -x "$bin/node_exporter" ]]; then
	exit 0
fi
mkdir -p "$bin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

SUDO=
if [[ "$(id -u)" -ne 0 ]]; then
	SUDO=sudo
fi
echo "install-promtools: ${SUDO:+$SUDO }apt-get update, then apt-get download of the Debian packages prometheus, prometheus-pushgateway and prometheus-node-exporter; promtool, pushgateway and node_exporter are unpacked into $bin (nothing is installed on the system)"
$SUDO apt-get update -qq
(cd "$work" && apt-get download -qq prometheus prometheus-pushgateway prometheus-node-exporter)
for deb in "$work"/*.deb; do
	dpkg-deb -x "$deb" "$work/x"
done
install -m 0755 "$work/x/usr/bin/promtool" "$bin/promtool"
install -m 0755 "$work/x/usr/bin/prometheus-pushgateway" "$bin/pushgateway"
install -m 0755 "$work/x/usr/bin/prometheus-node-exporter" "$bin/node_exporter"
"$bin/promtool" --version >/dev/null
"$bin/pushgateway" --version >/dev/null 2>&1
"$bin/node_exporter" --version >/dev/null 2>&1
