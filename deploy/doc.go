// Package deploy holds no code: its tests check the files beside it — the
// image (package image), the Kubernetes manifests (kustomize), the Prometheus rules and
// the Grafana dashboard — against the real reaper binary and the metrics a
// real pass exports. It is its own module so that k8s.io/api, kustomize and
// Prometheus stay out of reaper's go.mod.
//
//	make deploy-check   # builds ./bin/reaper, installs versitygw, runs these tests
package deploy
