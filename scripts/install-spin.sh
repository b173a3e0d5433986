#!/usr/bin/env bash
# Installs the spin model checker (Debian package `spin`), which the model
# check in model/ needs (model/model_test.go). Idempotent: does nothing and
# prints nothing when `spin` is already on PATH. gcc, which builds spin's
# verifier, comes with the Go machine image; it is installed too if missing.
set -euo pipefail

need=()
command -v spin >/dev/null 2>&1 || need+=(spin)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
if [[ ${#need[@]} -eq 0 ]]; then
	exit 0
fi

SUDO=
if [[ "$(id -u)" -ne 0 ]]; then
	SUDO=sudo
fi

echo "install-spin: installing the Debian package(s) ${need[*]}: ${SUDO:+$SUDO }apt-get update, then ${SUDO:+$SUDO }apt-get install -y ${need[*]} (about 30 s)"
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
command -v spin >/dev/null 2>&1 || { echo "install-spin: spin is still not on PATH" >&2; exit 1; }
