// Package deploy holds no code: it is where the files that run ctxlab in a
// fleet live (Kubernetes manifests, the systemd unit, the Grafana dashboard,
// Prometheus rules), and its tests check them against the real things — the
// k8s.io/api types, decoded strictly, and a real Prometheus scraping a real
// `ctxlab serve`. The tests live here so that their dependencies do not
// weigh on any other package's build.
package deploy
