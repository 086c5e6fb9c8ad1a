package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ctxlab/ctxlab/internal/serve"
)

// object is one decoded manifest document.
type object struct {
	file, kind string
	obj        any
}

// decodeManifests reads every document of the deploy/*.yaml manifests into
// its k8s.io/api (or Prometheus Operator) type with sigs.k8s.io/yaml's
// strict mode: an unknown or duplicated field is an error, as it is for
// `kubectl apply --validate=strict`.
func decodeManifests(t *testing.T) []object {
	t.Helper()
	var out []object
	for _, file := range []string{"daemonset.yaml", "podmonitor.yaml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var tm struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s document %d: %v", file, i, err)
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "v1 Namespace":
				obj = &corev1.Namespace{}
			case "v1 Service":
				obj = &corev1.Service{}
			case "apps/v1 DaemonSet":
				obj = &appsv1.DaemonSet{}
			case "monitoring.coreos.com/v1 PodMonitor":
				obj = &monitoringv1.PodMonitor{}
			default:
				t.Fatalf("%s document %d: %s %s has no decoder in this test; add its type", file, i, tm.APIVersion, tm.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s document %d (%s): strict decoding: %v", file, i, tm.Kind, err)
			}
			out = append(out, object{file, tm.Kind, obj})
		}
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestStrictDecodingCatchesTypos: the decoder this file relies on does
// refuse an unknown field (a misspelt key would otherwise pass silently).
func TestStrictDecodingCatchesTypos(t *testing.T) {
	bad := "apiVersion: apps/v1\nkind: DaemonSet\nspec:\n  template:\n    spec:\n      containers:\n        - name: x\n          readOnlyRootFilesytem: true\n"
	if err := yaml.UnmarshalStrict([]byte(bad), &appsv1.DaemonSet{}); err == nil || !strings.Contains(err.Error(), "readOnlyRootFilesytem") {
		t.Errorf("a misspelt field decoded without an error naming it: %v", err)
	}
}

