package sysinfo

import "testing"

func TestParseConfigHZ(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"CONFIG_HZ_250=y\nCONFIG_HZ=250\n", 250, true},
		{"# CONFIG_HZ_1000 is not set\nCONFIG_HZ=1000", 1000, true},
		{"CONFIG_HZ_PERIODIC=y\n", 0, false},
		{"CONFIG_HZ=abc\n", 0, false},
		{"", 0, false},
	} {
		got, ok := ParseConfigHZ([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("ParseConfigHZ(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
