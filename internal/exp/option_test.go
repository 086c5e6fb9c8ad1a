package exp

import (
	"slices"
	"strings"
	"testing"
)

var (
	testN     = IntOption("opttest.n", "a count, 1..10", 1, 10)
	testList  = IntListOption("opttest.list", "counts, each 1..5", 1, 5)
	testWords = WordsOption("opttest.words", "some of a, b", "letter", []string{"a", "b"}, "a, b or a,b")
	testText  = StringOption("opttest-text", "anything")
)

func init() {
	RegisterOption(testN)
	RegisterOption(testList)
	RegisterOption(testWords)
	RegisterArmOption(testText, func(a Arm) bool { return a.Substrate == "x" })
}

// Values are parsed once, and read back typed; what --set did not give
// reads as not given, or the default.
func TestSettingsTyped(t *testing.T) {
	s, err := ParseSettings(map[string]string{"opttest.n": " 7 ", "opttest.list": "1,5", "opttest.words": "b,a,b", "opttest-text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Options: s}
	if n, ok := testN.Get(p); !ok || n != 7 {
		t.Errorf("n = %d, %v", n, ok)
	}
	if l := testList.Or(p, nil); !slices.Equal(l, []int{1, 5}) {
		t.Errorf("list = %v", l)
	}
	if w := testWords.Or(p, nil); !slices.Equal(w, []string{"b", "a"}) {
		t.Errorf("words = %v, want each once, in order", w)
	}
	if txt, ok := s.Text("opttest.n"); !ok || txt != " 7 " {
		t.Errorf("text %q, want the value as given", txt)
	}
	var none Params
	if _, ok := testN.Get(none); ok || testN.Or(none, 3) != 3 || testText.Or(none, "d") != "d" {
		t.Error("an option --set did not give reads as given")
	}
}

// A refused key or value is the error, naming it and what is allowed;
// the first in key order, however the values were given.
func TestSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		given map[string]string
		want  string
	}{
		{map[string]string{"opttest.nope": "1"}, "--set opttest.nope: unknown option; options are "},
		{map[string]string{"opttest.n": "x"}, `--set opttest.n=x: "x" is not a whole number; want 1..10`},
		{map[string]string{"opttest.n": "11"}, "--set opttest.n=11: must be in 1..10"},
		{map[string]string{"opttest.list": "1,6"}, "--set opttest.list=1,6: 6 must be in 1..5"},
		{map[string]string{"opttest.list": strings.Repeat("1,", MaxOptionList) + "1"}, "values; at most 64, each 1..5"},
		{map[string]string{"opttest.words": "a,c"}, `--set opttest.words=a,c: "c" is not a letter; want a, b or a,b`},
		{map[string]string{"opttest.n": "x", "opttest.list": "9"}, "opttest.list=9"},
	} {
		_, err := ParseSettings(tc.given)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.given, err, tc.want)
		}
	}
	if _, err := ParseSettings(map[string]string{"opttest.nope": "1"}); !strings.Contains(err.Error(), "opttest.list, opttest.n, opttest.words") {
		t.Errorf("the unknown key's error does not list the keys: %v", err)
	}
}

// An experiment lists its own options and the shared ones that change
// its arms; a key is declared once.
func TestOptionsOf(t *testing.T) {
	got := OptionsOf("opttest", []Arm{{Substrate: "y"}})
	if !slices.Contains(got, "opttest.n") || slices.Contains(got, "opttest-text") {
		t.Errorf("OptionsOf without an x arm: %v", got)
	}
	if got := OptionsOf("other", []Arm{{Substrate: "x"}}); !slices.Contains(got, "opttest-text") || slices.Contains(got, "opttest.n") {
		t.Errorf("OptionsOf with an x arm: %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a key declared twice did not panic")
		}
	}()
	RegisterOption(IntOption("opttest.n", "again", 1, 2))
}
