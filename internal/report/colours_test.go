package report

import (
	"bytes"
	"fmt"
	"image/color"
	"sort"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// TestSubstrateColours pins the colour of every substrate the registered
// experiments plan (full suite), and of the few other runs' arms carry
// (diagnose --vary's "command", selfcheck's, none), in
// testdata/substrate-colours.golden: one colour per kind of worker, the
// same in every chart.
func TestSubstrateColours(t *testing.T) {
	subs := map[string]bool{"": true, "command": true, "unknown-substrate": true}
	p := exp.Params{Suite: exp.SuiteFull, CPUs: []int{0, 1}, Host: &sysinfo.Host{}}
	for _, s := range exp.All() {
		arms, err := s.Arms(p)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		for _, a := range arms {
			subs[a.Substrate] = true
		}
	}
	var names []string
	for s := range subs {
		names = append(names, s)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, s := range names {
		c := color.RGBAModel.Convert(substrateColor(s)).(color.RGBA)
		fmt.Fprintf(&b, "%q\t#%02x%02x%02x\n", s, c.R, c.G, c.B)
	}
	golden(t, "substrate-colours.golden", b.Bytes())
}

// TestSizeParams pins which swept parameters the param chart draws on a
// bytes axis: what the experiment declares (cachecost's working set in
// bytes), and, for a run of no registered experiment, the conventional
// names a diagnose --vary axis may carry; not a count, and not cachecost's
// W (written 16KiB, drawn as its number of bytes on a count axis).
func TestSizeParams(t *testing.T) {
	for _, tc := range []struct {
		experiment, key string
		want            bool
	}{
		{"cachecost", "W_bytes", true}, {"cachecost", "W", false}, {"cachecost", "T", false},
		{"diagnose", "size", true}, {"diagnose", "bytes", true}, {"diagnose", "w", true}, {"diagnose", "ws", true},
		// Declared by cachecost alone: a diagnose --vary variable called
		// W_bytes is a count like any other.
		{"diagnose", "W_bytes", false}, {"diagnose", "n", false}, {"ring", "n", false}, {"yield", "k", false},
	} {
		if got := isSizeParam(tc.experiment, tc.key); got != tc.want {
			t.Errorf("isSizeParam(%s, %s) = %v, want %v", tc.experiment, tc.key, got, tc.want)
		}
	}
}
