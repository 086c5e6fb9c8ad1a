package cli

import (
	"errors"
	"testing"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"10000/s": 1e4, "10k/s": 1e4, "2.5M/s": 2.5e6, "1_000/s": 1000, " 7/s": 7} {
		got, err := parseRate(in)
		if err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "10000", "0/s", "-1/s", "NaN/s", "Inf/s", "2e9/s", "k/s", "10/min"} {
		_, err := parseRate(in)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("parseRate(%q): %v, want a usage error", in, err)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10000/s", "10k/s", "1M/s", "x/s", "0/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseRate(s)
		if err == nil && !(v > 0 && v <= maxRate) {
			t.Fatalf("parseRate(%q) = %v without error", s, v)
		}
	})
}