// TestManifests decodes every manifest strictly, then checks what makes the
// DaemonSet work as docs/serve.md promises.
func TestManifests(t *testing.T) {
	objs := decodeManifests(t)
	var ds *appsv1.DaemonSet
	var pm *monitoringv1.PodMonitor
	for _, o := range objs {
		switch v := o.obj.(type) {
		case *appsv1.DaemonSet:
			ds = v
		case *monitoringv1.PodMonitor:
			pm = v
		}
	}
	if ds == nil || pm == nil {
		t.Fatalf("want a DaemonSet and a PodMonitor, got %d objects", len(objs))
	}
	pod := ds.Spec.Template
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		k, v, _ := strings.Cut(a, "=")
		flags[k] = v
	}
	if c.Args[0] != "serve" {
		t.Errorf("args start %q, want serve", c.Args[0])
	}

	// Reachable from the pod IP (Prometheus) and from localhost inside the
	// pod (kubectl port-forward): the wildcard address, which needs --allow-remote.
	host, port, err := splitListen(flags["--listen"])
	if err != nil {
		t.Fatal(err)
	}
	if host != "0.0.0.0" && host != "::" && host != "" {
		t.Errorf("--listen host %q: port-forward (localhost) and the pod IP need the wildcard address", host)
	}
	if _, ok := flags["--allow-remote"]; !ok {
		t.Error("a non-loopback --listen without --allow-remote: ctxlab refuses to start")
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != int32(port) || c.Ports[0].Name != "metrics" {
		t.Errorf("container ports %+v, want one named metrics on the --listen port %d", c.Ports, port)
	}
	if got := pod.Annotations["prometheus.io/port"]; got != strconv.Itoa(port) {
		t.Errorf("prometheus.io/port annotation %q, want %d", got, port)
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("liveness/readiness probe %+v, want GET /healthz on port metrics", p)
		}
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port == nil || *pm.Spec.PodMetricsEndpoints[0].Port != "metrics" {
		t.Errorf("PodMonitor endpoints %+v, want the port named metrics", pm.Spec.PodMetricsEndpoints)
	}
	if got, want := pm.Spec.Selector.MatchLabels, ds.Spec.Selector.MatchLabels; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PodMonitor selects %v, the DaemonSet's pods are %v", got, want)
	}

	// Resources follow the CPU budget: the request is the budget's average,
	// the limit leaves room for the probes' two-CPU peak.
	budget, err := strconv.ParseFloat(flags["--cpu-budget"], 64)
	if err != nil {
		t.Fatalf("--cpu-budget %q: %v", flags["--cpu-budget"], err)
	}
	req, lim := c.Resources.Requests[corev1.ResourceCPU], c.Resources.Limits[corev1.ResourceCPU]
	if got, want := req.MilliValue(), int64(budget*10); got != want {
		t.Errorf("CPU request %s, want %dm (--cpu-budget %g%% of a core)", req.String(), want, budget)
	}
	if lim.MilliValue() < 2000 {
		t.Errorf("CPU limit %s throttles the cross-CPU probe (two busy CPUs); want ≥ 2", lim.String())
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Error("memory request and limit must be set")
	}

	// Locked down: read-only root, no privilege escalation, no capabilities, not root.
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem must be true")
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation must be false")
	}
	if sc == nil || sc.Capabilities == nil || fmt.Sprint(sc.Capabilities.Drop) != "[ALL]" || len(sc.Capabilities.Add) != 0 {
		t.Errorf("capabilities %+v, want drop [ALL] and none added", sc.Capabilities)
	}
	if psc := pod.Spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("runAsNonRoot must be true")
	}
	if pod.Spec.HostPID || pod.Spec.HostNetwork {
		t.Error("no hostPID or hostNetwork: node-wide signals are node_exporter's")
	}

	// The history (--db) is on a writable volume.
	db := flags["--db"]
	if db == "" {
		t.Fatal("no --db: the history has nowhere to go")
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if path.Dir(db) == m.MountPath && !m.ReadOnly {
			mounted = true
			found := false
			for _, v := range pod.Spec.Volumes {
				found = found || (v.Name == m.Name && v.EmptyDir != nil)
			}
			if !found {
				t.Errorf("volume %s mounted at %s is not an emptyDir in the pod", m.Name, m.MountPath)
			}
		}
	}
	if !mounted {
		t.Errorf("--db %s: its directory is not a writable volume mount (the root filesystem is read-only)", db)
	}

	// The history stops growing within its volume: a kubelet evicts a pod
	// whose emptyDir outgrows its sizeLimit. A stored cycle of the five
	// default probes measured ~12 KB (86 KB for seven cycles); 3.2 KiB a
	// probe leaves room.
	const probeBytes = 16 << 10 / 5
	if p, ok := flags["--probes"]; ok {
		t.Fatalf("--probes %s: the size check below assumes the default probes; size the volume for these", p)
	}
	probes := len(serve.DefaultProbes(nil))
	if probes == 0 {
		t.Fatal("no default probes registered: the experiments are not linked into this test")
	}
	retention, err := model.ParseDuration(flags["--db-retention"])
	if err != nil || retention <= 0 {
		t.Fatalf("--db-retention %q: want an explicit limit (a history kept for ever outgrows any volume)", flags["--db-retention"])
	}
	interval, err := time.ParseDuration(flags["--interval"])
	if err != nil || interval <= 0 {
		t.Fatalf("--interval %q: want a positive duration", flags["--interval"])
	}
	sized := false
	for _, m := range c.VolumeMounts {
		if path.Dir(db) != m.MountPath {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name != m.Name || v.EmptyDir == nil {
				continue
			}
			if v.EmptyDir.SizeLimit == nil {
				t.Fatalf("volume %s has no sizeLimit", v.Name)
			}
			if v.EmptyDir.Medium == corev1.StorageMediumMemory {
				t.Errorf("volume %s is in memory: the history would count against the memory limit", v.Name)
			}
			sized = true
			need := int64(time.Duration(retention)/interval) * int64(probes) * probeBytes
			if limit := v.EmptyDir.SizeLimit.Value(); need > limit*3/4 {
				t.Errorf("--db-retention %v at --interval %v with %d probes keeps ~%d MiB of cycles; the volume's sizeLimit is %d MiB (want ≤ 3/4 of it)",
					retention, interval, probes, need>>20, limit>>20)
			}
		}
	}
	if !sized {
		t.Errorf("--db %s: no emptyDir volume holds it, so its size was not checked", db)
	}

	// Every flag is one `ctxlab serve` has.
	help := ctxlabHelp(t)
	for f := range flags {
		if !regexp.MustCompile(`(?m)^\s+(-\w, )?` + regexp.QuoteMeta(f) + `\b`).MatchString(help) {
			t.Errorf("flag %s is not a flag of ctxlab serve", f)
		}
	}
}

// splitListen splits --listen into host and port.
func splitListen(addr string) (string, int, error) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("--listen %q: no port", addr)
	}
	p, err := strconv.Atoi(addr[i+1:])
	return strings.Trim(addr[:i], "[]"), p, err
}

// ctxlabHelp is `ctxlab serve --help`, from this test binary acting as ctxlab.
func ctxlabHelp(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envCtxlabArgs+"=serve\x1f--help")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("ctxlab serve --help: %v\n%s", err, out.String())
	}
	return out.String()
}
