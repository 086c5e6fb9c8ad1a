package sysinfo

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{{"0", []int{0}}, {"0-3", []int{0, 1, 2, 3}}, {"0,2-3,8", []int{0, 2, 3, 8}}, {"1,1,0", []int{0, 1}}} {
		got, err := ParseCPUList(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v", tc.in, got, err)
		}
		if back := FormatCPUList(got); tc.in == "0-3" && back != "0-3" {
			t.Errorf("FormatCPUList = %q", back)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "1,,2"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) accepted", bad)
		}
	}
}

func TestValidateCPUsNamesTheBadCPUAndTheRange(t *testing.T) {
	h := &Host{Env: result.Env{OnlineCPUs: []int{0, 1}}}
	if err := h.ValidateCPUs([]int{0, 1}); err != nil {
		t.Fatal(err)
	}
	err := h.ValidateCPUs([]int{7})
	if err == nil || !strings.Contains(err.Error(), "CPU 7") || !strings.Contains(err.Error(), "0-1") {
		t.Fatalf("got %v", err)
	}
}

func TestDetectFillsTheBasics(t *testing.T) {
	h := Detect()
	if len(h.OnlineCPUs) == 0 || h.LogicalCPUs == 0 || h.Kernel == "" || h.GoVersion == "" {
		t.Fatalf("incomplete host: %+v", h.Env)
	}
	if h.LLCBytes() <= 0 {
		t.Fatal("LLC size")
	}
}

func TestParseCPUListBoundsBeforeExpanding(t *testing.T) {
	for _, bad := range []string{"0-99999999", "0-9223372036854775807", "8192", "0-18446744073709551616", "0,1-8192"} {
		_, err := ParseCPUList(bad)
		if err == nil || !strings.Contains(err.Error(), "8191") {
			t.Errorf("ParseCPUList(%q) = %v, want an error naming the largest CPU 8191", bad, err)
		}
	}
	got, err := ParseCPUList("8191")
	if err != nil || len(got) != 1 || got[0] != 8191 {
		t.Errorf("ParseCPUList(8191) = %v, %v", got, err)
	}
}

// FuzzParseCPUList: any input either fails or yields sorted, distinct CPUs
// within 0..MaxCPUs-1 that format and parse back to themselves.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "0-3", "0,2-3,8", "1,1,0", "0-99999999", "-1", "3-1", " 1 , 2 ", "0-9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 {
			t.Fatalf("%q: no CPUs and no error", s)
		}
		for i, c := range cpus {
			if c < 0 || c >= MaxCPUs || (i > 0 && c <= cpus[i-1]) {
				t.Fatalf("%q: %v is not sorted, distinct and in range", s, cpus)
			}
		}
		back, err := ParseCPUList(FormatCPUList(cpus))
		if err != nil || !reflect.DeepEqual(back, cpus) {
			t.Fatalf("%q: round trip %v → %q → %v, %v", s, cpus, FormatCPUList(cpus), back, err)
		}
	})
}

func TestCountCPUList(t *testing.T) {
	for in, want := range map[string]int{"0\n": 1, "0-3,8\n": 5, "0-1,4-5": 4, "": 0, "x": 0, "3-1": 0} {
		if got := CountCPUList([]byte(in)); got != want {
			t.Errorf("CountCPUList(%q) = %d, want %d", in, got, want)
		}
	}
}
