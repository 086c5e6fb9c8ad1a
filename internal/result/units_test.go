package result

import "testing"

func TestParseAndNameSize(t *testing.T) {
	for in, want := range map[string]int64{"16KiB": 16 << 10, "16K": 16 << 10, "16k": 16 << 10, "2MiB": 2 << 20, "2M": 2 << 20, "1G": 1 << 30, "4096": 4096, "64B": 64} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "x", "-1K", "1.5M", "9223372036854775807K", "KiB"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
	for in, want := range map[int64]string{0: "0", 16 << 10: "16KiB", 128 << 20: "128MiB", 1 << 30: "1GiB", 1000: "1000", 1536: "1536"} {
		if got := SizeName(in); got != want {
			t.Errorf("SizeName(%d) = %q, want %q", in, got, want)
		}
		if back, err := ParseSize(SizeName(in)); err != nil || back != in {
			t.Errorf("ParseSize(SizeName(%d)) = %d, %v", in, back, err)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[float64]string{
		0: "0 B", 512: "512 B", 1536: "1.5 KiB", 16 << 10: "16 KiB", 1023.9 * 1024: "1024 KiB",
		150 << 20: "150 MiB", 2.25 * (1 << 30): "2.25 GiB", -2048: "-2 KiB",
	} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%g) = %q, want %q", in, got, want)
		}
		if got := FormatValue(in, "bytes"); got != want {
			t.Errorf("FormatValue(%g, bytes) = %q, want %q", in, got, want)
		}
	}
}

// A range is written in its median's unit, so it reads beside it.
func TestFormatRange(t *testing.T) {
	for _, c := range []struct {
		lo, hi, ref float64
		unit, want  string
	}{
		{7100, 7620, 7380, "ns/op", "7.1–7.62"},
		{980, 1500, 1010, "ns/op", "0.98–1.5"},
		{900, 1500, 990, "ns/op", "900–1500"},
		{722, 1190, 998, "ns/element", "722–1190"},
		{1.77 * KiB, 1.89 * KiB, 1.83 * KiB, "B/op", "1.77–1.89"},
		{3, 4, 3.5, "x/op", "3–4"},
	} {
		if got := FormatRange(c.lo, c.hi, c.ref, c.unit); got != c.want {
			t.Errorf("FormatRange(%v, %v, %v, %q) = %q, want %q", c.lo, c.hi, c.ref, c.unit, got, c.want)
		}
	}
}
