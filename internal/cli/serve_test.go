package cli

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// These tests stop before any probe starts (bad input, port in use), so
// no child process is involved; internal/serve tests the running server.

func TestServeBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--interval", "1s"}, "--interval 1s: must be in 5s..24h"},
		{[]string{"--interval", "48h"}, "--interval 48h: must be in 5s..24h"},
		{[]string{"--interval", "soon"}, `--interval "soon"`},
		{[]string{"--probes", "nosuch/arm"}, `unknown experiment "nosuch"`},
		{[]string{"--probes", "pingpong/zzz*"}, "matches no arm of pingpong"},
		{[]string{"--probes", "pingpong"}, "name arms, not a whole experiment"},
		{[]string{"--cpu-budget", "0"}, "--cpu-budget 0: must be in 0.05..50"},
		{[]string{"--probe-timeout", "10ms"}, "--probe-timeout 10ms: must be in 1s..5m"},
		{[]string{"--listen", "0.0.0.0:9477"}, "add --allow-remote"},
		{[]string{"--listen", ":9477"}, "every interface"},
		{[]string{"--listen", "127.0.0.1"}, "want host:port"},
		{[]string{"--listen", "127.0.0.1:99999"}, "in 1..65535"},
		{[]string{"extra-arg"}, "unknown command"},
		{[]string{"--db", "h.db", "--db-retention", "30m"}, "--db-retention 30m: must be in 1h..3650d, or 0"},
		{[]string{"--db", "h.db", "--db-retention", "3651d"}, "--db-retention 3651d: must be in 1h..3650d"},
		{[]string{"--db", "h.db", "--db-retention", "12h7d"}, `--db-retention "12h7d": invalid duration "12h7d"; want`},
		{[]string{"--db", "h.db", "--db-retention", "soon"}, `--db-retention "soon": invalid duration "soon"; want`},
		{[]string{"--db", "h.db", "--db-retention", "-1d"}, `--db-retention "-1d": invalid duration`},
		{[]string{"--db-retention", "30d"}, "--db-retention 30d: only with --db"},
	} {
		var out, errb bytes.Buffer
		code := Main(append([]string{"serve"}, tc.args...), &out, &errb)
		if code != 2 {
			t.Errorf("serve %v: exit %d, want 2; stderr: %s", tc.args, code, errb.String())
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Errorf("serve %v: stderr %q, want it to say %q", tc.args, errb.String(), tc.want)
		}
	}
}

func TestServePortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out, errb bytes.Buffer
	code := Main([]string{"serve", "--listen", ln.Addr().String()}, &out, &errb)
	if code != 1 {
		t.Errorf("port in use: exit %d, want 1; stderr: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "already in use") || !strings.Contains(errb.String(), ln.Addr().String()) {
		t.Errorf("port in use: stderr %q should name the address and say it is in use", errb.String())
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:9477", false, true},
		{"localhost:9477", false, true},
		{"[::1]:9477", false, true},
		{"10.0.0.5:9477", false, false},
		{"10.0.0.5:9477", true, true},
		{"0.0.0.0:9477", true, true},
		{"example.com:9477", false, false},
	} {
		err := checkListen(tc.addr, tc.remote)
		if (err == nil) != tc.ok {
			t.Errorf("checkListen(%q, remote=%v) = %v, want ok=%v", tc.addr, tc.remote, err, tc.ok)
		}
	}
}
