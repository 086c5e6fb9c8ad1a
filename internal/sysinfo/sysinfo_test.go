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

func TestParseCPUStat(t *testing.T) {
	p, us := ParseCPUStat([]byte("usage_usec 10\nnr_periods 5\nnr_throttled 3\nthrottled_usec 1500\n"))
	if p != 3 || us != 1500 {
		t.Fatalf("v2: %d %d", p, us)
	}
	p, us = ParseCPUStat([]byte("nr_periods 5\nnr_throttled 2\nthrottled_time 7000000\n"))
	if p != 2 || us != 7000 {
		t.Fatalf("v1: %d %d", p, us)
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
